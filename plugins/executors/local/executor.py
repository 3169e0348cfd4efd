"""The ``local`` executor: pairs run on this host, ``[run] jobs`` at a time.

Each pair is one attempt (:class:`pptarena.run.attempt.Attempts`) run on a thread;
judges run in the driver's threads (sharing one warm renderer). Jailed agents
run on the run's warm jails (:mod:`pptarena.run.jail.jail_pool`); built-in agents
that jail their own tools (and every agent where weak isolation is allowed) run
in a pool of long-lived worker processes
(:mod:`.pool`): spawned once, plugins loaded once, one pair at a time each,
replaced after ``recycle_after`` pairs, on a crash and on a timeout (then the
worker's whole process group is killed, so a timeout still ends everything
the pair started). ``pool = false`` brings back one fresh interpreter per
pair.

In batch mode a batched agent's pool worker reaches the run's batch queue through the run's batch
service (``run.batch_service``), and the pool holds up to
:data:`~pptarena.run.launchers.BATCH_WAITING_WORKERS` workers, most of them waiting on batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from pydantic import Field

from pptarena.run import PairJob, RunHandle, agent_pool_size, agent_process
from pptarena.types import Component, Options

from .pool import PoolLauncher, WorkerPool, boot_of


class LocalOptions(Options):
    """Options of the ``local`` executor."""

    pool: bool = Field(
        True, description="keep warm agent worker processes (false: one new interpreter per pair)"
    )
    recycle_after: int = Field(
        100, ge=1, le=100_000, description="replace a pool worker after this many pairs"
    )


BATCH_PAIRS = 256
"""Pairs in flight in batch mode (most of them waiting for their judges' batch jobs)."""


class LocalExecutor(Component):
    """Threads on this host; agents in a pool of warm worker processes."""

    Options = LocalOptions

    def __init__(self, options: Any, context: Any):
        super().__init__(options, context)
        self.pool: WorkerPool | None = None
        self._launcher: PoolLauncher | None = None
        self._threads: ThreadPoolExecutor | None = None

    def execute(self, jobs: Sequence[PairJob], run: RunHandle) -> Iterator[tuple[PairJob, dict[str, Any]]]:
        """Run ``jobs`` on ``run.jobs`` threads; yield each finished row."""
        opts: LocalOptions = self.options  # type: ignore[assignment]
        # a run under a budget calls execute once per batch: the pool and threads are made once
        needs_pool = any(agent_process(j.agent) in ("host", "unjailed") for j in jobs)
        attempts = run.attempts
        if opts.pool and needs_pool and self.pool is None:
            # batch mode with a batched agent: up to 64 workers, most of them waiting on their batch
            # (their attempts hold the agents that run to run.jobs at a time)
            size = agent_pool_size(attempts.components, run.jobs)
            self.pool = WorkerPool(size, opts.recycle_after, boot_of(attempts))
            self._launcher = PoolLauncher(
                self.pool, attempts.config, attempts.stopping, getattr(run, "batch_service", None)
            )
        if self._launcher is not None:
            attempts = attempts.using(self._launcher)
        if self._threads is None:
            # batch mode: pairs wait hours for their judges' batches, so many more wait than agents
            # run (the attempts hold agents to run.jobs at a time themselves)
            threads = max(run.jobs, BATCH_PAIRS) if run.config.run.batch else run.jobs
            self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pair")
        futures: dict[Future[Any], PairJob] = {
            self._threads.submit(attempts.run, j.agent, j.task, j.epoch): j for j in jobs
        }
        while futures:
            finished, _ = wait(list(futures), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                job = futures.pop(fut)
                row = fut.result()
                if row is not None:
                    yield job, row

    def stop(self) -> None:
        """Cancel queued pairs and kill every worker's process group."""
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            self.pool.kill_all()

    def close(self) -> None:
        """Retire the workers."""
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            self.pool.close()
