"""Reporters: optional plugins that log a finished run somewhere else (an experiment tracker).

A run config lists them as ``[[reporters]]`` tables (``use = "<name>"`` plus the reporter's
options, validated like every component's). When a run finishes, ``arena run`` calls
:func:`report_run`: each reporter is built and handed one :class:`FinishedRun` (the run folder,
its config with secrets elided, the manifest, one row per (agent, task, epoch), the summary and
``report.html``). :func:`report_run_dir` does the same for a finished run folder from the
reporter tables its manifest recorded (``arena report``).

A reporter never changes a run: the results, summary and report are written before it is
called, and a reporter that raises (or whose package is missing) gives one warning line; the
run's results and exit code stay what they were. The core knows no tracker: the built-in MLflow
and Weights & Biases reporters are plugins like any other (docs/reporters.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pptarena.run.folder.rundir import MANIFEST, REPORT, RESULTS, SUMMARY, RunDir
from pptarena.trust.redact import redact_text
from pptarena.types import ComponentContext, PptArenaError

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.run.configuration.config import ComponentConfig, RunConfig
    from pptarena.run.configuration.registry import Registry
    from pptarena.run.folder.summary_record import Summary

SUMMARY_FIGURES = ("mean", "mean_all", "success_rate", "n")
"""The figures of each agent and judge that :meth:`FinishedRun.summary_metrics` flattens."""


@dataclass(frozen=True)
class FinishedRun:
    """What a reporter is handed: one finished run, read from its folder.

    ``config`` and ``manifest`` are as stored in ``manifest.json`` (secrets elided); ``rows`` are
    the lines of ``results.jsonl`` (one per agent, task and epoch, sorted that way); ``summary`` is
    ``summary.json``; ``report_html`` is None when the run has no ``report.html`` (``--no-report``).
    """

    run_dir: Path
    config: dict[str, Any]
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    report_html: Path | None = None
    judges: list[str] = field(default_factory=list)
    """The judge labels, in config order (the score columns of :meth:`pair_table`)."""

    @property
    def name(self) -> str:
        """The run folder's name (``demo-20250101-120000``): a good run name in a tracker."""
        return self.run_dir.name

    @property
    def files(self) -> dict[str, Path]:
        """The run's own files that exist, by name: ``results.jsonl``, ``summary.json``,
        ``manifest.json`` and ``report.html`` (what a reporter uploads as artifacts)."""
        found = {name: self.run_dir / name for name in (RESULTS, SUMMARY, MANIFEST)}
        if self.report_html is not None:
            found[REPORT] = self.report_html
        return {name: path for name, path in found.items() if path.is_file()}

    @property
    def digest(self) -> str:
        """A SHA-256 (16 hex digits) of ``results.jsonl`` as it is on disk: the same run with the
        same results has the same digest (a reporter can skip logging it twice)."""
        import hashlib

        path = self.run_dir / RESULTS
        return hashlib.sha256(path.read_bytes() if path.is_file() else b"").hexdigest()[:16]

    def flat_config(self) -> dict[str, str | int | float | bool]:
        """The config as one level of ``a.b.c`` keys (``agents.0.use = "noop"``), secrets elided;
        values that are not a string, number or boolean are written as JSON."""
        flat: dict[str, str | int | float | bool] = {}

        def walk(value: Any, key: str) -> None:
            if isinstance(value, dict) and value and set(value) != {"env"}:
                for k, v in value.items():
                    walk(v, f"{key}.{k}" if key else str(k))
            elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                for i, v in enumerate(value):
                    walk(v, f"{key}.{i}")
            elif isinstance(value, str | int | float | bool) and key:
                flat[key] = value
            elif key:
                flat[key] = json.dumps(value, sort_keys=True, default=str)

        walk(self.config, "")
        return flat

    def steps(self) -> dict[tuple[str, int], int]:
        """``(task_id, epoch)`` → its index (0, 1, ...) in sorted order: the step of a pair's
        scores, the same for every agent so their series line up task by task."""
        keys = sorted({(str(r["task_id"]), int(r.get("epoch") or 1)) for r in self.rows})
        return {key: i for i, key in enumerate(keys)}

    def pair_table(self) -> tuple[list[str], list[list[Any]]]:
        """The per-pair scores as a table: ``(columns, rows)``.

        Columns: ``step`` (see :meth:`steps`), ``agent``, ``task_id``, ``epoch``, ``status``, one
        score column per judge label (None when the judge gave none), ``duration_s``, ``cost_usd``
        and ``error``.
        """
        steps = self.steps()
        columns = [
            "step",
            "agent",
            "task_id",
            "epoch",
            "status",
            *self.judges,
            "duration_s",
            "cost_usd",
            "error",
        ]
        table = []
        for row in self.rows:
            epoch = int(row.get("epoch") or 1)
            scores = row.get("scores") or {}
            cost = row.get("cost") or {}
            table.append(
                [
                    steps[(str(row["task_id"]), epoch)],
                    row["agent"],
                    row["task_id"],
                    epoch,
                    row.get("status"),
                    *[_number((scores.get(j) or {}).get("score")) for j in self.judges],
                    _number(row.get("duration_s")),
                    _number(cost.get("usd")) if isinstance(cost, dict) else None,
                    row.get("error"),
                ]
            )
        return columns, table

    def pair_scores(self) -> Iterable[tuple[str, str, int, float]]:
        """``(agent, judge, step, score)`` for every score a judge gave (scored pairs only have them)."""
        steps = self.steps()
        for row in self.rows:
            step = steps[(str(row["task_id"]), int(row.get("epoch") or 1))]
            for judge, block in (row.get("scores") or {}).items():
                score = _number((block or {}).get("score"))
                if score is not None:
                    yield row["agent"], judge, step, score

    def summary_metrics(self) -> dict[str, float]:
        """The summary's headline figures as flat ``name → number``: ``<agent>/<judge>/<figure>``
        for each of :data:`SUMMARY_FIGURES`, ``<agent>/status/<status>`` counts,
        ``<agent>/attempts``, ``<agent>/duration_s``, ``<agent>/cost_usd`` and the run's ``cost_usd``."""
        out: dict[str, float] = {}
        for agent, part in (self.summary.get("agents") or {}).items():
            if not isinstance(part, dict):
                continue
            for judge, figures in (part.get("judges") or {}).items():
                for figure in SUMMARY_FIGURES:
                    value = _number((figures or {}).get(figure))
                    if value is not None:
                        out[f"{agent}/{judge}/{figure}"] = value
            for status, count in (part.get("status") or {}).items():
                if _number(count) is not None:
                    out[f"{agent}/status/{status}"] = float(count)
            for key in ("attempts", "duration_s"):
                if _number(part.get(key)) is not None:
                    out[f"{agent}/{key}"] = float(part[key])
            cost = _number((part.get("cost") or {}).get("usd"))
            if cost is not None:
                out[f"{agent}/cost_usd"] = cost
        cost = _number((self.summary.get("cost") or {}).get("usd"))
        if cost is not None:
            out["cost_usd"] = cost
        return out


@runtime_checkable
class Reporter(Protocol):
    """What a ``[[reporters]]`` component implements (registered with ``register_reporters``)."""

    def report(self, run: FinishedRun) -> str | None:
        """Log ``run``; return one line for the user (where it went) or None. May raise: the
        caller turns any exception into one warning line and the run is unaffected."""
        ...


def _number(value: Any) -> float | None:
    """``value`` as a finite float, None when it is not a number (booleans count as numbers)."""
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def read_finished_run(run_dir: Path, summary: Summary | dict[str, Any] | None = None) -> FinishedRun:
    """The :class:`FinishedRun` of a run folder (``summary`` as computed, else ``summary.json``)."""
    from pptarena.run.folder.manifest_record import Manifest
    from pptarena.run.folder.results import read_results

    paths = RunDir(Path(run_dir).resolve())
    manifest = Manifest.read(paths.manifest)
    if summary is None:
        try:
            summary = json.loads(paths.summary.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            summary = {}
    data = summary if isinstance(summary, dict) else summary.to_json()
    rows = sorted(
        (r.to_line() for r in read_results(paths.results)),
        key=lambda r: (r["agent"], r["task_id"], int(r.get("epoch") or 1)),
    )
    judges = list(manifest.judges) or list(data.get("judges") or [])
    return FinishedRun(
        run_dir=paths.root,
        config=manifest.config,
        manifest=manifest.to_json(),
        rows=rows,
        summary=data,
        report_html=paths.report if paths.report.is_file() else None,
        judges=judges,
    )


def _no_model(ref: str) -> Any:
    raise PptArenaError(f"a reporter cannot call models (asked for {ref!r})")


def _build(comp: ComponentConfig, cache_dir: Path) -> Any:
    context = ComponentContext(cache_dir=cache_dir, model=_no_model, name=comp.use, label=comp.label)
    return comp.spec.factory(comp.options, context)


def _warning(
    comp: ComponentConfig, what: str, exc: BaseException, tail: str = "the run's results are unaffected"
) -> str:
    """One line: the reporter, what failed and why (the first line of the error, secrets masked)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    why = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return redact_text(f"warning: reporter {comp.label!r} ({comp.use}) {what}: {why}; {tail}")


def run_reporters(reporters: list[ComponentConfig], run: FinishedRun, cache_dir: Path) -> list[str]:
    """Build each reporter and hand it ``run``; one message per reporter (its own line, or a
    ``warning: ...`` line when it could not be built or raised). Never raises (but Ctrl-C)."""
    messages = []
    for comp in reporters:
        try:
            reporter = _build(comp, cache_dir)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a reporter never fails the run
            messages.append(_warning(comp, "could not start", exc))
            continue
        try:
            said = reporter.report(run)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a reporter never fails the run
            messages.append(_warning(comp, "failed", exc))
            continue
        if said:
            messages.append(redact_text(" ".join(str(said).split())))
    return messages


def _cache_dir(config: RunConfig | None) -> Path:
    from pptarena.run.configuration.config import default_cache_dir

    if config is not None and config.run.cache_dir:
        return Path(config.run.cache_dir).expanduser()
    return default_cache_dir()


def report_run(
    config: RunConfig, registry: Registry, run_dir: Path, summary: Summary | dict[str, Any] | None = None
) -> list[str]:
    """Hand a finished run to the config's ``[[reporters]]``; the lines to show the user.

    Called by ``arena run`` after the summary and ``report.html`` are written. Returns ``[]`` at
    once when the config has no reporters. A reporter that fails gives one ``warning: ...`` line
    and never raises here: the run's results and exit code do not depend on reporters.
    ``registry`` is accepted for symmetry with the other run functions (the components were
    resolved when the config was loaded).
    """
    del registry  # resolved already: config.reporters carry their specs
    if not config.reporters:
        return []
    try:
        run = read_finished_run(Path(run_dir), summary)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - reporting never fails the run
        return [redact_text(f"warning: reporters skipped: the run folder could not be read: {exc}")]
    return run_reporters(config.reporters, run, _cache_dir(config))


def report_run_dir(registry: Registry, run_dir: Path) -> list[str]:
    """Hand a finished run folder to the reporters its manifest's config names (``arena report``).

    The tables are validated again (``{ env = VAR }`` secrets are read from the environment
    again); a table that does not validate any more gives a warning line instead. ``[]`` when
    the run's config had no ``[[reporters]]``.
    """
    from pptarena.run.configuration.config import parse_reporters

    run = read_finished_run(Path(run_dir))
    tables = run.config.get("reporters")
    if not tables:
        return []
    errors: list[str] = []
    config_path = run.manifest.get("config_path")
    base = Path(config_path).parent if config_path else run.run_dir  # relative paths: as the run read them
    reporters = [r for r in parse_reporters(tables, registry, base, errors) if r is not None]
    messages = [redact_text(f"warning: reporter table skipped: {e}") for e in errors]
    return messages + run_reporters(reporters, run, _cache_dir(None))


def check_reporters(config: RunConfig) -> list[str]:
    """Build each of the config's reporters once without logging anything: ``warning: ...`` lines
    for those that cannot start here (a missing package), so a user learns it before a long run
    rather than at its end. ``[]`` when all can start."""
    messages = []
    for comp in config.reporters:
        try:
            _build(comp, _cache_dir(config))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a reporter never fails the run
            messages.append(_warning(comp, "cannot start", exc, "the run goes on without it"))
    return messages
