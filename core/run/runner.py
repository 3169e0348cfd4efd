"""The runner: dataset → agent → prediction → judges → one result line per (agent, task).

Where pairs run is the ``[executor]``'s business (:mod:`pptarena.run.executors`:
``local`` threads and warm worker processes, ``ray`` clusters); the runner
decides what runs, and alone writes ``results.jsonl``, the manifest and the
summary. Each pair gets a private workspace with a copy of the input deck (the
dataset's file is never touched). Agents run in a worker process of their own
in a new session, so ``task_timeout`` really stops a runaway agent and anything it
started: by default a jailed worker (:mod:`pptarena.run.jail_pool`) that gets the task
without its answer (:mod:`pptarena.run.agent_view`); built-in agents that jail their own
tools run in a plain worker (:mod:`pptarena.run.worker`), ``trusted = true`` agents in
the runner's process (see :mod:`pptarena.run.trust`). Judges run in the runner's process.

Results are appended to ``results.jsonl`` as each pair finishes. Re-running
the same command resumes: finished pairs are skipped.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pptarena.models import UsageBook
from pptarena.models.messages import add_counts
from pptarena.models.pricing import pair_cost
from pptarena.procs import kill_group, run_in_session
from pptarena.run.agent_view import agent_task
from pptarena.run.attempts import Budget, is_deterministic, reused_rows
from pptarena.run.components import Components
from pptarena.run.config import ComponentConfig, RunConfig
from pptarena.run.executors import AgentLauncher, Executor, PairJob
from pptarena.run.fingerprint import cached_fingerprint, check_fingerprints
from pptarena.run.interrupts import CtrlC
from pptarena.run.judging import judge_prediction
from pptarena.run.progress import Progress
from pptarena.run.records import AgentOutcome, JudgeOutcome, ResultLineProblem
from pptarena.run.references import FOLDER as REFERENCES
from pptarena.run.references import normalized_references, normalizer_of
from pptarena.run.registry import Registry
from pptarena.run.requirements import unmet_requirements
from pptarena.run.results import ResultsStore, summarize_results, write_json_atomic
from pptarena.run.resume import check_resumable, finish_manifest, write_start_manifest
from pptarena.run.rundir import AGENT_ERROR, AGENT_LOG, AGENT_STDERR, INPUT, VERDICTS, RunDir, safe_name
from pptarena.run.runlock import MAX_CRASHES, AttemptLedger, RunLock
from pptarena.run.sessions import is_session, run_session
from pptarena.run.summary_stats import StatsOptions
from pptarena.run.tasks import load_tasks, select_tasks
from pptarena.run.trust import agent_process, check_isolation, isolation_record, process_note, row_isolation
from pptarena.run.worker import (
    classify_exception,
    reported_outcome,
    run_agent,
    timed_out_outcome,
    vanished_outcome,
    workspace_spec,
)
from pptarena.safeio import regular_file, remove_entry, write_replacing
from pptarena.types import (
    AgentLog,
    InfraError,
    PptArenaError,
    Prediction,
    Status,
    Task,
    Workspace,
)


class RunInterrupted(PptArenaError):
    """The run was stopped by Ctrl-C; the message says how to resume."""


AFTER_AGENT = (VERDICTS, "judges", "renders", REFERENCES)
"""Names of a pair's folder the harness writes after the agent ended (judges' evidence, re-saved
reference decks, verdicts): whatever the agent side left there is removed before, never trusted."""


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
        self._jails: Any = None  # the warm jailed agent workers (pptarena.run.jail_pool), made on first use
        self.budget: Budget | None = None
        self.components = Components(config, registry)
        self.store = ResultsStore(self.run_dir)
        self._progress = progress
        self._stop = threading.Event()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._procs_lock = threading.Lock()
        self._in_flight: set[Path] = set()  # folders of attempts running in this process
        self._judges: list[tuple[ComponentConfig, Any]] | None = None
        self._judges_lock = threading.Lock()
        self.agent_launcher: AgentLauncher | None = None  # set by an executor (e.g. a warm worker pool)
        # called with the "Interrupted ... Resume with" message on Ctrl-C, *before* any clean-up: stopping
        # an executor can itself crash the process (Ray's cancel races its own task replies)
        self.on_interrupt: Callable[[str], None] | None = None
        self._originals_checked: dict[str, str | None] = {}  # original deck -> why it is unusable
        self.ledger = AttemptLedger(self.run_dir)

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
            max_cost=self.max_cost,
        )
        path = RunDir(self.run_dir).manifest
        manifest = json.loads(path.read_text())
        manifest["isolation"] = self.isolation_record()
        write_json_atomic(path, manifest)

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
        """The run's judges, built once."""
        with self._judges_lock:
            if self._judges is None:
                self._judges = [(j, self.components.build(j)) for j in self.config.judges]
            return self._judges

    # ------------------------------------------------------------------ one pair

    def _workspace(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> Workspace:
        task_dir = RunDir(self.run_dir).attempt(agent.label, task.id, epoch)
        if task_dir.exists():  # leftovers of an interrupted attempt
            shutil.rmtree(task_dir)
        (task_dir / INPUT).mkdir(parents=True)
        input_deck = task_dir / INPUT / task.original.name
        shutil.copyfile(task.original, input_deck)
        return Workspace(
            dir=task_dir,
            input_deck=input_deck,
            output_deck=task_dir / f"prediction{task.original.suffix or '.pptx'}",
            renderer=None,
            model=self.components.model_client,
            log=AgentLog(task_dir / AGENT_LOG),
            timeout=self.config.run.task_timeout,
        )

    def launch_agent(self, agent: ComponentConfig, task: Task, ws: Workspace) -> AgentOutcome:
        """Run ``agent`` on ``task`` in ``ws`` where it belongs (:func:`pptarena.run.trust.agent_process`):
        a jailed worker (the default), a worker process on the executor's launcher or of its own
        (built-in agents that jail their tools; any agent where weak isolation is allowed), or this
        process (``trusted = true``; the reference baseline, the only one handed the full task).
        Every other agent gets the task without its answer (:class:`~pptarena.types.AgentTask`)."""
        where = agent_process(agent)
        view = agent_task(task, ws.input_deck)
        try:
            if where == "reference":
                return self._run_agent_in_process(agent, task, ws)
            if where == "in-process":
                return self._run_agent_in_process(agent, view, ws)
            if where == "jail":
                return self._run_agent_in_jail(agent, view, ws)
            return (self.agent_launcher or self._run_agent_in_worker)(agent, view, ws)
        except Exception as exc:  # noqa: BLE001 - starting the worker failed: the harness's fault
            return AgentOutcome.failed(Status.INFRA_ERROR, f"could not run the agent: {exc}")

    def _run_agent_in_jail(self, agent: ComponentConfig, task: Any, ws: Workspace) -> AgentOutcome:
        from pptarena.run.jail_pool import JailPool, run_jailed

        with self._procs_lock:
            if self._jails is None:
                self._jails = JailPool(self.jobs)
        out = run_jailed(self._jails, self.components, agent, task, ws, float(self.config.run.task_timeout))
        return AgentOutcome.failed(Status.INFRA_ERROR, "interrupted") if self._stop.is_set() else out

    def _run_agent_in_process(self, agent: ComponentConfig, task: Any, ws: Workspace) -> AgentOutcome:
        book = UsageBook()
        model = self.components.hub.factory(book=book, log=ws.log)
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

    def _run_agent_in_worker(self, agent: ComponentConfig, task: Any, ws: Workspace) -> AgentOutcome:
        spec_path = ws.dir / ".worker-spec.json"
        result_path = ws.dir / ".worker-result.json"
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

        def track(proc: subprocess.Popen[bytes]) -> None:
            with self._procs_lock:
                self._procs.add(proc)

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
                )
            finally:
                with self._procs_lock:
                    self._procs = {p for p in self._procs if p.poll() is None}
        if timed_out:
            return timed_out_outcome(self.config.run.task_timeout)
        if self._stop.is_set():
            return AgentOutcome.failed(Status.INFRA_ERROR, "interrupted")
        from pptarena.redact import redact_file

        redact_file(stderr_path)
        if not regular_file(result_path):  # missing, or a link the agent left: no result
            return vanished_outcome(returncode, stderr_path)
        return reported_outcome(result_path.read_text())

    def _check_prediction(self, pred: Prediction) -> str | None:
        if pred.path is None or not Path(pred.path).is_file():
            return "the agent produced no deck" + (f" (expected {pred.path})" if pred.path else "")
        if not regular_file(pred.path):  # e.g. a link to the cached target: never taken as the deck
            return f"the prediction {pred.path} is a symbolic link or not a regular file"
        try:
            from pptarena.deck import DeckError, slide_ids
        except ImportError:  # deck engine unavailable: judges will find out
            return None
        try:
            slide_ids(pred.path)
        except DeckError as exc:
            return f"the prediction is not a valid deck: {exc}"
        from pptarena.run.blame import deck_problem

        problem = deck_problem(
            Path(pred.path)
        )  # the loader the judges use: its rejection is the agent's fault
        return None if problem is None else f"the prediction is not a valid deck: {problem}"

    def _judge(self, task: Task, pred: Prediction, ws: Workspace, judges: list | None = None) -> JudgeOutcome:
        judges = self.judges() if judges is None else judges
        return judge_prediction(task, pred, judges, ws.dir, self.components)

    def _normalize_references(
        self, agent: ComponentConfig, task: Task, ws: Workspace, row: dict[str, Any]
    ) -> bool:
        """Store the task's decks as the agent's tool re-saves them (see :mod:`pptarena.run.references`).

        Returns False (and records an infra_error in ``row``) when that fails.
        """
        normalize = normalizer_of(agent.spec.factory)
        if normalize is None:
            return True
        tool = f"{agent.spec.plugin}.{agent.spec.name}"
        try:
            normalized_references(task, normalize, ws.dir, self.components.cache_dir, safe_name(tool))
            return True
        except InfraError as exc:
            row["status"], row["error"] = Status.INFRA_ERROR, str(exc)
            return False

    @staticmethod
    def _new_row(agent: ComponentConfig, task: Task, usage: dict[str, Any], epoch: int = 1) -> dict[str, Any]:
        return {
            "agent": agent.label,
            "task_id": task.id,
            "epoch": epoch,
            "status": Status.SCORED,
            "scores": {},
            "error": None,
            "duration_s": 0.0,
            "usage": dict(usage),
            "metadata": task.metadata,
            "agent_process": agent_process(agent),
        }

    def stopping(self) -> bool:
        """True once the run is being stopped (no more results are recorded)."""
        return self._stop.is_set()

    def compute_pair(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> dict[str, Any] | None:
        """Run attempt ``epoch`` of one agent on one task in this process and judge it;
        the row (None if interrupted).

        Writes the task folder; appending the row to ``results.jsonl`` is the caller's job. The attempt is
        in the crash ledger while it runs (see :class:`~pptarena.run.runlock.AttemptLedger`).
        """
        key = _ledger_key(task.id, epoch)
        self.ledger.start(agent.label, key)
        try:
            return self._compute_pair(agent, task, epoch)
        finally:  # not reached when the whole run dies: the ledger then counts a crash
            self.ledger.end(agent.label, key)

    def _crashed_pairs(
        self, pending: list[tuple[ComponentConfig, Task, int]]
    ) -> list[tuple[ComponentConfig, Task, int]]:
        """Record attempts that were running when the run died ``MAX_CRASHES`` times as failed;
        return the rest.
        """
        crashes = self.ledger.crashes(self.store.done())
        keep = []
        for agent, task, epoch in pending:
            n = crashes.get((agent.label, _ledger_key(task.id, epoch)), 0)
            if n < MAX_CRASHES:
                keep.append((agent, task, epoch))
                continue
            row = self._new_row(agent, task, {}, epoch)
            row.update(
                status=Status.INFRA_ERROR,
                isolation=self.isolation,
                error=f"this pair was running when the run died {n} times; it is not run again "
                "(arena run --retry-errors tries it once more)",
            )
            self.store.append(row)
            self.ledger.end(agent.label, _ledger_key(task.id, epoch))
        return keep

    def _original_problem(self, original: Path) -> str | None:
        """Why the dataset's original deck is unusable (None when it loads), checked once per deck."""
        from pptarena.run.blame import original_problem

        key = str(original)
        if key not in self._originals_checked:
            self._originals_checked[key] = original_problem(original)
        return self._originals_checked[key]

    def _compute_pair(self, agent: ComponentConfig, task: Task, epoch: int) -> dict[str, Any] | None:
        broken = self._original_problem(task.original)
        if broken:  # the dataset's fault, found before any agent is blamed for it
            failed = self._new_row(agent, task, {}, epoch)
            failed.update(status=Status.INFRA_ERROR, error=broken, isolation=self.isolation)
            return failed
        if is_session(task):  # multi-turn: each turn is an attempt (see pptarena.run.sessions)
            return run_session(self, agent, task, epoch)
        return self.attempt(agent, task, epoch)

    def attempt(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> dict[str, Any] | None:
        """Run ``agent`` on the single-turn ``task`` in a new task folder and judge what it hands in;
        the row (None if the run is being stopped).

        The row has the pair's status, scores, usage, cost, isolation and ``prediction`` (relative to
        the run folder when inside it); the folder gets the verdicts and is redacted.
        """
        t0 = time.monotonic()
        try:
            ws = self._workspace(agent, task, epoch)
        except OSError as exc:  # cannot copy the input deck or write the task folder: the harness's fault
            if self._stop.is_set():
                return None
            failed = self._new_row(agent, task, {}, epoch)
            failed.update(status=Status.INFRA_ERROR, error=f"could not prepare the workspace: {exc}")
            failed["duration_s"] = round(time.monotonic() - t0, 3)
            return failed
        from pptarena.redact import redact_tree

        with self._procs_lock:
            self._in_flight.add(ws.dir)
        try:
            return self._attempt_in(agent, task, epoch, ws, t0)
        finally:  # also when stopped or failing: files plugins wrote (programs, transcripts) hold no secret
            redact_tree(ws.dir)
            with self._procs_lock:
                self._in_flight.discard(ws.dir)

    def _attempt_in(
        self, agent: ComponentConfig, task: Task, epoch: int, ws: Workspace, t0: float
    ) -> dict[str, Any] | None:
        """:meth:`attempt` once its workspace ``ws`` exists."""
        process = agent_process(agent)
        in_process = process in ("in-process", "reference")
        outcome = self.launch_agent(agent, task, ws)
        for name in AFTER_AGENT:  # only the harness writes these, after the agent: what is there is forged
            remove_entry(ws.dir, name)
        if self._stop.is_set():
            return None
        row = self._new_row(agent, task, outcome.model_usage, epoch)
        judged: JudgeOutcome | None = None
        if outcome.prediction is None or not outcome.ok:
            row["status"] = outcome.status
            row["error"] = outcome.error
            if outcome.traceback:
                from pptarena.redact import redact_text

                write_replacing(ws.dir / AGENT_ERROR, redact_text(outcome.traceback).encode("utf-8"))
        else:
            pred = outcome.prediction
            add_counts(row["usage"], pred.usage)
            problem = self._check_prediction(pred)
            if problem:
                row["status"] = Status.AGENT_ERROR
                row["error"] = problem
                if pred.path is not None and regular_file(pred.path):
                    # an unreadable deck: some judges still grade it
                    lenient = [
                        (c, j)
                        for c, j in self.judges()
                        if getattr(j, "grades_invalid_decks", lambda t: False)(task)
                    ]
                    if lenient:
                        judged = self._judge(task, pred, ws, lenient)
                        row["scores"] = judged.scores
            elif not self._normalize_references(agent, task, ws, row):
                pass  # the reference decks could not be re-saved: the row holds the infra_error
            else:
                judged = self._judge(task, pred, ws)
                row["status"], row["scores"], row["error"] = judged.status, judged.scores, judged.error
            if judged is not None:
                add_counts(row["usage"], judged.usage)
            row["prediction"] = _relative_to(pred.path, self.run_dir)
        details = judged.details() if judged is not None else {}
        row["duration_s"] = round(time.monotonic() - t0, 3)
        agent_cost = outcome.model_cost
        if (
            agent_cost is None and not in_process
        ):  # the worker was killed or crashed before reporting its calls
            agent_cost = {"usd": None, "known_usd": 0.0, "unpriced_models": ["(agent calls not reported)"]}
        row["cost"] = pair_cost(
            agent_cost, {k: v.get("cost") for k, v in details.get("verdicts", {}).items()}
        )
        pred_meta = outcome.prediction.metadata if outcome.ok and outcome.prediction else {}
        # a built-in host worker reports its tools' sandbox (e.g. a command agent run unsandboxed)
        row["isolation"] = row_isolation(process, pred_meta.get("isolation"), self.isolation)
        row["agent_process"] = process
        write_json_atomic(ws.dir / VERDICTS, {"status": row["status"], "error": row["error"], **details})
        if self._stop.is_set():
            return None
        return row

    # ------------------------------------------------------------------ the run

    @functools.cached_property
    def isolation(self) -> str:
        """The isolation untrusted code gets on this machine (see :mod:`pptarena.isolation`)."""
        from pptarena.sandbox import isolation_level

        return isolation_level()

    def run(self) -> dict[str, Any]:
        """Run every pending attempt; returns the summary (also written to summary.json).

        The run folder is locked for the run's duration (:class:`~pptarena.run.runlock.RunLock`).
        """
        self.start_executor()
        with RunLock(self.run_dir):
            return self._run()

    def start_executor(self) -> None:
        """Build the run's executor and start it (the ``ray`` executor joins its cluster here), before
        anything is written: an executor that cannot start leaves no run folder behind. Called by
        :meth:`run`; calling it first (as ``arena run`` does) only moves the moment.
        """
        if getattr(self, "_executor", None) is not None:
            return
        executor = self.build_executor()
        start = getattr(executor, "start", None)
        if start is not None:
            try:
                start(self)
            except BaseException:
                executor.close()
                raise
        self._executor = executor

    def _run(self) -> dict[str, Any]:
        check_isolation(self.config.agents, self.allow_weak_isolation)
        tasks = select_tasks(load_tasks(self.components), self.task_globs, self.limit)
        self._check_resume()
        self._check_judges()
        skipped = {
            (a.label, t.id): why
            for a in self.config.agents
            for t in tasks
            if (why := unmet_requirements(a.spec.factory, t))
        }
        self._write_manifest(tasks, skipped)
        done = self.store.done_attempts(self.retry_statuses)
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
        progress.done = total - len(pending)
        for agent in self.config.agents:
            note = process_note(agent)
            if note:
                progress.message(note)
        for (label, task_id), why in skipped.items():
            progress.message(f"Skipped task {task_id} for agent {label}: {why}.")
        if progress.done:
            progress.message(f"Resuming {self.run_dir}: {progress.done} of {total} results already recorded.")
        index = {id(a): i for i, a in enumerate(self.config.agents)}
        queue = [PairJob(agent, index[id(agent)], task, epoch) for agent, task, epoch in pending]
        executor = self._executor
        recorded: set[tuple[str, str, int]] = set()
        # with a budget, pairs are handed to the executor [run] jobs at a time,
        # so none starts once it is spent
        batch = self.jobs if self.max_cost is not None else max(1, len(queue))
        ctrl_c = CtrlC()  # a Ctrl-C whose KeyboardInterrupt was swallowed still stops the run
        try:
            with progress, ctrl_c:
                while queue and not self.budget.exhausted() and not self._stop.is_set():
                    jobs, queue = queue[:batch], queue[batch:]
                    for job, row in executor.execute(jobs, self):
                        ctrl_c.check()
                        if job.key in recorded or self._stop.is_set():
                            continue  # an executor must hand back each pair once; never record a pair twice
                        recorded.add(job.key)
                        self.store.append(row)
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
            self._redact_in_flight()  # the process may exit before their own clean-up runs
            executor.close()
            self.components.close()
            raise RunInterrupted(message) from None
        except BaseException:
            self.stop()
            executor.close()
            self.components.close()
            raise
        executor.close()
        self._close_jails()
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
        summary["isolation"] = self.isolation_record()
        if self.max_cost is not None:
            summary["budget"] = self.budget.to_json()
        write_json_atomic(RunDir(self.run_dir).summary, summary)
        recorded = self.store.done_attempts()
        self._finish_manifest(not queue and all((a.label, t.id, e) in recorded for a, t, e in plan))
        return summary

    def isolation_record(self) -> dict[str, Any]:
        """The run's isolation (``manifest.json`` and ``summary.json``; see :mod:`pptarena.run.trust`)."""
        return isolation_record(self.config.agents, self.isolation, self.allow_weak_isolation)

    def _close_jails(self, kill: bool = False) -> None:
        jails = self._jails
        if jails is not None:
            jails.kill_all() if kill else jails.close()

    def _check_judges(self) -> None:
        """Refuse to add verdicts of a changed judge under a label that already has verdicts."""
        path = RunDir(self.run_dir).manifest
        manifest = json.loads(path.read_text()) if path.exists() else {}
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

    def _redact_in_flight(self) -> None:
        """Mask secrets in the folders of attempts still running here (their agents were just stopped)."""
        from pptarena.redact import redact_tree

        with self._procs_lock:
            folders = list(self._in_flight)
        for folder in folders:
            redact_tree(folder)

    def stop(self) -> None:
        """Stop: no new results are written and running workers (and the executor's) are killed."""
        self._stop.set()
        with self._procs_lock:
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc)
        self._close_jails(kill=True)
        executor = getattr(self, "_executor", None)
        if executor is not None:
            executor.stop()


def _ledger_key(task_id: str, epoch: int) -> str:
    """The crash ledger's name for an attempt: the task id, with ``@e<N>`` after the first epoch."""
    return task_id if epoch <= 1 else f"{task_id}@e{epoch}"


def _relative_to(path: Path | None, root: Path) -> str | None:
    """``path`` relative to the run directory when inside it, else absolute."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(root))
    except ValueError:
        return str(resolved)
