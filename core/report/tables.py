"""The terminal leaderboard: per-agent scores, errors by status, PPT-Eval and PPTArena figures, breakdowns.

Tables are built as plain data (:class:`TableData`) once, then drawn with rich
on a terminal, as aligned plain text otherwise (pipes, CI logs), and as HTML in
``report.html`` (:mod:`pptarena.report.html`).

Which judges count as what:

* a judge whose metrics carry ``success`` (the ``rubric`` judge) gets the PPT-Eval columns:
  success rate (``score == 1``) and average score, both over *all* tasks (failures count 0),
  as PPT-Eval's own summary does;
* a judge whose metrics carry ``if_score`` / ``vq_score`` (the ``dual`` judge) gets the PPTArena
  columns: mean IF and VQ on 0-5 over the pairs it scored.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from pptarena.run.mixed import rows_by_dataset
from pptarena.run.results import summarize_results
from pptarena.types import STATUSES, Status

ERROR_STATUSES = tuple(s for s in STATUSES if s != Status.SCORED)
GROUP_FIELDS = ("category", "edit_type", "difficulty")
GROUP_TITLES = {"category": "By category", "edit_type": "By edit type", "difficulty": "By difficulty"}


@dataclass
class TableData:
    """A table as data: ``rows`` are lists of strings, one per header."""

    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell ("–" when missing)."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def pct(value: Any) -> str:
    """A 0-1 fraction as a percentage ("–" when missing)."""
    return "–" if value is None else f"{100 * float(value):.1f}%"


def judge_kinds(rows: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Per judge label, the benchmark figures it supports: ``"ppteval"`` and/or ``"pptarena"``."""
    kinds: dict[str, set[str]] = {}
    for r in rows:
        for judge, block in (r.get("scores") or {}).items():
            metrics = (block or {}).get("metrics") or {}
            k = kinds.setdefault(judge, set())
            if "success" in metrics:
                k.add("ppteval")
            if "if_score" in metrics or "vq_score" in metrics:
                k.add("pptarena")
    return kinds


def errors_text(status: dict[str, int]) -> str:
    """``"agent_error 2, timeout 1"`` (or "0")."""
    parts = [f"{s} {status.get(s, 0)}" for s in ERROR_STATUSES if status.get(s)]
    return ", ".join(parts) or "0"


def leaderboard_table(summary: dict[str, Any], kinds: dict[str, set[str]] | None = None, title: str = "Leaderboard") -> TableData:
    """One row per agent, best first by the first judge's mean over all tasks."""
    kinds = kinds or {}
    judges = list(summary.get("judges") or [])
    headers = ["agent", "tasks", "scored", "errors"]
    for j in judges:
        headers.append(f"{j} mean")
    for j in judges:
        if "ppteval" in kinds.get(j, ()):
            headers += [f"{j} success", f"{j} avg"]
        if "pptarena" in kinds.get(j, ()):
            headers += [f"{j} IF/5", f"{j} VQ/5"]
    headers += ["time s", "tokens"]
    agents = summary.get("agents") or {}

    def key(name: str) -> float:
        blocks = agents[name].get("judges") or {}
        first = blocks.get(judges[0], {}) if judges else {}
        return -(first.get("mean_all") or 0.0)

    table = TableData(title, headers)
    for name in sorted(agents, key=key):
        entry = agents[name]
        blocks = entry.get("judges") or {}
        row = [name, str(entry.get("tasks", 0)), str((entry.get("status") or {}).get("scored", 0)), errors_text(entry.get("status") or {})]
        for j in judges:
            b = blocks.get(j) or {}
            row.append(f"{fmt(b.get('mean_all'))} (n={b.get('n', 0)})" if b.get("n") else "–")
        for j in judges:
            b = blocks.get(j) or {}
            metrics = b.get("metrics") or {}
            if "ppteval" in kinds.get(j, ()):
                row += [pct(b.get("success_rate")), fmt(b.get("mean_all"))]
            if "pptarena" in kinds.get(j, ()):
                row += [fmt(metrics.get("if_score"), 2), fmt(metrics.get("vq_score"), 2)]
        usage = entry.get("usage") or {}
        tokens = sum(v for k, v in usage.items() if k.endswith("tokens") and isinstance(v, int))
        row += [fmt(entry.get("duration_s"), 1), str(tokens) if tokens else "–"]
        table.rows.append(row)
    table.note = "mean: over all tasks, a pair without a score counts 0; n = pairs the judge scored"
    return table


def breakdown_tables(summary: dict[str, Any]) -> list[TableData]:
    """Per metadata field (category, edit type, difficulty): group × (agent, judge) mean over the group's tasks."""
    judges = list(summary.get("judges") or [])
    agents = summary.get("agents") or {}
    tables = []
    for field_name in GROUP_FIELDS:
        keys = sorted({k for e in agents.values() for k in ((e.get("groups") or {}).get(field_name) or {})})
        if not keys:
            continue
        headers = [field_name.replace("_", " "), "tasks"] + [f"{a} · {j}" for a in agents for j in judges]
        table = TableData(GROUP_TITLES[field_name], headers)
        for k in keys:
            n = max(((e.get("groups") or {}).get(field_name) or {}).get(k, {}).get("tasks", 0) for e in agents.values())
            row = [k, str(n)]
            for e in agents.values():
                g = ((e.get("groups") or {}).get(field_name) or {}).get(k) or {}
                for j in judges:
                    row.append(fmt(((g.get("judges") or {}).get(j) or {}).get("mean_all")))
            table.rows.append(row)
        tables.append(table)
    return tables


def rescore_table(base: dict[str, Any], rescores: dict[str, dict[str, Any]]) -> TableData | None:
    """Original judges next to each re-score's judges: agent × (run, judge) mean over all tasks."""
    if not rescores:
        return None
    columns: list[tuple[str, str, dict[str, Any]]] = [("run", j, base) for j in base.get("judges") or []]
    for name, summ in rescores.items():
        columns += [(f"rescore/{name}", j, summ) for j in summ.get("judges") or []]
    table = TableData("Re-scores", ["agent"] + [f"{src} · {j}" for src, j, _ in columns])
    agents = list(base.get("agents") or {})
    for summ in rescores.values():
        agents += [a for a in summ.get("agents") or {} if a not in agents]
    for a in agents:
        row = [a]
        for _, j, summ in columns:
            b = (((summ.get("agents") or {}).get(a) or {}).get("judges") or {}).get(j) or {}
            row.append(fmt(b.get("mean_all")) if b.get("n") is not None else "–")
        table.rows.append(row)
    table.note = "means over all tasks (unscored pairs count 0); re-scores live in rescore/<name>/"
    return table


def summary_tables(summary: dict[str, Any], rows: list[dict[str, Any]], rescores: dict[str, dict[str, Any]] | None = None) -> list[TableData]:
    """Every table of the summary: leaderboard, breakdowns, re-scores."""
    tables = [leaderboard_table(summary, judge_kinds(rows))]
    by_dataset = rows_by_dataset(rows)
    if len(by_dataset) > 1:  # a run mixing benchmarks: one leaderboard per dataset
        for label, subset in sorted(by_dataset.items()):
            tables.append(leaderboard_table(summarize_results(subset), judge_kinds(subset), title=f"Leaderboard · {label}"))
    tables += breakdown_tables(summary)
    rt = rescore_table(summary, rescores or {})
    if rt is not None:
        tables.append(rt)
    return tables


def plain_text(table: TableData) -> str:
    """A table as aligned plain text (for pipes and logs)."""
    cells = [table.headers, *table.rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(table.headers))]
    lines = [table.title, "  ".join(h.ljust(w) for h, w in zip(table.headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in table.rows]
    if table.note:
        lines.append(f"({table.note})")
    return "\n".join(line.rstrip() for line in lines)


def print_tables(tables: list[TableData], file: TextIO | None = None, rich: bool | None = None) -> None:
    """Draw tables with rich on a terminal, else as plain text."""
    out = file or sys.stdout
    use_rich = out.isatty() if rich is None else rich
    if not use_rich:
        out.write("\n\n".join(plain_text(t) for t in tables) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, force_terminal=True if rich else None)
    for t in tables:
        rt = Table(title=t.title, caption=t.note or None, title_justify="left")
        for i, h in enumerate(t.headers):
            rt.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
        for r in t.rows:
            rt.add_row(*r)
        console.print(rt)
