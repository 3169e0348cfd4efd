"""The structural judge's score: requested objects reproduced, minus damage and over-editing.

From a :class:`~pptarena.plugins.judges.edit_match.MatchResult`:

* **damaged units** — objects the prediction changed (or added) that the target did not ask for
  and where none of the prediction's edits serves a requested edit: a broken unrelated shape, the
  neighbour moved instead of the requested shape, a new shape covering the requested one;
* **over-edited units** — requested objects (or new objects standing for requested ones) on which
  the prediction also made edits the target does not have (bolded, recoloured, moved as well). A
  record that repeats the value of a requested edit with the same key (a font size set on two run
  ranges where the target set it on one) is not an extra edit.

``score = recall − damage_weight · damaged / N − overedit_weight · over_edited / N`` clamped to
[0, 1], with ``N`` the number of requested objects (1 when the target changes nothing). With the
defaults (1.0 and 0.25) one damaged object costs exactly as much as one missed requested edit, and
an over-edited requested object a quarter of that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pptarena.plugins.judges.structural.edit_match import MatchResult, _strip_ids

DEFAULT_DAMAGE_WEIGHT = 1.0
DEFAULT_OVEREDIT_WEIGHT = 0.25


@dataclass
class Assessment:
    """Damaged and over-edited units of a prediction, and the score."""

    damaged: list[tuple[Any, ...]] = field(default_factory=list)
    over_edited: list[tuple[Any, ...]] = field(default_factory=list)
    score: float = 0.0


def assess(
    result: MatchResult,
    damage_weight: float = DEFAULT_DAMAGE_WEIGHT,
    overedit_weight: float = DEFAULT_OVEREDIT_WEIGHT,
) -> Assessment:
    """Find damaged and over-edited units and compute the score (see the module docstring)."""
    target_units = {t.unit for t in result.target_items}
    by_unit: dict[tuple[Any, ...], list[Any]] = {}
    for p in result.prediction_items:
        by_unit.setdefault(p.unit, []).append(p)
    requested: dict[tuple[Any, ...], list[Any]] = {}
    for t in result.target_items:
        requested.setdefault(t.key, []).append(_strip_ids(t.new))
    damaged, over = [], []
    for unit, items in by_unit.items():
        paired = [p for p in items if p.index in result.paired]
        if unit not in target_units and not paired:
            damaged.append(unit)
            continue
        # an unpaired record with the key and value of a requested edit is a split of it, not an extra
        extra = [
            p
            for p in items
            if p.index not in result.paired and _strip_ids(p.new) not in requested.get(p.key, [])
        ]
        if extra:
            over.append(unit)
    n = max(len(target_units), 1)
    score = result.recall - damage_weight * len(damaged) / n - overedit_weight * len(over) / n
    # rounded so that equal costs reached by different sums (2/3 vs 1 − 1/3) tie exactly
    return Assessment(damaged, over, round(max(0.0, min(1.0, score)), 9))


__all__ = ["DEFAULT_DAMAGE_WEIGHT", "DEFAULT_OVEREDIT_WEIGHT", "Assessment", "assess"]
