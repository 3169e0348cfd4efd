"""``arena export scores RUN_DIR --format csv|parquet|jsonl [--out FILE]`` (issue 33)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from tests.support.report_fixtures import rows_of


def expected_rows(run_dir) -> int:
    """Rows the export must have: per result line, one per judge score and metric (a metric called
    ``score`` equal to the score is the same figure), or one when nothing was scored."""
    total = 0
    for line in rows_of(run_dir):
        n = sum(
            1 + sum(1 for k, v in b["metrics"].items() if not (k == "score" and v == b["score"]))
            for b in line["scores"].values()
        )
        total += n or 1
    return total


def test_relative_run_dir_default_path(fake_run, monkeypatch):
    run_dir = fake_run(2)
    monkeypatch.chdir(run_dir.parent)
    result = CliRunner().invoke(cli, ["export", "scores", run_dir.name])
    assert result.exit_code == 0, result.output
    path = run_dir / "export" / "scores.csv"
    assert f"wrote {run_dir.name}/export/scores.csv ({expected_rows(run_dir)} rows)" in result.output
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == expected_rows(run_dir)
    assert {r["agent"] for r in rows} == {"retitle", "noop", "crash"}


def test_jsonl_to_a_file_and_csv_to_stdout(fake_run, tmp_path):
    run_dir = fake_run(2)
    out = tmp_path / "scores.jsonl"
    result = CliRunner().invoke(
        cli, ["export", "scores", str(run_dir), "--format", "jsonl", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == expected_rows(run_dir)
    crash = [r for r in rows if r["agent"] == "crash"]
    assert crash and all(r["value"] is None and r["status"] == "agent_error" for r in crash)

    result = CliRunner().invoke(cli, ["export", "scores", str(run_dir), "--out", "-"])
    assert result.exit_code == 0, result.output
    assert len(list(csv.DictReader(io.StringIO(result.output)))) == expected_rows(run_dir)


def test_parquet(fake_run, tmp_path):
    pq = pytest.importorskip(
        "pyarrow.parquet", reason="pyarrow is not installed (pip install 'pptarena[parquet]')"
    )
    run_dir = fake_run(2)
    out = tmp_path / "s.parquet"
    result = CliRunner().invoke(
        cli, ["export", "scores", str(run_dir), "--format", "parquet", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out)
    assert table.num_rows == expected_rows(run_dir)
    assert str(table.schema.field("value").type) == "double"


def test_unwritable_out_is_one_line(fake_run, tmp_path):
    run_dir = fake_run(1)
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(cli, ["export", "scores", str(run_dir), "--out", str(blocker / "s.csv")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "--out FILE" in result.output and str(blocker / "s.csv") in result.output


def test_not_a_run_dir(tmp_path):
    result = CliRunner().invoke(cli, ["export", "scores", str(tmp_path)])
    assert result.exit_code == 1
    assert "no results.jsonl" in result.output
