"""Re-judging a run's predictions with other judges (or another judge backend) without re-running agents.

``arena rescore RUN_DIR [--config X] [--out NAME]`` takes every recorded
prediction of a run and judges it with the judges of config ``X`` (default:
the run's own config, from ``manifest.json``). Results are kept apart in
``RUN_DIR/rescore/<NAME>/``, laid out like a run directory so every reader of
runs works on them too::

    rescore/<NAME>/manifest.json      kind "rescore", source run, judges, config (secrets elided)
    rescore/<NAME>/results.jsonl      same line schema as the run's (status, scores, ...)
    rescore/<NAME>/summary.json       summarize_results() of those lines
    rescore/<NAME>/tasks/<agent>/<task>/verdicts.json, judges/<label>/..., renders/...

Pairs whose agent failed (``agent_error``, ``timeout``, an agent ``infra_error``)
are copied with their status and no scores, so means over all tasks compare
like for like. ``prediction`` in a line stays relative to the *run* directory.
Re-running the same command resumes.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pptarena.models.pricing import pair_cost
from pptarena.report.data import RunData, load_run, load_run_tasks, read_json, run_config
from pptarena.run.attempts import attempt_dir, reused_rows, row_dir
from pptarena.run.folder.fingerprint import cached_fingerprint, check_fingerprints
from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.results import SCHEMA_VERSION, ResultsStore, summarize_results, write_json_atomic
from pptarena.run.folder.rundir import VERDICTS, RunDir
from pptarena.run.folder.summary_record import Summary
from pptarena.run.judging import judge_prediction
from pptarena.types import PptArenaError, Prediction, Status, Task

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
COPIED_STATUSES = (Status.AGENT_ERROR, Status.TIMEOUT)


class RescoreError(PptArenaError):
    """A re-score cannot start (bad name, no judges, unreadable run)."""


def rescore_name(name: str | None, config_path: Path | None) -> str:
    """The folder name under ``rescore/``: ``name``, else the config's stem, else ``"self"``."""
    chosen = name or (Path(config_path).stem if config_path else "self")
    if not _NAME_RE.match(chosen):
        raise RescoreError(f"re-score name {chosen!r} must be letters, digits, '.', '_' or '-' (at most 100)")
    return chosen


def judges_config(manifest: Manifest, registry: Any, config_path: Path) -> Any:
    """The config whose judges (renderer, backends) re-score the run.

    A re-score config needs only ``[[judges]]`` (and what they use): the dataset and the agents are
    the run's own, so a config without ``[dataset]`` / ``[[datasets]]`` or ``[[agents]]`` / ``[agent]``
    gets those tables from the run's manifest (they are only validated here, never run).
    """
    import tomllib

    from pptarena.run.configuration.config import MAX_CONFIG_BYTES, ConfigError, parse_config

    path = Path(config_path).expanduser()
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"invalid config {path}: not valid TOML: {exc}") from exc
    run = manifest.config
    for group in (("dataset", "datasets"), ("agents", "agent")):
        if not any(key in data for key in group):
            data.update({key: run[key] for key in group if key in run})
    return parse_config(data, registry, path.resolve())


def prediction_path(run_dir: Path, row: ResultRow) -> Path | None:
    """The recorded prediction deck of a result line, when the file still exists."""
    pred = row.prediction
    if not pred:
        return None
    p = Path(pred)
    # absolute: the path is handed to judges that bind it into a jail (bwrap needs an absolute source)
    p = p if p.is_absolute() else Path(run_dir).absolute() / p
    return p if p.is_file() else None


def _copied(row: ResultRow, status: Status | str, error: str | None) -> ResultRow:
    """The re-score line of ``row``'s attempt before any judging: ``status`` and ``error``, no scores,
    usage or time of its own (the agent's are the run's, not the re-score's), the run's ``prediction``
    and ``metadata``, and the run's status as ``source_status``."""
    out = ResultRow.begin(row.agent, row.task_id, row.epoch, metadata=row.metadata)
    out.status = Status(status)
    out.error = error
    out.prediction = row.prediction
    out.source_status = row.status
    return out


class Rescorer:
    """Re-judges the predictions of one run into ``RUN_DIR/rescore/<name>/``."""

    def __init__(
        self,
        run_dir: Path,
        registry: Any,
        *,
        config_path: Path | None = None,
        name: str | None = None,
        jobs: int = 1,
        agents: list[str] | None = None,
    ):
        # absolute: the prediction paths built from it are bind sources of the judges' jails, which
        # a relative path (to the shell's folder) would not name (issue 33 item 4)
        self.run_dir = Path(run_dir).absolute()
        self.registry = registry
        self.config_path = Path(config_path) if config_path else None
        self.name = rescore_name(name, self.config_path)
        self.out_dir = RunDir(self.run_dir).rescore(self.name).root
        self.jobs = max(1, int(jobs))
        self.agents = agents
        self.data: RunData = load_run(self.run_dir, with_rescores=False)
        self.run_config = run_config(self.data.manifest, registry)
        self.judge_config = (
            judges_config(self.data.manifest, registry, self.config_path)
            if self.config_path
            else self.run_config
        )
        if not self.judge_config.judges:
            raise RescoreError(f"{self.config_path or 'the run config'} has no [[judges]] to re-score with")

    def _manifest(self, finished: bool, started: str) -> None:
        write_json_atomic(
            RunDir(self.out_dir).manifest,
            {
                "schema_version": SCHEMA_VERSION,
                "kind": "rescore",
                "source_run": str(self.run_dir.resolve()),
                "config_path": str(self.judge_config.path),
                "config": self.judge_config.redacted(),
                "agents": self.data.agents,
                "judges": [j.label for j in self.judge_config.judges],
                "judge_fingerprints": getattr(self, "fingerprints", {}),
                "started_at": started,
                "finished_at": datetime.now(UTC).isoformat(timespec="seconds") if finished else None,
            },
        )

    def _one(
        self, row: ResultRow, task: Task | None, judges: list[tuple[Any, Any]], components: Any
    ) -> ResultRow:
        if row.status in COPIED_STATUSES:
            return _copied(row, row.status, row.error)
        pred = prediction_path(self.run_dir, row)
        if pred is None:
            status = Status.INFRA_ERROR if row.status == Status.INFRA_ERROR else Status.AGENT_ERROR
            return _copied(row, status, row.error or "no prediction deck was recorded")
        if task is None:
            return _copied(row, Status.INFRA_ERROR, f"task {row.task_id} is no longer in the run's dataset")
        t0 = time.monotonic()
        task_dir = attempt_dir(self.out_dir, row.agent, row.task_id, row.epoch)
        task_dir.mkdir(parents=True, exist_ok=True)
        judged = judge_prediction(
            task,
            Prediction(path=pred),
            judges,
            task_dir,
            components,
            pair_dir=row_dir(self.run_dir, row),
        )
        out = _copied(row, judged.status, judged.error)
        out.scores = judged.scores
        out.usage = judged.usage
        out.duration_s = round(time.monotonic() - t0, 3)
        out.cost = pair_cost(None, {k: v.get("cost") for k, v in judged.verdicts.items()})
        write_json_atomic(
            task_dir / VERDICTS,
            {
                "status": judged.status,
                "error": out.error,
                "verdicts": judged.verdicts,
                "judge_usage": judged.usage,
            },
        )
        return out

    def run(self, progress: Any = None) -> Summary:
        """Judge every pending pair; returns the re-score summary (also in ``summary.json``)."""
        from pptarena.run.configuration.components import Components
        from pptarena.run.progress import Progress

        self.out_dir.mkdir(parents=True, exist_ok=True)
        store = ResultsStore(self.out_dir)
        started = datetime.now(UTC).isoformat(timespec="seconds")
        previous = RunDir(self.out_dir).manifest
        # read_json, not Manifest.read: an unreadable manifest stops the re-score rather than passing as empty
        previous_manifest = Manifest.from_json(read_json(previous)) if previous.is_file() else Manifest()
        tasks = load_run_tasks(self.run_config, self.registry)
        rows = [r for r in self.data.rows if self.agents is None or r.agent in self.agents]
        done = store.done_attempts()
        pending = [r for r in rows if r.key not in done]
        components = Components(self.judge_config, self.registry)
        progress = progress or Progress(len(rows), quiet=True)
        progress.done = len(rows) - len(pending)
        try:
            judges = [(j, components.build(j)) for j in self.judge_config.judges]
            self.fingerprints = {
                c.label: cached_fingerprint(c, j, self.judge_config.backends) for c, j in judges
            }
            check_fingerprints(
                self.fingerprints,
                previous_manifest,
                store.read(),
                str(self.out_dir),
                "Re-score into a new folder instead: "
                f"`arena rescore {self.run_dir} --config ... --out NEW_NAME`.",
            )
            self._manifest(False, started)
            with progress, ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="rescore") as pool:
                # a deterministic agent's reused epochs are not judged again: they copy the re-scored epoch 1
                futures = [
                    pool.submit(self._one, r, tasks.get(r.task_id), judges, components)
                    for r in pending
                    if not r.reused_from_epoch
                ]
                for fut in futures:
                    line = fut.result()
                    store.append(line)
                    progress.result(line)
                for agent in sorted({r.agent for r in rows if r.reused_from_epoch}):
                    epochs = max(r.epoch for r in rows if r.agent == agent)
                    for copy in reused_rows(store.read(), agent, epochs):
                        store.append(copy)
                        progress.result(copy)
        finally:
            components.close()
        summary = summarize_results(store.read())
        summary.source_run = str(self.run_dir.resolve())  # an extra key, written last
        write_json_atomic(RunDir(self.out_dir).summary, summary.to_json())
        self._manifest(True, started)
        return summary


def rescore(
    run_dir: Path,
    registry: Any = None,
    *,
    config_path: Path | None = None,
    name: str | None = None,
    jobs: int = 1,
) -> tuple[Path, Summary]:
    """Re-score a run; returns ``(RUN_DIR/rescore/<name>, summary)``."""
    if registry is None:
        from pptarena.run.configuration.registry import get_registry

        registry = get_registry()
    r = Rescorer(run_dir, registry, config_path=config_path, name=name, jobs=jobs)
    return r.out_dir, r.run()
