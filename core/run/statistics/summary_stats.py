"""The statistical parts of ``summary.json``: per-judge blocks with intervals, epoch figures,
paired comparisons.

:func:`judge_block` is what :func:`pptarena.run.folder.results.summarize_results` records per agent (and per
metadata group) and judge; :func:`add_comparisons` adds the agent-vs-agent matrix. Formulas are in
:mod:`pptarena.run.statistics.stats` and docs/reports.md.
"""

from __future__ import annotations

import statistics
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from pptarena.run.statistics.columns import Columns, Tasks, columns, fmean_of, task_fmeans, tasks_of
from pptarena.run.statistics.resample import active_batch
from pptarena.run.statistics.stats import (
    DEFAULT_N_BOOT,
    DEFAULT_N_PERM,
    DEFAULT_SEED,
    EXACT_MAX_N,
    bootstrap_mean_ci,
    comparison_of,
    fmean,
    paired_p_values,
    pass_at_k,
    pass_hat_k,
)


@dataclass(frozen=True)
class StatsOptions:
    """How a summary computes its statistics (recorded in ``summary.json`` under ``statistics``)."""

    success_threshold: float = 1.0
    n_boot: int = DEFAULT_N_BOOT
    seed: int = DEFAULT_SEED

    def to_json(self) -> dict[str, Any]:
        """The record kept in summary.json."""
        return {
            "success_threshold": self.success_threshold,
            "bootstrap": {
                "n_boot": self.n_boot,
                "seed": self.seed,
                "level": 0.95,
                "method": "percentile; resamples tasks with replacement, all epochs of a task together",
            },
            "paired_test": "two-sided paired sign-flip permutation test on the mean per-task difference "
            "(exact up to 16 tasks, else 20000 seeded random flips)",
            "pass_at_k": "unbiased estimator 1 - C(n-c,k)/C(n,k) per task, averaged over tasks with n >= k",
            "pass_hat_k": "C(c,k)/C(n,k) per task, averaged over tasks with n >= k",
        }


def stats_options(run_table: dict[str, Any] | None) -> StatsOptions:
    """Options from a ``[run]`` table (a manifest's stored config), defaults where absent or invalid."""
    t = run_table if isinstance(run_table, dict) else {}
    try:
        threshold = float(t.get("success_threshold", 1.0))
        seed = int(t.get("seed", DEFAULT_SEED))
        n_boot = int(t.get("bootstrap", DEFAULT_N_BOOT))
    except (TypeError, ValueError):
        return StatsOptions()
    return StatsOptions(threshold if 0 <= threshold <= 1 else 1.0, max(0, min(n_boot, 100_000)), seed)


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def judge_block(
    rows: list[dict[str, Any]],
    judge: str,
    opts: StatsOptions,
    groups: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One judge's figures over ``rows`` (one agent's lines, any number of epochs per task).

    ``mean_all``: mean over tasks of the per-task mean score (unscored attempts count 0);
    ``mean``: mean over tasks with a score of the per-task mean of the scored attempts;
    ``success_rate``: mean over tasks of the per-task share of successful attempts; each with ``*_ci95``.
    (``groups`` is accepted for older callers and not needed.) The summary itself goes through
    :func:`judge_blocks`, which computes the same figures from columns.
    """
    cols = columns(rows, [judge], opts.success_threshold)
    return judge_blocks(cols, np.arange(len(rows)), [judge], opts)[judge]


def judge_blocks(
    cols: Columns, positions: np.ndarray, judges: list[str], opts: StatsOptions
) -> dict[str, Any]:
    """:func:`judge_block` of every judge over the lines at ``positions`` of ``cols``."""
    tasks = tasks_of(cols, positions)
    return {j: _judge_block(cols, tasks, j, opts) for j in judges}


def _judge_block(cols: Columns, tasks: Tasks, judge: str, opts: StatsOptions) -> dict[str, Any]:
    jc = cols.judges[judge]
    kw = {"n_boot": opts.n_boot, "seed": opts.seed}
    pos = tasks.positions
    score = jc.score[pos]
    scored = ~np.isnan(score)
    n_scored = int(np.count_nonzero(scored))
    all_means = task_fmeans(tasks, np.where(scored, score, 0.0))  # an unscored attempt counts 0
    scored_means = task_fmeans(tasks, score, scored) if n_scored else np.empty(0)
    successes = np.bincount(tasks.slot[jc.success[pos]], minlength=tasks.size)
    success = successes / tasks.count
    block: dict[str, Any] = {
        "n": n_scored,
        "mean": _r(fmean_of(scored_means)) if len(scored_means) else None,
        "mean_ci95": bootstrap_mean_ci(scored_means, **kw),
        "mean_all": _r(fmean_of(all_means)) if len(all_means) else None,
        "mean_all_ci95": bootstrap_mean_ci(all_means, **kw),
        "success_rate": _r(fmean_of(success)) if len(success) else None,
        "success_rate_ci95": bootstrap_mean_ci(success, **kw),
    }
    metric_tasks = {}
    for k, values in jc.metrics.items():
        v = values[pos]
        present = ~np.isnan(v)
        if present.any():
            metric_tasks[k] = task_fmeans(tasks, v, present)
    if metric_tasks:
        block["metrics"] = {k: _r(fmean_of(v)) for k, v in sorted(metric_tasks.items())}
        block["metrics_ci95"] = {k: bootstrap_mean_ci(v, **kw) for k, v in sorted(metric_tasks.items())}
    labels: dict[str, dict[str, int]] = {}
    for k, values in jc.labels.items():
        found = Counter(values[i] for i in pos.tolist())
        found.pop(None, None)
        if found:
            labels[k] = dict(sorted(found.items()))
    if labels:
        block["labels"] = dict(sorted(labels.items()))
    if n_scored or cols.has_scores[pos].any():
        block["epochs"] = _epoch_block(tasks, successes, np.where(scored, score, 0.0), **kw)
    return block


def _epoch_block(
    tasks: Tasks, successes: np.ndarray, scores0: np.ndarray, n_boot: int, seed: int
) -> dict[str, Any]:
    """:func:`pptarena.run.statistics.stats.epoch_block` from per-task attempt and success counts."""
    n_of, c_of = tasks.count, successes
    k_max = int(n_of.max()) if len(n_of) else 0
    out: dict[str, Any] = {"k": k_max, "pass_at_k": {}, "pass_hat_k": {}}
    for k in range(1, k_max + 1):
        eligible = n_of >= k
        # each distinct (n, c) computed once, by the same formula
        pairs, which = np.unique(n_of[eligible] * (k_max + 1) + c_of[eligible], return_inverse=True)
        nc = [divmod(p, k_max + 1) for p in pairs.tolist()]
        at = np.array([pass_at_k(n, c, k) for n, c in nc])[which]
        hat = np.array([pass_hat_k(n, c, k) for n, c in nc])[which]
        count = int(np.count_nonzero(eligible))
        out["pass_at_k"][str(k)] = {
            "value": round(fmean_of(at), 4),
            "ci95": bootstrap_mean_ci(at, n_boot=n_boot, seed=seed),
            "tasks": count,
        }
        out["pass_hat_k"][str(k)] = {
            "value": round(fmean_of(hat), 4),
            "ci95": bootstrap_mean_ci(hat, n_boot=n_boot, seed=seed),
            "tasks": count,
        }
    multi = n_of > 1
    n_multi = int(np.count_nonzero(multi))
    same = int(np.count_nonzero(multi & ((c_of == 0) | (c_of == n_of))))
    out["consistency"] = round(same / n_multi, 4) if n_multi else None
    sds = []
    if n_multi:
        ends = np.cumsum(tasks.count)
        listed = scores0[tasks.order].tolist()
        for t in np.flatnonzero(tasks.count > 1).tolist():
            sds.append(statistics.pstdev(listed[ends[t] - tasks.count[t] : ends[t]]))
    out["score_sd"] = round(fmean(sds), 4) if sds else None
    return out


def add_comparisons(
    summary: dict[str, Any], per_agent: dict[str, tuple[Columns, Tasks]], opts: StatsOptions
) -> None:
    """``summary["comparisons"][judge]["A|B"]``: paired comparison of every two agents on their common
    tasks (``per_agent``: each agent's columns and its lines grouped by task)."""
    start_comparisons(summary.get("judges") or [], per_agent, opts).add_to(summary)


class PendingComparisons:
    """The paired comparisons of :func:`start_comparisons`: their intervals already asked for (in the
    caller's batch), their sign-flip tests running on another thread.

    Inside a batch (:func:`.resample.batched`) nothing waits for the tests: their p-values,
    like the intervals, are filled in when the batch resolves, so the caller's thread goes on with
    other work meanwhile; outside one, :meth:`wait` and :meth:`add_to` wait for them.
    """

    def __init__(self, jobs: list[tuple[str, str, str, np.ndarray]], opts: StatsOptions) -> None:
        self._jobs = jobs
        self._out: dict[str, Any] = {}
        for judge, x, y, diffs in jobs:
            self._out.setdefault(judge, {})[f"{x}|{y}"] = {
                "a": x,
                "b": y,
                **comparison_of(diffs, None, n_boot=opts.n_boot, seed=opts.seed),  # p-value below
            }
        self._pending: Future[list[float | None]] | None = None
        self._batch = active_batch()
        self._seed = opts.seed
        if jobs:
            diffs = [d for *_, d in jobs]
            flips = sum(len(d) for d in diffs if len(d) > EXACT_MAX_N) * DEFAULT_N_PERM
            if self._batch is not None:  # a large test runs in the batch's helper process
                self._pending = self._batch.elsewhere("p_values", (diffs, DEFAULT_N_PERM, opts.seed), flips)
            if self._pending is None:
                pool = ThreadPoolExecutor(max_workers=1)
                self._pending = pool.submit(paired_p_values, diffs, seed=opts.seed)
                pool.shutdown(wait=False)
            if self._batch is not None:
                self._batch.when_resolved(self._finish)

    def _finish(self) -> None:
        """Wait for the sign-flip tests and record their p-values."""
        if self._pending is None:
            return
        try:
            found = self._pending.result()
        except RuntimeError:  # the helper process could not: the same numbers computed here
            found = paired_p_values([d for *_, d in self._jobs], seed=self._seed)
        for (judge, x, y, diffs), p in zip(self._jobs, found, strict=True):
            self._out[judge][f"{x}|{y}"]["p_value"] = None if not len(diffs) else round(float(p or 1.0), 6)
        self._pending = None

    def wait(self) -> None:
        """Wait for the sign-flip tests and record their p-values (inside a batch: when it resolves)."""
        if self._batch is None:
            self._finish()

    def add_to(self, summary: dict[str, Any]) -> None:
        """``summary["comparisons"]`` (nothing with fewer than two agents); inside a batch their
        p-values are placeholders until it resolves."""
        self.wait()
        if self._jobs:
            summary["comparisons"] = self._out


def start_comparisons(
    judges: list[str], per_agent: dict[str, tuple[Columns, Tasks]], opts: StatsOptions
) -> PendingComparisons:
    """Begin :func:`add_comparisons`: the per-task differences now, the sign-flip tests on another
    thread (their draws and products release the GIL) while the caller goes on."""
    if len(per_agent) < 2:
        return PendingComparisons([], opts)
    names = sorted(per_agent)
    index = {a: {t: i for i, t in enumerate(_task_ids(*per_agent[a]))} for a in names}
    pairs = []
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            common = sorted(set(index[x]) & set(index[y]))
            ix = np.array([index[x][t] for t in common], dtype=np.intp)
            pairs.append((x, y, ix, np.array([index[y][t] for t in common], dtype=np.intp)))
    jobs = []
    for judge in judges:
        means = {}
        for a in names:
            cols, tasks = per_agent[a]
            score = cols.judges[judge].score[tasks.positions]
            means[a] = task_fmeans(tasks, np.where(np.isnan(score), 0.0, score))
        jobs += [(judge, x, y, means[x][ix] - means[y][iy]) for x, y, ix, iy in pairs]
    return PendingComparisons(jobs, opts)


def _task_ids(cols: Columns, tasks: Tasks) -> list[str]:
    """The task ids of ``tasks`` in task order."""
    first = np.full(tasks.size, -1, dtype=np.intp)
    first[tasks.slot[::-1]] = np.arange(len(tasks.slot))[::-1]  # each task's first line
    return [cols.task_ids[c] for c in cols.task[tasks.positions[first]].tolist()]
