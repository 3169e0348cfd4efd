"""People against judges, fast: the figures of :func:`pptarena.report.meta_eval.agreement`, equal to
them, with Kendall's τ_b and its bootstrap as matrix products and Spearman's ranks in numpy.

τ_b of a resample: a resample holds original pair ``p`` ``w[p]`` times, so its
``S = Σ_{i<j} sign(Δx)·sign(Δy) = ½ wᵀ M w`` with ``M[p, q] = sign(x_p − x_q)·sign(y_p − y_q)``, and its
untied pair counts are ``(N² − Σ_g W_g²) / 2`` over the tie groups ``g`` of each side (``W_g``: the
resample's count in the group). ``M`` is built once; all resamples are one ``(n_boot × n) @ (n × n)``
product. Every term is a whole number, so the sums are exact and τ_b equals
:func:`pptarena.report.meta_stats.kendall_tau_b` bit for bit. The resamples are those of
:func:`pptarena.report.meta_stats.bootstrap_ci` (``default_rng(seed)``, one ``integers(0, n, n)``
per resample, in order), so the intervals are equal too.

Above :data:`MAX_MATRIX_N` pairs (``M`` would take too much memory), or with a NaN value, the
figures come from :mod:`pptarena.report.meta_stats` itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pptarena.report import meta_eval, meta_stats

MAX_MATRIX_N = 2500
"""Largest number of pairs for the matrix form (``M``, n × n float32: 25 MB at 2,500)."""


def rankdata(x: Any) -> np.ndarray:
    """1-based ranks, ties the average of their ranks (equal to :func:`meta_stats.rankdata`)."""
    a = np.asarray(x, dtype=float)
    n = len(a)
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    new_block = np.ones(n, dtype=bool)
    new_block[1:] = sorted_a[1:] != sorted_a[:-1]
    starts = np.flatnonzero(new_block)
    ends = np.append(starts[1:], n) - 1
    block = np.cumsum(new_block) - 1
    ranks = np.empty(n, dtype=float)
    ranks[order] = (starts[block] + ends[block]) / 2.0 + 1.0
    return ranks


def spearman(x: Any, y: Any) -> float:
    """Spearman's ρ (equal to :func:`meta_stats.spearman`)."""
    a, b = meta_stats._arrays(x, y)
    return meta_stats.pearson(rankdata(a), rankdata(b))


class _TauParts:
    """What every resample's τ_b of ``(a, b)`` needs: ``M`` (float32: every partial sum of ``w @ M`` is
    a whole number below ``n ≤ 2^24``, so it is exact) and the tie groups of each side."""

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.m = (np.sign(a[:, None] - a[None, :]) * np.sign(b[:, None] - b[None, :])).astype(np.float32)
        self.groups = [self._groups(a), self._groups(b)]

    @staticmethod
    def _groups(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(v, kind="mergesort")
        sv = v[order]
        starts = np.flatnonzero(np.concatenate(([True], sv[1:] != sv[:-1])))
        return order, starts

    def untied(self, w: np.ndarray, side: int) -> np.ndarray:
        """Pairs of each resample not tied on ``side``: ``(N² − Σ_groups W_g²) / 2`` (whole numbers)."""
        order, starts = self.groups[side]
        per_group = np.add.reduceat(w[:, order], starts, axis=1)
        return (w.sum(axis=1) ** 2 - (per_group**2).sum(axis=1)) / 2


def _tau_of_weights(w: np.ndarray, parts: _TauParts) -> np.ndarray:
    """τ_b of each resample, given as counts ``w`` (``(draws, n)``); NaN where undefined."""
    s = ((w.astype(np.float32) @ parts.m).astype(float) * w).sum(axis=1) / 2
    ux, uy = parts.untied(w, 0), parts.untied(w, 1)
    out = np.full(len(w), np.nan)
    for i in range(len(w)):  # the scalar arithmetic of kendall_tau_b, so the result is the same float
        denom = math.sqrt(float(ux[i]) * float(uy[i]))
        if denom > 0:
            out[i] = float(s[i]) / denom
    return out


def _matrix_form(a: np.ndarray, b: np.ndarray) -> bool:
    return 2 <= len(a) <= MAX_MATRIX_N and bool(np.isfinite(a).all() and np.isfinite(b).all())


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's τ_b (equal to :func:`meta_stats.kendall_tau_b`)."""
    a, b = meta_stats._arrays(x, y)
    if not _matrix_form(a, b):
        return meta_stats.kendall_tau_b(a, b)
    return float(_tau_of_weights(np.ones((1, len(a))), _TauParts(a, b))[0])


def tau_bootstrap_ci(
    x: Any, y: Any, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0, chunk: int = 100
) -> tuple[float | None, float | None]:
    """:func:`meta_stats.bootstrap_ci` of :func:`meta_stats.kendall_tau_b`, the same numbers."""
    a, b = meta_stats._arrays(x, y)
    n = len(a)
    if n < 2 or n_boot < 1:
        return None, None
    if not _matrix_form(a, b):
        return meta_stats.bootstrap_ci(meta_stats.kendall_tau_b, a, b, n_boot=n_boot, level=level, seed=seed)
    rng = np.random.default_rng(seed)
    parts = _TauParts(a, b)
    values: list[float] = []
    for start in range(0, n_boot, chunk):
        draws = min(chunk, n_boot - start)
        w = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(draws)]).astype(float)
        values.extend(float(v) for v in _tau_of_weights(w, parts) if not math.isnan(v))
    if len(values) < max(2, n_boot // 10):
        return None, None
    lo, hi = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def _resample_ranks(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`rankdata` of each resample ``v[idx[d]]`` (``idx``: ``(draws, n)``), all at once.

    A value's average rank in a resample is (values below it) + (its copies + 1) / 2, counted over
    its tie group: the same half-integers as :func:`meta_stats.rankdata` gives.
    """
    groups, gid = np.unique(v, return_inverse=True)
    draws, n = idx.shape
    g = gid[idx]
    counts = np.bincount((g + len(groups) * np.arange(draws)[:, None]).ravel(), minlength=draws * len(groups))
    counts = counts.reshape(draws, len(groups)).astype(float)
    below = np.cumsum(counts, axis=1) - counts
    table = below + (counts + 1) / 2
    return np.take_along_axis(table, g, axis=1)


def spearman_bootstrap_ci(
    x: Any, y: Any, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0, chunk: int = 100
) -> tuple[float | None, float | None]:
    """:func:`meta_stats.bootstrap_ci` of :func:`meta_stats.spearman`, the same numbers (the ranks of
    all resamples of a chunk at once, then :func:`meta_stats.pearson` of each)."""
    a, b = meta_stats._arrays(x, y)
    n = len(a)
    if n < 2 or n_boot < 1:
        return None, None
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return meta_stats.bootstrap_ci(meta_stats.spearman, a, b, n_boot=n_boot, level=level, seed=seed)
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for start in range(0, n_boot, chunk):
        idx = np.stack([rng.integers(0, n, n) for _ in range(min(chunk, n_boot - start))])
        ra, rb = _resample_ranks(a, idx), _resample_ranks(b, idx)
        for d in range(len(idx)):
            v = meta_stats.pearson(ra[d], rb[d])
            if not math.isnan(v):
                values.append(v)
    if len(values) < max(2, n_boot // 10):
        return None, None
    lo, hi = np.percentile(values, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


MEASURES: dict[str, meta_eval.Measure] = {
    "kendall_tau_b": (kendall_tau_b, tau_bootstrap_ci),
    "spearman": (spearman, spearman_bootstrap_ci),
}
"""The fast correlations and intervals, by the names :func:`pptarena.report.meta_eval.agreement` uses."""


def agreement(
    labels: list[Any],
    values: dict[tuple[str, str, int], float],
    class_scale: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """:func:`pptarena.report.meta_eval.agreement`, the same dict, with the fast τ_b and ranks."""
    return meta_eval.agreement(labels, values, class_scale, n_boot=n_boot, seed=seed, measures=MEASURES)


def series_agreement(
    series: dict[str, dict[tuple[str, str, int], float]],
    labels: list[Any],
    class_scale: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """:func:`pptarena.report.meta_eval.series_agreement`, the same dict, through :func:`agreement`."""
    return meta_eval.series_agreement(
        series, labels, class_scale, n_boot=n_boot, seed=seed, measures=MEASURES
    )
