"""The runner: dataset → agent → prediction → judges → one result line per (agent, task).

Each pair gets a private workspace with a copy of the input deck (the
dataset's file is never touched). Agents run in a worker process of their own
(:mod:`pptarena.run.worker`) in a new session, so ``task_timeout`` really stops a
runaway agent and anything it started; agents marked ``in_process = True``
(trivial baselines) skip that cost. Judges run in the runner's process.

Results are appended to ``results.jsonl`` as each pair finishes. Re-running
the same command resumes: finished pairs are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pptarena.models import UsageBook
from pptarena.models.messages import add_counts
from pptarena.procs import kill_group, run_in_session
from pptarena.run.components import Components
from pptarena.run.config import ComponentConfig, RunConfig
from pptarena.run.judging import judge_prediction
from pptarena.run.progress import Progress
from pptarena.run.records import ResultLineProblem
from pptarena.run.references import normalized_references, normalizer_of
from pptarena.run.registry import Registry
from pptarena.run.requirements import unmet_requirements
from pptarena.run.results import SCHEMA_VERSION, ResultsStore, summarize_results, write_json_atomic
from pptarena.run.rundir import AGENT_ERROR, AGENT_LOG, AGENT_STDERR, INPUT, VERDICTS, RunDir, safe_name
from pptarena.run.sessions import is_session, run_session
from pptarena.run.tasks import load_tasks, select_tasks
from pptarena.run.worker import classify_exception, prediction_from_json, run_agent
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


def config_hash(config: RunConfig) -> str:
    """A stable hash of the config (secrets elided), used to find a run to resume."""
    raw = dict(config.redacted())
    raw.get("run", {}).pop("out", None) if isinstance(raw.get("run"), dict) else None
    return hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


def choose_run_dir(config: RunConfig, out: str | None, new: bool = False) -> tuple[Path, bool]:
    """The run directory and whether it already holds a run to resume.

    Explicit ``out`` (CLI or ``[run] out``) is used as is. Otherwise the newest
    ``runs/<stem>-<timestamp>`` started from the same config is resumed (a finished
    one just reports its results again; pairs added since, e.g. new tasks, run);
    ``new`` or no such folder makes a new timestamped folder.
    """
    chosen = out or config.run.out
    if chosen:
        p = Path(chosen).expanduser()
        return p, RunDir(p).results.exists()
    runs = Path("runs")
    if not new and runs.is_dir():
        h = config_hash(config)
        for cand in sorted(runs.glob(f"{config.stem}-*"), reverse=True):
            try:
                manifest = json.loads(RunDir(cand).manifest.read_text())
            except (OSError, ValueError):
                continue
            if manifest.get("config_hash") == h:
                return cand, True
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, n = runs / f"{config.stem}-{stamp}", 1
    while candidate.exists():  # two runs started in the same second
        n += 1
        candidate = runs / f"{config.stem}-{stamp}-{n}"
    return candidate, False


def _agent_tables(config: dict[str, Any]) -> dict[str, Any]:
    tables = config.get("agents", [config["agent"]] if "agent" in config else [])
    if isinstance(tables, dict):
        tables = [tables]
    labels = {}
    for t in tables:
        if isinstance(t, dict):
            labels[str(t.get("label") or t.get("use") or "?").rpartition(":")[2]] = t
    return labels


def resume_conflicts(previous: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """How a config differs from the one a run folder was started with, in ways that make old results stale.

    The dataset, renderer, judges and backends must be the same, and every agent label present in
    both must have the same table. Adding agents (or changing ``[run]``) is fine.
    """
    problems = []
    for key in ("dataset", "datasets", "renderer", "judges", "backends"):
        if previous.get(key) != current.get(key):
            problems.append(f"[{key}] differs")
    before, after = _agent_tables(previous), _agent_tables(current)
    for label in sorted(set(before) & set(after)):
        if before[label] != after[label]:
            problems.append(f"agent {label!r} differs")
    return problems


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
        self.components = Components(config, registry)
        self.store = ResultsStore(self.run_dir)
        self._progress = progress
        self._stop = threading.Event()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._procs_lock = threading.Lock()
        self._judges: list[tuple[ComponentConfig, Any]] | None = None
        self._judges_lock = threading.Lock()

    # ------------------------------------------------------------------ setup

    def _write_manifest(self, tasks: list[Task], skipped: dict[tuple[str, str], str] | None = None) -> None:
        path = RunDir(self.run_dir).manifest
        now = datetime.now(UTC).isoformat(timespec="seconds")
        previous: dict[str, Any] = {}
        if path.exists():
            try:
                previous = json.loads(path.read_text())
            except ValueError:
                previous = {}
        from pptarena import __version__

        manifest = {
            "schema_version": SCHEMA_VERSION,
            "pptarena_version": __version__,
            "config_path": str(self.config.path),
            "config_hash": config_hash(self.config),
            "config": self.config.redacted(),
            "components": [
                {"key": c.key_path, "label": c.label, **c.spec.provenance()} for c in self.config.components()
            ],
            "plugins": [p.to_json() for p in self.registry.plugins.values()],
            "started_at": previous.get("started_at", now),
            "resumed_at": [*previous.get("resumed_at", []), now] if previous else [],
            "finished_at": None,
            "tasks": len(tasks),
            "agents": [a.label for a in self.config.agents],
            "judges": [j.label for j in self.config.judges],
            "skipped": [{"agent": a, "task_id": t, "reason": why} for (a, t), why in (skipped or {}).items()],
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        }
        write_json_atomic(path, manifest)

    def _check_resume(self) -> None:
        """Refuse to mix results of two different configs in one run folder; warn about unreadable lines."""
        path = RunDir(self.run_dir).manifest
        problems_found: list[ResultLineProblem] = []
        rows = self.store.read(problems_found)
        for problem in problems_found:
            print(f"warning: skipped a result line (its pair runs again): {problem}", file=sys.stderr)
        if not path.exists() or not rows:
            return
        try:
            previous = json.loads(path.read_text()).get("config") or {}
        except ValueError:
            return
        problems = resume_conflicts(previous, self.config.redacted())
        if problems:
            raise PptArenaError(
                f"{self.run_dir} holds results of a different config ({'; '.join(problems)}), so resuming would mix "
                "them. Use another --out (or --new), or re-judge the existing predictions with "
                f"`arena rescore {self.run_dir} --config {self.config.path}`."
            )

    def _finish_manifest(self) -> None:
        path = RunDir(self.run_dir).manifest
        manifest = json.loads(path.read_text())
        manifest["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        write_json_atomic(path, manifest)

    def judges(self) -> list[tuple[ComponentConfig, Any]]:
        """The run's judges, built once."""
        with self._judges_lock:
            if self._judges is None:
                self._judges = [(j, self.components.build(j)) for j in self.config.judges]
            return self._judges

    # ------------------------------------------------------------------ one pair

    def _workspace(self, agent: ComponentConfig, task: Task) -> Workspace:
        task_dir = RunDir(self.run_dir).pair(agent.label, task.id)
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

    def _run_agent_in_process(self, agent: ComponentConfig, task: Task, ws: Workspace) -> dict[str, Any]:
        book = UsageBook()
        model = self.components.hub.factory(book=book, log=ws.log)
        ws.model = model
        ws.renderer = self.components.lazy_renderer()
        try:
            instance = self.components.build(agent, model=model)
            pred = run_agent(instance, task, ws)
            out: dict[str, Any] = {"ok": True, "prediction": pred}
        except Exception as exc:  # noqa: BLE001 - recorded as the pair's outcome
            out = {
                "ok": False,
                "status": classify_exception(exc),
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=20),
            }
        out["model_usage"] = book.total().as_dict()
        return out

    def _run_agent_in_worker(self, agent: ComponentConfig, task: Task, ws: Workspace) -> dict[str, Any]:
        spec_path = ws.dir / ".worker-spec.json"
        result_path = ws.dir / ".worker-result.json"
        spec = {
            "config_path": str(self.config.path),
            "agent_index": self.config.agents.index(agent),
            "task": task.to_json(),
            "workspace": {
                "dir": str(ws.dir),
                "input_deck": str(ws.input_deck),
                "output_deck": str(ws.output_deck),
                "log": str(ws.log.path),
            },
            "timeout": self.config.run.task_timeout,
            "manual_plugins": self.registry.manual,
            "strict": self.strict,
            "result_path": str(result_path),
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
            return {"ok": False, "status": Status.TIMEOUT, "error": f"agent exceeded task_timeout={self.config.run.task_timeout:g}s and was stopped"}
        if self._stop.is_set():
            return {"ok": False, "status": "interrupted", "error": "interrupted"}
        if not result_path.exists():
            tail = stderr_path.read_text(errors="replace")[-2000:]
            return {"ok": False, "status": Status.AGENT_ERROR, "error": f"agent worker exited with code {returncode} without a result: {tail}"}
        outcome = json.loads(result_path.read_text())
        if outcome.get("ok"):
            outcome["prediction"] = prediction_from_json(outcome["prediction"])
        return outcome

    def _check_prediction(self, pred: Prediction) -> str | None:
        if pred.path is None or not Path(pred.path).is_file():
            return "the agent produced no deck" + (f" (expected {pred.path})" if pred.path else "")
        try:
            from pptarena.deck import DeckError, slide_ids
        except ImportError:  # deck engine unavailable: judges will find out
            return None
        try:
            slide_ids(pred.path)
        except DeckError as exc:
            return f"the prediction is not a valid deck: {exc}"
        return None

    def _judge(self, task: Task, pred: Prediction, ws: Workspace) -> tuple[str, dict[str, Any], list[str], dict[str, Any]]:
        out = judge_prediction(task, pred, self.judges(), ws.dir, self.components)
        return out.status, out.scores, out.errors, {"verdicts": out.verdicts, "judge_usage": out.usage}

    def _normalize_references(self, agent: ComponentConfig, task: Task, ws: Workspace, row: dict[str, Any]) -> bool:
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
    def _new_row(agent: ComponentConfig, task: Task, usage: dict[str, Any]) -> dict[str, Any]:
        return {
            "agent": agent.label,
            "task_id": task.id,
            "status": Status.SCORED,
            "scores": {},
            "error": None,
            "duration_s": 0.0,
            "usage": dict(usage),
            "metadata": task.metadata,
        }

    def run_pair(self, agent: ComponentConfig, task: Task) -> dict[str, Any] | None:
        """Run one agent on one task, judge it and append the result (None if interrupted)."""
        if is_session(task):  # multi-turn: the turns run in order (see pptarena.run.sessions)
            return run_session(self, agent, task)
        t0 = time.monotonic()
        try:
            ws = self._workspace(agent, task)
        except OSError as exc:  # cannot copy the input deck or write the task folder: the harness's fault
            if self._stop.is_set():
                return None
            failed = self._new_row(agent, task, {})
            failed.update(status=Status.INFRA_ERROR, error=f"could not prepare the workspace: {exc}")
            failed["duration_s"] = round(time.monotonic() - t0, 3)
            self.store.append(failed)
            return failed
        in_process = bool(getattr(agent.spec.factory, "in_process", False))
        try:
            outcome = (self._run_agent_in_process if in_process else self._run_agent_in_worker)(agent, task, ws)
        except Exception as exc:  # noqa: BLE001 - starting the worker failed: the harness's fault
            outcome = {"ok": False, "status": Status.INFRA_ERROR, "error": f"could not run the agent: {exc}"}
        if self._stop.is_set():
            return None
        row = self._new_row(agent, task, outcome.get("model_usage") or {})
        details: dict[str, Any] = {}
        if not outcome.get("ok"):
            row["status"] = outcome["status"]
            row["error"] = outcome.get("error")
            if outcome.get("traceback"):
                (ws.dir / AGENT_ERROR).write_text(outcome["traceback"], encoding="utf-8")
        else:
            pred: Prediction = outcome["prediction"]
            add_counts(row["usage"], pred.usage)
            problem = self._check_prediction(pred)
            if problem:
                row["status"] = Status.AGENT_ERROR
                row["error"] = problem
            elif not self._normalize_references(agent, task, ws, row):
                pass  # the reference decks could not be re-saved: the row holds the infra_error
            else:
                status, scores, errors, details = self._judge(task, pred, ws)
                row["status"], row["scores"] = status, scores
                row["error"] = "; ".join(errors) or None
                add_counts(row["usage"], details.get("judge_usage", {}))
            row["prediction"] = _relative_to(pred.path, self.run_dir)
        row["duration_s"] = round(time.monotonic() - t0, 3)
        write_json_atomic(ws.dir / VERDICTS, {"status": row["status"], "error": row["error"], **details})
        if self._stop.is_set():
            return None
        self.store.append(row)
        return row

    # ------------------------------------------------------------------ the run

    def run(self) -> dict[str, Any]:
        """Run every pending pair; returns the summary (also written to summary.json)."""
        tasks = select_tasks(load_tasks(self.components), self.task_globs, self.limit)
        self._check_resume()
        skipped = {(a.label, t.id): why for a in self.config.agents for t in tasks
                   if (why := unmet_requirements(a.spec.factory, t))}
        self._write_manifest(tasks, skipped)
        done = self.store.done(self.retry_statuses)
        pending = [(a, t) for a in self.config.agents for t in tasks
                   if (a.label, t.id) not in done and (a.label, t.id) not in skipped]
        total = len(self.config.agents) * len(tasks) - len(skipped)
        progress = self._progress or Progress(total, quiet=self.quiet)
        progress.done = total - len(pending)
        for (label, task_id), why in skipped.items():
            progress.message(f"Skipped task {task_id} for agent {label}: {why}.")
        if progress.done:
            progress.message(f"Resuming {self.run_dir}: {progress.done} of {total} results already recorded.")
        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="pair")
        futures: set[Future[Any]] = set()
        try:
            with progress:
                for agent, task in pending:
                    futures.add(pool.submit(self.run_pair, agent, task))
                while futures:
                    finished, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        row = fut.result()
                        if row is not None:
                            progress.result(row)
        except KeyboardInterrupt:
            self.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            self.components.close()
            raise RunInterrupted(
                f"Interrupted. {len(self.store.done())} of {total} results are saved in {self.run_dir}.\n"
                f"Resume with: arena run --config {self.config.path} --out {self.run_dir}"
            ) from None
        except BaseException:
            self.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            self.components.close()
            raise
        pool.shutdown(wait=True)
        self.components.close()
        summary = summarize_results(self.store.read())
        write_json_atomic(RunDir(self.run_dir).summary, summary)
        recorded = self.store.done()
        if all((a.label, t.id) in recorded or (a.label, t.id) in skipped for a in self.config.agents for t in tasks):
            self._finish_manifest()
        return summary

    def stop(self) -> None:
        """Stop: no new results are written and running workers are killed."""
        self._stop.set()
        with self._procs_lock:
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc)


def _relative_to(path: Path | None, root: Path) -> str | None:
    """``path`` relative to the run directory when inside it, else absolute."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(root))
    except ValueError:
        return str(resolved)
