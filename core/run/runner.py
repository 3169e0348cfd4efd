"""The run: which attempts to make, handed to the executor, their rows appended, the summary written.

In the order data flows: the run selects the tasks (:mod:`.tasks`), skips every task whose reference
deck does not open (:mod:`.datacheck`: a dataset error, never an agent's score), refuses to resume a
run folder of another config or a changed judge (:mod:`.resume`, :mod:`.fingerprint`), re-runs the
attempts whose agent or task changed (:mod:`.provenance`), writes the manifest, plans
the attempts (every (agent, task, epoch) not recorded yet, without the ones whose requirements are
unmet, deterministic agents once; :mod:`.attempts`), gives up on attempts that crashed the run
:data:`~pptarena.run.folder.runlock.MAX_CRASHES` times, and hands the rest to the ``[executor]``
(:mod:`pptarena.run.executors`: ``local`` threads and warm workers, ``ray`` clusters), ``[run] jobs``
at a time under a budget. Each attempt is carried by :class:`pptarena.run.attempt.Attempts` (agent,
judges, row) wherever the executor runs it; the run alone appends each row it hands back to
``results.jsonl`` (:mod:`.results`), then copies deterministic agents' rows to their other epochs and
writes ``summary.json`` and the finished manifest.

Results are appended as each attempt finishes. Re-running the same command resumes: finished
attempts are skipped.

Why it is long: it is the run's one sequence, in the order given above, with its clean-up on every way
out (Ctrl-C, an error, a spent budget); each step calls the module that owns it, and keeping the order
in one method is what guarantees that the isolation, resume, judge and dataset checks have passed before
the manifest is written and the first attempt starts.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pptarena.run.attempt import Attempts, infra_failure, ledger_key
from pptarena.run.attempts import Budget, is_deterministic, reused_rows
from pptarena.run.configuration.batching import batches_agent, unbatched_asks
from pptarena.run.configuration.components import Components
from pptarena.run.configuration.config import ComponentConfig, RunConfig
from pptarena.run.configuration.datacheck import dataset_skips, render_roles
from pptarena.run.configuration.registry import Registry
from pptarena.run.configuration.requirements import unmet_requirements
from pptarena.run.configuration.tasks import load_tasks, select_tasks
from pptarena.run.executors import Executor, PairJob
from pptarena.run.folder.fingerprint import cached_fingerprint, check_fingerprints
from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.provenance import Provenance
from pptarena.run.folder.records import ResultLineProblem, ResultRow
from pptarena.run.folder.results import ResultsStore, summarize_results, write_json_atomic
from pptarena.run.folder.resume import check_resumable, finish_manifest, write_start_manifest
from pptarena.run.folder.rundir import RunDir
from pptarena.run.folder.runlock import MAX_CRASHES, AttemptLedger, RunLock
from pptarena.run.folder.summary_record import Summary
from pptarena.run.interrupts import CtrlC
from pptarena.run.jail.agent_jail import dataset_folders, forbid_in_jails
from pptarena.run.jail.boundary import (
    agent_process,
    check_isolation,
    isolation_record,
    process_note,
    weak_isolation_consent,
)
from pptarena.run.progress import Progress
from pptarena.run.statistics.summary_stats import StatsOptions
from pptarena.types import PptArenaError, Status, Task


class RunInterrupted(PptArenaError):
    """The run was stopped by Ctrl-C; the message says how to resume."""


class Runner:
    """Runs every configured agent on every selected task and judges the predictions."""

    def __init__(
        self,
        config: RunConfig,
        registry: Registry,
        run_dir: Path,
        *,
        jobs: int | None = None,
        limit: int | None = None,
        task_globs: list[str] | None = None,
        retry_errors: bool = False,
        strict: bool = False,
        progress: Progress | None = None,
        quiet: bool = False,
        epochs: int | None = None,
        max_cost: float | None = None,
        allow_weak_isolation: bool = False,
    ):
        self.config = config
        self.registry = registry
        self.run_dir = Path(run_dir).resolve()
        self.jobs = jobs or config.run.jobs
        self.limit = limit or config.run.limit
        self.task_globs = list(task_globs or []) or list(config.run.tasks)
        self.retry_statuses = (Status.INFRA_ERROR, Status.TIMEOUT) if retry_errors else ()
        self.strict = strict
        self.quiet = quiet
        self.epochs = epochs or config.run.epochs
        self.max_cost = max_cost if max_cost is not None else config.run.max_cost
        self.allow_weak_isolation = allow_weak_isolation or config.run.allow_weak_isolation
        self.budget: Budget | None = None
        self.components = Components(config, registry)
        self.store = ResultsStore(self.run_dir)
        self._progress = progress
        # called with the "Interrupted ... Resume with" message on Ctrl-C, *before* any clean-up: stopping
        # an executor can itself crash the process (Ray's cancel races its own task replies)
        self.on_interrupt: Callable[[str], None] | None = None
        self.ledger = AttemptLedger(self.run_dir)
        self.attempts = Attempts(
            config, registry, self.components, self.run_dir, jobs=self.jobs, strict=strict, ledger=self.ledger
        )
        """Makes this run's attempts; executors run pairs through it (see :mod:`pptarena.run.attempt`)."""
        self._executor: Executor | None = None
        self._limiter_service: Any = None  # the run's rate limiters served to its worker processes
        self.batch_service: Any = None
        """Batch mode with a batched host agent: the run's batch queue served to its agent worker
        processes (:class:`~pptarena.run.batch_service.BatchService`); executors' pools register
        their workers' pair waits with it."""
        self.provenance: Provenance | None = None
        """The agents' fingerprints and the tasks' hashes every recorded row is stamped with."""

    # ------------------------------------------------------------------ setup

    def _write_manifest(self, tasks: list[Task], skipped: dict[tuple[str, str], str] | None = None) -> None:
        write_start_manifest(
            RunDir(self.run_dir).manifest,
            self.config,
            self.registry,
            tasks=len(tasks),
            skipped=skipped or {},
            judge_fingerprints=getattr(self, "judge_fingerprints", {}),
            epochs=self.epochs,
            provenance=self.provenance,
            max_cost=self.max_cost,
        )
        path = RunDir(self.run_dir).manifest
        manifest = Manifest.read(path)
        manifest.isolation = self.isolation_record()
        write_json_atomic(path, manifest.to_json())

    def _check_resume(self) -> None:
        """Refuse to mix results of two different configs in one run folder; warn about unreadable lines."""
        problems_found: list[ResultLineProblem] = []
        rows = self.store.read(problems_found)
        for problem in problems_found:
            print(f"warning: skipped a result line (its pair runs again): {problem}", file=sys.stderr)
        if rows:
            check_resumable(RunDir(self.run_dir).manifest, self.config, self.run_dir)

    def _finish_manifest(self, finished: bool = True) -> None:
        budget = self.budget.to_json() if self.budget is not None and self.max_cost is not None else None
        finish_manifest(RunDir(self.run_dir).manifest, finished, budget)

    def judges(self) -> list[tuple[ComponentConfig, Any]]:
        """The run's judges, built once (shared with its attempts)."""
        return self.attempts.judges()

    # ------------------------------------------------------------------ the run

    @property
    def isolation(self) -> str:
        """The isolation untrusted code gets on this machine (see :mod:`pptarena.trust.isolation`)."""
        return self.attempts.isolation

    def compute_pair(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> ResultRow | None:
        """Run attempt ``epoch`` of one pair in this process; the row, None when stopping (the
        :class:`~pptarena.run.executors.RunHandle` shortcut for ``run.attempts.run``)."""
        return self.attempts.run(agent, task, epoch)

    def stopping(self) -> bool:
        """True once the run is being stopped (no more results are recorded)."""
        return self.attempts.stopping()

    def run(self) -> Summary:
        """Run every pending attempt; returns the summary (also written to summary.json).

        The run folder is locked for the run's duration (:class:`~pptarena.run.folder.runlock.RunLock`). A
        run that stops before its manifest is written (nothing selected, a dataset or resume error)
        leaves no folder behind when it made the folder.
        """
        with weak_isolation_consent(self.allow_weak_isolation):
            return self._run_locked()

    def _run_locked(self) -> Summary:
        self.start_executor()
        made = not self.run_dir.exists()
        try:
            with RunLock(self.run_dir):
                return self._run()
        except BaseException:
            if made and not RunDir(self.run_dir).manifest.exists():
                shutil.rmtree(self.run_dir, ignore_errors=True)
            raise
        finally:
            if self._limiter_service is not None:
                self._limiter_service.stop()
                self._limiter_service = None
            if self.batch_service is not None:
                self.batch_service.stop()
                self.batch_service = None

    def start_executor(self) -> None:
        """Build the run's executor and start it (the ``ray`` executor joins its cluster here), before
        anything is written: an executor that cannot start leaves no run folder behind. Called by
        :meth:`run`; calling it first (as ``arena run`` does) only moves the moment. First, with
        ``[run] preflight`` (the default), every model backend the agents and judges name is checked
        once (:func:`~pptarena.models.preflight.preflight_run`; a run naming no model pays nothing):
        a failure raises :class:`~pptarena.models.preflight.PreflightError` and nothing starts.
        """
        if self._executor is not None:
            return
        from pptarena.models.preflight import preflight_run

        preflight_run(self.config, self.registry)
        if self.config.backends and self._limiter_service is None:
            # one rate limiter per provider account for the whole run: worker processes started
            # from here on reach the host's limiters through this service
            from pptarena.models.limiter_service import LimiterService, reset_local

            reset_local()
            self._limiter_service = LimiterService().start()
        executor = self.build_executor()
        start = getattr(executor, "start", None)
        if start is not None:
            try:
                start(self)
            except BaseException:
                executor.close()
                raise
        self._executor = executor

    def _start_batches(self, progress: Progress) -> None:
        """Batch mode: the run's batch queue, resuming the jobs its folder says are pending."""
        from pptarena.run.batches import BatchQueue, BatchSettings

        if not getattr(self._executor, "judges_on_host", True):
            progress.message(
                "Batch mode needs the judges and agents' calls on this host; this executor runs "
                "pairs on its nodes, so judge and agent calls go out directly."
            )
            return
        opts = self.config.run
        settings = BatchSettings(quiet=opts.batch_quiet, poll=opts.batch_poll)
        queue = BatchQueue(self.run_dir, settings, say=progress.message)
        self.components.batch_queue = queue.start(self.components.backend)
        if any(
            batches_agent(a, True) and agent_process(a) in ("host", "unjailed") for a in self.config.agents
        ):
            # batched agents in worker processes reach the queue through this service; a run with none
            # opens no socket (in-process and jailed agents reach the queue without one)
            import socket

            from pptarena.run.batch_service import BatchService

            if not hasattr(socket, "SO_PEERCRED"):  # whose call it is comes from the kernel (Linux)
                progress.message(
                    "Batch mode: this system cannot tell the batch service which process calls "
                    "(no SO_PEERCRED), so the calls of agents on this host go out directly."
                )
                return
            self.batch_service = BatchService(queue, self.components.backend).start()

    def _run(self) -> Summary:
        check_isolation(self.config.agents, self.allow_weak_isolation)
        forbid_in_jails([self.components.cache_dir, self.run_dir, *dataset_folders(self.config)])
        tasks = select_tasks(load_tasks(self.components), self.task_globs, self.limit)
        self._check_resume()
        self._check_judges()
        self.provenance = provenance = Provenance.of_run(self.config.agents, tasks, self.config.backends)
        stale = provenance.stale(
            self.store.read(), Manifest.read(RunDir(self.run_dir).manifest).agent_fingerprint_history
        )
        broken = dataset_skips(tasks, self.components, render=render_roles(self.config))
        skipped = {(a.label, task_id): why for a in self.config.agents for task_id, why in broken.items()}
        skipped.update(
            {
                (a.label, t.id): why
                for a in self.config.agents
                for t in tasks
                if t.id not in broken and (why := unmet_requirements(a.spec.factory, t))
            }
        )
        self._write_manifest(tasks, skipped)
        done = self.store.done_attempts(self.retry_statuses) - stale.keys
        plan = [
            (a, t, e)
            for e in range(1, self.epochs + 1)
            for a in self.config.agents
            for t in tasks
            if (e == 1 or not is_deterministic(a.spec.factory)) and (a.label, t.id) not in skipped
        ]
        pending = [(a, t, e) for a, t, e in plan if (a.label, t.id, e) not in done]
        if not self.retry_statuses:
            pending = self._crashed_pairs(pending)
        total = len(plan)
        self.budget = Budget(self.max_cost, self.store.read())
        progress = self._progress or Progress(total, quiet=self.quiet)
        if self.config.run.batch:
            self._start_batches(progress)
        for line in unbatched_asks(self.config.agents, self.config.run.batch):
            progress.message(line)
        progress.done = total - len(pending)
        progress.plan(Counter(a.label for a, _t, _e in pending), jobs=self.jobs)  # the ETA, per agent
        for agent in self.config.agents:
            note = process_note(agent)
            if note:
                progress.message(note)
        for task_id, why in broken.items():
            progress.message(f"Skipped task {task_id} for every agent: {why}")
        for (label, task_id), why in skipped.items():
            if task_id not in broken:
                progress.message(f"Skipped task {task_id} for agent {label}: {why}.")
        for line in stale.messages:
            progress.message(line)
        if progress.done:
            progress.message(f"Resuming {self.run_dir}: {progress.done} of {total} results already recorded.")
        index = {id(a): i for i, a in enumerate(self.config.agents)}
        queue = [PairJob(agent, index[id(agent)], task, epoch) for agent, task, epoch in pending]
        executor = self._executor
        assert executor is not None
        recorded: set[tuple[str, str, int]] = set()
        # with a budget, pairs are handed to the executor [run] jobs at a time,
        # so none starts once it is spent
        batch = self.jobs if self.max_cost is not None else max(1, len(queue))
        ctrl_c = CtrlC()  # a Ctrl-C whose KeyboardInterrupt was swallowed still stops the run
        try:
            with progress, ctrl_c:
                while queue and not self.budget.exhausted() and not self.stopping():
                    jobs, queue = queue[:batch], queue[batch:]
                    for job, row in executor.execute(jobs, self):
                        ctrl_c.check()
                        if job.key in recorded or self.stopping():
                            continue  # an executor must hand back each pair once; never record a pair twice
                        recorded.add(job.key)
                        self.store.append(provenance.stamp(row))
                        self.budget.add(row)
                        progress.result(row)
                ctrl_c.check()
        except KeyboardInterrupt:
            message = (
                f"Interrupted. {len(self.store.done_attempts())} of {total} results are saved "
                f"in {self.run_dir}.\n"
                f"Resume with: arena run --config {self.config.path} --out {self.run_dir}"
            )
            if self.on_interrupt is not None:
                self.on_interrupt(message)
            self.stop()
            self.attempts.redact_in_flight()  # the process may exit before their own clean-up runs
            executor.close()
            self.components.close()
            raise RunInterrupted(message) from None
        except BaseException:
            self.stop()
            executor.close()
            self.components.close()
            raise
        executor.close()
        self.attempts.close()
        self.components.close()
        if queue:
            self.budget.stopped, self.budget.not_started = True, len(queue)
            progress.message(self.budget.message())
        for agent in self.config.agents:
            if self.epochs > 1 and is_deterministic(agent.spec.factory):
                for copy in reused_rows(self.store.read(), agent.label, self.epochs):
                    self.store.append(copy)
        run = self.config.run
        summary = summarize_results(
            self.store.read(), opts=StatsOptions(run.success_threshold, run.bootstrap, run.seed)
        )
        summary.isolation = self.isolation_record()
        if self.max_cost is not None:
            summary.budget = self.budget.to_json()
        write_json_atomic(RunDir(self.run_dir).summary, summary.to_json())
        recorded = self.store.done_attempts()
        self._finish_manifest(not queue and all((a.label, t.id, e) in recorded for a, t, e in plan))
        return summary

    def isolation_record(self) -> dict[str, Any]:
        """The run's isolation (``manifest.json`` and ``summary.json``; see :mod:`.jail.boundary`)."""
        return isolation_record(self.config.agents, self.isolation, self.allow_weak_isolation)

    def _crashed_pairs(
        self, pending: list[tuple[ComponentConfig, Task, int]]
    ) -> list[tuple[ComponentConfig, Task, int]]:
        """Record attempts that were running when the run died ``MAX_CRASHES`` times as failed;
        return the rest.
        """
        crashes = self.ledger.crashes(self.store.done())
        keep = []
        for agent, task, epoch in pending:
            n = crashes.get((agent.label, ledger_key(task.id, epoch)), 0)
            if n < MAX_CRASHES:
                keep.append((agent, task, epoch))
                continue
            row = infra_failure(
                agent,
                task,
                epoch,
                f"this pair was running when the run died {n} times; it is not run again "
                "(arena run --retry-errors tries it once more)",
                isolation=self.isolation,
            )
            self.store.append(self.provenance.stamp(row) if self.provenance is not None else row)
            self.ledger.end(agent.label, ledger_key(task.id, epoch))
        return keep

    def _check_judges(self) -> None:
        """Refuse to add verdicts of a changed judge under a label that already has verdicts."""
        manifest = Manifest.read(RunDir(self.run_dir).manifest)
        self.judge_fingerprints = {
            c.label: cached_fingerprint(c, j, self.config.backends) for c, j in self.judges()
        }
        check_fingerprints(
            self.judge_fingerprints,
            manifest,
            self.store.read(),
            str(self.run_dir),
            "Give the changed judge a new `label`, start a new run (--new or another --out), "
            "or re-judge the recorded predictions with "
            f"`arena rescore {self.run_dir} --config {self.config.path} --out NEW_NAME`.",
        )

    def build_executor(self) -> Executor:
        """The run's executor (the ``[executor]`` table; ``local`` when the config has none)."""
        comp = self.config.executor
        if comp is None:
            return self.registry.create("executors", "local", {}, self.components.context())
        return self.components.build(comp)

    def stop(self) -> None:
        """Stop: no new results are written and running workers (and the executor's) are killed."""
        self.attempts.stop()
        executor = self._executor
        if executor is not None:
            executor.stop()
