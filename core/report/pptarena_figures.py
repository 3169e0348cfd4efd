"""PPTArena's leaderboard figures as tables (terminal and ``report.html``).

The figures are computed with the summary (``summary.json`` ``leaderboard_splits``, see
:mod:`pptarena.run.statistics.split_figures`) for runs whose dataset describes its published splits (the
``pptarena`` dataset) and whose judge gives IF and VQ scores (the ``dual`` judge). Per split (the
Full Set, the subset the dataset's ``subset`` option names) one table ranks the agents by score %
as PPTArena's leaderboard does, and one gives the same figures per category.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pptarena.run.folder.summary_record import Summary


class Table(NamedTuple):
    """A table as data (:mod:`pptarena.report.tables` draws it as its ``TableData``)."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


COLUMNS = ["score %", "IF %", "VQ %", "mean scored %", "coverage %", "scored"]
NOTE = (
    "PPTArena's leaderboard maths: per case (IF% + VQ%) / 2 with IF% = IF/5*100 (clamped 0-5); "
    "score %, IF %, VQ % = sum over the split's cases / its size (a missing or unscored case counts 0); "
    "mean scored % = over the scored cases; coverage % = scored / size"
)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


def _cells(f: dict[str, Any]) -> list[str]:
    scored = f.get("scored") or 0
    scored_text = str(int(scored)) if float(scored).is_integer() else f"{scored:.2f}"
    return [
        _pct(f.get("score_pct")),
        _pct(f.get("if_pct")),
        _pct(f.get("vq_pct")),
        _pct(f.get("mean_scored_pct")),
        _pct(f.get("coverage_pct")),
        f"{scored_text}/{f.get('cases', 0)}",
    ]


def _ranked(agents: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(agents, key=lambda a: (-(agents[a].get("score_pct") or 0.0), a))


def split_tables(summary: Summary) -> list[Table]:
    """The leaderboard tables of every split of ``summary.leaderboard_splits`` (none without it)."""
    tables: list[Table] = []
    splits_by_judge = summary.leaderboard_splits
    for judge, splits in sorted(splits_by_judge.items()):
        for split in splits.values():
            title = f"PPTArena leaderboard · {split.get('title')} ({split.get('cases')} cases) · {judge}"
            agents = split.get("agents") or {}
            rows = [[a, *_cells(agents[a])] for a in _ranked(agents)]
            tables.append(Table(title, ["agent", *COLUMNS], rows, NOTE))
            categories = split.get("categories") or {}
            if categories:
                rows = []
                for name, cat in categories.items():
                    cat_agents = cat.get("agents") or {}
                    rows += [
                        [f"{name} ({cat.get('cases')})", a, *_cells(cat_agents[a])]
                        for a in _ranked(cat_agents)
                    ]
                title = f"PPTArena leaderboard · {split.get('title')} by category · {judge}"
                tables.append(Table(title, ["category (cases)", "agent", *COLUMNS], rows))
    return tables
