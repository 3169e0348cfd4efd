"""Leaderboard figures per split, as PPTArena's public leaderboard computes them.

A dataset that has published splits describes them in each task's metadata (recorded in every
result line), under ``metadata["leaderboard"]``::

    {"splits": ["full", "subset25"],            # the splits this case belongs to
     "categories": ["Content", "Layout"],       # the leaderboard categories it counts under
     "sizes": {"full": {"title": "Full Set", "cases": 100, "categories": {"Content": 67, ...}},
               "subset25": {"title": "Subset subset25", "cases": 25, "categories": {...}}}}

``sizes`` are the numbers of cases the split (and each category within it) has in the benchmark,
whether or not the run covered them all. The ``pptarena`` dataset writes this block. For every
judge whose verdicts carry ``if_score`` and ``vq_score`` on 0-5 (the ``dual`` judge: PPTArena's
protocol), :func:`split_figures` computes per split, per category within it and per agent
(``../shared/reference/pptarena-format.md`` §5.2)::

    metric_pct(s)   = clamp(s, 0, 5) / 5 * 100
    case_pct        = (metric_pct(IF) + metric_pct(VQ)) / 2
    score_pct       = sum(case_pct) / cases        # a missing or unscored case counts 0
    if_pct, vq_pct  = sum(metric_pct(IF or VQ)) / cases
    mean_scored_pct = sum(case_pct) / scored
    coverage_pct    = scored / cases * 100         # each rounded to one decimal

A case is scored when its line is ``scored`` and has both scores. With several epochs each attempt
of a case weighs 1/attempts (one epoch: exactly the leaderboard's sums). No core code knows the
dataset: only this metadata and the verdicts' metric names are read.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pptarena.run.folder.records import ResultRow

IF_KEY, VQ_KEY = "if_score", "vq_score"


def metric_pct(score: float) -> float:
    """A 0-5 score as a percentage of 5 (clamped to 0-5 first)."""
    return min(max(float(score), 0.0), 5.0) / 5.0 * 100.0


def dual_judges(rows: list[ResultRow]) -> list[str]:
    """Judge labels whose verdicts carry IF and VQ scores (PPTArena's dual protocol)."""
    found = set()
    for r in rows:
        for judge, block in r.scores.items():
            metrics = block.metrics
            if IF_KEY in metrics and VQ_KEY in metrics:
                found.add(judge)
    return sorted(found)


def _attempt_pcts(row: ResultRow, judge: str) -> tuple[float, float] | None:
    """(IF %, VQ %) of one attempt, or None when it is not scored by ``judge``."""
    if row.status != "scored":
        return None
    block = row.scores.get(judge)
    metrics = block.metrics if block is not None else {}
    if_score, vq_score = metrics.get(IF_KEY), metrics.get(VQ_KEY)
    if not isinstance(if_score, int | float) or not isinstance(vq_score, int | float):
        return None
    return metric_pct(if_score), metric_pct(vq_score)


def figures(attempts_by_case: dict[str, list[tuple[float, float] | None]], cases: int) -> dict[str, Any]:
    """One cell of the leaderboard: ``attempts_by_case`` maps each covered case to its attempts'
    (IF %, VQ %) (None = unscored); ``cases`` is the split's size."""
    sums = {"if": 0.0, "vq": 0.0, "case": 0.0, "scored": 0.0}
    for attempts in attempts_by_case.values():
        weight = 1.0 / len(attempts) if attempts else 0.0
        for pcts in attempts:
            if pcts is None:
                continue
            sums["if"] += weight * pcts[0]
            sums["vq"] += weight * pcts[1]
            sums["case"] += weight * (pcts[0] + pcts[1]) / 2
            sums["scored"] += weight

    def share(total: float, of: float) -> float | None:
        return round(total / of, 1) if of else None

    return {
        "score_pct": share(sums["case"], cases),
        "if_pct": share(sums["if"], cases),
        "vq_pct": share(sums["vq"], cases),
        "mean_scored_pct": share(sums["case"], sums["scored"]),
        "coverage_pct": share(sums["scored"] * 100.0, cases),
        "scored": round(sums["scored"], 3),
        "cases": cases,
    }


def split_figures(rows: list[ResultRow]) -> dict[str, Any]:
    """Per dual judge, per split: title, size, each agent's figures, and each category's.

    Empty when no line describes splits or no judge gives IF/VQ scores.
    """
    described = []
    for r in rows:  # a summary asks this of every line, and most have no block
        block = r.metadata.get("leaderboard")
        if block is not None and isinstance(block, dict) and isinstance(block.get("sizes"), dict):
            described.append((r, block))
    judges = dual_judges([r for r, _ in described])
    if not judges:
        return {}
    sizes: dict[str, dict[str, Any]] = {}
    for _, d in described:
        for split, size in d["sizes"].items():
            sizes.setdefault(split, size)
    agents = sorted({r.agent for r, _ in described})
    out: dict[str, Any] = {}
    for judge in judges:
        per_split: dict[str, Any] = {}
        for split, size in sizes.items():
            # cell -> agent -> case -> attempts; cell None is the whole split
            cells: dict[str | None, dict[str, dict[str, list]]] = defaultdict(
                lambda: {a: defaultdict(list) for a in agents}
            )
            for r, d in described:
                if split not in (d.get("splits") or []):
                    continue
                pcts = _attempt_pcts(r, judge)
                for cell in [None, *(d.get("categories") or [])]:
                    cells[cell][r.agent][r.task_id].append(pcts)
            entry: dict[str, Any] = {
                "title": str(size.get("title") or split),
                "cases": int(size.get("cases") or 0),
                "agents": {a: figures(cells[None][a], int(size.get("cases") or 0)) for a in agents},
                "categories": {},
            }
            for category, n in (size.get("categories") or {}).items():
                if int(n or 0) > 0:  # a category with no cases is omitted
                    entry["categories"][category] = {
                        "cases": int(n),
                        "agents": {a: figures(cells[category][a], int(n)) for a in agents},
                    }
            per_split[split] = entry
        out[judge] = per_split
    return out
