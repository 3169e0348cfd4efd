"""Statistics for publishable leaderboards: per-task aggregation over epochs, pass@k / pass^k,
bootstrap intervals clustered by task, and paired comparisons of two agents (numpy only).

Notation: a task t has n_t attempts (epochs), c_t of them successful, scores s_t1..s_tn.

* per-task mean m_t = mean_i s_ti (a missing score counts 0); the agent's mean is mean_t m_t.
* pass@k (unbiased, Chen et al. 2021): per task 1 - C(n_t - c_t, k) / C(n_t, k), averaged over tasks
  with n_t >= k. It is the chance that at least one of k attempts drawn without replacement succeeds.
* pass^k (Yao et al., tau-bench): per task C(c_t, k) / C(n_t, k), averaged over tasks with n_t >= k:
  the chance that all k drawn attempts succeed.
* consistency: the share of tasks whose attempts all have the same success outcome; ``score_sd``:
  mean over tasks of the population standard deviation of the task's scores.
* 95% intervals: percentile bootstrap that resamples *tasks* with replacement (each resampled task
  brings all its epochs, i.e. a cluster bootstrap), ``n_boot`` resamples, fixed ``seed``.
* paired comparison of agents A and B on their common tasks: d_t = m_t(A) - m_t(B); the mean
  difference, its bootstrap interval, and a two-sided paired sign-flip permutation test on mean(d)
  (exact over all 2^n sign patterns for n <= ``EXACT_MAX_N``, else ``n_perm`` random flips with
  p = (1 + hits) / (1 + n_perm)).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from pptarena.run.folder.records import ResultRow
from pptarena.run.statistics.resample import active_batch, bootstrap_means, memoized
from pptarena.run.statistics.signflip import flip_hits

DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 0
EXACT_MAX_N = 16
DEFAULT_N_PERM = 20_000
MAX_TASKS = 200_000
_NUMBER = (int, float)


def by_task(rows: Iterable[ResultRow]) -> dict[str, list[ResultRow]]:
    """Lines grouped by task id, each group ordered by epoch."""
    groups: dict[str, list[ResultRow]] = defaultdict(list)
    for r in rows:
        groups[r.task_id].append(r)
    return {t: sorted(g, key=lambda r: r.epoch) for t, g in groups.items()}


def task_means(
    rows: Iterable[ResultRow], judge: str, groups: dict[str, list[ResultRow]] | None = None
) -> dict[str, float]:
    """Per task, the mean of the judge's score over its attempts (an attempt without a score counts 0).

    ``groups``: ``by_task(rows)`` when the caller has it already.
    """
    groups = by_task(rows) if groups is None else groups
    return {t: fmean([r.score(judge) or 0.0 for r in g]) for t, g in groups.items()}


def fmean(values: Sequence[float]) -> float:
    """The mean of a non-empty sequence (math.fsum; faster than numpy on short lists)."""
    return math.fsum(values) / len(values)


def _comb(n: int, k: int) -> int:
    return math.comb(n, k) if 0 <= k <= n else 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: 1 - C(n-c, k) / C(n, k) (needs n >= k >= 1)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return 1.0 - _comb(n - c, k) / _comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one task: C(c, k) / C(n, k) (needs n >= k >= 1)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return _comb(c, k) / _comb(n, k)


def bootstrap_mean_ci(
    values: Sequence[float], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED, level: float = 0.95
) -> list[float] | None:
    """Percentile bootstrap interval of the mean of per-task values (None with fewer than 2 tasks).

    Resampling the per-task values (each already a mean over the task's epochs) is the cluster
    bootstrap over tasks. Draws and results are shared between calls (:mod:`.resample`).
    Inside :func:`.resample.batched` the interval is an empty list filled (with the same
    numbers) when the batch ends.
    """
    a = np.asarray(values, dtype=float)
    if a.ndim != 1 or len(a) < 2 or n_boot < 1:
        return None
    if len(a) > MAX_TASKS:
        raise ValueError(f"more than {MAX_TASKS} tasks")
    batch = active_batch()
    if batch is not None:
        return batch.add(a, n_boot, seed, level)

    def compute() -> list[float]:
        means = bootstrap_means(a, n_boot, seed)
        lo, hi = np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
        return [round(float(lo), 4), round(float(hi), 4)]

    return memoized(a, n_boot, seed, level, compute)


def paired_permutation_p(
    diffs: Sequence[float], *, n_perm: int = DEFAULT_N_PERM, seed: int = DEFAULT_SEED
) -> float | None:
    """Two-sided p-value of a paired sign-flip permutation test of mean(diffs) = 0.

    Exact (all 2^n sign patterns) for n <= EXACT_MAX_N, else Monte Carlo with ``n_perm`` seeded flips.
    """
    return paired_p_values([diffs], n_perm=n_perm, seed=seed)[0]


def paired_p_values(
    diffs_list: Sequence[Sequence[float]], *, n_perm: int = DEFAULT_N_PERM, seed: int = DEFAULT_SEED
) -> list[float | None]:
    """:func:`paired_permutation_p` of each vector; vectors of one length share the seeded flips
    (drawn once, :func:`pptarena.run.statistics.signflip.flip_hits`)."""
    out: list[float | None] = [None] * len(diffs_list)
    monte_carlo: dict[int, list[tuple[int, np.ndarray, float]]] = defaultdict(list)
    for i, diffs in enumerate(diffs_list):
        d = np.asarray(diffs, dtype=float)
        if d.ndim != 1 or len(d) == 0:
            continue
        observed = abs(float(d.mean()))
        tol = 1e-12 * max(1.0, observed)
        if len(d) <= EXACT_MAX_N:
            signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
            stats = np.abs(signs @ d / len(d))
            out[i] = float(np.mean(stats >= observed - tol))
        else:
            monte_carlo[len(d)].append((i, d, observed - max(tol, 1e-6)))
    for jobs in monte_carlo.values():
        hits = flip_hits([d for _, d, _ in jobs], [t for *_, t in jobs], n_perm, seed)
        for (i, _, _), h in zip(jobs, hits, strict=True):
            out[i] = (1 + h) / (1 + n_perm)
    return out


def paired_comparison(
    a: dict[str, float], b: dict[str, float], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """A vs B on their common tasks: n, mean difference (A - B), its 95% interval and the paired p-value."""
    common = sorted(set(a) & set(b))
    diffs = np.array([a[t] - b[t] for t in common], dtype=float)
    return comparison_of(diffs, paired_permutation_p(diffs, seed=seed), n_boot=n_boot, seed=seed)


def comparison_of(
    diffs: np.ndarray, p_value: float | None, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """The fields of :func:`paired_comparison` from the per-task differences and their p-value."""
    n = len(diffs)
    return {
        "n": n,
        "diff": round(float(np.mean(diffs)), 4) if n else None,
        "ci95": bootstrap_mean_ci(diffs, n_boot=n_boot, seed=seed),
        "p_value": None if not n else round(float(p_value or 1.0), 6),
        "wins": int(np.count_nonzero(diffs > 1e-12)),
        "losses": int(np.count_nonzero(diffs < -1e-12)),
    }


def epoch_block(
    rows: list[ResultRow],
    judge: str,
    threshold: float,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    groups: dict[str, list[ResultRow]] | None = None,
) -> dict[str, Any]:
    """The epoch figures of one agent and judge: k, pass@k and pass^k for k = 1..K (with intervals),
    consistency and the mean per-task score standard deviation (``groups``: ``by_task(rows)`` if known)."""
    groups = by_task(rows) if groups is None else groups
    counts = {t: (len(g), sum(1 for r in g if r.success(judge, threshold))) for t, g in groups.items()}
    k_max = max((n for n, _ in counts.values()), default=0)
    out: dict[str, Any] = {"k": k_max, "pass_at_k": {}, "pass_hat_k": {}}
    for k in range(1, k_max + 1):
        eligible = [(n, c) for n, c in counts.values() if n >= k]
        at = [pass_at_k(n, c, k) for n, c in eligible]
        hat = [pass_hat_k(n, c, k) for n, c in eligible]
        out["pass_at_k"][str(k)] = {
            "value": round(fmean(at), 4),
            "ci95": bootstrap_mean_ci(at, n_boot=n_boot, seed=seed),
            "tasks": len(eligible),
        }
        out["pass_hat_k"][str(k)] = {
            "value": round(fmean(hat), 4),
            "ci95": bootstrap_mean_ci(hat, n_boot=n_boot, seed=seed),
            "tasks": len(eligible),
        }
    multi = [(n, c) for n, c in counts.values() if n > 1]
    out["consistency"] = round(sum(1 for n, c in multi if c in (0, n)) / len(multi), 4) if multi else None
    sds = [statistics.pstdev([r.score(judge) or 0.0 for r in g]) for g in groups.values() if len(g) > 1]
    out["score_sd"] = round(fmean(sds), 4) if sds else None
    return out


def pairwise_matrix(
    task_scores: dict[str, dict[str, float]], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED
) -> dict[str, dict[str, Any]]:
    """``{"A|B": paired_comparison(A, B)}`` for every ordered pair of agents (A listed before B)."""
    names = list(task_scores)
    out: dict[str, dict[str, Any]] = {}
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            out[f"{x}|{y}"] = {
                "a": x,
                "b": y,
                **paired_comparison(task_scores[x], task_scores[y], n_boot=n_boot, seed=seed),
            }
    return out
