"""Result lines as columns, for the summary's statistics (:mod:`pptarena.run.statistics.summary_stats`).

One pass over an agent's lines reads what every figure needs (task, epoch, each judge's score,
success and metrics) into numpy arrays; a figure over a subset of the lines (a metadata group) is
then array work on the subset's positions, not a walk over dicts per judge and group.

Per-task means keep the reference arithmetic: a task of one attempt is its value, a task of several
is ``math.fsum`` of its values over their number (exactly :func:`pptarena.run.statistics.stats.fmean`), so the
figures are the very numbers the line-by-line code gave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pptarena.run.folder.records import ResultRow

_NUMBER = (int, float)


@dataclass
class JudgeColumns:
    """One judge's values per line: score (NaN when none), success by the benchmark's rule, each
    numeric metric (NaN where absent) and each text metric (None where absent)."""

    score: np.ndarray
    success: np.ndarray
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    labels: dict[str, list[str | None]] = field(default_factory=dict)


def judge_columns(rows: list[ResultRow], judge: str, threshold: float) -> JudgeColumns:
    """Read one judge's values from every line (:meth:`ResultRow.score` / :meth:`ResultRow.success`)."""
    n = len(rows)
    score = np.full(n, math.nan)
    success = np.zeros(n, dtype=bool)
    metrics: dict[str, np.ndarray] = {}
    labels: dict[str, list[str | None]] = {}
    cut = threshold - 1e-9
    for i, r in enumerate(rows):
        block = r.scores.get(judge)
        if block is None:
            continue
        s = score[i] = math.nan if block.score is None else block.score  # finite by validation
        m = block.metrics
        ok = m.get("success")
        success[i] = bool(ok) if isinstance(ok, _NUMBER) else s >= cut  # NaN >= x is False
        for k, v in m.items():
            if isinstance(v, _NUMBER) and not isinstance(v, bool) and math.isfinite(v):
                if k not in metrics:
                    metrics[k] = np.full(n, math.nan)
                metrics[k][i] = float(v)
            elif isinstance(v, str):
                labels.setdefault(k, [None] * n)[i] = v
    return JudgeColumns(score, success, metrics, labels)


@dataclass
class Columns:
    """An agent's lines as columns: task code (first-seen order), epoch, whether the line has scores,
    and per judge :class:`JudgeColumns`."""

    task: np.ndarray
    task_ids: list[str]
    epoch: np.ndarray
    has_scores: np.ndarray
    judges: dict[str, JudgeColumns]


def columns(rows: list[ResultRow], judges: list[str], threshold: float) -> Columns:
    """The columns of ``rows`` for ``judges``."""
    codes: dict[str, int] = {}
    task = np.fromiter(
        (codes.setdefault(r.task_id, len(codes)) for r in rows), dtype=np.intp, count=len(rows)
    )
    epoch = np.fromiter((r.epoch for r in rows), dtype=np.int64, count=len(rows))
    has_scores = np.fromiter((bool(r.scores) for r in rows), dtype=bool, count=len(rows))
    return Columns(
        task, list(codes), epoch, has_scores, {j: judge_columns(rows, j, threshold) for j in judges}
    )


@dataclass
class Tasks:
    """The tasks of a subset of lines, in first-seen order, as ``by_task`` groups them: ``slot[i]``
    is the task of the subset's ``i``-th line, ``order`` the lines grouped by task then epoch."""

    positions: np.ndarray
    slot: np.ndarray
    count: np.ndarray
    order: np.ndarray

    @property
    def size(self) -> int:
        """Number of tasks."""
        return len(self.count)


def tasks_of(cols: Columns, positions: np.ndarray) -> Tasks:
    """Group the lines at ``positions`` (ascending) by task."""
    codes = cols.task[positions]
    uniq, first = np.unique(codes, return_index=True)
    ranked = uniq[np.argsort(first, kind="stable")]
    slot_of = np.empty(len(cols.task_ids), dtype=np.intp)
    slot_of[ranked] = np.arange(len(ranked))
    slot = slot_of[codes]
    count = np.bincount(slot, minlength=len(ranked))
    order = np.lexsort((cols.epoch[positions], slot))  # by task, then epoch (stable, as by_task sorts)
    return Tasks(positions, slot, count, order)


def task_fmeans(tasks: Tasks, values: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """Per task, ``fmean`` of ``values`` (one per subset line) over its lines where ``present``;
    only tasks with at least one such line, in task order."""
    if present is None:
        slot, vals = tasks.slot, values
    else:
        slot, vals = tasks.slot[present], values[present]
    count = np.bincount(slot, minlength=tasks.size)
    out = np.zeros(tasks.size)
    single = count[slot] == 1
    out[slot[single]] = vals[single] + 0.0  # as fsum: -0.0 counts as 0.0
    many = np.flatnonzero(count > 1)
    if len(many):
        order = np.argsort(slot, kind="stable")
        listed = vals[order].tolist()
        ends = np.cumsum(count)
        for t in many.tolist():
            out[t] = math.fsum(listed[ends[t] - count[t] : ends[t]]) / int(count[t])
    return out[count > 0]


def fmean_of(values: np.ndarray) -> float:
    """``math.fsum(values) / len(values)`` of a non-empty array (:func:`.stats.fmean`)."""
    return math.fsum(values.tolist()) / len(values)
