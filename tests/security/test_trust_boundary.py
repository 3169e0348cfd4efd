"""The trust boundary (issue 23 items 3 and 8): the agent side gets the task without its answer, by
type, runs jailed by default, and weak isolation is refused unless asked for.

Each attack is an agent plugin written the documented way (tests/plugin_modules/boundary_plugins.py)
run through the real runner, real bubblewrap and the real jailed workers; tests that need bubblewrap
skip where it is unusable.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.jail.agent_jail import jail_available
from pptarena.run.jail.agent_view import agent_task, public_metadata
from pptarena.run.runner import Runner
from pptarena.types import AgentTask, Task
from tests.support.config import fake_dataset, fake_run_toml, use, write_run_config
from tests.support.paths import PLUGIN_MODULES

needs_jail = pytest.mark.skipif(not jail_available(), reason="bubblewrap is not usable on this machine")


@pytest.fixture
def plugins(monkeypatch, plugin_modules):
    """tests/plugin_modules/fakeplugins.py and boundary_plugins.py, registered through PPTARENA_PLUGINS."""
    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins,boundary_plugins")
    reset_registry()
    yield
    reset_registry()


def run(tmp_path: Path, agents: list, count: int = 2, renderer: str = "dummy", parts=(), **kw) -> list[dict]:
    """Runs ``agents`` on the fake dataset (``parts``: more of the config, e.g. ``run``, ``executor``)."""
    cfg = write_run_config(
        tmp_path / "run.toml", fake_run_toml(count, agents, renderer=renderer, **dict(parts))
    )
    registry = get_registry()
    Runner(load_config(cfg, registry), registry, tmp_path / "out", quiet=True, **kw).run()
    return [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------- the type


def test_the_agent_view_has_no_answer_fields_and_only_public_metadata(tmp_path):
    names = {f.name for f in dataclasses.fields(AgentTask)}
    assert names == {"id", "instruction", "original", "metadata", "turn_history"}
    task = Task(
        id="t",
        instruction="do it",
        original=tmp_path / "dataset" / "original.pptx",
        target=tmp_path / "dataset" / "target.pptx",
        style_target="the answer in words",
        rubric={"root": {}},
        metadata={
            "category": ["content"],
            "difficulty": "easy",
            "osworld": {"evaluator": {"expected": "/cache/target.pptx"}},
            "pptc": {"api_sequence": "the answer"},
            "turns": [{"instruction": "x", "target": "/cache/turn-target.pptx"}],
            "turn_history": [{"turn": 0, "instruction": "first", "target": "/cache/t0.pptx"}],
            "notes_dir": "/cache/notes",
            "public": ["hint_text"],
            "hint_text": "look at slide 2",
        },
    )
    view = agent_task(task, tmp_path / "ws" / "input" / "original.pptx")
    with pytest.raises(AttributeError):
        view.target  # noqa: B018 - the attack: the field does not exist
    with pytest.raises((AttributeError, TypeError)):
        view.target = task.target  # frozen, slotted: nothing can be attached either
    assert view.original == tmp_path / "ws" / "input" / "original.pptx"  # the agent's copy, not the dataset's
    assert view.metadata == {
        "category": ["content"],
        "difficulty": "easy",
        "hint_text": "look at slide 2",
        "turn_history": [{"turn": 0, "instruction": "first"}],
    }
    assert view.turn_history == ({"turn": 0, "instruction": "first"},)
    text = json.dumps(view.to_json())
    for secret in ("/cache", "the answer", str(tmp_path / "dataset")):
        assert secret not in text
    assert public_metadata({"turns": [1], "rubric": 2}) == {}


def test_the_jail_binds_no_plugin_folder_but_a_builtin_agents_own(tmp_path, plugins):
    """What a jailed worker sees of ``pptarena.plugins``: for a built-in agent its package's
    ``__init__`` and ``agents/`` only, for a third-party agent nothing; in a wheel install (plugins
    inside the pptarena folder) the rest of the pptarena folder stays bound."""
    import importlib.util

    from pptarena.run.jail.agent_jail import _hide, plugin_paths

    root = Path(next(iter(importlib.util.find_spec("pptarena.plugins").submodule_search_locations)))
    builtin, _ = plugin_paths("pptarena.plugins.agents.baselines", builtin=True)
    assert [p for p in builtin if p == root or root in p.parents] == [root / "__init__.py", root / "agents"]
    third, pythonpath = plugin_paths("boundary_plugins")
    assert not [p for p in third if p == root or root in p.parents]
    assert PLUGIN_MODULES / "boundary_plugins.py" in third and pythonpath == (PLUGIN_MODULES,)
    wheel = tmp_path / "site-packages" / "pptarena"
    for part in ("run", "plugins/agents", "plugins/datasets"):
        (wheel / part).mkdir(parents=True)
    for f in ("__init__.py", "plugins/__init__.py"):
        (wheel / f).write_text("")
    assert _hide({wheel, tmp_path / "other"}, wheel / "plugins") == {
        wheel / "__init__.py",
        wheel / "run",
        tmp_path / "other",
    }


# ---------------------------------------------------------------- the attacks


@needs_jail
def test_an_agent_plugin_copying_task_target_fails_and_never_scores(tmp_path, plugins):
    """The attack of item 3: an agent plugin written the documented way copies ``task.target``.
    Jailed (default) and trusted in-process, it gets an AttributeError: agent_error, never 1.0; the
    trusted one's rows say isolation none even though it claims bwrap in its prediction metadata."""
    rows = run(
        tmp_path,
        ["target-copier", use("target-copier", label="trusted-copier", trusted=True)],
    )
    assert len(rows) == 4
    for row in rows:
        assert row["status"] == "agent_error", row
        assert "AttributeError" in row["error"] and "target" in row["error"]
        assert not row["scores"]
    by_agent = {r["agent"]: r for r in rows}
    assert by_agent["target-copier"]["isolation"] == "bwrap"
    assert by_agent["target-copier"]["agent_process"] == "jail"
    assert by_agent["trusted-copier"]["isolation"] == "none"
    assert by_agent["trusted-copier"]["agent_process"] == "in-process"


@needs_jail
def test_an_agent_hunting_for_the_answer_finds_nothing_in_its_jail(tmp_path, plugins):
    """The attack: walk the task object, its metadata, every JSON file around the workspace (a worker's
    spec file), the environment and the whole visible file system for the target deck."""
    rows = run(tmp_path, ["answer-hunter"])
    for row in rows:
        assert row["status"] == "scored" and row["scores"]["title"]["score"] == 0.0, row
        assert row["isolation"] == "bwrap"
    seen = json.loads((tmp_path / "out/tasks/answer-hunter/task-00/seen.json").read_text())
    assert seen["found"] == []
    assert seen["task_fields"] == ["id", "instruction", "metadata", "original", "turn_history"]
    assert seen["task"]["original"].startswith("/agent/")  # its own copy, not a dataset path
    data = str(tmp_path / "data")
    assert data not in json.dumps(seen)
    assert set(seen["environ"]) <= {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PWD",
        "LC_CTYPE",
    }


@pytest.mark.parametrize("pool", ["false", "true"])
def test_the_spec_file_a_plain_worker_gets_holds_no_answer(tmp_path, plugins, monkeypatch, pool):
    """A plain worker (here: weak isolation allowed) gets the view too: one interpreter per pair is
    started with a spec file in the task folder, which the agent reads; a warm pool worker gets it
    on a pipe. Neither the spec nor the task object names the target."""
    monkeypatch.setenv("PPTARENA_SANDBOX", "off")
    rows = run(
        tmp_path,
        [use("answer-hunter", walk=False)],
        parts={"executor": use("local", pool=pool == "true")},
        allow_weak_isolation=True,
    )
    for row in rows:
        assert row["status"] == "scored" and row["scores"]["title"]["score"] == 0.0, row
        assert row["isolation"] == "none" and row["agent_process"] == "unjailed"
    seen = json.loads((tmp_path / "out/tasks/answer-hunter/task-00/seen.json").read_text())
    specs = [text for name, text in seen["spec_files"].items() if name.endswith(".worker-spec.json")]
    assert len(specs) == (1 if pool == "false" else 0), seen["spec_files"].keys()  # the attack read it
    target = str(tmp_path / "data" / "t0" / "target.pptx")
    for spec in specs:
        assert target not in spec and '"target"' not in spec
    assert seen["found"] == [] and "target" not in seen["task_fields"]


@needs_jail
def test_each_turn_of_a_session_gets_its_history_and_no_target(tmp_path, plugins):
    """Multi-turn sessions: each turn's agent gets the earlier turns' instructions, never the turns'
    targets (``metadata["turns"]`` stays on the judges' side)."""
    cfg = write_run_config(
        tmp_path / "run.toml", fake_run_toml(agents=["answer-hunter"], dataset=fake_dataset(1, turns=2))
    )
    registry = get_registry()
    Runner(load_config(cfg, registry), registry, tmp_path / "out", quiet=True).run()
    seen = json.loads((tmp_path / "out/tasks/answer-hunter/task-00--turn-1/seen.json").read_text())
    assert seen["found"] == []
    assert seen["task"]["turn_history"] == [{"turn": 0, "instruction": "Turn 0: change the title to 'New 0'"}]
    assert "turns" not in seen["task"]["metadata"] and seen["task"]["metadata"]["turn"] == 1
    assert str(tmp_path / "data") not in json.dumps(seen["task"])


@needs_jail
def test_an_agent_importing_the_datasets_code_gets_module_not_found(tmp_path, plugins):
    """The attack of item 2 through an agent plugin: import the demo dataset's task table inside the
    worker and apply the task's own edit (byte-identical slides to the target on the old code)."""
    cache = tmp_path / "cache"
    cfg = write_run_config(
        tmp_path / "demo.toml",
        run={"cache_dir": str(cache)},
        dataset=use("demo", ids=["qbr-fix-typos"]),
        renderer="dummy",
        judges=["same-slides"],
        agents=["dataset-importer", "oracle"],
    )
    registry = get_registry()
    Runner(load_config(cfg, registry), registry, tmp_path / "out", quiet=True).run()
    rows = {r["agent"]: r for r in map(json.loads, (tmp_path / "out/results.jsonl").read_text().splitlines())}
    assert rows["oracle"]["scores"]["same-slides"]["score"] == 1.0  # the judge does see a copied answer
    assert rows["oracle"]["agent_process"] == "reference" and rows["oracle"]["isolation"] == "none"
    from pptarena.report.tables import leaderboard_table
    from pptarena.run.folder.summary_record import Summary

    board = leaderboard_table(Summary.model_validate(json.loads((tmp_path / "out/summary.json").read_text())))
    cells = {row[0]: row[1] for row in board.rows}
    assert cells == {"oracle": "none (reference)", "dataset-importer": "bwrap"}  # the leaderboard says so
    attack = rows["dataset-importer"]
    assert attack["status"] == "agent_error" and not attack["scores"], attack
    assert "ModuleNotFoundError" in attack["error"] and "pptarena.plugins" in attack["error"]


def _arena(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pptarena.cli.main", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_weak_isolation_is_refused_without_the_flag_and_said_everywhere_with_it(tmp_path, plugins):
    """Item 8: without bubblewrap (PPTARENA_SANDBOX=off) a run of an untrusted agent stops before any
    pair with one line naming the fix; with --allow-weak-isolation it runs and the leaderboard,
    summary.json, manifest.json and every row say isolation none."""
    write_run_config(tmp_path / "run.toml", fake_run_toml(1, [use("answer-hunter", walk=False)]))
    env = {"PPTARENA_SANDBOX": "off"}
    refused = _arena(["run", "--config", "run.toml", "--out", "out", "--no-report"], tmp_path, env)
    assert refused.returncode != 0
    error = [line for line in refused.stderr.splitlines() if "refusing" in line]
    assert len(error) == 1 and "--allow-weak-isolation" in error[0] and "answer-hunter" in error[0]
    assert not (tmp_path / "out").exists()  # refused before any run folder is made
    allowed = _arena(
        ["run", "--config", "run.toml", "--out", "out", "--no-report", "--allow-weak-isolation"],
        tmp_path,
        env,
    )
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert "runs without a sandbox" in allowed.stderr
    header = next(line for line in allowed.stdout.splitlines() if line.startswith("agent "))
    board = next(line for line in allowed.stdout.splitlines() if line.startswith("answer-hunter "))
    assert header.split()[1] == "isolation" and board.split()[1] == "none"
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert summary["agents"]["answer-hunter"]["isolation"] == "none"
    for record in (summary["isolation"], manifest["isolation"]):
        assert record["allow_weak_isolation"] is True and record["agent_jail"] is False
        assert record["agents"] == {"answer-hunter": "unjailed"}
    row = json.loads((tmp_path / "out/results.jsonl").read_text().splitlines()[0])
    assert row["isolation"] == "none"


def test_trusted_and_reference_agents_run_where_bubblewrap_is_missing(tmp_path, plugins, monkeypatch):
    """Only agents that run untrusted code need bubblewrap: a run of trusted and reference agents and
    the built-in noop (it runs no untrusted code) starts; noop then runs unjailed and says so."""
    monkeypatch.setenv("PPTARENA_SANDBOX", "off")
    rows = run(
        tmp_path,
        [use("retitle", trusted=True), "oracle", "noop"],
        count=1,
    )
    assert {(r["agent"], r["isolation"], r["agent_process"], r["status"]) for r in rows} == {
        ("retitle", "none", "in-process", "scored"),
        ("oracle", "none", "reference", "scored"),
        ("noop", "none", "unjailed", "scored"),
    }


# ---------------------------------------------------------------- the jailed workers


def _host_processes(name: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == name:
                    found.append(int(pid))
            except OSError:
                pass
    return found


@needs_jail
def test_a_jailed_pair_that_hangs_is_stopped_with_everything_it_started(tmp_path, plugins):
    from boundary_plugins import MARKER

    tag = f"hang{os.getpid()}"
    rows = run(
        tmp_path,
        [use("lingerer", hang=True, tag=tag)],
        count=1,
        parts={"run": {"task_timeout": 4}},
    )
    assert rows[0]["status"] == "timeout" and "task_timeout=4" in rows[0]["error"]
    deadline = time.monotonic() + 5
    while _host_processes(f"{MARKER}-{tag}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _host_processes(f"{MARKER}-{tag}") == [], "a setsid child of the jailed agent survived"


@needs_jail
def test_jailed_workers_are_reused_never_leak_into_the_next_pair_and_crashes_are_the_agents(
    tmp_path, plugins
):
    from boundary_plugins import MARKER

    tag = f"stray{os.getpid()}"
    rows = run(tmp_path, [use("lingerer", tag=tag), "exit"], count=3)
    lingerer = sorted((r for r in rows if r["agent"] == "lingerer"), key=lambda r: r["task_id"])
    assert [r["scores"]["title"]["score"] for r in lingerer] == [1.0, 1.0, 1.0]
    events = [
        next(
            e
            for e in map(json.loads, (tmp_path / f"out/tasks/lingerer/{r['task_id']}/agent.log.jsonl").open())
            if e["event"] == "lingerer"
        )
        for r in lingerer
    ]
    assert len({e["worker"] for e in events}) == 1  # one warm jailed worker ran the three pairs
    assert [e["leftovers_running"] for e in events] == [0, 0, 0]  # each pair's setsid child was killed
    for r in (r for r in rows if r["agent"] == "exit"):  # prints, then kills its own worker
        assert (
            r["status"] == "agent_error"
            and "exited with code 3" in r["error"]
            and "about to die" in r["error"]
        )
    assert _host_processes(f"{MARKER}-{tag}") == []


@needs_jail
def test_a_jailed_agent_calls_its_own_models_only(tmp_path, plugins):
    """Through the bridge a jailed agent reaches the models its options name (counted on the host),
    not another configured model such as a judge's."""
    rows = run(
        tmp_path,
        [
            use("asker", model="scripted/echo-1"),
            use("judge-model-caller", model="scripted/echo-1", other="scripted/judge-1"),
        ],
        count=1,
        parts={"backends": {"scripted": {"responses": ["New 0"], "on_exhausted": "repeat_last"}}},
    )
    by = {r["agent"]: r for r in rows}
    assert by["asker"]["scores"]["title"]["score"] == 1.0 and by["asker"]["agent_process"] == "jail"
    assert by["asker"]["usage"]["calls"] == 1  # counted by the harness's client
    caller = by["judge-model-caller"]
    assert caller["status"] == "agent_error" and "'scripted/judge-1' is not named" in caller["error"], caller


@needs_jail
def test_a_jailed_agent_renders_through_the_bridge(tmp_path, plugins):
    rows = run(tmp_path, ["rendering"], count=1, renderer="boxes")
    assert rows[0]["status"] == "scored", rows[0]
    assert rows[0]["isolation"] == "bwrap"
    renders = sorted((tmp_path / "out/tasks/rendering/task-00/renders-mine").glob("*.png"))
    assert [p.name for p in renders] == ["slide-001.png"]


@needs_jail
def test_a_fork_bomb_in_a_jailed_worker_stops_at_its_process_cap(tmp_path, plugins):
    """Item 7 for the agent's own jail: 1,500 processes as root stop at the worker's cgroup cap."""
    from pptarena.run.jail.agent_jail import MAX_PROCESSES
    from pptarena.trust.limits import limits_level

    if limits_level() not in ("cgroup1", "cgroup2"):
        pytest.skip(f"no pids cgroup here ({limits_level()}): the jailed worker runs without a process cap")
    rows = run(tmp_path, ["forker"], count=1)
    assert rows[0]["status"] == "scored", rows[0]
    log = (tmp_path / "out/tasks/forker/task-00/agent.log.jsonl").read_text().splitlines()
    forks = next(e for e in map(json.loads, log) if e["event"] == "forks")
    assert forks["started"] < MAX_PROCESSES and forks["error"], forks


@needs_jail
def test_a_bridge_call_never_holds_a_pair_past_its_timeout(tmp_path, plugins):
    """A render (or model call) the harness makes for a jailed agent that outlasts the pair's
    task_timeout: the pair ends as a timeout at its deadline, not when the call returns."""
    t0 = time.monotonic()
    rows = run(
        tmp_path,
        ["rendering"],
        count=1,
        renderer="slow",
        parts={"run": {"task_timeout": 3}},
    )
    assert rows[0]["status"] == "timeout", rows[0]
    assert rows[0]["duration_s"] < 15, rows[0]["duration_s"]  # the render takes 30 s
    assert time.monotonic() - t0 < 60
