"""Reading a finished (or running) run directory for reports, re-scoring and meta-evaluation.

Nothing here writes to the run directory. The run's config is rebuilt from
``manifest.json`` (the redacted copy the runner stored; ``{ env = ... }``
secrets are resolved from the environment again), so a report or a re-score
works without the original TOML file, as long as the dataset's files are
still where they were.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.report.fileio import read_regular
from pptarena.report.pairfiles import PairFiles
from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.records import ResultLineProblem, ResultRow
from pptarena.run.folder.results import read_results  # noqa: F401 - re-exported for report modules
from pptarena.run.folder.rundir import VERDICTS, RunDir
from pptarena.run.folder.summary_record import Summary
from pptarena.types import PptArenaError, Task

MAX_JSON_BYTES = 64 * 1024 * 1024


class RunDirError(PptArenaError):
    """The folder is not a readable run directory; the message names the file and the problem."""


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file, bounded in size; :class:`RunDirError` naming the file when unreadable."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read ({exc})") from exc
    if size > limit:
        raise RunDirError(f"{path}: {size} bytes is larger than the {limit}-byte limit")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunDirError(f"{path}: not valid JSON ({exc})") from exc


def pair_dir(run_dir: Path, agent: str, task_id: str) -> Path:
    """``tasks/<agent>/<task>`` of a run (the same safe names the runner uses)."""
    return RunDir(run_dir).pair(agent, task_id)


@dataclass
class RunData:
    """What a run directory holds: manifest, result lines and summary, as their typed records."""

    run_dir: Path
    manifest: Manifest
    rows: list[ResultRow]
    summary: Summary
    rescores: dict[str, RunData] = field(default_factory=dict)
    problems: list[ResultLineProblem] = field(default_factory=list)
    """Result lines that were skipped because they are not valid rows (file and line of each)."""

    @property
    def agents(self) -> list[str]:
        """Agent labels in manifest order (then any others found in results)."""
        seen = list(self.manifest.agents)
        for r in self.rows:
            if r.agent not in seen:
                seen.append(r.agent)
        return seen

    @property
    def judges(self) -> list[str]:
        """Judge labels in manifest order (then any others found in results)."""
        seen = list(self.manifest.judges)
        for r in self.rows:
            for j in r.scores:
                if j not in seen:
                    seen.append(j)
        return seen

    def task_ids(self) -> list[str]:
        """Task ids in first-seen order of the results."""
        return list(dict.fromkeys(r.task_id for r in self.rows))

    def row(self, agent: str, task_id: str, epoch: int = 1) -> ResultRow | None:
        """The result line of one pair's attempt ``epoch`` (None when absent)."""
        index = self.__dict__.get("_row_index")
        if index is None or index[0] != len(self.rows):  # built on first use, rebuilt if rows were added
            by_attempt: dict[tuple[str, str, int], ResultRow] = {}
            for r in self.rows:
                by_attempt.setdefault(r.key, r)
            index = self.__dict__["_row_index"] = (len(self.rows), by_attempt)
        return index[1].get((agent, task_id, epoch))

    def pair_dir(self, agent: str, task_id: str) -> Path:
        """The pair's folder in the run directory."""
        cache = self.__dict__.setdefault("_pair_dirs", {})  # reports ask for each pair's folder several times
        found = cache.get((agent, task_id))
        if found is None:
            found = cache[(agent, task_id)] = pair_dir(self.run_dir, agent, task_id)
        return found

    def verdicts(
        self, agent: str, task_id: str, epoch: int = 1, files: PairFiles | None = None
    ) -> dict[str, Any]:
        """The ``verdicts.json`` of the pair's attempt ``epoch`` (empty when missing, not a regular file,
        too large or unreadable).

        :param files: the attempt's folder held open (:class:`pptarena.report.pairfiles.PairFiles`):
            read through it, walked from the run folder without links.
        """
        if files is not None:
            raw = files.read(VERDICTS, MAX_JSON_BYTES)
        else:
            folder = (
                self.pair_dir(agent, task_id)
                if epoch <= 1
                else RunDir(self.run_dir).attempt(agent, task_id, epoch)
            )
            raw = read_regular(os.path.join(folder, VERDICTS), MAX_JSON_BYTES)
        if raw is None:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included
            return {}
        return data if isinstance(data, dict) else {}


def stored_summary(path: Path, rows: list[ResultRow], statistics: dict[str, Any]) -> Summary | None:
    """``summary.json`` when it summarizes exactly ``rows`` with these ``statistics`` options and this
    code's summary revision (its ``source``, :func:`pptarena.run.folder.results.rows_source`), else None.

    What the runner added beside the figures (``budget``, ``isolation``) is left out, so the result
    equals what :func:`pptarena.run.folder.results.summarize_results` would return.
    """
    from pptarena.run.folder.results import SCHEMA_VERSION, rows_source

    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except RunDirError:
        return None
    if (
        not isinstance(data, dict)
        or data.get("schema_version") != SCHEMA_VERSION
        or data.get("statistics") != statistics
        or not isinstance(data.get("source"), dict)
        or data["source"] != rows_source(rows)
    ):
        return None
    data.pop("budget", None)
    data.pop("isolation", None)  # the run's isolation record (the runner's, like the budget)
    try:
        return Summary.model_validate(data)
    except ValueError:  # pydantic's ValidationError: a damaged summary is recomputed
        return None


def load_run(run_dir: Path, *, with_rescores: bool = True) -> RunData:
    """Read a run directory (``results.jsonl`` required; manifest and summary optional).

    The summary is recomputed from the lines unless ``summary.json`` was computed from the very
    same lines and options (:func:`stored_summary`): a running or resumed run is shown as it is now.

    :raises RunDirError: when the folder has no results file or a file is unreadable.
    """
    from pptarena.run.folder.results import summarize_results
    from pptarena.run.statistics.summary_stats import stats_options

    run_dir = Path(run_dir)
    layout = RunDir(run_dir)
    results = layout.results
    if not results.is_file():
        raise RunDirError(f"{run_dir} is not a run directory (no results.jsonl)")
    manifest = Manifest()
    if layout.manifest.is_file():
        manifest = Manifest.from_json(read_json(layout.manifest))
    problems: list[ResultLineProblem] = []
    rows = read_results(results, problems)
    # the run as it is now: the stored summary only when it was computed from exactly these lines
    opts = stats_options(manifest.run_table)
    summary = stored_summary(layout.summary, rows, opts.to_json())
    if summary is None:
        summary = summarize_results(rows, opts=opts)
    data = RunData(run_dir, manifest, rows, summary, problems=problems)
    if with_rescores and layout.rescores.is_dir():
        for sub in sorted(layout.rescores.iterdir()):
            if RunDir(sub).is_run():
                try:
                    data.rescores[sub.name] = load_run(sub, with_rescores=False)
                except RunDirError:
                    continue
    return data


def run_config(manifest: Manifest, registry: Any, config_path: Path | None = None) -> Any:
    """The run's :class:`pptarena.run.configuration.config.RunConfig`, rebuilt from the manifest.

    Relative paths resolve against the original config's folder (``manifest["config_path"]``).
    With ``config_path`` the given TOML file is loaded instead.

    :raises pptarena.run.configuration.config.ConfigError: when the stored config no longer validates.
    """
    from pptarena.run.configuration.config import ConfigError, load_config, parse_config

    if config_path is not None:
        return load_config(config_path, registry)
    raw = manifest.config
    if not raw:
        raise ConfigError("the run's manifest.json holds no config; pass --config")
    origin = Path(manifest.config_path or "run.toml")
    return parse_config(raw, registry, origin)


def load_run_tasks(config: Any, registry: Any) -> dict[str, Task]:
    """The run dataset's tasks by id (built through
    :class:`pptarena.run.configuration.components.Components`)."""
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.tasks import load_tasks

    return {t.id: t for t in load_tasks(Components(config, registry))}


def tasks_or_problem(manifest: Manifest, registry: Any) -> tuple[dict[str, Task], str | None]:
    """Like :func:`load_run_tasks` from the manifest, but returns ``({}, reason)`` instead of raising."""
    try:
        return load_run_tasks(run_config(manifest, registry), registry), None
    except Exception as exc:  # noqa: BLE001 - the report still works without the dataset
        return {}, f"the run's dataset could not be loaded ({type(exc).__name__}: {exc})"
