"""Typed result rows: every reader validates lines, and a wrong-shaped line is one clear message."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.report.data import load_run
from pptarena.run.folder.records import RESULTS_SCHEMA, ResultRow, Status, parse_row
from pptarena.run.folder.results import ResultsStore, read_results

GOOD = {
    "agent": "a",
    "task_id": "t1",
    "status": "scored",
    "scores": {"j": {"score": 0.5, "metrics": {}}},
    "error": None,
    "duration_s": 1.0,
    "usage": {},
    "metadata": {},
}
HOSTILE = [
    '{"agent": "a", "task_id": "t2", "status": "scored", "scores": "garbage"}',
    '{"agent": "a", "task_id": "t3", "status": "scored", "scores": {"j": {"score": NaN}}}',
    '{"agent": "a", "task_id": "t4", "status": "scored", "duration_s": "x"}',
    '{"agent": "a", "task_id": "t5", "status": "won"}',
    '["not", "an", "object"]',
    '{"agent": "a", "task_id": "t6", "status": "scored", "schema_version": 99}',
    "{not json",
]


def write_results(run_dir, lines):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_status_is_an_enum_of_the_five_statuses():
    assert [s.value for s in Status] == ["scored", "agent_error", "timeout", "judge_error", "infra_error"]
    assert parse_row(GOOD).status is Status.SCORED


def test_every_wrong_shaped_line_is_skipped_with_file_and_line(tmp_path):
    write_results(tmp_path, [json.dumps(GOOD), *HOSTILE])
    problems = []
    rows = read_results(tmp_path / "results.jsonl", problems)
    assert [r.task_id for r in rows] == ["t1"]
    assert [p.line for p in problems] == [2, 3, 4, 5, 6, 7, 8]
    text = [str(p) for p in problems]
    assert all(t.startswith(f"{tmp_path / 'results.jsonl'}:") for t in text)
    assert "scores" in text[0] and "finite" in text[1] and "duration_s" in text[2] and "status" in text[3]
    assert "newer pptarena" in text[5]


def test_rows_written_carry_the_schema_version_and_bad_rows_are_refused(tmp_path):
    store = ResultsStore(tmp_path)
    store.append(ResultRow.from_json(GOOD))
    assert json.loads((tmp_path / "results.jsonl").read_text())["schema_version"] == RESULTS_SCHEMA
    with pytest.raises(ValueError, match="status"):  # a wrong value is refused as the attempt sets it
        ResultRow.from_json(GOOD).status = "won"
    forged = ResultRow.from_json(GOOD).model_copy(update={"status": "won"})  # bypasses validation
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="status"):  # ... refused as written
        store.append(forged)
    assert len(store.read()) == 1 and store.read()[0].agent == "a"


def test_report_warns_about_a_garbage_line_instead_of_a_traceback(tmp_path):
    run = tmp_path / "run"
    write_results(run, [json.dumps(GOOD), HOSTILE[0]])
    assert len(load_run(run).problems) == 1
    out = CliRunner().invoke(cli, ["report", str(run), "--no-html"])
    assert out.exit_code == 0, out.output
    assert "skipped a result line" in out.output and "results.jsonl:2" in out.output
    assert "Traceback" not in out.output


def test_meta_eval_says_which_lines_it_skipped(tmp_path):
    from pptarena.report.meta_eval import meta_eval

    run = tmp_path / "run"
    write_results(run, [json.dumps(GOOD), HOSTILE[2]])
    report = meta_eval(run)
    assert report["warnings"] == [
        f"skipped a result line: {run / 'results.jsonl'}:2: duration_s: "
        "Input should be a valid number, unable to parse string as a number"
    ]


def test_agent_outcome_round_trips_through_its_wire_form(tmp_path):
    from pptarena.run.folder.records import AgentOutcome
    from pptarena.types import Prediction, Status

    deck = tmp_path / "p.pptx"
    ok = AgentOutcome(
        Prediction(deck, notes="n", usage={"input_tokens": 3}, metadata={"isolation": "bwrap"}),
        model_usage={"calls": 1},
        model_cost={"usd": 0.5},
    )
    back = AgentOutcome.from_json(json.loads(json.dumps(ok.to_json())))
    assert back == ok and back.ok and back.prediction.path == deck
    failed = AgentOutcome.failed("timeout", "too slow", "Traceback ...")
    back = AgentOutcome.from_json(json.loads(json.dumps(failed.to_json())))
    assert back == failed and not back.ok and back.status is Status.TIMEOUT


@pytest.mark.parametrize(
    "line, message",
    [
        ([1, 2], "expected a JSON object, got list"),
        ({"ok": True}, "ok without a prediction"),
        ({"ok": False, "error": "x"}, "a failure needs a failure status"),
        ({"ok": False, "status": "scored"}, "a failure needs a failure status"),
        ({"ok": False, "status": "exploded"}, "status: Input should be"),
        ({"ok": True, "prediction": {"path": 7}}, "prediction.path: Input should be a valid string"),
        ({"ok": True, "prediction": {}, "model_usage": "lots"}, "model_usage: Input should be a valid dict"),
    ],
)
def test_a_malformed_agent_outcome_is_one_readable_sentence(line, message):
    from pptarena.run.folder.records import AgentOutcome

    with pytest.raises(ValueError) as err:
        AgentOutcome.from_json(line)
    assert message in str(err.value) and "pydantic" not in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------- records that travel


def _demo_lines() -> list[str]:
    from tests.support.paths import FIXTURES

    path = FIXTURES / "summary_pins_demo.jsonl"
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_a_written_line_reads_and_writes_back_byte_for_byte():
    """The on-disk format did not change: every line of a real demo run is the same text after a
    round trip through ResultRow, and an old line (no epoch, no agent_process) gains no field."""
    for text in _demo_lines():
        assert json.dumps(ResultRow.from_json(json.loads(text)).to_line(), ensure_ascii=False) == text
    old = {"agent": "a", "task_id": "t", "status": "scored", "scores": {}}
    row = ResultRow.from_json(old)
    assert row.epoch == 1 and row.agent_process is None and row.key == ("a", "t", 1)
    assert row.to_line() == {**old, "schema_version": RESULTS_SCHEMA}


def test_each_kind_of_row_has_one_constructor(tmp_path):
    store = ResultsStore(tmp_path)
    begun = ResultRow.begin("a", "t", 2, metadata={"category": "x"}, agent_process="jail")
    assert list(begun.to_line())[:4] == ["agent", "task_id", "epoch", "status"]
    assert begun.status is Status.SCORED and begun.agent_process == "jail"
    failed = ResultRow.infra_failure("a", "t", 3, "node lost", duration_s=1.23456, isolation="bwrap")
    assert failed.status is Status.INFRA_ERROR and failed.duration_s == 1.235 and failed.isolation == "bwrap"
    first = ResultRow.from_json(json.loads(_demo_lines()[0]))
    copy = first.reused_copy(2, "d1")
    assert (copy.epoch, copy.reused_from_epoch, copy.reused_digest, copy.usage) == (2, 1, "d1", {})
    assert first.epoch == 1 and first.usage  # the epoch-1 line itself is untouched
    again = first.rescored("judge_error", "boom", {})
    assert again.status is Status.JUDGE_ERROR and again.scores == {} and first.scores
    for row in (begun, failed, copy, again):
        store.append(row)
    assert [r.key for r in store.read()] == [begun.key, failed.key, copy.key, again.key]


def test_a_row_refuses_a_wrong_value_as_it_is_set():
    row = ResultRow.begin("a", "t")
    with pytest.raises(ValueError, match="finite"):
        row.scores = {"j": {"score": float("nan")}}
    with pytest.raises(ValueError, match="epoch"):
        row.epoch = 0


def test_summary_and_manifest_read_and_write_back_the_same_json(tmp_path):
    from pptarena.run.folder.manifest_record import Manifest
    from pptarena.run.folder.results import summarize_results, write_json_atomic
    from pptarena.run.folder.summary_record import Summary
    from pptarena.run.statistics.summary_stats import StatsOptions

    rows = [ResultRow.from_json(json.loads(t)) for t in _demo_lines()]
    summary = summarize_results(rows, opts=StatsOptions(n_boot=200))
    assert summary.agent("oracle").judge("structural").mean == 1.0
    stored = summary.comparison("structural", "oracle", "noop")  # found in either order, as stored
    assert (stored.a, stored.b, stored.diff) == ("noop", "oracle", -1.0)
    write_json_atomic(tmp_path / "summary.json", summary.to_json())
    text = (tmp_path / "summary.json").read_text()
    back = Summary.model_validate(json.loads(text))
    assert json.dumps(back.to_json(), indent=2, ensure_ascii=False) + "\n" == text
    # in the order the runner writes a manifest, with a key a newer pptarena added at the end
    raw = {"schema_version": 1, "config": {"run": {"seed": 3}}, "agents": ["a"], "future_key": {"x": 1}}
    manifest = Manifest.from_json(raw)
    assert manifest.run_table == {"seed": 3} and manifest.to_json() == raw
    assert list(manifest.to_json()) == list(raw)
    assert Manifest.from_json(["not a manifest"]).to_json() == {}


def test_one_definition_of_a_valid_line_for_bytes_and_text():
    """``parse_result_line`` decides for read_results and the view's index: whatever the text form,
    it accepts or refuses a line as Python's JSON + ``parse_row`` does."""
    from pptarena.run.folder.records import parse_result_line

    good = ResultRow.begin("noop", "t1", 1).to_line()
    good_text = json.dumps(good)
    surrogate = good_text.replace('"t1"', '"t\\ud800"')  # only Python's decoder takes a lone surrogate
    lines = [good_text, surrogate, "[1, 2]", "{not json", json.dumps({**good, "epoch": "x"})]
    for text in lines:
        try:
            want = parse_row(json.loads(text))
        except ValueError as exc:
            want = exc
        for raw in (text, text.encode("utf-8", errors="surrogatepass")):
            try:
                got = parse_result_line(raw)
            except ValueError as exc:
                assert isinstance(want, ValueError), (text, exc)
                if not text.startswith("{not"):
                    assert str(exc) == str(want)
            else:
                assert not isinstance(want, ValueError), text
                assert got.model_dump() == want.model_dump()
