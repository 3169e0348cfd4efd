"""A row's ``tools``: the MCP servers an attempt had and the tool calls it made.

Filled from ``Prediction.metadata["tools"]`` when it has the checked shape (bounded names and
counts); a malformed record is dropped whole with a log line and the row is written all the same.
Old lines without the field read as before and digest as before. Summaries group the rows that
record tools by ``mcp_servers``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pptarena.run.attempt import keep_tools
from pptarena.run.folder.records import (
    MAX_REPORTED_COUNT,
    MAX_TOOL_NAMES,
    MAX_TOOL_SERVERS,
    MAX_TOOL_TEXT,
    ResultRow,
    parse_row,
    tools_usage,
)
from pptarena.run.folder.results import ResultsStore, mcp_servers_key, rows_source, summarize_results
from pptarena.types import AgentLog, Prediction

RECORD = {
    "servers": [
        {"name": "deck", "version": "1.0", "command_sha": None},
        {"name": "pptx", "version": None, "command_sha": "0123456789abcdef"},
    ],
    "calls": {"deck_summary": 2, "pptx__open": 1},
    "errors": 1,
    "renders": 3,
}
OLD_LINE = {
    "agent": "a",
    "task_id": "t1",
    "status": "scored",
    "scores": {"j": {"score": 0.5, "metrics": {}}},
    "error": None,
    "duration_s": 1.0,
    "usage": {},
    "metadata": {},
}


def test_a_well_formed_record_is_kept_as_it_is():
    assert tools_usage(RECORD) == (RECORD, "")
    assert tools_usage({}) == ({"servers": [], "calls": {}, "errors": 0, "renders": 0}, "")
    assert tools_usage(None) == (None, "")


@pytest.mark.parametrize(
    ("claimed", "why"),
    [
        ("deck", "not a mapping"),
        ({**RECORD, "secret": 1}, "unknown keys"),
        ({**RECORD, "errors": -1}, "counts"),
        ({**RECORD, "renders": True}, "counts"),
        ({**RECORD, "renders": MAX_REPORTED_COUNT + 1}, "counts"),
        ({**RECORD, "calls": {"t": 1.5}}, "calls"),
        ({**RECORD, "calls": {"x" * (MAX_TOOL_TEXT + 1): 1}}, "calls"),
        ({**RECORD, "calls": {f"t{i}": 1 for i in range(MAX_TOOL_NAMES + 1)}}, "calls"),
        ({**RECORD, "servers": [{"name": f"s{i}"} for i in range(MAX_TOOL_SERVERS + 1)]}, "servers"),
        ({**RECORD, "servers": [{"name": ""}]}, "server entry"),
        ({**RECORD, "servers": [{"name": "s", "version": 3}]}, "server entry"),
        ({**RECORD, "servers": [{"name": "s"}, {"name": "s"}]}, "named twice"),
        ({**RECORD, "servers": "deck"}, "servers"),
    ],
)
def test_a_malformed_record_is_refused_whole(claimed, why):
    kept, said = tools_usage(claimed)
    assert kept is None and why in said


def test_the_row_field_parses_and_refuses_a_wrong_shape():
    row = parse_row({**OLD_LINE, "tools": RECORD})
    assert row.tools == RECORD
    assert row.to_line()["tools"] == RECORD
    with pytest.raises(ValueError, match="tools"):
        parse_row({**OLD_LINE, "tools": {**RECORD, "errors": -3}})
    # tools_usage fills a server entry's missing optional keys; a line must hold the kept shape itself
    short = {"servers": [{"name": "s"}], "calls": {}, "errors": 0, "renders": 0}
    assert tools_usage(short)[0]["servers"] == [{"name": "s", "version": None, "command_sha": None}]
    with pytest.raises(ValueError, match="tools"):
        parse_row({**OLD_LINE, "tools": short})


def test_old_lines_without_tools_read_and_digest_as_before(tmp_path):
    row = parse_row(dict(OLD_LINE))
    assert row.tools is None
    line = row.to_line()
    assert "tools" not in line
    digest_before = rows_source([row])["sha256"]
    (tmp_path / "results.jsonl").write_text(json.dumps(OLD_LINE) + "\n")
    (read,) = ResultsStore(tmp_path).read()
    assert read.tools is None and rows_source([read])["sha256"] == digest_before
    # the digest leaves the absent field out: the same as a row that never had it
    with_tools = parse_row({**OLD_LINE, "tools": RECORD})
    assert rows_source([with_tools])["sha256"] != digest_before


def test_keep_tools_fills_the_row_or_drops_a_bad_record_with_a_note(tmp_path):
    log = AgentLog(None)
    row = ResultRow.begin("a", "t1")
    keep_tools(row, Prediction(path=Path("x.pptx"), metadata={"tools": RECORD}), log)
    assert row.tools == RECORD and not log.events

    bad = ResultRow.begin("a", "t1")
    keep_tools(bad, Prediction(path=Path("x.pptx"), metadata={"tools": {"calls": {"t": -1}}}), log)
    assert bad.tools is None
    (event,) = log.events
    assert event["event"] == "tools_record_refused" and "calls" in event["reason"]

    none = ResultRow.begin("a", "t1")
    keep_tools(none, Prediction(path=Path("x.pptx"), metadata={"other": 1}), log)
    assert none.tools is None and len(log.events) == 1


def scored(agent: str, task: str, score: float, tools: dict | None) -> ResultRow:
    return parse_row(
        {**OLD_LINE, "agent": agent, "task_id": task, "scores": {"j": {"score": score}}, "tools": tools}
    )


def with_servers(*names: str) -> dict:
    return {
        "servers": [{"name": n, "version": None, "command_sha": None} for n in names],
        "calls": {},
        "errors": 0,
        "renders": 0,
    }


def test_the_summary_groups_rows_by_their_servers():
    rows = [
        scored("tools", "t1", 1.0, with_servers("pptx", "deck")),
        scored("tools", "t2", 0.5, with_servers("deck", "pptx")),
        scored("tools", "t3", 0.0, with_servers()),
        scored("hybrid", "t1", 1.0, None),
    ]
    assert [mcp_servers_key(r) for r in rows] == ["deck+pptx", "deck+pptx", "none", None]
    summary = summarize_results(rows).to_json()
    groups = summary["agents"]["tools"]["groups"]["mcp_servers"]
    assert set(groups) == {"deck+pptx", "none"}
    assert groups["deck+pptx"]["tasks"] == 2 and groups["none"]["tasks"] == 1
    assert groups["deck+pptx"]["judges"]["j"]["mean_all"] == pytest.approx(0.75)
    # an agent whose rows record no tools gets no such group (its summary is as before)
    assert "mcp_servers" not in summary["agents"]["hybrid"]["groups"]
