"""Agreement between people: Krippendorff's α (nominal, ordinal, interval) with a bootstrap interval,
Cohen's κ (two annotators) and Fleiss' κ (a fixed number of annotators per item), and raw agreement.

α follows Krippendorff's coincidence-matrix definition (*Computing Krippendorff's Alpha-Reliability*,
2011): only units with two values or more count; each pair of values within a unit of ``m`` values
adds ``1/(m-1)`` to the coincidences; α = 1 − D_o / D_e. Its interval resamples units with
replacement (percentile bootstrap, seeded). Both are numpy: each unit's coincidences are computed
once, and a resample's matrix is a weighted sum of them (all resamples in one matrix product).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Hashable, Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

Units = Mapping[Hashable, Mapping[str, Hashable]]
"""unit (item) -> annotator -> value."""

LEVELS = ("nominal", "ordinal", "interval")


def _values(units: Sequence[Sequence[Any]]) -> list[Any]:
    return sorted({v for u in units for v in u}, key=lambda x: (str(type(x)), x))


def unit_coincidences(units: Sequence[Sequence[Any]]) -> tuple[list[Any], np.ndarray]:
    """The values (sorted) and each unit's contribution to the coincidence matrix, flattened.

    A unit of ``m ≥ 2`` values with ``c[v]`` of value ``v`` adds ``(c cᵀ − diag(c)) / (m − 1)``: each
    ordered pair of its values counts ``1/(m-1)``. Row ``u`` of the returned ``(units, k²)`` array is
    that matrix of unit ``u`` (units of fewer than two values give a row of zeros).
    """
    values = _values(units)
    index = {v: i for i, v in enumerate(values)}
    k = len(values)
    counts = np.zeros((len(units), k))
    rows = np.repeat(np.arange(len(units)), [len(u) for u in units])
    np.add.at(counts, (rows, np.array([index[v] for u in units for v in u], dtype=np.int64)), 1.0)
    m = counts.sum(axis=1)
    scale = np.divide(1.0, m - 1, out=np.zeros_like(m), where=m >= 2)
    per_unit = counts[:, :, None] * counts[:, None, :]
    per_unit[:, np.arange(k), np.arange(k)] -= counts
    return values, (per_unit * scale[:, None, None]).reshape(len(units), k * k)


def _delta(values: list[Any], n_c: np.ndarray, level: str) -> np.ndarray:
    """δ² between values, ``(..., k, k)`` for marginals ``n_c`` of shape ``(..., k)``."""
    k = len(values)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), n_c.shape[:-1] + (k, k))
    if level == "interval":
        x = np.array([float(v) for v in values])
        return np.broadcast_to((x[:, None] - x[None, :]) ** 2, n_c.shape[:-1] + (k, k))
    # ordinal: ranks of the values in order; distance through the marginal mass between c and e
    cum = np.cumsum(n_c, axis=-1)
    before = cum - n_c  # mass strictly below each value
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))
    through = cum[..., hi] - before[..., lo]  # sum(n_c[lo : hi + 1])
    d = (through - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    return d * (1.0 - np.eye(k))


def _alphas(values: list[Any], o: np.ndarray, level: str) -> np.ndarray:
    """α of each coincidence matrix in ``o`` (``(draws, k²)``), NaN where undefined."""
    k = len(values)
    o = o.reshape(-1, k, k)
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    d = _delta(values, n_c, level)
    observed = (o * d).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * d).sum(axis=(1, 2))
    present = (n_c > 0).sum(axis=1)
    ok = (n >= 2) & (present >= 2) & (expected != 0)
    out = np.full(len(o), np.nan)
    out[ok] = 1 - (n[ok] - 1) * observed[ok] / expected[ok]
    return out


def krippendorff_alpha(units: Sequence[Sequence[Any]], level: str = "ordinal") -> float | None:
    """α of ``units`` (each the values people gave one item; missing values left out).

    None when fewer than two pairable values exist or all values are equal (α undefined).
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r}: expected one of {', '.join(LEVELS)}")
    pairable = [u for u in units if len(u) >= 2]
    values, per_unit = unit_coincidences(pairable)
    if len(values) < 2:
        return None
    a = float(_alphas(values, per_unit.sum(axis=0, keepdims=True), level)[0])
    return None if math.isnan(a) else a


MAX_RESAMPLE_CELLS = 1_000_000
"""Resample draws held at once by :func:`bootstrap_alpha` (a chunk of resamples × units)."""


def resample_chunks(n: int, n_boot: int, seed: int, rows: int) -> Iterator[np.ndarray]:
    """Unit indices of ``n_boot`` resamples of ``n`` units, ``rows`` resamples at a time (``(rows, n)``
    arrays, the last one shorter): the draws of ``random.Random(seed).randrange(n)``, in order.

    The same numbers as calling ``randrange(n)`` ``n_boot × n`` times, drawn in bulk: numpy's MT19937
    takes the state of ``random.Random(seed)``, and each draw is Python's ``getrandbits(k)`` (the
    generator's next 32 bits shifted right by ``32 − k``, ``k = n.bit_length()``) with values ``≥ n``
    rejected and drawn again, as ``Random._randbelow`` does.
    """
    rng = random.Random(seed)
    k = n.bit_length()
    if k > 32:
        for start in range(0, n_boot, rows):
            draws = min(rows, n_boot - start)
            yield np.array([rng.randrange(n) for _ in range(draws * n)], dtype=np.int64).reshape(draws, n)
        return
    state = rng.getstate()[1]
    gen = np.random.MT19937()
    gen.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": int(state[624])},
    }
    pending = np.empty(0, dtype=np.int64)  # accepted draws not handed out yet, in order
    for start in range(0, n_boot, rows):
        draws = min(rows, n_boot - start)
        need = draws * n
        while len(pending) < need:  # acceptance is above 1/2: twice the rest is nearly always enough
            raw = gen.random_raw(2 * (need - len(pending)) + 64) >> np.uint64(32 - k)
            pending = np.concatenate([pending, raw[raw < n].astype(np.int64)])
        yield pending[:need].reshape(draws, n)
        pending = pending[need:]


def resample_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    """All of :func:`resample_chunks` as one ``(n_boot, n)`` array."""
    chunks = list(resample_chunks(n, n_boot, seed, max(1, n_boot)))
    return np.concatenate(chunks) if chunks else np.empty((0, n), dtype=np.int64)


def _weights(idx: np.ndarray, n: int) -> np.ndarray:
    """How many times each unit is in each resample (``(rows, n)`` floats)."""
    rows = len(idx)
    flat = (idx + n * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(float)


@functools.lru_cache(maxsize=4)
def _cached_weights(n: int, n_boot: int, seed: int) -> np.ndarray:
    weights = _weights(resample_indices(n, n_boot, seed), n)
    weights.setflags(write=False)
    return weights


def _resample_weights(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The resamples' unit counts, in chunks; drawn once for a (units, resamples, seed) that fits in
    one chunk — a campaign's scales and annotator pairs mostly share their number of items."""
    if n * n_boot <= MAX_RESAMPLE_CELLS:
        yield _cached_weights(n, n_boot, seed)
        return
    for idx in resample_chunks(n, n_boot, seed, max(1, MAX_RESAMPLE_CELLS // n)):
        yield _weights(idx, n)


def bootstrap_alpha(
    units: Sequence[Sequence[Any]], level: str, *, n_boot: int = 1000, seed: int = 0
) -> list[float] | None:
    """95% percentile interval of α over units resampled with replacement (None when undefined).

    The resamples are those of ``random.Random(seed)`` drawing ``randrange(units)`` for each unit
    of each resample (:func:`resample_chunks`); a resample's coincidence matrix is the sum of its
    units' (:func:`unit_coincidences`), so a chunk of resamples is one ``(chunk × units) @ (units × k²)``
    product of the resample counts (chunks of :data:`MAX_RESAMPLE_CELLS` draws bound the memory).
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r}: expected one of {', '.join(LEVELS)}")
    pairable = [list(u) for u in units if len(u) >= 2]
    if len(pairable) < 2:
        return None
    values, per_unit = unit_coincidences(pairable)
    if len(values) < 2:
        return None
    n = len(pairable)
    got = []
    for weights in _resample_weights(n, n_boot, seed):
        got.extend(float(a) for a in _alphas(values, weights @ per_unit, level) if not math.isnan(a))
    got.sort()
    if len(got) < n_boot // 2:
        return None
    return [round(got[int(0.025 * (len(got) - 1))], 4), round(got[int(math.ceil(0.975 * (len(got) - 1)))], 4)]


def cohen_kappa(x: Sequence[Hashable], y: Sequence[Hashable]) -> float | None:
    """Cohen's κ of two annotators' nominal labels of the same items (None when undefined)."""
    if len(x) != len(y) or not x:
        return None
    n = len(x)
    p_o = sum(1 for a, b in zip(x, y, strict=True) if a == b) / n
    cats = set(x) | set(y)
    p_e = sum((list(x).count(c) / n) * (list(y).count(c) / n) for c in cats)
    return None if p_e >= 1 else (p_o - p_e) / (1 - p_e)


def fleiss_kappa(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' κ of items each labelled by the same number of annotators (None when undefined)."""
    if not units:
        return None
    m = len(units[0])
    if m < 2 or any(len(u) != m for u in units):
        return None
    cats = sorted({v for u in units for v in u}, key=str)
    n = len(units)
    p_j = {c: sum(u.count(c) for u in units) / (n * m) for c in cats}
    p_i = [(sum(u.count(c) ** 2 for c in cats) - m) / (m * (m - 1)) for u in units]
    p_bar = sum(p_i) / n
    p_e = sum(p * p for p in p_j.values())
    return None if p_e >= 1 else (p_bar - p_e) / (1 - p_e)


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def scale_agreement(units: Units, level: str, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """α (with interval) over all annotators and per pair of annotators, for one scale."""
    lists = [list(by.values()) for by in units.values()]
    out: dict[str, Any] = {
        "level": level,
        "items": sum(1 for u in lists if len(u) >= 2),
        "alpha": _r(krippendorff_alpha(lists, level)),
        "ci95": bootstrap_alpha(lists, level, n_boot=n_boot, seed=seed),
        "pairs": {},
    }
    people = sorted({a for by in units.values() for a in by})
    for a, b in combinations(people, 2):
        both = [[by[a], by[b]] for by in units.values() if a in by and b in by]
        if not both:
            continue
        out["pairs"][f"{a}|{b}"] = {
            "items": len(both),
            "alpha": _r(krippendorff_alpha(both, level)),
            "ci95": bootstrap_alpha(both, level, n_boot=n_boot, seed=seed),
            "agreement": _r(sum(1 for x, y in both if x == y) / len(both)),
        }
    return out


def choice_agreement(units: Units) -> dict[str, Any]:
    """Pairwise protocol: raw agreement and Cohen's κ per annotator pair, Fleiss' κ overall."""
    people = sorted({a for by in units.values() for a in by})
    out: dict[str, Any] = {"pairs": {}}
    for a, b in combinations(people, 2):
        both = [(by[a], by[b]) for by in units.values() if a in by and b in by]
        if not both:
            continue
        out["pairs"][f"{a}|{b}"] = {
            "items": len(both),
            "agreement": _r(sum(1 for x, y in both if x == y) / len(both)),
            "cohen_kappa": _r(cohen_kappa([x for x, _ in both], [y for _, y in both])),
        }
    shared = [list(by.values()) for by in units.values() if len(by) >= 2]
    if shared:
        m = max(len(u) for u in shared)
        full = [u for u in shared if len(u) == m]
        out["fleiss_kappa"] = _r(fleiss_kappa(full))
        out["fleiss_items"] = len(full)
        out["fleiss_annotators"] = m
        out["alpha_nominal"] = _r(krippendorff_alpha(shared, "nominal"))
    return out
