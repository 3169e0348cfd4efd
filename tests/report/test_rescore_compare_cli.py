"""The re-score and compare steps a user takes after a run: a judges-only re-score config, comparing
a run with its re-score under another judge label (`--judge A=B`), and signed zeros in tables."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.report.tables import fmt, signed

JUDGES_ONLY = """
# only what re-judging needs: the dataset and the agents are the run's own
[renderer]
use = "dummy"
[[judges]]
use = "title"
label = "title-lenient"
[[judges]]
use = "title"
label = "title-second"
"""


@pytest.mark.slow
def test_a_judges_only_config_rescores_and_compares_under_another_label(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=2)
    elsewhere = tmp_path / "configs"
    elsewhere.mkdir()
    cfg = elsewhere / "lenient.toml"
    cfg.write_text(JUDGES_ONLY)
    res = CliRunner().invoke(cli, ["rescore", str(run_dir), "--config", str(cfg), "--quiet"])
    assert res.exit_code == 0, res.output
    rescored = run_dir / "rescore" / "lenient"
    assert (rescored / "results.jsonl").is_file()
    # without a mapping no label is shared and the re-score has two judges: nothing is paired
    plain = CliRunner().invoke(cli, ["compare", str(run_dir), str(rescored), "--json"])
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.output)["comparisons"][0]["pairs"] == []
    mapped = CliRunner().invoke(
        cli, ["compare", str(run_dir), str(rescored), "--json", "--judge", "title=title-lenient"]
    )
    assert mapped.exit_code == 0, mapped.output
    pairs = json.loads(mapped.output)["comparisons"][0]["pairs"]
    assert {(p["judge_a"], p["judge_b"]) for p in pairs} == {("title", "title-lenient")}
    assert all(p["diff"] == 0.0 and p["n"] == 2 for p in pairs)  # the same judge: same scores
    text = CliRunner().invoke(cli, ["compare", str(run_dir), str(rescored), "--judge", "title=title-lenient"])
    assert "title → title-lenient" in text.output and "-0.000" not in text.output


@pytest.mark.slow
def test_a_misspelled_judge_mapping_names_the_labels(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    res = CliRunner().invoke(cli, ["compare", str(run_dir), str(run_dir), "--judge", "titel=title"])
    assert res.exit_code != 0 and "no judge labelled 'titel'" in res.output and "title" in res.output
    bad = CliRunner().invoke(cli, ["compare", str(run_dir), str(run_dir), "--judge", "title"])
    assert bad.exit_code != 0 and "A=B" in bad.output


def test_zero_is_never_negative_in_tables():
    assert signed(-0.0) == "+0.000" and signed(-0.00004) == "+0.000" and signed(-0.25) == "-0.250"
    assert fmt(-0.0) == "0.000" and fmt(-0.0004) == "0.000" and fmt(0.6667) == "0.667"
