"""Issue 31 items 4 and 5: what an agent claims is checked, and the bridge's side doors are shut.

Each test is the attack, played by an agent plugin written the documented way
(tests/plugin_modules/claims_plugins.py) through the real runner and jailed workers, or by a worker
process speaking the jail protocol:

A. a ``Prediction.usage`` of -10,000,000 tokens went into the row and the leaderboard;
B. an agent raising :class:`pptarena.InfraError` for its own failure was counted as the harness's;
C. the bridge answered the judge's model because the agent plugin's Options *default* named it;
D. renders a jailed agent asked for filled the persistent render cache without a cap;
E. the hand-back reader rescanned the protocol line on every pipe read (quadratic in its size).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.jail.agent_jail import jail_available
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config

needs_jail = pytest.mark.skipif(not jail_available(), reason="bubblewrap is not usable on this machine")

JUDGE_MODEL = "scripted/judge-1"
SCRIPTED = {
    "responses": ["New 0"],
    "on_exhausted": "repeat_last",
    "rules": [{"match": ".", "model": "^down$", "reply": {"error": "fatal", "message": "provider down"}}],
}
"""The run's model backend: every model answers "New 0" but ``scripted/down``, which fails."""


@pytest.fixture
def plugins(fake_plugins, monkeypatch):
    """``fake_plugins`` and tests/plugin_modules/claims_plugins.py (PPTARENA_PLUGINS)."""
    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins,claims_plugins")
    reset_registry()


def run(tmp_path: Path, agents: list, judges=("title",), renderer="dummy", **kw) -> dict[str, dict]:
    """Runs ``agents`` on one task of the fake dataset with the scripted backend; rows by agent."""
    text = fake_run_toml(1, agents, judges=judges, renderer=renderer, backends={"scripted": SCRIPTED})
    cfg = write_run_config(tmp_path / "run.toml", text)
    registry = get_registry()
    Runner(load_config(cfg, registry), registry, tmp_path / "out", quiet=True, **kw).run()
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    return {r["agent"]: r for r in map(json.loads, lines)}


def log_events(tmp_path: Path, agent: str, event: str) -> list[dict]:
    """The ``event`` lines of ``agent``'s log on the one task."""
    log = tmp_path / "out" / "tasks" / agent / "task-00" / "agent.log.jsonl"
    return [e for e in map(json.loads, log.read_text().splitlines()) if e.get("event") == event]


# ---------------------------------------------------------------- A. usage claims


@needs_jail
def test_a_usage_claim_never_reaches_usage_cost_or_the_summary(tmp_path, plugins):
    """Attack: hand in ``usage = {"input_tokens": -10_000_000, ...}`` (jailed, and trusted in-process).
    Before: the row's and the summary's input tokens went negative. Now the row's usage is what the
    harness counted (one call), the claim is kept apart as ``reported_usage`` (its one plausible
    count), and the refused values are named in the agent's log."""
    rows = run(
        tmp_path,
        [
            use("usage-liar", model="scripted/echo-1"),
            use("usage-liar", label="trusted-liar", model="scripted/echo-1", trusted=True),
        ],
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for label, row in rows.items():
        assert row["status"] == "scored", row
        assert row["usage"]["calls"] == 1 and row["usage"]["input_tokens"] > 0, row["usage"]
        assert all(v >= 0 for v in row["usage"].values()), row["usage"]
        assert "reasoning_tokens" not in row["usage"] and row["usage"]["output_tokens"] < 1000
        assert row["reported_usage"] == {"reasoning_tokens": 7}
        usage = summary["agents"][label]["usage"]
        assert usage["input_tokens"] == row["usage"]["input_tokens"] and usage["calls"] == 1, usage
        (note,) = log_events(tmp_path, label, "reported_usage_refused")
        assert sorted(note["refused"]) == ["cached_input_tokens", "calls", "input_tokens", "output_tokens"]


def test_reported_usage_keeps_plausible_counts_only():
    from pptarena.run.folder.records import MAX_REPORTED_COUNT, reported_usage

    kept, refused = reported_usage(
        {"a": 1, "b": -1, "c": 2.0, "d": "3", "e": True, "f": MAX_REPORTED_COUNT + 1, "g": None, "h": 0}
    )
    assert kept == {"a": 1, "h": 0}
    assert sorted(refused) == ["b", "c", "d", "e", "f", "g"]
    assert reported_usage("lots") == ({}, ["(not a mapping: str)"])
    many, refused = reported_usage({f"k{i}": 1 for i in range(1000)})
    assert len(many) == 64 and refused == ["(936 more keys)"]


def test_result_lines_without_reported_usage_read_and_bad_ones_are_refused():
    from pptarena.run.folder.records import ResultRow, parse_row

    old = {"agent": "a", "task_id": "t", "status": "scored", "usage": {"calls": 1}, "schema_version": 1}
    row = parse_row(old)
    assert row.reported_usage is None and "reported_usage" not in row.to_line()
    assert "reported_usage" not in row.to_json()  # an old line's digest stays what it was
    with pytest.raises(ValueError, match="reported_usage"):
        parse_row({**old, "reported_usage": {"input_tokens": -5}})
    fresh = ResultRow.begin("a", "t")
    fresh.reported_usage = {"output_tokens": 3}
    assert fresh.to_line()["reported_usage"] == {"output_tokens": 3}
    assert fresh.reused_copy(2, "d").reported_usage is None


# ---------------------------------------------------------------- B. InfraError as an excuse


@needs_jail
def test_a_jailed_agent_raising_infra_error_for_its_own_failure_is_an_agent_error(tmp_path, plugins):
    """Attack: raise ``pptarena.InfraError`` to have a failure counted as the harness's (and re-run
    by --retry-errors). Before: status infra_error. Now agent_error, the message says why; a failure
    the harness itself saw (the model backend failing on its side of the bridge) stays infra_error."""
    rows = run(
        tmp_path,
        ["infra-excuse", use("infra-excuse", label="really-down", model="scripted/down")],
        retry_errors=True,
    )
    excuse = rows["infra-excuse"]
    assert excuse["status"] == "agent_error", excuse
    assert "honest" in excuse["error"] and "saw no infrastructure failure" in excuse["error"]
    assert rows["really-down"]["status"] == "infra_error", rows["really-down"]
    assert "provider down" in rows["really-down"]["error"]


def test_a_worker_reported_status_is_decided_on_the_host():
    """A forged outcome (status infra_error or timeout, from a worker that imported nothing, or an
    agent writing to the protocol itself) is the agent's, unless the bridge saw infrastructure fail."""
    from pptarena.run.folder.records import AgentOutcome
    from pptarena.run.jail.bridge import BridgeHost
    from pptarena.run.jail.jail_pool import host_decided
    from pptarena.types import AgentLog, InfraError, Status

    def host(failing: bool) -> BridgeHost:
        def model(ref):
            raise InfraError("backend unreachable")

        bridge = BridgeHost(model, None, AgentLog(None), models={"b/m"})
        if failing:
            bridge.handle({"op": "model", "id": 1, "ref": "b/m", "messages": [], "params": {}})
        return bridge

    for claimed in (Status.INFRA_ERROR, Status.TIMEOUT, Status.JUDGE_ERROR, Status.AGENT_ERROR):
        decided = host_decided(AgentOutcome.failed(claimed, "ImportError: no module"), host(False))
        assert decided.status == Status.AGENT_ERROR, claimed
        assert "ImportError: no module" in decided.error
    kept = host_decided(AgentOutcome.failed(Status.INFRA_ERROR, "ModelError: x"), host(True))
    assert kept.status == Status.INFRA_ERROR and "backend unreachable" in kept.error


# ---------------------------------------------------------------- C. the model allow-list


@needs_jail
def test_a_jailed_agent_cannot_call_the_judges_model_its_plugin_default_names(tmp_path, plugins):
    """Attack: a plugin whose Options *default* is the judge's model; the config table names none.
    Before: the bridge answered it (the defaults were on the allow-list). Now the call is refused
    with a message naming the model and why; an agent whose table names the judge's model itself
    (the user's choice) is answered."""
    rows = run(
        tmp_path,
        ["default-model-caller", use("default-model-caller", label="named", model=JUDGE_MODEL)],
        judges=[use("model-judge", model=JUDGE_MODEL)],
    )
    caller = rows["default-model-caller"]
    assert caller["status"] == "agent_error", caller
    assert f"'{JUDGE_MODEL}' is not named in this agent's config table" in caller["error"]
    assert "a judge of this run uses it" in caller["error"]
    assert caller["usage"].get("calls", 0) == 0  # the backend was never asked
    named = rows["named"]
    assert named["status"] == "scored" and named["usage"]["calls"] == 1, named


def test_the_allow_list_is_the_models_the_config_table_names():
    from pptarena import ModelRef
    from pptarena.run.configuration.config import ComponentConfig
    from pptarena.run.jail.jail_pool import table_models
    from pptarena.types import Options

    class Opts(Options):
        model: ModelRef = "b/default"
        helper: ModelRef | None = None
        extra: list[ModelRef] = ["b/listed-default"]

    def agent(table):
        options = Opts.model_validate({k: v for k, v in table.items() if k != "use"})
        return ComponentConfig("agents", "x", "x", options, table, "agents[0]")

    assert table_models(agent({"use": "x"})) == set()
    assert table_models(agent({"use": "x", "helper": "b/h", "extra": ["b/1", "b/2"]})) == {
        "b/h",
        "b/1",
        "b/2",
    }
    assert table_models(agent({"use": "x", "model": "b/default"})) == {"b/default"}


# ---------------------------------------------------------------- D. the render cache


def persistent_renders() -> list[Path]:
    """Entries of the persistent render cache (``$PPTARENA_CACHE/renders``)."""
    root = Path(os.environ["PPTARENA_CACHE"]) / "renders"
    return sorted(p for p in root.glob("*/*") if p.is_dir()) if root.is_dir() else []


@needs_jail
def test_renders_a_jailed_agent_asks_for_never_fill_the_persistent_cache(tmp_path, plugins):
    """Attack: render 40 distinct decks through the bridge (a renderer caching like LibreOffice's).
    Before: 40 new entries in the persistent render cache, kept after the run. Now they go to the
    run's own capped cache, which is gone when the run ends."""
    from pptarena.run.jail import bridge

    before = persistent_renders()
    made: list[Path] = []
    real = bridge.AgentRenders._folder

    def spy(self):
        folder = real(self)
        made.append(folder)
        return folder

    bridge.AgentRenders._folder = spy  # type: ignore[method-assign]
    try:
        rows = run(tmp_path, [use("render-flooder", count=40)], renderer="caching-boxes")
    finally:
        bridge.AgentRenders._folder = real  # type: ignore[method-assign]
    assert rows["render-flooder"]["status"] == "scored", rows["render-flooder"]
    assert log_events(tmp_path, "render-flooder", "flood")[0]["rendered"] == 40
    assert persistent_renders() == before
    assert made and not any(folder.exists() for folder in made)


def test_a_host_placed_agents_renders_never_fill_the_persistent_cache(tmp_path, plugins, monkeypatch):
    """The worker that runs built-in host agents (``code``, ``hybrid``, ``tools``, ``command`` with its
    deck tools' host render service) hands the agent a render cache of the pair's own, removed when
    the pair ends: never the persistent cache that other pairs' and the judges' renders are in.
    Attack: 12 distinct renders through ``pptarena.run.worker.execute`` (the pool worker's entry)."""
    from pptx import Presentation

    from pptarena.run.jail import bridge
    from pptarena.run.worker import execute, workspace_spec
    from pptarena.types import AgentLog, AgentTask, Workspace

    monkeypatch.setenv("PPTARENA_CACHE", str(tmp_path / "cache"))
    text = fake_run_toml(1, [use("render-flooder", count=12)], renderer="caching-boxes")
    cfg = write_run_config(tmp_path / "run.toml", text)
    registry = get_registry()
    config = load_config(cfg, registry)
    pair = tmp_path / "pair"
    pair.mkdir()
    deck = pair / "input.pptx"
    Presentation().save(str(deck))
    ws = Workspace(pair, deck, pair / "out.pptx", None, None, AgentLog(pair / "agent.log.jsonl"))  # type: ignore[arg-type]
    made: list[Path] = []
    real = bridge.AgentRenders._folder

    def spy(self):
        made.append(real(self))
        return made[-1]

    monkeypatch.setattr(bridge.AgentRenders, "_folder", spy)
    before = persistent_renders()
    task = AgentTask(id="task-00", instruction="x", original=deck)
    spec = {"agent_index": 0, "task": task.to_json(), "workspace": workspace_spec(ws), "timeout": 60}
    outcome = execute(spec, registry=registry, config=config)
    assert outcome.prediction is not None, outcome.error
    flood = [json.loads(line) for line in (pair / "agent.log.jsonl").read_text().splitlines()]
    assert [e["rendered"] for e in flood if e["event"] == "flood"] == [12]
    assert persistent_renders() == before
    assert len(made) == 1 and not made[0].exists()  # the pair's own cache, gone with the pair


def test_the_per_run_render_cache_is_capped_and_removed_on_close(tmp_path, plugins):
    """40 distinct renders of ~800 KB each (31 MB) into a run cache capped at 4 MB: it never holds
    more than the cap, the persistent cache gets nothing, and closing removes the folder."""
    from claims_plugins import CachingBoxes
    from pptx import Presentation

    from pptarena.run.jail.bridge import AgentRenders, renderer_caching_in
    from pptarena.types import ComponentContext

    cap = 4 * 1024 * 1024
    context = ComponentContext(cache_dir=tmp_path / "persistent", model=None)  # type: ignore[arg-type]
    build = renderer_caching_in(CachingBoxes, CachingBoxes.Options(size=512), context)
    renders = AgentRenders(build, cap_bytes=cap)
    deck = tmp_path / "d.pptx"
    for i in range(40):
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = f"deck {i}"
        prs.save(str(deck))
        images = renders.render(deck, tmp_path / "out")
        assert len(images) == 1
        held = sum(f.stat().st_size for f in renders.folder.rglob("*") if f.is_file())
        assert held <= cap, (i, held)
    assert not (tmp_path / "persistent" / "renders").exists()
    folder = renders.folder
    renders.close()
    assert not folder.exists()
    renders.close()  # twice is fine


# ---------------------------------------------------------------- E. the hand-back reader

READER_CHILD = r"""
import json, os, sys, time
from pptarena.run.jail.jail_pool import JailWorker
size = int(sys.argv[1])
script = (
    'echo "{\\"ready\\": true}"; printf "{\\"op\\": \\"done\\", \\"archive\\": \\""; '
    f'head -c {size} /dev/zero | tr "\\0" A; echo "\\"}}"'
)
worker = JailWorker(["/bin/sh", "-c", script], dict(os.environ))
cpu0, wall0 = time.process_time(), time.perf_counter()
message = worker.read(time.monotonic() + 3600)
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
worker.retire()
scanned = getattr(worker, "scanned", None)  # the reader before issue 31 did not count
print(json.dumps({"op": message["op"], "length": len(message["archive"]), "scanned": scanned,
                  "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}))
"""
"""A harness reading one ``done`` line with a ``sys.argv[1]``-byte archive from a stand-in worker
(``/bin/sh``); prints what it read, the bytes it searched for the line's end and its CPU and wall
time as JSON (also run by benchmarks/handback_bench.py)."""


def read_reply_line(size: int) -> dict:
    """:data:`READER_CHILD` for a ``size``-byte archive in a fresh interpreter; what it printed."""
    out = subprocess.run(
        [sys.executable, "-c", READER_CHILD, str(size)], capture_output=True, text=True, timeout=3600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_a_500_mb_reply_line_is_read_in_linear_time():
    """Attack: the worker's ``done`` line holds a 500 MB archive. Before: the reader searched the
    whole buffer for the end of the line after every pipe read (on the 2-core VM: 80 MB 4 s, 200 MB
    29 s, 500 MB 200 s of harness CPU). Now each byte is searched once: the bytes scanned equal the
    line's length, and the CPU time stays far below the quadratic reader's (4 s: BENCHMARKS.md)."""
    size = 500_000_000
    read = read_reply_line(size)
    assert read["op"] == "done" and read["length"] == size
    line = size + len('{"op": "done", "archive": ""}') + 1
    assert read["scanned"] <= line + len('{"ready": true}') + 1, (read, line)
    assert read["cpu_s"] < 60, f"reading the line took {read['cpu_s']} s of harness CPU"
