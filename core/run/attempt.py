"""One attempt: one (agent, task, epoch) from its task folder to its result row.

:class:`Attempts` makes the attempts of a run. An executor (or a Ray node) calls :meth:`Attempts.run`
for each pair it was handed; a multi-turn session (:mod:`pptarena.run.sessions`) calls
:meth:`Attempts.run_turn` per turn and :meth:`Attempts.new_row` for its own row. That, with
:meth:`~Attempts.using`, :meth:`~Attempts.stopping`, :meth:`~Attempts.stop` and
:meth:`~Attempts.close`, is the public API. One attempt, in order:

1. a fresh task folder under ``run_dir`` with a copy of the input deck (:meth:`Attempts.workspace`);
2. the agent runs where :func:`pptarena.run.jail.boundary.agent_process` says, on a **launcher** given to
   this object (:mod:`pptarena.run.launchers`): its own process in a jail (the default), a plain
   worker (built-in agents that jail their own tools; the executor's warm pool when it brought one
   through :meth:`Attempts.using`), or this process (``trusted = true``; the reference baseline, the
   only one handed the full task); every other agent gets the task without its answer;
3. what the agent side left where the harness writes is removed; the deck it handed in is checked
   (a link or an unreadable deck is the agent's fault; some judges still grade an unreadable one);
4. the task's decks are re-saved by the agent's tool when its class asks (:mod:`.references`);
5. the judges run in this process (:mod:`.judging`); ``verdicts.json`` is written;
6. the row: status, scores, usage and cost (what the harness counted: the launcher's usage book and
   the judges'), the usage the agent reported itself apart (``reported_usage``), the tools it had
   and used (``tools``, from ``Prediction.metadata["tools"]``), isolation,
   ``agent_process``, ``prediction`` (relative to the run folder when inside it); the folder is
   redacted. Appending the row is the run's job.

Why it is long: every step of one attempt listed above lives in one class, so once the folder exists no
way through it (a failed launch, a stop, an unreadable deck that some judges still grade) skips removing
what the agent side forged or redacting the folder. The functions that vet what an agent hands in
(:func:`check_prediction`, :func:`kept_notes`, :func:`keep_reported_usage`, :func:`keep_tools`) are a
second job and could move to a module of their own (not done yet).
"""

from __future__ import annotations

import copy
import functools
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from pptarena.models.messages import add_counts
from pptarena.models.pricing import pair_cost
from pptarena.run.batches import BatchWait, current_wait
from pptarena.run.configuration.batching import batches_agent
from pptarena.run.configuration.config import ComponentConfig
from pptarena.run.folder.records import (
    MAX_REPORTED_COUNT,
    AgentOutcome,
    JudgeOutcome,
    ResultRow,
    reported_usage,
    tools_usage,
)
from pptarena.run.folder.results import write_json_atomic
from pptarena.run.folder.rundir import (
    AGENT_ERROR,
    AGENT_LOG,
    INPUT,
    JUDGES,
    REFERENCES,
    RENDERS,
    VERDICTS,
    RunDir,
    prediction_name,
    safe_name,
)
from pptarena.run.folder.runlock import AttemptLedger
from pptarena.run.jail.agent_view import agent_task
from pptarena.run.jail.boundary import agent_code, agent_process, row_isolation
from pptarena.run.judging import judge_prediction
from pptarena.run.launchers import InProcessLauncher, JailLauncher, Launcher, WorkerLauncher
from pptarena.run.references import normalized_references, normalizer_of
from pptarena.run.sessions import is_session, run_session
from pptarena.trust.safeio import regular_file, remove_entry, write_replacing
from pptarena.types import AgentLog, InfraError, Prediction, Status, Task, Workspace

AFTER_AGENT = (VERDICTS, JUDGES, RENDERS, REFERENCES)
"""Names of a pair's folder the harness writes after the agent ended (judges' evidence, re-saved
reference decks, verdicts): whatever the agent side left there is removed before, never trusted."""


def ledger_key(task_id: str, epoch: int) -> str:
    """The crash ledger's name for an attempt: the task id, with ``@e<N>`` after the first epoch."""
    return task_id if epoch <= 1 else f"{task_id}@e{epoch}"


def new_row(
    agent: ComponentConfig, task: Task, epoch: int = 1, usage: dict[str, Any] | None = None
) -> ResultRow:
    """A result row of ``agent`` on ``task`` before anything happened: scored, no scores, no error
    (:meth:`ResultRow.begin`)."""
    return ResultRow.begin(
        agent.label,
        task.id,
        epoch,
        metadata=task.metadata,
        usage=usage,
        agent_process=agent_process(agent),
        agent_code=agent_code(agent),
    )


def infra_failure(agent: ComponentConfig, task: Task, epoch: int, error: str, **extra: Any) -> ResultRow:
    """The row of an attempt of ``agent`` on ``task`` the harness could not make
    (:meth:`ResultRow.infra_failure`; ``extra``: ``isolation``, ``duration_s``)."""
    return ResultRow.infra_failure(
        agent.label,
        task.id,
        epoch,
        error,
        metadata=task.metadata,
        agent_process=agent_process(agent),
        agent_code=agent_code(agent),
        **extra,
    )


class _Shared:
    """What every view of one run's :class:`Attempts` shares (see :meth:`Attempts.using`)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.in_flight: set[Path] = set()  # folders of attempts running in this process
        self.judges: list[tuple[ComponentConfig, Any]] | None = None
        self.originals: dict[str, str | None] = {}  # task's reference decks -> why one is unusable
        self.agent_slots = threading.BoundedSemaphore(1)


class Attempts:
    """Makes the attempts of one run in this process: task folder, agent, judges, row.

    ``components`` are the run's built components (:class:`~.configuration.components.Components`);
    ``jobs`` sizes the warm jail pool; ``ledger`` (None: no crash accounting, as on a Ray node) records
    the attempts running; ``host`` is the launcher of agents that run as plain host workers (default:
    one new interpreter per attempt).
    """

    def __init__(
        self,
        config: Any,
        registry: Any,
        components: Any,
        run_dir: Path,
        *,
        jobs: int = 1,
        strict: bool = False,
        ledger: AttemptLedger | None = None,
        host: Launcher | None = None,
    ):
        self.config = config
        self.registry = registry
        self.components = components
        self.run_dir = Path(run_dir).resolve()
        self.jobs = jobs
        self.strict = strict
        self.ledger = ledger
        self._shared = _Shared()
        # agents run ``jobs`` at a time even when more pairs are in flight (batch mode: most of them
        # wait for their judges' batch jobs)
        self._shared.agent_slots = threading.BoundedSemaphore(max(1, jobs))
        self._in_process = InProcessLauncher(components)
        self._workers = WorkerLauncher(config, registry, strict, self.stopping)
        self._jails = JailLauncher(components, jobs, float(config.run.task_timeout), self.stopping)
        self._host: Launcher = host or self._workers

    # ------------------------------------------------------------------ public API

    def using(self, host: Launcher) -> Attempts:
        """These attempts with ``host`` launching the agents that run as host workers (an executor's
        warm pool); everything else (stop flag, judges, jails, ledger) is shared with this object."""
        view = copy.copy(self)
        view._host = host
        return view

    @functools.cached_property
    def isolation(self) -> str:
        """The isolation untrusted code gets on this machine (see :mod:`pptarena.trust.isolation`)."""
        from pptarena.trust.sandbox import isolation_level

        return isolation_level()

    def judges(self) -> list[tuple[ComponentConfig, Any]]:
        """The run's judges, built once."""
        with self._shared.lock:
            if self._shared.judges is None:
                self._shared.judges = [(j, self.components.build(j)) for j in self.config.judges]
            return self._shared.judges

    def new_row(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> ResultRow:
        """A fresh row of ``agent`` on ``task`` (see :func:`new_row`)."""
        return new_row(agent, task, epoch)

    def stopping(self) -> bool:
        """True once the run is being stopped (no more rows are handed back)."""
        return self._shared.stop.is_set()

    def run(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> ResultRow | None:
        """Run attempt ``epoch`` of ``agent`` on ``task`` (a session: every turn) here and judge it;
        the row, or None when the run is being stopped.

        Writes the task folder; appending the row to ``results.jsonl`` is the caller's job. The attempt
        is in the crash ledger while it runs (see :class:`~pptarena.run.folder.runlock.AttemptLedger`).
        """
        key = ledger_key(task.id, epoch)
        if self.ledger is not None:
            self.ledger.start(agent.label, key)
        try:
            broken = self._reference_problem(task)
            if broken:  # the dataset's fault, found before any agent is blamed for it
                return infra_failure(agent, task, epoch, broken, isolation=self.isolation)
            if is_session(task):  # multi-turn: each turn is an attempt (see pptarena.run.sessions)
                return run_session(self, agent, task, epoch)
            return self.run_turn(agent, task, epoch)
        finally:  # not reached when the whole run dies: the ledger then counts a crash
            if self.ledger is not None:
                self.ledger.end(agent.label, key)

    def run_turn(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> ResultRow | None:
        """Run ``agent`` on the single-turn ``task`` in a new task folder and judge what it hands in;
        the row (None if the run is being stopped). The folder gets the verdicts and is redacted."""
        t0 = time.monotonic()
        try:
            ws = self.workspace(agent, task, epoch)
        except OSError as exc:  # cannot copy the input deck or write the task folder: the harness's fault
            if self.stopping():
                return None
            error = f"could not prepare the workspace: {exc}"
            return infra_failure(agent, task, epoch, error, duration_s=time.monotonic() - t0)
        from pptarena.trust.redact import redact_tree

        with self._shared.lock:
            self._shared.in_flight.add(ws.dir)
        try:
            return self._attempt_in(agent, task, epoch, ws, t0)
        finally:  # also when stopped or failing: files plugins wrote (programs, transcripts) hold no secret
            redact_tree(ws.dir)
            with self._shared.lock:
                self._shared.in_flight.discard(ws.dir)

    def workspace(self, agent: ComponentConfig, task: Task, epoch: int = 1) -> Workspace:
        """A fresh task folder for the attempt (leftovers of an interrupted one removed) with a copy
        of the input deck."""
        task_dir = RunDir(self.run_dir).attempt(agent.label, task.id, epoch)
        if task_dir.exists():  # leftovers of an interrupted attempt
            shutil.rmtree(task_dir)
        (task_dir / INPUT).mkdir(parents=True)
        input_deck = task_dir / INPUT / task.original.name
        shutil.copyfile(task.original, input_deck)
        return Workspace(
            dir=task_dir,
            input_deck=input_deck,
            output_deck=task_dir / prediction_name(task.original.suffix),
            renderer=None,
            model=self.components.model_client,
            log=AgentLog(task_dir / AGENT_LOG),
            timeout=self.config.run.task_timeout,
        )

    def launch(self, agent: ComponentConfig, task: Task, ws: Workspace) -> AgentOutcome:
        """Run ``agent`` on ``task`` in ``ws`` on the launcher its process kind calls for
        (:func:`pptarena.run.jail.boundary.agent_process`); only the reference baseline sees the full task."""
        where = agent_process(agent)
        view = agent_task(task, ws.input_deck)
        slots = self._shared.agent_slots
        if self.components.batch_queue is None:
            with slots:
                return self._launch_at(where, agent, task, view, ws)
        # batch mode: a batched agent gives its slot back while it only waits for a batch, and its
        # task timeout does not count the waiting; every pair gives it back while it waits for a
        # free worker (the launchers read the pair's BatchWait): pairs whose batch was answered hold
        # workers and need a slot to go on
        slots.acquire()
        salt = Path(ws.dir).resolve().relative_to(self.run_dir).as_posix()  # the attempt's folder
        wait = BatchWait(release=slots.release, acquire=slots.acquire, salt=salt)
        token = current_wait.set(wait)
        try:
            return self._launch_at(where, agent, task, view, ws)
        finally:
            current_wait.reset(token)
            if wait.close():
                slots.release()
            if batches_agent(agent, True):
                ws.log.write("batch_wait", seconds=round(wait.seconds(), 3))

    def _launch_at(
        self, where: str, agent: ComponentConfig, task: Task, view: Task, ws: Workspace
    ) -> AgentOutcome:
        try:
            if where == "reference":
                return self._in_process(agent, task, ws)
            if where == "in-process":
                return self._in_process(agent, view, ws)
            if where == "jail":
                return self._jails(agent, view, ws)
            return self._host(agent, view, ws)
        except Exception as exc:  # noqa: BLE001 - starting the worker failed: the harness's fault
            return AgentOutcome.failed(Status.INFRA_ERROR, f"could not run the agent: {exc}")

    def stop(self) -> None:
        """Stop: no more rows; running per-attempt workers and jailed workers are killed."""
        self._shared.stop.set()
        self._workers.kill_all()
        self._jails.close(kill=True)

    def close(self) -> None:
        """Retire the warm jailed workers (after a run)."""
        self._jails.close()

    def redact_in_flight(self) -> None:
        """Mask secrets in the folders of attempts still running here (their agents were just stopped)."""
        from pptarena.trust.redact import redact_tree

        with self._shared.lock:
            folders = list(self._shared.in_flight)
        for folder in folders:
            redact_tree(folder)

    # ------------------------------------------------------------------ steps

    def _attempt_in(
        self, agent: ComponentConfig, task: Task, epoch: int, ws: Workspace, t0: float
    ) -> ResultRow | None:
        """:meth:`run_turn` once its workspace ``ws`` exists."""
        process = agent_process(agent)
        in_process = process in ("in-process", "reference")
        outcome = self.launch(agent, task, ws)
        for name in AFTER_AGENT:  # only the harness writes these, after the agent: what is there is forged
            remove_entry(ws.dir, name)
        if self.stopping():
            return None
        row = new_row(agent, task, epoch, outcome.model_usage)
        judged: JudgeOutcome | None = None
        if outcome.prediction is None or not outcome.ok:
            row.status = outcome.status  # type: ignore[assignment]  # a failure always has one
            row.error = outcome.error
            if outcome.traceback:
                from pptarena.trust.redact import redact_text

                write_replacing(ws.dir / AGENT_ERROR, redact_text(outcome.traceback).encode("utf-8"))
        else:
            pred = outcome.prediction
            keep_reported_usage(row, pred, ws.log)
            keep_tools(row, pred, ws.log)
            row.notes = kept_notes(pred)
            problem = check_prediction(pred)
            if problem:
                row.status = Status.AGENT_ERROR
                row.error = problem
                if pred.path is not None and regular_file(pred.path):
                    # an unreadable deck: some judges still grade it
                    lenient = [
                        (c, j)
                        for c, j in self.judges()
                        if getattr(j, "grades_invalid_decks", lambda t: False)(task)
                    ]
                    if lenient:
                        judged = judge_prediction(task, pred, lenient, ws.dir, self.components)
                        row.scores = judged.scores  # type: ignore[assignment]  # validated
            elif not self._normalize_references(agent, task, ws, row):
                pass  # the reference decks could not be re-saved: the row holds the infra_error
            else:
                judged = judge_prediction(task, pred, self.judges(), ws.dir, self.components)
                row.status, row.error = judged.status, judged.error
                row.scores = judged.scores  # type: ignore[assignment]  # validated as assigned
            if judged is not None:
                add_counts(row.usage, judged.usage)
            row.prediction = _relative_to(pred.path, self.run_dir)
        details = judged.details() if judged is not None else {}
        row.duration_s = round(time.monotonic() - t0, 3)
        agent_cost = outcome.model_cost
        if (
            agent_cost is None and not in_process
        ):  # the worker was killed or crashed before reporting its calls
            agent_cost = {"usd": None, "known_usd": 0.0, "unpriced_models": ["(agent calls not reported)"]}
        row.cost = pair_cost(agent_cost, {k: v.get("cost") for k, v in details.get("verdicts", {}).items()})
        # what the harness launched the agent's code in, never what its prediction claims
        row.isolation = row_isolation(agent, self.isolation)
        row.agent_process = process
        write_json_atomic(ws.dir / VERDICTS, {"status": row.status, "error": row.error, **details})
        if self.stopping():
            return None
        return row

    def _normalize_references(
        self, agent: ComponentConfig, task: Task, ws: Workspace, row: ResultRow
    ) -> bool:
        """Store the task's decks as the agent's tool re-saves them (see :mod:`pptarena.run.references`).

        Returns False (and records an infra_error in ``row``) when that fails.
        """
        normalize = normalizer_of(agent.spec)
        if normalize is None:
            return True
        tool = f"{agent.spec.plugin}.{agent.spec.name}"
        try:
            normalized_references(task, normalize, ws.dir, self.components.cache_dir, safe_name(tool))
            return True
        except InfraError as exc:
            row.status, row.error = Status.INFRA_ERROR, str(exc)
            return False

    def _reference_problem(self, task: Task) -> str | None:
        """Why one of the task's reference decks (original, target, style) does not open, as a labelled
        ``dataset error: ...`` (None when all open); checked once per task in this process. The runner
        skips such tasks before planning (:mod:`.configuration.datacheck`); this catches the rest."""
        from pptarena.run.configuration.datacheck import reference_failure

        key = f"{task.id}\0{task.original}\0{task.target}\0{task.style_target}"
        cache = self._shared.originals
        if key not in cache:
            cache[key] = reference_failure(task, cache_dir=self.components.cache_dir)
        return cache[key]


def kept_notes(pred: Prediction) -> str | None:
    """The agent's ``Prediction.notes`` as a row keeps them: redacted, at most
    :data:`~pptarena.run.folder.records.MAX_NOTES_CHARS` characters (cut with a marker), None when empty."""
    from pptarena.run.folder.records import MAX_NOTES_CHARS
    from pptarena.trust.redact import redact_text

    text = str(pred.notes or "").strip()
    if not text:
        return None
    text = redact_text(text)
    marker = " [... cut]"
    return text if len(text) <= MAX_NOTES_CHARS else text[: MAX_NOTES_CHARS - len(marker)] + marker


def keep_reported_usage(row: ResultRow, pred: Prediction, log: AgentLog) -> None:
    """Keep the usage an agent reported itself (``Prediction.usage``) apart in ``row.reported_usage``:
    never added to ``row.usage`` (what the harness counted), the cost or the summary. Implausible
    figures (negative, non-integer, absurd) are dropped, and ``log`` says which."""
    kept, refused = reported_usage(pred.usage)
    if kept:
        row.reported_usage = kept
    if refused:
        log.write(
            "reported_usage_refused",
            refused=refused,
            note=f"usage the agent reported that is not a count from 0 to {MAX_REPORTED_COUNT}: dropped",
        )


def keep_tools(row: ResultRow, pred: Prediction, log: AgentLog) -> None:
    """Keep the tools an agent says its attempt had and used (``Prediction.metadata["tools"]``) in
    ``row.tools`` when they pass :func:`~pptarena.run.folder.records.tools_usage`; a malformed record is
    dropped whole and ``log`` says why (the row is written all the same)."""
    metadata = pred.metadata if isinstance(pred.metadata, dict) else {}
    kept, why = tools_usage(metadata.get("tools"))
    if kept is not None:
        row.tools = kept
    elif why:
        log.write(
            "tools_record_refused", reason=why, note="the agent's metadata['tools'] was dropped from the row"
        )


def check_prediction(pred: Prediction) -> str | None:
    """Why the deck an agent handed in is not one (None when it is): missing, a link or special file,
    or not loadable by the judges' loader. Each is the agent's fault."""
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

    problem = deck_problem(Path(pred.path))  # the loader the judges use: its rejection is the agent's fault
    return None if problem is None else f"the prediction is not a valid deck: {problem}"


def _relative_to(path: Path | None, root: Path) -> str | None:
    """``path`` relative to the run directory when inside it, else absolute."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(root))
    except ValueError:
        return str(resolved)
