"""Epochs, cost and budgets, and pinned judges through the runner, with the scripted backend as the model."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from pptarena.report.rescore import Rescorer
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.folder.fingerprint import JudgeChangedError
from pptarena.run.runner import Runner
from tests.support.config import fake_dataset, fake_run_toml, use, write_run_config


def rows_of(run_dir: Path) -> list[dict]:
    latest = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        latest[(r["agent"], r["task_id"], r.get("epoch", 1))] = r
    return list(latest.values())


def write(tmp_path: Path, count: int, agents: list, **parts) -> Path:
    """run.toml: ``agents`` on the fake dataset of ``count`` tasks (``parts``: the rest of the config)."""
    return write_run_config(tmp_path / "run.toml", fake_run_toml(count, agents, **parts))


@pytest.mark.slow
def test_epochs_give_pass_at_k_and_reuse_deterministic_agents(tmp_path, fake_plugins):
    rng = random.Random(5)
    outcomes = {i: [rng.random() < 0.5 for _ in range(3)] for i in range(2)}
    outcomes[0][0], outcomes[1][0] = True, False  # both outcomes occur
    rules = [
        {"match": f"New {i}", "reply": [f"New {i}" if ok else "Wrong" for ok in oks]}
        for i, oks in outcomes.items()
    ]
    cfg = write(
        tmp_path,
        2,
        [use("asker", model="scripted/echo-1"), "noop"],
        run={"epochs": 2, "bootstrap": 200},
        backends={"scripted": {"state_file": str(tmp_path / "state.json"), "rules": rules}},
    )
    out = tmp_path / "out"
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    assert len(rows_of(out)) == 8
    # resume with a third epoch: only epoch 3 runs; the scripted answers continue where they stopped
    summary = Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True, epochs=3).run()
    rows = rows_of(out)
    assert len(rows) == 12
    asker = {(r["task_id"], r["epoch"]): r["scores"]["title"]["score"] for r in rows if r["agent"] == "asker"}
    assert asker == {
        (f"task-0{i}", e + 1): (1.0 if ok else 0.0) for i, oks in outcomes.items() for e, ok in enumerate(oks)
    }
    # folders: epoch 1 where it always was, later epochs suffixed; noop ran once and was reused
    assert (out / "tasks/asker/task-00/prediction.pptx").is_file()
    assert (out / "tasks/asker/task-00@e3/prediction.pptx").is_file()
    assert not (out / "tasks/noop/task-00@e2").exists()
    noop = sorted((r for r in rows if r["agent"] == "noop"), key=lambda r: (r["task_id"], r["epoch"]))
    assert [r.get("reused_from_epoch") for r in noop] == [None, 1, 1, None, 1, 1]
    block = summary.agents["asker"].judges["title"]
    for k in (1, 2, 3):
        expect = sum(any(s) for oks in outcomes.values() for s in itertools.combinations(oks, k))
        expect /= sum(1 for oks in outcomes.values() for _ in itertools.combinations(oks, k))
        assert block.epochs.pass_at_k[str(k)].value == pytest.approx(expect, abs=1e-4)
        hat = sum(all(s) for oks in outcomes.values() for s in itertools.combinations(oks, k))
        hat /= sum(1 for oks in outcomes.values() for _ in itertools.combinations(oks, k))
        assert block.epochs.pass_hat_k[str(k)].value == pytest.approx(hat, abs=1e-4)
    assert block.mean_all == pytest.approx(sum(sum(o) / 3 for o in outcomes.values()) / 2, abs=1e-4)
    assert summary.agents["noop"].judges["title"].epochs.consistency == 1.0
    assert summary.agents["asker"].tasks == 2 and summary.agents["asker"].attempts == 6
    assert "asker|noop" in summary.comparisons["title"]
    # a re-score judges the noop's epoch 1 once and copies it to its reused epochs
    Rescorer(out, get_registry(), name="again").run()
    rescored = rows_of(out / "rescore/again")
    assert len(rescored) == 12 and not (out / "rescore/again/tasks/noop/task-00@e2").exists()
    assert sorted(r.get("reused_from_epoch") or 0 for r in rescored if r["agent"] == "noop") == [
        0,
        0,
        1,
        1,
        1,
        1,
    ]
    assert (out / "rescore/again/tasks/asker/task-00@e3/verdicts.json").is_file()
    # the scripted backend is free by default: known cost 0, never unknown; worker agents report
    # their calls' cost
    assert summary.cost["usd"] == 0.0
    assert all(r["cost"]["agent"]["usd"] == 0.0 for r in rows if r["agent"] == "asker")


PRICED = {  # $1000 per million input tokens, 1000 tokens a call: $1 a call
    "scripted": {
        "responses": [{"reply": "x", "input_tokens": 1000, "output_tokens": 10}],
        "on_exhausted": "repeat_last",
        "pricing": {"echo-1": {"input": 1000.0, "output": 0.0}},
    }
}
ASKER = use("asker-inproc", model="scripted/echo-1")


def priced_config(tmp_path: Path, max_cost: float, jobs: int, count: int = 6) -> Path:
    run = {"jobs": jobs, "max_cost": max_cost, "bootstrap": 50}
    return write(tmp_path, count, [ASKER], run=run, backends=PRICED)


@pytest.mark.slow
def test_cost_per_call_pair_agent_and_run(tmp_path, fake_plugins):
    cfg = priced_config(tmp_path, 100.0, 1, count=2)
    summary = Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    row = rows_of(tmp_path / "out")[0]
    # 1000 input tokens at $1000 per million = $1 per call; output tokens are free in this table
    assert (
        row["cost"]["usd"] == 1.0
        and row["cost"]["agent"]["usd"] == 1.0
        and row["cost"]["judges"]["title"]["usd"] == 0.0
    )
    log = [
        json.loads(line)
        for line in (tmp_path / "out/tasks/asker-inproc/task-00/agent.log.jsonl").read_text().splitlines()
    ]
    assert [e["cost_usd"] for e in log if e.get("event") == "model_call"] == [1.0]
    assert summary.agents["asker-inproc"].cost["usd"] == 2.0 and summary.cost["usd"] == 2.0


def test_unknown_price_is_unknown_not_zero(tmp_path, fake_plugins):
    cfg = write(
        tmp_path,
        1,
        [use("asker-inproc", model="openai/no-such-model")],
        backends={
            "openai": {
                "base_url": "https://llm.example.com/v1",
                "api_key": "x",
                "max_retries": 0,
                "timeout": 2,
            }
        },
    )
    # price calls as the openai backend configured above would (no call is made; a remote server:
    # on a local one a model without a price is free, see tests/models/test_pricing.py)
    from pptarena.models import Usage
    from pptarena.models.pricing import call_cost, cost_of_rows, fmt_usd

    backend = type("B", (), {"options": load_config(cfg, get_registry()).backends["openai"].options})()
    assert call_cost(backend, "no-such-model", Usage(input_tokens=10, output_tokens=5)) is None
    assert call_cost(
        backend, "gpt-4o-mini-2024-07-18", Usage(input_tokens=1_000_000, output_tokens=0)
    ) == pytest.approx(0.15)
    from pptarena.run.folder.records import ResultRow

    def line(cost, usage):
        return ResultRow.from_json(
            {"agent": "a", "task_id": "t", "status": "scored", "cost": cost, "usage": usage}
        )

    total = cost_of_rows(
        [
            line({"usd": None, "known_usd": 0.5, "unpriced_models": ["openai/no-such-model"]}, {}),
            line({"usd": 0.25, "known_usd": 0.25, "unpriced_models": []}, {}),
        ]
    )
    assert total["usd"] is None and total["known_usd"] == 0.75
    # a line from before cost accounting that used tokens: unknown, for the run and for its agent
    old = cost_of_rows([line(None, {"input_tokens": 10}), line(None, {})])
    assert old["usd"] is None and old["agent"]["usd"] is None and old["unpriced_models"] == ["(not recorded)"]
    assert fmt_usd(total).startswith("≥ $0.75") and "unknown" in fmt_usd(total)


@pytest.mark.slow
def test_max_cost_stops_starting_pairs_and_resume_keeps_the_budget(tmp_path, fake_plugins):
    out = tmp_path / "one"
    runner = Runner(
        load_config(priced_config(tmp_path, 2.5, 1), get_registry()), get_registry(), out, quiet=True
    )
    summary = runner.run()
    # $1 per pair, one at a time: after pairs 1, 2 ($2 < $2.5) a third starts; after it ($3) none
    assert len(rows_of(out)) == 3 and summary.budget["stopped"] and summary.budget["not_started"] == 3
    assert "Budget reached" in runner.budget.message()
    assert json.loads((out / "manifest.json").read_text())["finished_at"] is None
    # resuming under the same budget starts nothing; a larger one continues from what was spent
    Runner(
        load_config(priced_config(tmp_path, 2.5, 1), get_registry()), get_registry(), out, quiet=True
    ).run()
    assert len(rows_of(out)) == 3
    Runner(
        load_config(priced_config(tmp_path, 2.5, 1), get_registry()),
        get_registry(),
        out,
        quiet=True,
        max_cost=5,
    ).run()
    assert len(rows_of(out)) == 5


@pytest.mark.slow
def test_max_cost_finishes_pairs_in_flight(tmp_path, fake_plugins):
    out = tmp_path / "two"
    Runner(
        load_config(priced_config(tmp_path, 2.5, 2), get_registry()), get_registry(), out, quiet=True
    ).run()
    rows = rows_of(out)
    # two in flight: finishes 1 and 2 start 3 and 4; after 3 ($3) no fifth starts, but 4 completes
    assert len(rows) == 4 and all(r["status"] == "scored" and r["cost"]["usd"] == 1.0 for r in rows)


def test_changed_judge_prompt_is_refused_on_resume_and_rescore(tmp_path, fake_plugins, monkeypatch):
    import fakeplugins

    cfg = write(tmp_path, 2, ["noop"], run={"limit": 1})
    out = tmp_path / "out"
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    manifest = json.loads((out / "manifest.json").read_text())
    fp = manifest["judge_fingerprints"]["title"]
    assert (
        fp["component"].endswith(":title")
        and fp["prompts_sha"]
        and rows_of(out)[0]["scores"]["title"]["fingerprint"] == fp["id"]
    )
    verdicts = json.loads((out / "tasks/noop/task-00/verdicts.json").read_text())
    assert verdicts["verdicts"]["title"]["fingerprint"] == fp["id"]
    Rescorer(out, get_registry(), name="again").run()
    monkeypatch.setattr(fakeplugins, "PROMPT", "Compare the titles, strictly.")
    write(tmp_path, 2, ["noop"])  # no limit: new work would be pending
    with pytest.raises(JudgeChangedError, match=r"judge 'title' \(differs in prompts_sha.*arena rescore"):
        Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    assert len(rows_of(out)) == 1
    with pytest.raises(JudgeChangedError, match="--out NEW_NAME"):
        Rescorer(out, get_registry(), name="again").run()
    # a new re-score folder takes the new judge
    Rescorer(out, get_registry(), name="strict").run()
    assert rows_of(out / "rescore/strict")[0]["scores"]["title"]["fingerprint"] != fp["id"]


@pytest.mark.slow
def test_cli_epochs_and_max_cost_then_report(tmp_path, fake_plugins):
    from click.testing import CliRunner

    from pptarena.cli.main import cli
    from pptarena.report.html import write_report

    cfg = write(tmp_path, 3, [ASKER, "noop"], run={"bootstrap": 100}, backends=PRICED)
    out = tmp_path / "cli"
    res = CliRunner().invoke(
        cli,
        [
            "run",
            "--config",
            str(cfg),
            "--out",
            str(out),
            "--epochs",
            "2",
            "--max-cost",
            "4.5",
            "--quiet",
            "--no-report",
        ],
    )
    assert res.exit_code == 5, res.output  # stopped by --max-cost before every pair ran (exit_codes)
    text = res.output + (getattr(res, "stderr", "") or "")
    assert "Budget reached: $5.0000 spent of max_cost $4.5000" in text
    rows = rows_of(out)
    # jobs = 1: the asker's attempts cost $1 each, the noop's nothing; epoch 1 of all pairs first
    asker = [r for r in rows if r["agent"] == "asker-inproc"]
    assert len(asker) == 5 and {r["epoch"] for r in asker} == {1, 2}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["epochs"] == 2 and manifest["max_cost"] == 4.5
    html = write_report(out, render=False).read_text()
    assert "Paired comparison · title" in html and "Judge fingerprints" in html
    assert manifest["judge_fingerprints"]["title"]["id"] in html
    assert "Cost (USD)" in html and "$5.00" in html and "2 attempts (shown: epoch 1" in html
    # each later attempt has its own folded section: its folder, its verdicts, or the reused line
    later = [r for r in rows if r["epoch"] == 2]
    sections = html.split('<details class="attempt">')[1:]
    assert len(sections) == len(later) >= 2
    asker_e2 = next(x for x in sections if "@e2</code>" in x and "titles compared" in x)
    assert "epoch 2:" in asker_e2
    assert any("a deterministic agent: epoch 1's result, reused" in x for x in sections)
    assert "title pass@2" in html
    assert "<title>95% interval" in html  # the score histograms draw each mean's interval
    assert manifest["budget"]["stopped"] and manifest["budget"]["not_started"] == 1
    assert "spent $5.0000 of max_cost $4.5000 (budget reached: 1 attempts not started)" in html
    # a large run's index page opens like the single page: fingerprints, budget, intervals, comparisons
    index = write_report(out, render=False, layout="pages").read_text()
    assert "Judge fingerprints" in index and manifest["judge_fingerprints"]["title"]["id"] in index
    assert "spent $5.0000 of max_cost $4.5000 (budget reached: 1 attempts not started)" in index
    assert "Paired comparison · title" in index and "Cost (USD)" in index and "title pass@2" in index


def test_changing_prices_does_not_block_resume():
    from pptarena.run.folder.resume import resume_conflicts

    before = {"backends": {"openai": {"cache": True, "pricing": {"gpt-5.2": {"input": 1.0, "output": 2.0}}}}}
    after = {"backends": {"openai": {"cache": True, "pricing": {"gpt-5.2": {"input": 1.75, "output": 14.0}}}}}
    assert resume_conflicts(before, after) == []
    assert resume_conflicts(before, {"backends": {"openai": {"cache": False}}}) == ["[backends] differs"]


def test_fingerprint_follows_options_backend_sampling_and_prompts(tmp_path, fake_plugins):
    import pptarena.plugins.judges.dual.prompts as prompts
    from pptarena.run.configuration.components import Components
    from pptarena.run.folder.fingerprint import judge_fingerprint

    def fingerprint(judge: dict, temperature: float = 0.0) -> dict:
        cfg = write(
            tmp_path, 1, ["noop"], judges=[judge], backends={"scripted": {"temperature": temperature}}
        )
        config = load_config(cfg, get_registry())
        judge = Components(config, get_registry()).build(config.judges[0])
        assert prompts in type(judge).fingerprint_modules  # the dual judge's prompts are hashed
        return judge_fingerprint(config.judges[0], judge, config.backends)

    dual = use("dual", model="scripted/judge-1")
    base = fingerprint(dual)
    assert base["component"].endswith(":dual") and base["models"] == ["scripted/judge-1"] and base["version"]
    assert (
        base["backend_sampling"] == {"scripted": {"temperature": 0.0}}
        and base["options"]["temperature"] == 0.0
    )
    assert fingerprint(dual)["id"] == base["id"]  # stable
    assert fingerprint(dual, temperature=0.7)["id"] != base["id"]  # the backend's sampling default
    assert fingerprint({**dual, "max_tokens": 64})["id"] != base["id"]  # the judge's own options
    assert fingerprint({**dual, "model": "scripted/judge-2"})["id"] != base["id"]  # the model


def test_epochs_of_a_session_keep_their_own_turn_folders(tmp_path, fake_plugins):
    """Attempt 2 of a multi-turn session must not reuse (and so delete) attempt 1's turn folders."""
    cfg = write(tmp_path, 1, ["slowcopy"], run={"epochs": 2}, dataset=fake_dataset(1, turns=2))
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["epoch"] for r in rows) == [1, 2] and all(r["status"] == "scored" for r in rows)
    agent_dir = tmp_path / "out" / "tasks" / "slowcopy"
    for turn in (0, 1):
        assert (agent_dir / f"task-00--turn-{turn}" / "prediction.pptx").is_file()
        assert (agent_dir / f"task-00--turn-{turn}@e2" / "prediction.pptx").is_file()
    for row in rows:
        assert all((tmp_path / "out" / t["prediction"]).is_file() for t in row["turns"])


def test_files_an_agent_writes_during_a_session_turn_are_redacted(tmp_path, fake_plugins, monkeypatch):
    """The attack: an agent writes a key into its turn folder; as for a single-turn pair, no file of
    the run keeps it."""
    secret = "sk-test-session-0123456789abcdef"
    monkeypatch.setenv("PPTARENA_TEST_API_KEY", secret)
    # trusted: in the harness's process the agent can read the key (a jailed one never has it)
    cfg = write(tmp_path, 1, [use("leaky", trusted=True)], dataset=fake_dataset(1, turns=2))
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    transcripts = sorted((tmp_path / "out" / "tasks" / "leaky").glob("*/transcript.txt"))
    assert len(transcripts) == 2
    assert all(t.read_text() == "key=***\n" for t in transcripts)


@pytest.mark.slow
def test_max_cost_counts_every_turn_of_a_session(tmp_path, fake_plugins):
    """The attack: a paid agent on multi-turn sessions (PPTC) spends past ``max_cost`` when a session's
    line carries no cost. Each turn costs $1 here, so a two-turn session costs $2: after sessions 1
    and 2 ($2, then $4 > $2.5) no third may start."""
    cfg = write(
        tmp_path,
        6,
        [ASKER],
        run={"jobs": 1, "max_cost": 2.5, "bootstrap": 50},
        dataset=fake_dataset(6, turns=2),
        backends=PRICED,
    )
    summary = Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    rows = rows_of(tmp_path / "out")
    assert len(rows) == 2 and summary.budget["stopped"] and summary.budget["not_started"] == 4
    for row in rows:
        assert row["cost"]["usd"] == 2.0 and row["cost"]["agent"]["usd"] == 2.0
        assert [t["cost"]["usd"] for t in row["turns"]] == [1.0, 1.0]
        assert row["usage"]["calls"] == 2 and row["isolation"] == row["turns"][0]["isolation"]
    assert summary.cost["usd"] == 4.0


def test_a_failing_turn_is_recorded_like_a_failing_pair(tmp_path, fake_plugins):
    """A turn is an ordinary attempt: the agent's traceback lands in the turn's folder, the session
    stops there with the turn's status, and the turn's isolation and cost are on the line."""
    cfg = write(tmp_path, 1, ["crash"], dataset=fake_dataset(1, turns=3))
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    (row,) = rows_of(tmp_path / "out")
    assert row["status"] == "agent_error" and row["error"].startswith("turn 0: RuntimeError: agent bug")
    assert [t["turn"] for t in row["turns"]] == [0] and row["turns"][0]["status"] == "agent_error"
    assert row["isolation"] and row["cost"] is not None and "scores" in row
    trace = tmp_path / "out/tasks/crash/task-00--turn-0/agent.error.txt"
    assert "RuntimeError: agent bug" in trace.read_text()
