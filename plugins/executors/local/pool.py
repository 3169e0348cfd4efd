"""A pool of long-lived agent worker processes (the driver's side of :mod:`.pool_worker`).

Workers are spawned on demand up to ``size``, each in a session of its own,
load the plugins once and run one pair at a time. A worker is replaced after
``recycle_after`` pairs, when it crashes, and when a pair overruns its
timeout: then its whole process group (the worker, the agent and anything the
agent started in that group) is killed.

A batched agent (``arena run --batch``) waits for its calls' batch jobs in its worker: the pair's
wait (:data:`pptarena.run.current_wait`) is registered with the run's batch service under the
worker's pid for the pair, and the worker's deadline moves by the seconds waited.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from pptarena.run import (
    AGENT_STDERR,
    AgentOutcome,
    PoolOwner,
    current_wait,
    reported_outcome,
    timed_out_outcome,
    vanished_outcome,
    workspace_spec,
)
from pptarena.run import WorkerPool as SharedWorkerPool
from pptarena.trust.procs import close_pipes, kill_group, moving_deadline
from pptarena.types import AgentTask, InfraError, Status, Workspace

BOOT_TIMEOUT = 120.0
WORKER_MODULE = "pptarena.plugins.executors.local.pool_worker"


class WorkerCrashed(Exception):
    """The worker process ended without answering."""


class PoolWorker:
    """One worker process and its protocol pipes."""

    def __init__(self, boot: dict[str, Any], env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, json.dumps(boot)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        self.pairs = 0
        self._buf = b""
        try:
            ready = self._read_line(moving_deadline(BOOT_TIMEOUT))
        except WorkerCrashed as exc:
            self.kill()
            raise InfraError(
                f"agent worker exited while loading plugins (code {self.proc.returncode})"
            ) from exc
        if ready is None:
            self.kill()
            raise InfraError(f"agent worker did not start within {BOOT_TIMEOUT:g}s")

    @property
    def pid(self) -> int:
        """The worker's process id (also its process group id)."""
        return self.proc.pid

    def _read_line(self, deadline: Callable[[], float]) -> dict[str, Any] | None:
        """The next message, None at ``deadline()`` (read again each time it comes: it may have
        moved); raises :class:`WorkerCrashed` on end of output."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline() - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerCrashed()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def call(
        self, request: dict[str, Any], timeout: float, paused: Callable[[], float] | None = None
    ) -> dict[str, Any] | None:
        """Run one pair; its outcome, or None on timeout (``timeout`` seconds, plus what ``paused()``,
        the seconds the pair waited on batch jobs, grew by during the call). Raises :class:`WorkerCrashed`."""
        assert self.proc.stdin is not None
        self.pairs += 1
        try:
            self.proc.stdin.write(json.dumps(request, default=str).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerCrashed() from exc
        return self._read_line(moving_deadline(timeout, paused))

    def kill(self) -> None:
        """SIGKILL the worker's process group (the worker and everything in its session)."""
        kill_group(self.proc)
        close_pipes(self.proc.stdin, self.proc.stdout)

    def retire(self) -> None:
        """Ask the worker to exit, then make sure its group is gone."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b'{"op": "exit"}\n')
            self.proc.stdin.flush()
            self.proc.wait(timeout=2)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()


class WorkerPool(PoolOwner[PoolWorker]):
    """Up to ``size`` warm workers handed out one pair at a time (their lifecycle:
    :class:`pptarena.run.worker_pool.WorkerPool`, one key)."""

    def __init__(
        self, size: int, recycle_after: int, boot: dict[str, Any], env: dict[str, str] | None = None
    ):
        self.boot = {**boot, "parent": os.getpid()}
        base = dict(os.environ if env is None else env)
        base["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.env = base
        self._workers: SharedWorkerPool[PoolWorker] = SharedWorkerPool(size, recycle_after)

    def _spawn(self) -> PoolWorker:
        return PoolWorker(self.boot, self.env)

    def run(
        self,
        request: dict[str, Any],
        timeout: float,
        paused: Callable[[], float] | None = None,
        during: Callable[[int], AbstractContextManager[Any]] | None = None,
        queueing: AbstractContextManager[Any] | None = None,
    ) -> tuple[str, Any]:
        """Run one request: ``("ok", outcome)``, ``("timeout", None)`` or ``("crashed", returncode)``.

        ``paused``: seconds the timeout does not count (see :meth:`PoolWorker.call`); ``during(pid)``:
        a context held while the worker of that pid runs the request; ``queueing``: a context held
        while waiting for a free worker.
        """
        with queueing if queueing is not None else contextlib.nullcontext():
            worker = self._workers.checkout(self._spawn)
        try:
            with during(worker.pid) if during is not None else contextlib.nullcontext():
                outcome = worker.call(request, timeout, paused)
        except WorkerCrashed:
            try:
                code = worker.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
            worker.kill()
            self._workers.checkin(worker, healthy=False)
            return "crashed", code
        except BaseException:
            worker.kill()
            self._workers.checkin(worker, healthy=False)
            raise
        if outcome is None:  # overran: end the pair and everything it started, then replace the worker
            worker.kill()
            self._workers.checkin(worker, healthy=False)
            return "timeout", None
        self._workers.checkin(worker, healthy=True)
        return "ok", outcome

    def pids(self) -> list[int]:
        """Process ids of the live workers."""
        return [w.pid for w in self._workers.workers()]


def boot_of(run: Any) -> dict[str, Any]:
    """What a pool worker needs to load the same plugins as the driver (``run``: anything with the
    run's ``strict`` and ``registry``, e.g. its :class:`~pptarena.run.attempt.Attempts`)."""
    return {"strict": run.strict, "manual_plugins": dict(run.registry.manual)}


class PoolLauncher:
    """A :class:`~pptarena.run.launchers.Launcher` running host agents on a :class:`WorkerPool`
    (passed in through :meth:`Attempts.using <pptarena.run.attempt.Attempts.using>`).

    ``config`` is the run's config; ``stopping`` says whether the run is being stopped;
    ``batch_service`` the run's batch service (its ``waiting(pid, wait)``), when it has one.
    """

    def __init__(
        self, pool: WorkerPool, config: Any, stopping: Callable[[], bool], batch_service: Any = None
    ):
        self.pool = pool
        self.config = config
        self.stopping = stopping
        self.batch_service = batch_service

    def __call__(self, agent: Any, task: AgentTask, ws: Workspace) -> AgentOutcome:
        """Run the agent on a pool worker under the task timeout and read its hand-back."""
        config = self.config
        timeout = float(config.run.task_timeout)
        stderr_path = ws.dir / AGENT_STDERR
        request = {
            "config": config.raw,
            "config_path": str(config.path),
            "agent_index": config.agents.index(agent),
            "task": task.to_json(),
            "workspace": workspace_spec(ws),
            "timeout": timeout,
            "stderr_path": str(stderr_path),
        }
        wait = current_wait.get()  # a batched agent's pair (set by the attempt, in this thread)
        service = self.batch_service if wait is not None else None
        kind, value = self.pool.run(
            request,
            timeout,
            paused=wait.seconds if wait is not None else None,
            during=(lambda pid: service.waiting(pid, wait)) if service is not None else None,
            # a batched pair waiting for a free worker gives its slot back meanwhile (pairs whose batch
            # was answered hold workers and need a slot: holding one here would make both wait forever)
            queueing=wait.waiting() if wait is not None else None,
        )
        if kind == "timeout":
            return timed_out_outcome(timeout)
        if self.stopping():
            return AgentOutcome.failed(Status.INFRA_ERROR, "interrupted")
        if kind == "crashed":
            return vanished_outcome(value, stderr_path)
        return reported_outcome(value)
