"""Agreement statistics for judge meta-evaluation (numpy only): correlations, bootstrap CIs, repeat stability.

* :func:`pearson`, :func:`spearman` (Pearson on average ranks) and :func:`kendall_tau_b`
  (ties corrected in both variables) return NaN when a side is constant (undefined).
* :func:`bootstrap_ci`: percentile interval over ``n_boot`` resamples of the pairs, fixed seed.
* :func:`stability`: K repeated scores per item → mean population variance, how often a strict
  majority of the K repeats agree, the mean share of the most common value, unanimity.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Values = Sequence[float] | np.ndarray
MAX_KENDALL_N = 20_000  # O(n²) pair comparisons beyond this are refused


def _arrays(x: Values, y: Values) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("x and y must be 1-D sequences of the same length")
    return a, b


def pearson(x: Values, y: Values) -> float:
    """Pearson's r (NaN when fewer than 2 items or a side is constant)."""
    a, b = _arrays(x, y)
    if len(a) < 2:
        return math.nan
    da, db = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / denom if denom > 0 else math.nan


def rankdata(x: Values) -> np.ndarray:
    """1-based ranks, ties get the average of their ranks."""
    a = np.asarray(x, dtype=float)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a), dtype=float)
    sorted_a = a[order]
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and sorted_a[j + 1] == sorted_a[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Values, y: Values) -> float:
    """Spearman's ρ: Pearson's r of the average ranks."""
    a, b = _arrays(x, y)
    return pearson(rankdata(a), rankdata(b))


def kendall_tau_b(x: Values, y: Values) -> float:
    """Kendall's τ_b = (concordant − discordant) / sqrt((n0 − ties_x)(n0 − ties_y))."""
    a, b = _arrays(x, y)
    n = len(a)
    if n < 2:
        return math.nan
    if n > MAX_KENDALL_N:
        raise ValueError(f"kendall_tau_b: {n} items is more than {MAX_KENDALL_N}")
    s = 0.0
    untied_x = 0.0
    untied_y = 0.0
    for i in range(n - 1):
        dx = np.sign(a[i + 1 :] - a[i])
        dy = np.sign(b[i + 1 :] - b[i])
        s += float(dx @ dy)
        untied_x += float(np.count_nonzero(dx))
        untied_y += float(np.count_nonzero(dy))
    denom = math.sqrt(untied_x * untied_y)
    return s / denom if denom > 0 else math.nan


def bootstrap_ci(
    stat: Callable[[np.ndarray, np.ndarray], float],
    x: Values,
    y: Values,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of ``stat(x, y)`` resampling (x, y) pairs; None when undefined."""
    a, b = _arrays(x, y)
    if len(a) < 2 or n_boot < 1:
        return None, None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(a), len(a))
        v = stat(a[idx], b[idx])
        if not math.isnan(v):
            values.append(v)
    if len(values) < max(2, n_boot // 10):
        return None, None
    lo, hi = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def accuracy(x: Sequence[Any], y: Sequence[Any]) -> float:
    """Share of items where the two class labels are equal (NaN when empty)."""
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    return sum(1 for p, q in zip(x, y, strict=True) if p == q) / len(x) if len(x) else math.nan


def per_class_accuracy(labels: Sequence[Any], predicted: Sequence[Any]) -> dict[str, dict[str, float | int]]:
    """For each human class: how many items, and the share the judge put in the same class."""
    out: dict[str, dict[str, float | int]] = {}
    for cls in sorted(set(labels), key=str):
        idx = [i for i, c in enumerate(labels) if c == cls]
        hits = sum(1 for i in idx if predicted[i] == cls)
        out[str(cls)] = {"n": len(idx), "accuracy": round(hits / len(idx), 4)}
    return out


def stability(repeats: Sequence[Sequence[float]], digits: int = 6) -> dict[str, Any]:
    """Stability of K repeated scores per item (``repeats[item][k]``).

    ``mean_variance``: mean over items of the population variance (ddof 0) of the K scores.
    ``majority_rate``: share of items whose most common value (after rounding to ``digits``)
    appears in more than K/2 repeats. ``majority_share``: mean share of that value.
    ``unanimous_rate``: share of items where all K agree.
    """
    items = [list(map(float, r)) for r in repeats if len(r)]
    if not items:
        return {
            "items": 0,
            "k": 0,
            "mean_variance": None,
            "max_variance": None,
            "majority_rate": None,
            "majority_share": None,
            "unanimous_rate": None,
        }
    variances = [float(np.var(r)) for r in items]
    shares, majority, unanimous = [], 0, 0
    for r in items:
        counts = Counter(round(v, digits) for v in r)
        top = counts.most_common(1)[0][1]
        shares.append(top / len(r))
        majority += top > len(r) / 2
        unanimous += top == len(r)
    n = len(items)
    return {
        "items": n,
        "k": max(len(r) for r in items),
        "mean_variance": round(float(np.mean(variances)), 6),
        "max_variance": round(max(variances), 6),
        "majority_rate": round(majority / n, 4),
        "majority_share": round(float(np.mean(shares)), 4),
        "unanimous_rate": round(unanimous / n, 4),
    }
