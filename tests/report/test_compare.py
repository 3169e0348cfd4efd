"""``arena compare``: two runs of the same agents and tasks, differences with intervals, moved
tasks, τ_b vs scipy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy (test extra) is the reference for τ_b")


def run_with(tmp_path: Path, name: str, right: list[bool]) -> Path:
    rules = [{"match": f"New {i}", "reply": f"New {i}" if ok else "Wrong"} for i, ok in enumerate(right)]
    text = fake_run_toml(
        len(right),
        [use("asker-inproc", model="scripted/echo-1"), "noop"],
        run={"bootstrap": 200},
        backends={"scripted": {"rules": rules}},
    )
    cfg = write_run_config(tmp_path / f"{name}.toml", text)
    out = tmp_path / name
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    return out


@pytest.mark.slow
def test_compare_two_runs(tmp_path, fake_plugins):
    a = run_with(tmp_path, "a", [True, True, False, True])
    b = run_with(tmp_path, "b", [False, True, False, True])
    res = CliRunner().invoke(cli, ["compare", str(a), str(b), "--json", "--bootstrap", "300"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    pairs = {p["agent"]: p for p in report["comparisons"][0]["pairs"]}
    asker = pairs["asker-inproc"]
    assert asker["n"] == 4 and asker["diff"] == -0.25 and asker["mean_a"] == 0.75 and asker["mean_b"] == 0.5
    assert [m["task_id"] for m in asker["moved"]] == ["task-00"]
    assert asker["tau_b"] == pytest.approx(
        scipy_stats.kendalltau([1, 1, 0, 1], [0, 1, 0, 1]).statistic, abs=1e-4
    )
    assert pairs["noop"]["diff"] == 0.0 and pairs["noop"]["tau_b"] is None  # constant scores: τ_b undefined
    overall = report["comparisons"][0]["overall"]["title|title"]
    ref = scipy_stats.kendalltau([1, 1, 0, 1, 0, 0, 0, 0], [0, 1, 0, 1, 0, 0, 0, 0]).statistic
    assert overall["items"] == 8 and overall["tau_b"] == pytest.approx(ref, abs=1e-4)
    text = CliRunner().invoke(cli, ["compare", str(a), str(b)]).output
    assert "Tasks that moved most" in text and "task-00" in text and "-0.250" in text
    # each run's agent matrix: in run a the asker beats noop on 3 of 4 tasks (+0.750)
    assert "Paired comparison · title (a)" in text and "+0.750" in text
    assert report["agent_comparisons"][str(a)]["title"]["asker-inproc|noop"]["diff"] == 0.75


def test_compare_needs_two_runs(tmp_path, fake_plugins):
    a = run_with(tmp_path, "a", [True])
    res = CliRunner().invoke(cli, ["compare", str(a)])
    assert res.exit_code != 0 and "at least two" in res.output
