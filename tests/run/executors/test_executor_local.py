"""The ``local`` executor's pool of warm agent workers: reuse, recycling, crashes, timeouts, leaks,
config checks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pptarena.run.configuration.config import ConfigError, load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config

pytestmark = pytest.mark.slow


def run(tmp_path: Path, agents: list, count: int = 3, jobs: int = 1, out: str = "out", **parts) -> list[dict]:
    """Runs ``agents`` on the fake dataset (``parts``: more of the config, e.g. ``run``, ``executor``)."""
    cfg = write_run_config(tmp_path / "run.toml", fake_run_toml(count, agents, **parts))
    registry = get_registry()
    Runner(
        load_config(cfg, registry), registry, tmp_path / out, jobs=jobs, quiet=True, allow_weak_isolation=True
    ).run()
    lines = (tmp_path / out / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(autouse=True)
def _plain_workers(monkeypatch):
    """This file tests the pool of plain worker processes (built-in agents that jail their own tools,
    and every agent where weak isolation is allowed): agents are not jailed here
    (tests/security/test_trust_boundary.py tests the jailed workers)."""
    monkeypatch.setenv("PPTARENA_SANDBOX", "off")


def worker_pids(run_dir: Path, agent: str) -> list[int]:
    """The pid that ran each pair of ``agent`` (RetitleAgent logs it), in task order."""
    pids = []
    for task_dir in sorted((run_dir / "tasks" / agent).iterdir()):
        events = [json.loads(line) for line in (task_dir / "agent.log.jsonl").read_text().splitlines()]
        pids.append(next(e["pid"] for e in events if e["event"] == "edit"))
    return pids


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def test_a_budgeted_run_keeps_one_pool_across_its_batches(tmp_path, fake_plugins):
    """Under ``max_cost`` pairs are handed over ``[run] jobs`` at a time: every batch must reuse the
    same warm worker, not start (and leak) a new pool."""
    rows = run(tmp_path, ["retitle"], count=4, run={"max_cost": 100.0})
    assert len(rows) == 4 and all(r["status"] == "scored" for r in rows)
    assert len(set(worker_pids(tmp_path / "out", "retitle"))) == 1


def test_pool_reuses_one_warm_worker_and_recycles_after_n(tmp_path, fake_plugins):
    rows = run(tmp_path, ["retitle"], count=5, out="a")
    assert [r["status"] for r in rows] == ["scored"] * 5
    assert all(r["scores"]["title"]["score"] == 1.0 for r in rows)
    pids = worker_pids(tmp_path / "a", "retitle")
    assert len(set(pids)) == 1 and pids[0] != os.getpid()  # one worker served all five pairs
    assert _wait_dead(pids[0]), "the pool worker outlived the run"

    rows = run(
        tmp_path,
        ["retitle"],
        count=5,
        out="b",
        executor=use("local", recycle_after=2),
    )
    assert len(rows) == 5
    pids = worker_pids(tmp_path / "b", "retitle")
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]


def test_per_pair_interpreter_when_pool_is_off(tmp_path, fake_plugins):
    rows = run(tmp_path, ["retitle"], count=3, executor=use("local", pool=False))
    assert all(r["status"] == "scored" for r in rows)
    assert len(set(worker_pids(tmp_path / "out", "retitle"))) == 3


def test_crashed_worker_is_replaced_and_charged_to_the_agent(tmp_path, fake_plugins):
    rows = run(tmp_path, ["exit", "retitle"], count=2)
    by = {(r["agent"], r["task_id"]): r for r in rows}
    assert len(by) == 4
    for t in ("task-00", "task-01"):
        assert by[("exit", t)]["status"] == "agent_error"
        assert "exited with code 3" in by[("exit", t)]["error"] and "about to die" in by[("exit", t)]["error"]
        assert by[("retitle", t)]["status"] == "scored"
    # what the agent printed stays with its task folder
    assert (
        "about to die" in (tmp_path / "out" / "tasks" / "exit" / "task-00" / "agent.stderr.txt").read_text()
    )


def test_timeout_kills_the_pairs_process_group_and_the_next_pair_gets_a_fresh_worker(tmp_path, fake_plugins):
    pidfile = tmp_path / "child.pid"
    rows = run(
        tmp_path,
        [use("hang", pidfile=str(pidfile)), "retitle"],
        count=1,
        run={"task_timeout": 2},
    )
    by = {r["agent"]: r for r in rows}
    assert by["hang"]["status"] == "timeout" and "task_timeout=2" in by["hang"]["error"]
    assert by["retitle"]["status"] == "scored"
    assert _wait_dead(int(pidfile.read_text())), "the hung agent's child survived the timeout"


def test_a_pair_never_leaks_processes_into_the_next(tmp_path, fake_plugins):
    pidfile = tmp_path / "stray.pid"
    rows = run(tmp_path, [use("stray", pidfile=str(pidfile))], count=1)
    assert rows[0]["status"] == "scored"
    assert _wait_dead(int(pidfile.read_text())), (
        "the background process the agent left behind is still running"
    )


def test_executor_options_are_validated_with_key_paths(tmp_path, fake_plugins):
    cfg = write_run_config(
        tmp_path / "run.toml", fake_run_toml(1, ["noop"], executor=use("local", recycle_afterr=3))
    )
    with pytest.raises(
        ConfigError, match=r"executor\.recycle_afterr: unknown option .*did you mean 'recycle_after'"
    ):
        load_config(cfg, get_registry())
    write_run_config(cfg, fake_run_toml(1, ["noop"], executor="locall"))
    with pytest.raises(
        ConfigError, match=r"(?s)executor\.use = 'locall': unknown executor.*Did you mean: local"
    ):
        load_config(cfg, get_registry())


def test_hook_register_executors(tmp_path, fake_plugins):
    """A third-party executor registered through the hook runs pairs; the runner still writes every
    result once."""
    import types

    import pptarena
    from pptarena.run.executors import Executor

    calls: list[str] = []

    class SerialExecutor(pptarena.Component):
        """Runs pairs one by one in the driver (and hands one back twice, which the runner must ignore)."""

        def execute(self, jobs, run):
            for job in jobs:
                calls.append(job.task.id)
                row = run.compute_pair(job.agent, job.task)
                yield job, row
                yield job, row

        def stop(self):
            pass

        def close(self):
            pass

    plugin = types.SimpleNamespace(
        register_executors=pptarena.hookimpl(lambda register: register("serial", SerialExecutor))
    )
    reg = get_registry()
    reg.register_plugin(plugin, "serial-plugin")
    try:
        assert isinstance(SerialExecutor(None, None), Executor)
        rows = run(tmp_path, ["slowcopy"], count=3, executor="serial")
    finally:
        reg.unregister_plugin("serial-plugin")
    assert calls == ["task-00", "task-01", "task-02"]
    assert sorted(r["task_id"] for r in rows) == calls  # each once, despite the duplicate hand-back
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert any(c["kind"] == "executors" and c["name"] == "serial" for c in manifest["components"])


@pytest.mark.parametrize("pool", [True, False], ids=["warm-pool", "worker-per-pair"])
def test_an_agent_forging_a_malformed_outcome_is_charged_and_the_run_goes_on(tmp_path, fake_plugins, pool):
    """The attack: agent code writes its own "outcome" (a result file, the pool's reply pipe) with a
    wrong shape. The runner validates what it reads through the outcome type: the pair is the
    agent's error, named as such, and the other agent's pairs are scored."""
    executor = None if pool else use("local", pool=False)
    rows = run(tmp_path, ["forger", "retitle"], count=2, executor=executor)
    by_agent = {(r["agent"], r["task_id"]): r for r in rows}
    assert len(by_agent) == 4
    for task in ("task-00", "task-01"):
        forged = by_agent[("forger", task)]
        assert forged["status"] == "agent_error", forged
        assert "malformed outcome" in forged["error"] or "without a result" in forged["error"], forged
        assert by_agent[("retitle", task)]["status"] == "scored"
    assert any("malformed outcome" in by_agent[("forger", t)]["error"] for t in ("task-00", "task-01"))


def test_an_executor_passes_its_launcher_in_and_the_run_keeps_its_own(tmp_path, fake_plugins):
    """Launchers are strategies passed in (issue 24 item 1): an executor's launcher, given through
    ``run.attempts.using``, starts the host agents of the pairs it runs; the run's own attempts are
    untouched by it (a pair run through ``run.attempts`` afterwards gets a fresh per-pair worker)."""
    import pptarena
    from pptarena.run.launchers import WorkerLauncher

    launched: list[str] = []
    plain: list[str] = []

    class CountingExecutor(pptarena.Component):
        """Runs the first pair with its own launcher (a counting per-pair worker), the rest without."""

        def execute(self, jobs, run):
            attempts = run.attempts
            workers = WorkerLauncher(attempts.config, attempts.registry, attempts.strict, attempts.stopping)

            def launcher(agent, task, ws):
                launched.append(task.id)
                return workers(agent, task, ws)

            first, rest = jobs[0], jobs[1:]
            yield first, attempts.using(launcher).run(first.agent, first.task, first.epoch)
            for job in rest:
                plain.append(job.task.id)
                yield job, attempts.run(job.agent, job.task, job.epoch)

        def stop(self):
            pass

        def close(self):
            pass

    # built in the driver only (a per-pair worker re-reads the config, which names no third executor)
    cfg = write_run_config(tmp_path / "run.toml", fake_run_toml(3, ["retitle"]))
    registry = get_registry()
    config = load_config(cfg, registry)
    runner = Runner(config, registry, tmp_path / "out", quiet=True, allow_weak_isolation=True)
    runner.build_executor = lambda: CountingExecutor(None, None)
    runner.run()
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert launched == ["task-00"] and plain == ["task-01", "task-02"]
    assert [r["status"] for r in sorted(rows, key=lambda r: r["task_id"])] == ["scored"] * 3
    pids = worker_pids(tmp_path / "out", "retitle")
    assert len(set(pids)) == 3 and os.getpid() not in pids  # one fresh worker per pair, none in-process
