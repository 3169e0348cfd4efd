"""The terminal leaderboard: plain text when piped, rich on a terminal, benchmark columns, breakdowns, CLI."""

from __future__ import annotations

import io

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.report.show import print_summary
from pptarena.report.tables import breakdown_tables, judge_kinds, leaderboard_table, plain_text
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.results import read_results, summarize_results


def rows_of(run_dir):
    """The run's result lines as the report reads them (typed rows)."""
    return read_results(run_dir / "results.jsonl")


def _table_rows(text: str, title: str) -> dict[str, list[str]]:
    """Rows of one plain-text table, keyed by first cell (cells split on 2+ spaces)."""
    import re

    lines = text.split("\n")
    start = lines.index(title)
    out = {}
    for line in lines[start + 3 :]:
        if not line.strip() or line.startswith("("):
            break
        cells = re.split(r"\s{2,}", line.strip())
        out[cells[0]] = cells
    return out


@pytest.mark.slow
def test_plain_summary_of_a_real_fake_run(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=2)
    summary = summarize_results(rows_of(run_dir))
    buf = io.StringIO()
    assert print_summary(run_dir, summary, file=buf, rich=False, html=False) is None
    text = buf.getvalue()
    assert "\x1b[" not in text and "┃" not in text  # plain text, no colours or box drawing
    board = _table_rows(text, "Leaderboard")
    # retitle fixes both titles, noop fixes none, crash never produces a deck
    assert board["retitle"][1:6] == ["bwrap", "2", "2", "0", "1.000 [1.000, 1.000] (n=2)"]  # [95% interval]
    assert board["noop"][5] == "0.000 [0.000, 0.000] (n=2)"
    assert board["crash"][2:6] == ["2", "0", "agent_error 2", "–"]
    assert list(board)[0] == "retitle"  # best first
    diff = _table_rows(text, "By difficulty")
    assert set(diff) == {"easy", "hard"}
    assert diff["easy"][1] == "1" and diff["easy"][2] == "0.000"  # crash · title
    assert f"Results: {run_dir / 'results.jsonl'}" in text


@pytest.mark.slow
def test_rich_output_on_a_terminal(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    buf = io.StringIO()
    print_summary(run_dir, summarize_results(rows_of(run_dir)), file=buf, rich=True, html=False)
    text = buf.getvalue()
    assert "━" in text or "─" in text  # rich box drawing
    assert "retitle" in text and "agent_error 1" in text and "By category" in text


def _line(agent, task, status, scores, meta, usage=None):
    return ResultRow.from_json(
        {
            "agent": agent,
            "task_id": task,
            "status": status,
            "scores": scores,
            "error": None,
            "duration_s": 1.0,
            "usage": usage or {"input_tokens": 10, "output_tokens": 5},
            "metadata": meta,
        }
    )


def test_ppteval_and_pptarena_figures():
    rub = lambda s: {"score": s, "metrics": {"score": s, "success": s == 1.0}}  # noqa: E731
    dual = lambda i, v: {"score": (i + v) / 10, "metrics": {"if_score": i, "vq_score": v}}  # noqa: E731
    rows = [
        _line("a", "t1", "scored", {"rubric": rub(1.0), "dual": dual(5, 4)}, {"edit_type": "Charts"}),
        _line("a", "t2", "scored", {"rubric": rub(0.5), "dual": dual(2, 3)}, {"edit_type": "Tables"}),
        _line("a", "t3", "scored", {"rubric": rub(1.0), "dual": dual(4, 4)}, {"edit_type": "Tables"}),
        _line("a", "t4", "timeout", {}, {"edit_type": "Tables"}),
    ]
    summary = summarize_results(rows)
    kinds = judge_kinds(rows)
    assert kinds == {"rubric": {"ppteval"}, "dual": {"pptarena"}}
    table = leaderboard_table(summary, kinds)
    row = dict(zip(table.headers, table.rows[0], strict=True))
    # PPT-Eval: success 2 of 4 tasks (the timeout counts), average (1 + 0.5 + 1 + 0) / 4
    assert row["rubric success"].startswith("50.0% [") and row["rubric avg"] == "0.625"
    # PPTArena: IF mean (5+2+4)/3, VQ mean (4+3+4)/3 over the judged pairs, each with its 95% interval
    assert row["dual IF/5"].split(" [")[0] == "3.67" and row["dual VQ/5"].split(" [")[0] == "3.67"
    lo, hi = (float(x) for x in row["dual IF/5"].split(" [")[1].rstrip("]").split(", "))
    assert 2 <= lo <= 3.67 <= hi <= 5
    assert row["errors"] == "timeout 1" and row["tokens"] == "60"
    by_type = {t.title: t for t in breakdown_tables(summary)}["By edit type"]
    cells = {r[0]: r for r in by_type.rows}
    # Tables: rubric over 3 tasks = (0.5 + 1 + 0) / 3; its interval: resamples of all 0s (or 1s) have
    # probability 1/27 > 2.5%, so the 95% percentile interval is exactly [0, 1]
    assert (
        cells["Tables"][1] == "3"
        and cells["Tables"][by_type.headers.index("a · rubric")] == "0.500 [0.000, 1.000]"
    )
    assert "rubric success" in plain_text(table)


@pytest.mark.slow
def test_arena_report_command(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    res = CliRunner().invoke(cli, ["report", str(run_dir), "--no-render"])
    assert res.exit_code == 0, res.output
    assert "Leaderboard" in res.output and f"Report: {run_dir / 'report.html'}" in res.output
    html = (run_dir / "report.html").read_text()
    assert "Change the title to &#x27;New 0&#x27;" in html  # the instruction, from the rebuilt dataset
    assert "rendering disabled" in html
    bad = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert bad.exit_code != 0 and "no results.jsonl" in bad.output


def test_tokens_column_counts_prompt_cache_reads_and_writes_once():
    """Cache reads and writes are parts of the input tokens (pptarena.models.Usage): the leaderboard
    adds input and output tokens only, the agent's and the judges'."""
    usage = {
        "input_tokens": 1000,
        "output_tokens": 10,
        "cached_input_tokens": 300,
        "cache_write_input_tokens": 500,
        "cache_write_1h_input_tokens": 200,
        "judge_input_tokens": 4,
        "judge_output_tokens": 1,
        "judge_cache_write_input_tokens": 4,
        "calls": 3,
    }
    line = _line("a", "t1", "scored", {}, {}, usage)
    row = dict(
        zip(*(lambda t: (t.headers, t.rows[0]))(leaderboard_table(summarize_results([line]))), strict=True)
    )
    assert row["tokens"] == "1015"


def _costed(agent, task, cost):
    line = _line(agent, task, "scored", {}, {})
    line.cost = cost
    return line


def test_local_models_show_as_local_free_and_caching_savings_are_said():
    from pptarena.models.pricing import pair_cost
    from pptarena.report.tables import cost_table
    from pptarena.run.folder.summary_record import Summary

    local = {"usd": 0.0, "known_usd": 0.0, "unpriced_models": [], "local_models": ["local/llama3"]}
    paid = {"usd": 0.02, "known_usd": 0.02, "unpriced_models": [], "cache_saved_usd": 0.005}
    rows = [
        _costed("on-prem", "t1", pair_cost(local, {"vlm": local})),
        _costed("cloud", "t1", pair_cost(paid, {"vlm": local})),
        _costed("cloud", "t2", pair_cost(paid, {"vlm": None})),
    ]
    summary = summarize_results(rows)
    assert summary.cost["local_models"] == ["local/llama3"]
    assert summary.cost["cache_saved_usd"] == pytest.approx(0.01) and summary.cache_saved_usd() == 0.01
    board = leaderboard_table(summary)
    cells = {r[0]: dict(zip(board.headers, r, strict=True)) for r in board.rows}
    assert cells["on-prem"]["cost"] == "local (free)" and cells["cloud"]["cost"] == "$0.0400"
    assert "prompt caching saved $0.0100 over the run" in board.note
    assert "local (free): local/llama3 on a local server" in board.note
    costs = cost_table(summary)
    assert costs.headers[-1] == "prompt caching saved"
    by_agent = {r[0]: r for r in costs.rows}
    assert by_agent["on-prem"][1:] == ["local (free)", "local (free)", "local (free)", "–"]
    assert by_agent["cloud"][-2:] == ["$0.0400", "$0.0100"] and by_agent["(run)"][-1] == "$0.0100"
    # a summary.json from before these fields: read as before, no caching column, no note
    old = Summary.model_validate(
        {"judges": [], "agents": {"a": {"cost": {"usd": 0.5, "known_usd": 0.5, "unpriced_models": []}}}}
        | {"cost": {"usd": 0.5, "known_usd": 0.5, "unpriced_models": [], "agent": None, "judges": {}}}
    )
    assert old.cache_saved_usd() == 0.0
    assert "caching" not in leaderboard_table(old).note and "caching" not in cost_table(old).headers[-1]
    assert old.to_json()["cost"] == {
        "usd": 0.5,
        "known_usd": 0.5,
        "unpriced_models": [],
        "agent": None,
        "judges": {},
    }
