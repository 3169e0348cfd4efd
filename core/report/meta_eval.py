"""Judge meta-evaluation: agreement of each judge with human labels, and stability over repeated judging.

Labels come from a CSV with columns ``task_id``, ``agent``, ``label`` and optionally ``kind`` (the
attempt kind of a graded set, e.g. ``complete``, ``damage``, ``wrong_value``), ``epoch`` and
``annotator`` (several people may label one attempt: their values are averaged; other columns ignored).
A label is one of:

* a number in [0, 1] (scale ``unit``), or in [0, 5] (scale ``five``, e.g. PPTArena's IF/VQ);
* one of four ordered progress classes (scale ``classes``): ``no_progress``, ``partial``,
  ``substantial``, ``complete`` (aliases: see :data:`CLASS_ALIASES`). The shared PPT-Eval
  reference (ppteval-format.md §7.3) defines only success (score == 1.0); these four classes and
  their score bands are pptarena's, documented in docs/reports.md.

Every judge of the run is compared on the pairs both it and a human scored: its ``score``
(0-1), and for judges reporting ``if_score`` / ``vq_score`` (the ``dual`` judge) those too, as
series ``<judge>.if_score`` / ``<judge>.vq_score`` (0-5 → 0-1). Reported: Kendall τ_b,
Spearman ρ, Pearson r (each with a percentile bootstrap CI), and per-class accuracy with the
judge's value put in the label's classes (see :func:`to_class`).

``--repeat K`` runs each judge of the run (or of ``--config``) K more times on the same
predictions (evidence under ``RUN_DIR/meta-eval/repeat-<k>/``) and reports
:func:`pptarena.report.meta_stats.stability` per series.

Why it is long: it holds the three steps of ``arena meta-eval``: reading and validating the human labels
CSV (scales, progress classes, annotators averaged per attempt), the agreement of each judge series with
those labels, and :func:`repeat_judges`, which judges the recorded predictions again for stability. The
labels reader (:class:`Label`, :func:`read_labels`, :func:`to_class` and their helpers) could move to a
module of its own (not done yet).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pptarena.report.meta_kinds import kind_means, within_task_order
from pptarena.report.meta_stats import (
    bootstrap_ci,
    kendall_tau_b,
    pearson,
    per_class_accuracy,
    spearman,
    stability,
)
from pptarena.run.folder.records import MAX_EPOCH, ResultRow
from pptarena.run.folder.rundir import RunDir
from pptarena.types import PptArenaError, Status

MAX_LABEL_BYTES = 20 * 1024 * 1024
MAX_LABEL_ROWS = 200_000
CLASSES = ("no_progress", "partial", "substantial", "complete")
CLASS_ALIASES = {
    "no_progress": "no_progress",
    "no progress": "no_progress",
    "none": "no_progress",
    "fail": "no_progress",
    "failed": "no_progress",
    "partial": "partial",
    "partial progress": "partial",
    "partial_progress": "partial",
    "some": "partial",
    "substantial": "substantial",
    "substantial progress": "substantial",
    "substantial_progress": "substantial",
    "mostly": "substantial",
    "complete": "complete",
    "completed": "complete",
    "success": "complete",
    "done": "complete",
    "full": "complete",
}
SCALES = ("auto", "unit", "five", "classes")
SUB_METRICS = ("if_score", "vq_score")  # 0-5 metrics compared as their own series


class LabelError(PptArenaError):
    """The labels file is unreadable or malformed; the message names the file and line."""


@dataclass(frozen=True)
class Label:
    """One human label: the raw text, its value on 0-1, its class."""

    task_id: str
    agent: str
    raw: str
    value: float
    cls: str
    kind: str = ""  # the attempt kind of a graded set (optional ``kind`` column)
    epoch: int = 1  # the attempt labelled, in a run with ``[run] epochs`` (optional ``epoch`` column)

    @property
    def key(self) -> tuple[str, str, int]:
        """(task_id, agent, epoch): the attempt this label is about, as :func:`judge_series` keys it."""
        return (self.task_id, self.agent, self.epoch)


def to_class(value01: float, scale: str) -> str:
    """A 0-1 value in the classes of ``scale``.

    ``five``: the nearest integer of ``5·v`` ("0" … "5"). ``binary`` (unit labels that are all
    0 or 1): "1" when ``v ≥ 0.5``. ``unit`` and ``classes``: the progress classes — 0 →
    no_progress, (0, 0.5) → partial, [0.5, 1) → substantial, 1 → complete.
    """
    v = min(max(float(value01), 0.0), 1.0)
    if scale == "five":
        return str(int(math.floor(5 * v + 0.5 + 1e-9)))
    if scale == "binary":
        return "1" if v >= 0.5 else "0"
    if v <= 1e-9:
        return "no_progress"
    if v >= 1 - 1e-9:
        return "complete"
    return "partial" if v < 0.5 else "substantial"


def read_labels(path: Path, scale: str = "auto") -> tuple[list[Label], str]:
    """Read and validate a labels CSV; returns ``(labels, scale)`` with the detected scale.

    :raises LabelError: naming the file and the line for every kind of problem.
    """
    path = Path(path)
    if scale not in SCALES:
        raise LabelError(f"scale {scale!r}: expected one of {', '.join(SCALES)}")
    try:
        if path.stat().st_size > MAX_LABEL_BYTES:
            raise LabelError(f"{path}: larger than {MAX_LABEL_BYTES} bytes")
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise LabelError(f"{path}: cannot read ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise LabelError(f"{path}: not UTF-8 text ({exc})") from exc
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("task_id", "agent", "label") if c not in (reader.fieldnames or [])]
    if missing:
        raise LabelError(
            f"{path}: missing column(s) {', '.join(missing)} "
            f"(found: {', '.join(reader.fieldnames or []) or 'none'})"
        )
    raw_rows: list[tuple[int, str, str, str]] = []
    kinds: dict[int, str] = {}
    epochs: dict[int, int] = {}
    seen: dict[tuple[str, str, int, str], int] = {}
    for line_no, rec in enumerate(reader, start=2):
        if len(raw_rows) >= MAX_LABEL_ROWS:
            raise LabelError(f"{path}: more than {MAX_LABEL_ROWS} labels")
        task, agent, label = (str(rec.get(k) or "").strip() for k in ("task_id", "agent", "label"))
        if not task and not agent and not label:
            continue
        if not task or not agent or not label:
            raise LabelError(f"{path}:{line_no}: task_id, agent and label must all be set")
        epoch = _epoch_cell(str(rec.get("epoch") or "").strip(), f"{path}:{line_no}")
        who = str(rec.get("annotator") or "").strip()  # several people may label one attempt
        if (task, agent, epoch, who) in seen:
            attempt = f", epoch {epoch}" if epoch > 1 else ""
            raise LabelError(
                f"{path}:{line_no}: a second label for ({task}, {agent}{attempt}) "
                f"(first on line {seen[(task, agent, epoch, who)]})"
            )
        seen[(task, agent, epoch, who)] = line_no
        raw_rows.append((line_no, task, agent, label))
        kinds[line_no] = str(rec.get("kind") or "").strip()[:100]
        epochs[line_no] = epoch
    if not raw_rows:
        raise LabelError(f"{path}: no labels")
    numbers: dict[int, float] = {}
    for line_no, _, _, label in raw_rows:
        try:
            v = float(label)
            if math.isfinite(v):
                numbers[line_no] = v
        except ValueError:
            pass
    if scale == "auto":
        if len(numbers) < len(raw_rows):
            scale = "classes"
        else:
            scale = "unit" if all(0 <= v <= 1 for v in numbers.values()) else "five"
    labels = []
    for line_no, task, agent, label in raw_rows:
        if scale == "classes":
            cls = CLASS_ALIASES.get(label.strip().lower().replace("-", "_").replace("  ", " "))
            if cls is None:
                cls = CLASS_ALIASES.get(label.strip().lower().replace("_", " "))
            if cls is None:
                raise LabelError(
                    f"{path}:{line_no}: label {label!r} is not a progress class ({', '.join(CLASSES)})"
                )
            labels.append(
                Label(task, agent, label, CLASSES.index(cls) / 3, cls, kinds[line_no], epochs[line_no])
            )
            continue
        if line_no not in numbers:
            raise LabelError(f"{path}:{line_no}: label {label!r} is not a number (scale {scale})")
        v, top = numbers[line_no], (1.0 if scale == "unit" else 5.0)
        if not 0 <= v <= top:
            raise LabelError(f"{path}:{line_no}: label {v:g} is outside 0-{top:g} (scale {scale})")
        labels.append(Label(task, agent, label, v / top, "", kinds[line_no], epochs[line_no]))
    class_scale = scale
    if scale == "unit" and all(lab.value in (0.0, 1.0) for lab in labels):
        class_scale = "binary"
    labels = [lab if lab.cls else replace(lab, cls=to_class(lab.value, class_scale)) for lab in labels]
    return _mean_per_attempt(labels, class_scale), class_scale


def _mean_per_attempt(labels: list[Label], class_scale: str) -> list[Label]:
    """One label per attempt: the mean of its annotators' values (``annotator`` column), in the
    order attempts first appear; an attempt labelled once keeps its label as it is."""
    groups: dict[tuple[str, str, int], list[Label]] = {}
    for lab in labels:
        groups.setdefault(lab.key, []).append(lab)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        mean = sum(lab.value for lab in group) / len(group)
        raw = "mean of " + ", ".join(lab.raw for lab in group)
        out.append(replace(group[0], raw=raw, value=mean, cls=to_class(mean, class_scale)))
    return out


def _epoch_cell(text: str, where: str) -> int:
    """The ``epoch`` column of a label (1 when empty)."""
    if not text:
        return 1
    try:
        epoch = int(text)
    except ValueError:
        epoch = 0
    if not 1 <= epoch <= MAX_EPOCH:
        raise LabelError(f"{where}: epoch {text!r} is not a whole number from 1 to {MAX_EPOCH}")
    return epoch


def judge_series(rows: list[ResultRow]) -> dict[str, dict[tuple[str, str, int], float]]:
    """Per series name (judge label, or ``judge.if_score``...): (task_id, agent, epoch) → value on 0-1."""
    out: dict[str, dict[tuple[str, str, int], float]] = {}
    for r in rows:
        for judge, block in r.scores.items():
            if block.score is None:
                continue
            key = (r.task_id, r.agent, r.epoch)
            out.setdefault(judge, {})[key] = float(block.score)
            metrics = block.metrics
            for m in SUB_METRICS:
                if isinstance(metrics.get(m), int | float) and not isinstance(metrics.get(m), bool):
                    out.setdefault(f"{judge}.{m}", {})[key] = float(metrics[m]) / 5.0
    return out


def _round(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4)


Measure = tuple[Callable[[Any, Any], float], Callable[..., tuple[float | None, float | None]] | None]
"""A correlation and its 95% interval ``(human, judge, *, n_boot, seed) -> (lo, hi)`` (None: the
generic :func:`bootstrap_ci` of the correlation)."""


def agreement(
    labels: list[Label],
    values: dict[tuple[str, str, int], float],
    class_scale: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    measures: Mapping[str, Measure] | None = None,
) -> dict[str, Any]:
    """Agreement of one series with the labels (on the pairs present in both). ``measures`` replaces
    how a correlation is computed, by name (``kendall_tau_b``, ``spearman``, ``pearson``), with an
    equal but faster one (:mod:`pptarena.label.fast_tau`)."""
    paired = [(lab, values[lab.key]) for lab in labels if lab.key in values]
    human = [lab.value for lab, _ in paired]
    judge = [v for _, v in paired]
    out: dict[str, Any] = {"n": len(paired), "missing": len(labels) - len(paired)}
    for name, default in (("kendall_tau_b", kendall_tau_b), ("spearman", spearman), ("pearson", pearson)):
        fn, interval = (measures or {}).get(name, (default, None))
        value = fn(human, judge) if len(paired) >= 2 else math.nan
        if math.isnan(value):
            lo, hi = None, None
        elif interval is not None:
            lo, hi = interval(human, judge, n_boot=n_boot, seed=seed)
        else:
            lo, hi = bootstrap_ci(fn, human, judge, n_boot=n_boot, seed=seed)
        out[name] = {"value": _round(value), "ci95": [_round(lo), _round(hi)] if lo is not None else None}
    predicted = [to_class(v, class_scale) for v in judge]
    classes = [lab.cls for lab, _ in paired]
    hits = [1.0 if p == c else 0.0 for p, c in zip(predicted, classes, strict=True)]
    acc = sum(hits) / len(hits) if hits else math.nan
    lo, hi = (
        bootstrap_ci(lambda a, b: float(a.mean()), hits, hits, n_boot=n_boot, seed=seed)
        if len(hits) >= 2
        else (None, None)
    )
    out["accuracy"] = {"value": _round(acc), "ci95": [_round(lo), _round(hi)] if lo is not None else None}
    out["per_class"] = per_class_accuracy(classes, predicted)
    return out


def label_agreement(
    rows: list[ResultRow], labels: list[Label], class_scale: str, *, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """:func:`agreement` for every series of the run's rows."""
    return series_agreement(judge_series(rows), labels, class_scale, n_boot=n_boot, seed=seed)


def series_agreement(
    series: dict[str, dict[tuple[str, str, int], float]],
    labels: list[Label],
    class_scale: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    measures: Mapping[str, Measure] | None = None,
) -> dict[str, Any]:
    """:func:`agreement` for every series of :func:`judge_series` (``measures``: see there)."""
    return {
        name: agreement(labels, values, class_scale, n_boot=n_boot, seed=seed, measures=measures)
        for name, values in series.items()
    }


def repeat_judges(
    run_dir: Path,
    registry: Any,
    k: int,
    *,
    config_path: Path | None = None,
    pairs: set[tuple[str, str, int]] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Judge every recorded prediction (or only the attempts ``pairs``, (task_id, agent, epoch)) ``k`` times.

    :returns: ``({series: stability}, warnings)``.
    """
    from pptarena.report.data import load_run, load_run_tasks, run_config
    from pptarena.report.rescore import RescoreError, judges_config, prediction_path
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.config import model_refs
    from pptarena.run.judging import judge_prediction
    from pptarena.types import Prediction

    if k < 2:
        raise PptArenaError("--repeat needs K ≥ 2")
    run_dir = Path(run_dir).absolute()  # its paths are bind sources of the judges' jails
    data = load_run(run_dir, with_rescores=False)
    base = run_config(data.manifest, registry)
    # the config `arena rescore --config` takes: [[judges]] alone is enough (dataset, agents: the run's)
    judge_cfg = judges_config(data.manifest, registry, config_path) if config_path else base
    if not judge_cfg.judges:
        raise RescoreError(f"{config_path or 'the run config'} has no [[judges]] to repeat")
    warnings = []
    for j in judge_cfg.judges:
        for ref in model_refs(j.options).values():
            backend = judge_cfg.backends.get(ref.partition("/")[0])
            if backend is not None and getattr(backend.options, "cache", False):
                warnings.append(
                    f"judge {j.label}: backend {backend.label} has its response cache on, so repeats return "
                    "cached answers (variance 0); set cache = false to measure stability"
                )
    tasks = load_run_tasks(base, registry)
    todo = [
        r
        for r in data.rows
        if (pairs is None or (r.task_id, r.agent, r.epoch) in pairs)
        and r.status not in (Status.AGENT_ERROR, Status.TIMEOUT)
        and prediction_path(run_dir, r) is not None
        and r.task_id in tasks
    ]
    scores: dict[str, dict[tuple[str, str, int], list[float]]] = {}
    errors = 0
    components = Components(judge_cfg, registry)
    try:
        judges = [(j, components.build(j)) for j in judge_cfg.judges]
        for rep in range(k):
            for r in todo:
                folder = RunDir(run_dir).meta_eval_repeat(rep + 1).attempt(r.agent, r.task_id, r.epoch)
                folder.mkdir(parents=True, exist_ok=True)
                pred = Prediction(path=prediction_path(run_dir, r))
                outcome = judge_prediction(
                    tasks[r.task_id],
                    pred,
                    judges,
                    folder,
                    components,
                    pair_dir=RunDir(run_dir).attempt(r.agent, r.task_id, r.epoch),
                )
                errors += len(outcome.errors)
                # this attempt under the repeated judging (only its scores are read)
                repeated = r.rescored(outcome.status, outcome.error, outcome.scores)
                for name, values in judge_series([repeated]).items():
                    for key, v in values.items():
                        scores.setdefault(name, {}).setdefault(key, []).append(v)
    finally:
        components.close()
    if errors:
        warnings.append(
            f"{errors} judge call(s) failed during the repeats; those repeats are missing from the statistics"
        )
    result = {name: stability(list(per_pair.values())) for name, per_pair in scores.items()}
    return result, warnings


def meta_eval(
    run_dir: Path,
    *,
    labels_path: Path | None = None,
    scale: str = "auto",
    repeat: int = 0,
    config_path: Path | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    registry: Any = None,
    out: Path | None = None,
) -> dict[str, Any]:
    """Run the meta-evaluation; returns a JSON-ready report
    (also written to ``out``, by default ``RUN_DIR/meta-eval/meta_eval.json``).
    """
    from pptarena.report.data import load_run
    from pptarena.run.folder.results import write_json_atomic

    run_dir = Path(run_dir).absolute()
    data = load_run(run_dir, with_rescores=False)
    report: dict[str, Any] = {
        "run": str(run_dir.resolve()),
        "warnings": [f"skipped a result line: {p}" for p in data.problems],
    }
    pairs = None
    if labels_path is not None:
        labels, class_scale = read_labels(labels_path, scale)
        report["labels"] = {
            "file": str(labels_path),
            "n": len(labels),
            "scale": class_scale,
            "classes": sorted({lab.cls for lab in labels}),
        }
        series = judge_series(data.rows)
        report["agreement"] = series_agreement(series, labels, class_scale, n_boot=n_boot, seed=seed)
        report["within_task"] = {name: within_task_order(labels, values) for name, values in series.items()}
        if any(lab.kind for lab in labels):
            report["kinds"] = kind_means(labels, series)
        report["bootstrap"] = {"resamples": n_boot, "seed": seed, "level": 0.95}
        unknown = [lab for lab in labels if data.row(lab.agent, lab.task_id, lab.epoch) is None]
        if unknown:
            report["warnings"].append(
                f"{len(unknown)} label(s) name an attempt not in the run, "
                f"e.g. ({unknown[0].task_id}, {unknown[0].agent}, epoch {unknown[0].epoch})"
            )
        pairs = {lab.key for lab in labels}
    if repeat:
        if registry is None:
            from pptarena.run.configuration.registry import get_registry

            registry = get_registry()
        stab, warnings = repeat_judges(run_dir, registry, repeat, config_path=config_path, pairs=pairs)
        report["repeat"] = {"k": repeat, "series": stab}
        report["warnings"] += warnings
    if out is None:
        folder = RunDir(run_dir).meta_eval
        folder.mkdir(exist_ok=True)
        out = folder / "meta_eval.json"
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(out), report)
    report["path"] = str(out)
    return report
