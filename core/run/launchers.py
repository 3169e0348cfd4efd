"""Launchers: where one attempt's agent runs, as strategies an :class:`~pptarena.run.attempt.Attempts`
is given (never written into another object).

A launcher is a callable ``launcher(agent, task, ws) -> AgentOutcome`` (:class:`Launcher`): it runs
the agent's ``edit`` on ``task`` in the workspace ``ws`` and says what came of it; it never judges
and never writes a result row. The core's three:

* :class:`InProcessLauncher`: this process (``trusted = true`` agents and the reference baseline);
* :class:`WorkerLauncher`: one fresh interpreter per attempt (:mod:`pptarena.run.worker`) in a new
  session, killed with its process group on the task timeout;
* :class:`JailLauncher`: the run's warm jailed workers (:mod:`pptarena.run.jail.jail_pool`).

Executors bring their own for the ``host`` agents (the ``local`` executor's warm pool, a Ray
node's one-worker pool) through :meth:`Attempts.using <pptarena.run.attempt.Attempts.using>`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from pptarena.models import UsageBook
from pptarena.run.folder.records import AgentOutcome
from pptarena.run.folder.rundir import AGENT_STDERR, WORKER_RESULT, WORKER_SPEC
from pptarena.run.jail.bridge import agent_renders  # noqa: F401 - also re-exported here
from pptarena.run.worker import (
    classify_exception,
    reported_outcome,
    run_agent,
    timed_out_outcome,
    vanished_outcome,
    workspace_spec,
)
from pptarena.trust.procs import kill_group, run_in_session
from pptarena.trust.safeio import regular_file
from pptarena.types import Status, Workspace


class Launcher(Protocol):
    """Runs one agent on one task (the full task only for the reference baseline, else its answer-free
    :class:`~pptarena.types.AgentTask`) in a workspace and says what came of it."""

    def __call__(self, agent: Any, task: Any, ws: Workspace) -> AgentOutcome: ...


class InProcessLauncher:
    """Runs the agent in this process with the run's components (its own model book and the run's
    renderer); usage and cost come from the book."""

    def __init__(self, components: Any):
        self.components = components

    def __call__(self, agent: Any, task: Any, ws: Workspace) -> AgentOutcome:
        """Build the agent and run its ``edit``; an exception is the attempt's outcome."""
        book = UsageBook()
        model = self.components.agent_models(agent, book=book, log=ws.log)
        ws.model = model
        ws.renderer = self.components.lazy_renderer()
        try:
            instance = self.components.build(agent, model=model)
            out = AgentOutcome(prediction=run_agent(instance, task, ws))
        except Exception as exc:  # noqa: BLE001 - recorded as the pair's outcome
            out = AgentOutcome.failed(
                classify_exception(exc), f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=20)
            )
        out.model_usage = book.total().as_dict()
        out.model_cost = book.cost()
        return out


BATCH_WAITING_WORKERS = 64
"""Agent workers (jailed ones per agent label, a host pool's in all) at most in batch mode when the
run batches an agent's calls: an agent waiting for its batch keeps its worker but not its agent slot,
so more workers than ``jobs`` are alive (only ``jobs`` of them running an agent at a time)."""


class WorkerLauncher:
    """One new interpreter per attempt (``python -m pptarena.run.worker``) in a session of its own.

    ``stopping`` says whether the run is being stopped (an agent killed then is "interrupted", not
    its own failure); :meth:`kill_all` ends every worker still running (Ctrl-C).
    """

    def __init__(self, config: Any, registry: Any, strict: bool, stopping: Callable[[], bool]):
        self.config = config
        self.registry = registry
        self.strict = strict
        self.stopping = stopping
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._alive = threading.BoundedSemaphore(max(BATCH_WAITING_WORKERS, config.run.jobs))
        """Workers alive at once in batch mode (pairs waiting on a batch give their slot back)."""

    def __call__(self, agent: Any, task: Any, ws: Workspace) -> AgentOutcome:
        """Write the worker's spec, run it under the task timeout and read its hand-back."""
        spec_path = ws.dir / WORKER_SPEC
        result_path = ws.dir / WORKER_RESULT
        spec = {
            "config_path": str(self.config.path),
            "agent_index": self.config.agents.index(agent),
            "task": task.to_json(),
            "workspace": workspace_spec(ws),
            "timeout": self.config.run.task_timeout,
            "manual_plugins": self.registry.manual,
            "strict": self.strict,
            "result_path": str(result_path),
            "runner_pid": os.getpid(),
        }
        spec_path.write_text(json.dumps(spec, default=str), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        stderr_path = ws.dir / AGENT_STDERR

        # a batched agent: its calls reach the run's batch service, which knows them by this worker's
        # pid, and its timeout does not count their waiting
        from pptarena.run.batch_service import serving
        from pptarena.run.batches import current_wait

        wait = current_wait.get()
        service = serving() if wait is not None else None
        started: list[int] = []

        def track(proc: subprocess.Popen[bytes]) -> None:
            if service is not None:
                service.register(proc.pid, wait)
                started.append(proc.pid)
            with self._lock:
                self._procs.add(proc)

        if wait is not None:  # batch mode: at most so many workers alive, most of them waiting
            with wait.waiting():  # without its agent slot (see BatchWait)
                self._alive.acquire()
        with stderr_path.open("wb") as err:
            try:
                returncode, timed_out = run_in_session(
                    [sys.executable, "-m", "pptarena.run.worker", str(spec_path)],
                    cwd=ws.dir,
                    env=env,
                    stdout=err,
                    stderr=err,
                    timeout=self.config.run.task_timeout,
                    on_start=track,
                    paused=wait.seconds if wait is not None else None,
                )
            finally:
                if wait is not None:
                    self._alive.release()
                for pid in started:
                    service.unregister(pid)  # type: ignore[union-attr]
                with self._lock:
                    self._procs = {p for p in self._procs if p.poll() is None}
        if timed_out:
            return timed_out_outcome(self.config.run.task_timeout)
        if self.stopping():
            return AgentOutcome.failed(Status.INFRA_ERROR, "interrupted")
        from pptarena.trust.redact import redact_file

        redact_file(stderr_path)
        if not regular_file(result_path):  # missing, or a link the agent left: no result
            return vanished_outcome(returncode, stderr_path)
        return reported_outcome(result_path.read_text())

    def kill_all(self) -> None:
        """Kill the process group of every worker still running."""
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc)


def judges_models(config: Any) -> frozenset[str]:
    """The ``"<backend>/<model>"`` references the run's judges name (their options, defaults included)."""
    from pptarena.run.configuration.config_options import model_refs

    return frozenset(ref for judge in config.judges for ref in model_refs(judge.options).values())


def agent_pool_size(components: Any, jobs: int) -> int:
    """The size of a pool of agent workers (the run's jailed pool, an executor's host pool):
    ``jobs``, or :data:`BATCH_WAITING_WORKERS` when the run batches an agent's calls
    (:mod:`pptarena.run.configuration.batching`)."""
    from pptarena.run.configuration.batching import batches_agent

    if components.batch_queue is not None and any(batches_agent(a, True) for a in components.config.agents):
        return max(jobs, BATCH_WAITING_WORKERS)
    return jobs


class JailLauncher:
    """The run's warm jailed agent workers (:class:`~pptarena.run.jail.jail_pool.JailPool` of ``jobs``
    workers) and the renderer serving them (:func:`.jail.bridge.agent_renders`), made on first use."""

    def __init__(self, components: Any, jobs: int, timeout: float, stopping: Callable[[], bool]):
        self.components = components
        self.jobs = jobs
        self.timeout = timeout
        self.stopping = stopping
        self._pool: Any = None
        self._renders: Any = None
        self._lock = threading.Lock()

    def __call__(self, agent: Any, task: Any, ws: Workspace) -> AgentOutcome:
        """Run the agent on a jailed worker; the models its config table names and the run's renderer
        serve it over the bridge (never a judge's model it does not name itself)."""
        from pptarena.run.batches import current_wait
        from pptarena.run.jail.agent_jail import dataset_folders, forbid_in_jails
        from pptarena.run.jail.jail_pool import JailPool, run_jailed

        with self._lock:
            if self._pool is None:
                forbid_in_jails([self.components.cache_dir, *dataset_folders(self.components.config)])
                self._pool = JailPool(agent_pool_size(self.components, self.jobs))
                self._renders = agent_renders(self.components)
        out = run_jailed(
            self._pool,
            self.components,
            agent,
            task,
            ws,
            self.timeout,
            renders=self._renders,
            judge_models=judges_models(self.components.config),
            wait=current_wait.get(),
        )
        return AgentOutcome.failed(Status.INFRA_ERROR, "interrupted") if self.stopping() else out

    def close(self, kill: bool = False) -> None:
        """Retire the jailed workers (``kill``: at once, busy ones included) and remove the render
        cache they used."""
        pool, renders = self._pool, self._renders
        if pool is not None:
            pool.kill_all() if kill else pool.close()
        if renders is not None:
            renders.close()
