"""The top of a report page: run facts, problems, leaderboard, judges' fingerprints and plots.

The single page and the index page of a large run (:mod:`pptarena.report.index`) open the same way;
both build that part here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from html import escape
from typing import Any

from pptarena.report.data import RunData
from pptarena.report.tables import fingerprint_table, judge_kinds, summary_tables
from pptarena.report.verdicts import esc


def _or_unknown(value: str | None) -> str:
    """A manifest fact for the header, ``?`` when the manifest does not have it."""
    return "?" if value is None else value


def budget_text(budget: dict[str, Any] | None) -> list[str]:
    """The manifest's budget record (a free-form dict) as one header item (none without ``max_cost``)."""
    if not isinstance(budget, dict) or budget.get("max_cost") is None:
        return []
    text = f"spent ${float(budget.get('spent_usd') or 0):.4f} of max_cost ${float(budget['max_cost']):.4f}"
    if budget.get("stopped"):
        text += f" (budget reached: {budget.get('not_started', 0)} attempts not started)"
    return [text]


def page_top(
    data: RunData,
    problems: list[str],
    table_html: Callable[..., str],
    plots_html: Callable[[RunData], str],
    counts: str,
) -> list[str]:
    """HTML pieces from the ``<header>`` to the score plots (the ``<main>`` element is left open).

    ``counts`` is the header's count item (e.g. "12 results, 3 tasks").
    """
    m = data.manifest
    rescores = {k: v.summary for k, v in data.rescores.items()}
    tables = summary_tables(data.summary, data.rows, rescores)
    fp_table = fingerprint_table(m)
    if fp_table is not None:
        tables.append(fp_table)
    meta = " · ".join(
        escape(str(x))
        for x in (
            f"config {_or_unknown(m.config_path)}",
            f"started {_or_unknown(m.started_at)}",
            f"finished {m.finished_at or 'not finished'}",
            counts,
            f"judges: {', '.join(data.judges) or '-'}",
            *budget_text(m.budget),
            f"report written {datetime.now(UTC).isoformat(timespec='seconds')}",
        )
    )
    kinds = judge_kinds(data.rows)
    legend = ", ".join(f"{escape(j)} ({'/'.join(sorted(k))})" for j, k in kinds.items() if k)
    return [
        f"<header><h1>pptarena run: {esc(data.run_dir.resolve().name, 200)}</h1>"
        f"<div class='meta'>{meta}</div></header><main>",
        *(f'<div class="problem">{esc(p, 1000)}</div>' for p in problems),
        "<h2>Leaderboard</h2>",
        # the section heading already says "Leaderboard": the main table gets no second one
        *(table_html(t, heading=t.title != "Leaderboard") for t in tables),
        f'<p class="note">Benchmark figures: {legend}</p>' if legend else "",
        "<h2>Score distributions</h2>",
        plots_html(data),
    ]
