"""Graded-set views of a meta-evaluation: mean per attempt kind and order agreement within each task.

A graded set labels several attempts per task, each of a named **kind** (``complete``, ``damage``,
``wrong_value``...; the optional ``kind`` column of the labels CSV). Two views complement the
global correlations of :mod:`pptarena.meta_eval`:

* :func:`kind_means` — per kind: how many labels, their mean, and each judge series' mean score
  on the same pairs;
* :func:`within_task_order` — for every pair of attempts **of the same task** with different
  labels: does the series order them the same way (concordant), tie them, or reverse them
  (discordant)? Counted overall and per (higher kind, lower kind), so a failed ordering such as
  ``over_edit > damage`` is visible by name.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

MAX_LISTED_KIND_PAIRS = 200


def kind_means(labels: list[Any], series: dict[str, dict[tuple[str, str, int], float]]) -> dict[str, Any]:
    """``{kind: {"n", "label_mean", "series": {name: mean or None}}}`` over labels that have a kind."""
    by_kind: dict[str, list[Any]] = defaultdict(list)
    for lab in labels:
        if lab.kind:
            by_kind[lab.kind].append(lab)
    out: dict[str, Any] = {}
    for kind, labs in by_kind.items():
        means = {}
        for name, values in series.items():
            got = [values[lab.key] for lab in labs if lab.key in values]
            means[name] = round(sum(got) / len(got), 4) if got else None
        out[kind] = {
            "n": len(labs),
            "label_mean": round(sum(lab.value for lab in labs) / len(labs), 4),
            "series": means,
        }
    return out


def within_task_order(labels: list[Any], values: dict[tuple[str, str, int], float]) -> dict[str, Any]:
    """Concordant / tied / discordant counts over same-task pairs with different labels
    (see the module doc).
    """
    by_task: dict[str, list[Any]] = defaultdict(list)
    for lab in labels:
        if lab.key in values:
            by_task[lab.task_id].append(lab)
    total = {"pairs": 0, "concordant": 0, "tied": 0, "discordant": 0}
    per_kind: dict[str, dict[str, int]] = defaultdict(
        lambda: {"pairs": 0, "concordant": 0, "tied": 0, "discordant": 0}
    )
    for labs in by_task.values():
        for i, a in enumerate(labs):
            for b in labs[i + 1 :]:
                if a.value == b.value:
                    continue
                hi, lo = (a, b) if a.value > b.value else (b, a)
                d = values[hi.key] - values[lo.key]
                verdict = "concordant" if d > 0 else ("tied" if d == 0 else "discordant")
                total["pairs"] += 1
                total[verdict] += 1
                name = f"{hi.kind or hi.agent} > {lo.kind or lo.agent}"
                per_kind[name]["pairs"] += 1
                per_kind[name][verdict] += 1
    failing = {k: v for k, v in sorted(per_kind.items()) if v["concordant"] < v["pairs"]}
    return {
        **total,
        "rate": round(total["concordant"] / total["pairs"], 4) if total["pairs"] else None,
        "not_concordant": dict(list(failing.items())[:MAX_LISTED_KIND_PAIRS]),
    }


__all__ = ["kind_means", "within_task_order"]
