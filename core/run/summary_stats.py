"""The statistical parts of ``summary.json``: per-judge blocks with intervals, epoch figures,
paired comparisons.

:func:`judge_block` is what :func:`pptarena.run.results.summarize_results` records per agent (and per
metadata group) and judge; :func:`add_comparisons` adds the agent-vs-agent matrix. Formulas are in
:mod:`pptarena.run.stats` and docs/reports.md.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pptarena.run.stats import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    bootstrap_mean_ci,
    by_task,
    epoch_block,
    fmean,
    pairwise_matrix,
    row_score,
    row_success,
    task_means,
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
    ``groups``: ``by_task(rows)`` when the caller has it (one grouping for all judges).
    """
    groups = by_task(rows) if groups is None else groups
    kw = {"n_boot": opts.n_boot, "seed": opts.seed}
    scored = [x for r in rows if (x := row_score(r, judge)) is not None]
    all_means = list(task_means(rows, judge, groups).values())
    scored_means: list[float] = []
    success: list[float] = []
    for g in groups.values():
        own = [x for r in g if (x := row_score(r, judge)) is not None]
        if own:
            scored_means.append(fmean(own))
        success.append(sum(1 for r in g if row_success(r, judge, opts.success_threshold)) / len(g))
    block: dict[str, Any] = {
        "n": len(scored),
        "mean": _r(fmean(scored_means)) if scored_means else None,
        "mean_ci95": bootstrap_mean_ci(scored_means, **kw),
        "mean_all": _r(fmean(all_means)) if all_means else None,
        "mean_all_ci95": bootstrap_mean_ci(all_means, **kw),
        "success_rate": _r(fmean(success)) if success else None,
        "success_rate_ci95": bootstrap_mean_ci(success, **kw),
    }
    metric_tasks: dict[str, list[float]] = defaultdict(list)
    labels: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for g in groups.values():
        per: dict[str, list[float]] = defaultdict(list)
        for r in g:
            m = ((r.get("scores") or {}).get(judge) or {}).get("metrics") or {}
            for k, v in m.items():
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                    per[k].append(float(v))
                elif isinstance(
                    v, str
                ):  # e.g. the rubric judge's "semantics": how many scores each value produced
                    labels[k][v] += 1
        for k, v in per.items():
            metric_tasks[k].append(fmean(v))
    if metric_tasks:
        block["metrics"] = {k: _r(fmean(v)) for k, v in sorted(metric_tasks.items())}
        block["metrics_ci95"] = {k: bootstrap_mean_ci(v, **kw) for k, v in sorted(metric_tasks.items())}
    if labels:
        block["labels"] = {k: dict(sorted(c.items())) for k, c in sorted(labels.items())}
    if scored or any(r.get("scores") for r in rows):
        block["epochs"] = epoch_block(rows, judge, opts.success_threshold, groups=groups, **kw)
    return block


def add_comparisons(summary: dict[str, Any], rows: list[dict[str, Any]], opts: StatsOptions) -> None:
    """``summary["comparisons"][judge]["A|B"]``: paired comparison of every two agents
    on their common tasks.
    """
    agents: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        agents[r["agent"]].append(r)
    if len(agents) < 2:
        return
    out: dict[str, Any] = {}
    grouped = {a: by_task(agents[a]) for a in sorted(agents)}
    for judge in summary.get("judges") or []:
        scores = {a: task_means(agents[a], judge, grouped[a]) for a in sorted(agents)}
        out[judge] = pairwise_matrix(scores, n_boot=opts.n_boot, seed=opts.seed)
    summary["comparisons"] = out
