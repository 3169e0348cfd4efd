"""``arena export scores``' table: one flat row per (agent, task, epoch, judge, metric) of a real run,
read back from csv, jsonl and parquet and compared with the run's results.jsonl (issue 33)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from pptarena.report.data import load_run
from pptarena.report.scores_export import (
    BASE_COLUMNS,
    ScoresExportError,
    encode,
    export_scores,
    score_rows,
)
from tests.support.report_fixtures import rows_of

KEY = ("agent", "task_id", "epoch", "judge", "metric")


def expected(run_dir: Path) -> dict[tuple, tuple]:
    """What the export must hold, computed from results.jsonl directly: (agent, task, epoch, judge,
    metric) -> (status, number or None, text or None, category)."""
    out: dict[tuple, tuple] = {}
    for line in rows_of(run_dir):
        pair = (line["agent"], line["task_id"], line.get("epoch", 1))
        category = ";".join(line["metadata"].get("category", []))
        if not line["scores"]:
            out[(*pair, None, None)] = (line["status"], None, None, category)
        for judge, block in line["scores"].items():
            out[(*pair, judge, "score")] = (line["status"], block["score"], None, category)
            for metric, value in block["metrics"].items():
                if metric == "score" and value == block["score"]:
                    continue
                number = float(value) if isinstance(value, bool | int | float) else None
                text = value if isinstance(value, str) else None
                out[(*pair, judge, metric)] = (line["status"], number, text, category)
    return out


def _none(value: str) -> str | None:
    return None if value == "" else value


def from_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k, v in r.items():
            r[k] = _none(v)
        r["epoch"] = int(r["epoch"])
        r["value"] = None if r["value"] is None else float(r["value"])
    return rows


def from_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def from_parquet(path: Path) -> list[dict]:
    pq = pytest.importorskip(
        "pyarrow.parquet", reason="pyarrow is not installed (pip install 'pptarena[parquet]')"
    )
    return pq.read_table(path).to_pylist()


READERS = {"csv": from_csv, "jsonl": from_jsonl, "parquet": from_parquet}


def check_against_results(rows: list[dict], run_dir: Path) -> None:
    want = expected(run_dir)
    assert len(rows) == len(want)
    got = {tuple(r[k] for k in KEY): (r["status"], r["value"], r["value_text"], r["category"]) for r in rows}
    assert got == want
    assert {r["run"] for r in rows} == {run_dir.name}


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_demo_run_round_trips(demo_run, tmp_path, fmt):
    """Every judge's score and metrics of the demo run (2 agents x 3 tasks, rubric + structural judges),
    one row each, with the task's metadata columns."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'pptarena[parquet]')")
    path, count = export_scores(load_run(demo_run, with_rescores=False), fmt, tmp_path / f"scores.{fmt}")
    rows = READERS[fmt](path)
    assert count == len(rows)
    check_against_results(rows, demo_run)
    first = rows[0]
    assert list(first)[: len(BASE_COLUMNS)] == list(BASE_COLUMNS)
    for column in ("category", "edit_type", "difficulty"):
        assert column in first
    lines = {(r["agent"], r["task_id"]): r for r in rows_of(demo_run)}
    for r in rows:
        line = lines[(r["agent"], r["task_id"])]
        assert r["difficulty"] == line["metadata"]["difficulty"]
        assert r["edit_type"] == line["metadata"]["edit_type"]
        assert float(r["duration_s"]) == line["duration_s"]
        assert float(r["cost_usd"]) == line["cost"]["usd"]
    # every (agent, judge) has the same metrics for each task: the table is rectangular per judge
    assert {r["judge"] for r in rows} == {"rubric", "structural"}


def test_unscored_pair_is_one_row_with_its_status(fake_run, tmp_path):
    """The crash agent's pairs have no score: one row each, status and whole error kept, no value."""
    run_dir = fake_run(2)
    columns, rows = score_rows(load_run(run_dir, with_rescores=False))
    crashed = [r for r in rows if r["agent"] == "crash"]
    assert len(crashed) == 2
    for r in crashed:
        assert r["status"] == "agent_error"
        assert r["judge"] is None and r["metric"] is None and r["value"] is None
        assert "agent bug" in r["error"]
    pairs = {(r["agent"], r["task_id"], r["epoch"]) for r in rows}
    assert len(pairs) == len(rows_of(run_dir))  # every pair of the run is counted
    assert "category" in columns and "difficulty" in columns
    assert {r["category"] for r in rows} == {"content"}  # a list joined with ";"
    check_against_results(from_csv(export_scores(load_run(run_dir), "csv", tmp_path / "s.csv")[0]), run_dir)


def test_parquet_without_pyarrow_names_the_extra(fake_run, monkeypatch):
    run_dir = fake_run(1)
    columns, rows = score_rows(load_run(run_dir, with_rescores=False))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ScoresExportError, match=r"pip install 'pptarena\[parquet\]'"):
        encode(columns, rows, "parquet")


def test_metadata_key_named_like_a_column_is_prefixed(fake_run):
    run_dir = fake_run(1)
    data = load_run(run_dir, with_rescores=False)
    for row in data.rows:
        row.metadata["status"] = "draft"
    columns, rows = score_rows(data)
    assert "task_status" in columns
    assert {r["task_status"] for r in rows} == {"draft"}
    assert {r["status"] for r in rows} <= {"scored", "agent_error"}
