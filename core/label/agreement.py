"""Agreement between people: Krippendorff's α (nominal, ordinal, interval) with a bootstrap interval,
Cohen's κ (two annotators) and Fleiss' κ (a fixed number of annotators per item), and raw agreement.

α follows Krippendorff's coincidence-matrix definition (*Computing Krippendorff's Alpha-Reliability*,
2011): only units with two values or more count; each pair of values within a unit of ``m`` values
adds ``1/(m-1)`` to the coincidences; α = 1 − D_o / D_e. Its interval resamples units with
replacement (percentile bootstrap, seeded).
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any

Units = Mapping[Hashable, Mapping[str, Hashable]]
"""unit (item) -> annotator -> value."""

LEVELS = ("nominal", "ordinal", "interval")


def _coincidences(units: Sequence[Sequence[Any]]) -> tuple[list[Any], list[list[float]]]:
    values = sorted({v for u in units for v in u}, key=lambda x: (str(type(x)), x))
    index = {v: i for i, v in enumerate(values)}
    o = [[0.0] * len(values) for _ in values]
    for u in units:
        m = len(u)
        if m < 2:
            continue
        for i, j in combinations(range(m), 2):
            a, b = index[u[i]], index[u[j]]
            o[a][b] += 1 / (m - 1)
            o[b][a] += 1 / (m - 1)
    return values, o


def _delta(values: list[Any], n_c: list[float], level: str) -> list[list[float]]:
    k = len(values)
    d = [[0.0] * k for _ in range(k)]
    for c in range(k):
        for e in range(c + 1, k):
            if level == "nominal":
                x = 1.0
            elif level == "interval":
                x = (float(values[c]) - float(values[e])) ** 2
            else:  # ordinal: ranks of the values in order; distance through the marginal mass between
                x = (sum(n_c[c : e + 1]) - (n_c[c] + n_c[e]) / 2) ** 2
            d[c][e] = d[e][c] = x
    return d


def krippendorff_alpha(units: Sequence[Sequence[Any]], level: str = "ordinal") -> float | None:
    """α of ``units`` (each the values people gave one item; missing values left out).

    None when fewer than two pairable values exist or all values are equal (α undefined).
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r}: expected one of {', '.join(LEVELS)}")
    values, o = _coincidences([u for u in units if len(u) >= 2])
    n_c = [sum(row) for row in o]
    n = sum(n_c)
    if n < 2 or len(values) < 2:
        return None
    d = _delta(values, n_c, level)
    k = len(values)
    observed = sum(o[c][e] * d[c][e] for c in range(k) for e in range(k))
    expected = sum(n_c[c] * n_c[e] * d[c][e] for c in range(k) for e in range(k))
    if expected == 0:
        return None
    return 1 - (n - 1) * observed / expected


def bootstrap_alpha(
    units: Sequence[Sequence[Any]], level: str, *, n_boot: int = 1000, seed: int = 0
) -> list[float] | None:
    """95% percentile interval of α over units resampled with replacement (None when undefined)."""
    pairable = [list(u) for u in units if len(u) >= 2]
    if len(pairable) < 2:
        return None
    rng = random.Random(seed)
    got = []
    for _ in range(n_boot):
        a = krippendorff_alpha([pairable[rng.randrange(len(pairable))] for _ in pairable], level)
        if a is not None:
            got.append(a)
    if len(got) < n_boot // 2:
        return None
    got.sort()
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
