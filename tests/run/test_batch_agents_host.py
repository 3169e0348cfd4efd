"""``arena run --batch`` with the built-in ``code`` agent (``loops = 0``: one call per attempt, so
batched by default) placed on the host: its call goes from its worker process (the ``local``
executor's warm pool, or one fresh interpreter per pair with ``pool = false``) to the run's batch
queue through the batch service, out to the provider simulator as a batch job through the official
Anthropic SDK. The batch takes longer than the task timeout and the pair is still scored (waiting on
a batch is not the agent's time), at the batch price.

The timeout leaves room for a loaded machine: a fresh worker's start (imports, plugins, config) and the
agent's own work count against it; only the batch's delay, longer than the timeout, must not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pptarena.models.sim import ProviderSim, Rule, SimConfig
from pptarena.run.folder.rundir import BATCHES
from tests.support.agents_fixtures import FIX_QBR_TYPOS
from tests.support.config import run_toml, use, write_run_config
from tests.support.paths import ROOT
from tests.support.report_fixtures import jsonl_of

pytestmark = pytest.mark.slow

MODEL = "anthropic/claude-sonnet-4-5"
TIMEOUT = 25.0
DELAY = 35.0


def run_batch(tmp_path: Path, sim: ProviderSim, executor: object) -> subprocess.CompletedProcess:
    cfg = write_run_config(
        tmp_path / "run.toml",
        run_toml(
            run={
                "jobs": 1,
                "tasks": ["qbr-fix-typos"],
                "task_timeout": TIMEOUT,
                "batch_poll": 0.3,
                "batch_quiet": 0.5,
            },
            dataset="demo",
            agents=[use("code", label="fixer", model=MODEL, loops=0, render_check=False, max_images=0)],
            backends={"anthropic": {"base_url": sim.url, "api_key": {"env": "PPTARENA_SIM_KEY"}}},
            renderer="libreoffice",
            judges=["structural"],
            executor=executor,
        ),
    )
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(tmp_path / "run")]
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PPTARENA_SIM_KEY": "sk-sim-test", "TMPDIR": str(tmp_path / "tmp")}
    return subprocess.run([*cmd, "--batch"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)


@pytest.mark.parametrize("pool", [True, False], ids=["warm-pool", "worker-per-pair"])
def test_a_host_agent_waits_on_its_batch_past_its_timeout_and_is_scored_at_batch_price(tmp_path, pool):
    rules = [Rule(match=".", reply=FIX_QBR_TYPOS)]
    with ProviderSim(SimConfig(batch_delay=DELAY, rules=rules, seed=7)) as sim:
        done = run_batch(tmp_path, sim, use("local", pool=pool))
        stats = sim.stats()
    out = tmp_path / "run"
    assert done.returncode == 0, done.stderr[-3000:]
    rows = jsonl_of(out / "results.jsonl")
    assert [(r["agent"], r["task_id"], r["status"]) for r in rows] == [
        ("fixer", "qbr-fix-typos", "scored")
    ], [r.get("error") for r in rows]
    # the agent's one call went out in a batch job, none to the synchronous endpoint
    entries = jsonl_of(out / BATCHES)
    submitted = [e for e in entries if e["op"] == "submitted"]
    assert [len(e["custom_ids"]) for e in submitted] == [1]
    assert [e["op"] for e in entries if e.get("custom_id") in submitted[0]["custom_ids"]] == ["result"]
    assert stats["batches_submitted"] == 1
    assert not [p for p in stats["by_path"] if p.rstrip("/").endswith("/v1/messages")], stats["by_path"]
    # the batch took longer than the task timeout: the pair's log says how long it waited
    log = jsonl_of(out / "tasks" / "fixer" / "qbr-fix-typos" / "agent.log.jsonl")
    waits = [e for e in log if e.get("event") == "batch_wait"]
    assert waits and waits[0]["seconds"] >= DELAY > TIMEOUT, waits
    # priced at the batch rate: half of what the same usage costs at the standard one
    from pptarena.models.messages import Usage
    from pptarena.models.pricing import bundled_prices

    price = bundled_prices()["claude-sonnet-4-5"]
    row = rows[0]
    usage = Usage.from_dict({k: v for k, v in row["usage"].items() if not k.startswith("judge_")})
    assert usage.input_tokens > 0
    standard = price.cost(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
    assert row["cost"]["agent"]["usd"] == pytest.approx(standard / 2, abs=1e-6)
    assert abs(row["cost"]["agent"]["usd"] - standard) > 10e-6
    # the run served its batch queue from a private folder, gone with the run
    assert not list((tmp_path / "tmp").glob("pptarena-batches-*"))


# --------------------------------------------------------------------------- the worker's moving deadline


def test_a_worker_per_pair_is_not_stopped_while_its_pair_waits_on_a_batch(tmp_path):
    """run_in_session's deadline moves by the seconds the pair waited (from the call on)."""
    from pptarena.run.batches import BatchWait
    from pptarena.trust.procs import run_in_session

    marker = tmp_path / "finished"
    argv = [
        sys.executable,
        "-c",
        f"import time, pathlib; time.sleep(2.5); pathlib.Path({str(marker)!r}).touch()",
    ]
    earlier = BatchWait()  # a wait before the worker started does not move its deadline
    earlier.begin()
    earlier.end()
    waiting = BatchWait()
    waiting.begin()  # the pair's call waits on a batch the whole time
    try:
        code, timed_out = run_in_session(
            argv, cwd=tmp_path, env=None, stdout=None, stderr=None, timeout=1.0, paused=waiting.seconds
        )
    finally:
        waiting.end()
    assert (code, timed_out) == (0, False) and marker.exists()
    marker.unlink()
    code, timed_out = run_in_session(
        argv, cwd=tmp_path, env=None, stdout=None, stderr=None, timeout=1.0, paused=earlier.seconds
    )
    assert (code, timed_out) == (None, True) and not marker.exists()
    with pytest.raises(ValueError, match="paused"):
        run_in_session(
            argv,
            cwd=tmp_path,
            env=None,
            stdout=None,
            stderr=None,
            timeout=1.0,
            stdin_bytes=b"",
            paused=earlier.seconds,
        )


def test_a_batched_pair_waiting_for_a_pool_worker_gives_its_slot_back(tmp_path):
    """One agent slot and one worker: pair A holds the worker while its call waits on a batch (its slot
    given back), pair B takes the slot and waits for the worker. A's answer needs the slot to go on: B
    must give it back while it waits for a worker, or neither ever goes on. The pool and the launcher
    are the real ones; the worker stands in for a process whose call waits on a batch."""
    import threading
    from types import SimpleNamespace

    from pptarena.plugins.executors.local.pool import PoolLauncher, WorkerPool
    from pptarena.run.batches import BatchWait, current_wait
    from pptarena.run.folder.records import AgentOutcome
    from pptarena.types import Status

    answered = threading.Event()

    class BatchedWorker:
        """A worker whose pair's call waits on a batch until ``answered`` (its wait told, as the batch
        service tells it; the worker is called in the pair's thread)."""

        pid = 1
        pairs = 0

        def call(self, request, timeout, paused=None):
            wait = current_wait.get()
            wait.begin()
            answered.wait(30)
            wait.end()
            return AgentOutcome.failed(Status.AGENT_ERROR, request["task"]["id"]).to_json()

        def kill(self):
            pass

        def retire(self):
            pass

    class Slots(threading.BoundedSemaphore):
        given_back = 0

        def release(self, n=1):
            Slots.given_back += n
            super().release(n)

    pool = WorkerPool(1, 100, {"strict": False, "manual_plugins": {}})
    pool._spawn = BatchedWorker  # type: ignore[method-assign]
    agent = object()
    config = SimpleNamespace(
        run=SimpleNamespace(task_timeout=60), raw={}, path=tmp_path / "run.toml", agents=[agent]
    )
    launcher = PoolLauncher(pool, config, lambda: False)
    slots = Slots(1)
    errors: dict[str, str] = {}

    def pair(name: str) -> None:
        slots.acquire()  # as Attempts.launch does for a batched agent
        wait = BatchWait(release=slots.release, acquire=slots.acquire)
        token = current_wait.set(wait)
        try:
            task = SimpleNamespace(to_json=lambda: {"id": name})
            ws = SimpleNamespace(
                dir=tmp_path,
                input_deck=tmp_path / "in.pptx",
                output_deck=tmp_path / "out.pptx",
                log=SimpleNamespace(path=tmp_path / "log"),
            )
            errors[name] = launcher(agent, task, ws).error
        finally:
            current_wait.reset(token)
            if wait.close():
                slots.release()

    def given_back(count: int) -> bool:
        deadline = time.monotonic() + 20
        while Slots.given_back < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return Slots.given_back >= count

    a = threading.Thread(target=pair, args=("a",), daemon=True)
    a.start()
    # A gave its slot back twice: while it waited for the (free) worker, and now that its call waits
    assert given_back(2)
    b = threading.Thread(target=pair, args=("b",), daemon=True)
    b.start()
    assert given_back(3), "B kept the slot while it waited for A's worker"
    answered.set()
    a.join(20)
    b.join(20)
    assert errors == {"a": "a", "b": "b"}, "the pairs deadlocked on the slot and the worker"
    assert slots.acquire(timeout=0.1) and not slots.acquire(timeout=0.1)  # one slot, as at the start
    pool.close()
