"""The terminal leaderboard: per-agent scores, errors by status, PPT-Eval and PPTArena figures, breakdowns.

Tables are built as plain data (:class:`TableData`) once, then drawn with rich
on a terminal, as aligned plain text otherwise (pipes, CI logs), and as HTML in
``report.html`` (:mod:`pptarena.report.html`).

Which judges count as what:

* a judge whose metrics carry ``success`` (the ``rubric`` judge) gets the PPT-Eval columns:
  success rate (``score == 1``) and average score, both over *all* tasks (failures count 0),
  as PPT-Eval's own summary does;
* a judge whose metrics carry ``if_score`` / ``vq_score`` (the ``dual`` judge) gets the PPTArena
  columns: mean IF and VQ on 0-5 over the pairs it scored; on a dataset describing its published
  splits (``pptarena``) it also gets PPTArena's own leaderboard tables, per split and category
  (:mod:`pptarena.report.pptarena_figures`).

Why it is long: every table the summary yields is built here as :class:`TableData` (leaderboard,
breakdowns, re-scores, paired comparisons, judge fingerprints, cost) next to the cell formatters they
all use, so the terminal, a plain-text log and ``report.html`` show each figure formatted one way;
drawing them (:func:`plain_text`, :func:`print_tables`) is the small remainder.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from pptarena.report.pptarena_figures import split_tables
from pptarena.run.configuration.mixed import rows_by_dataset
from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.results import summarize_results
from pptarena.run.folder.summary_record import AgentSummary, EpochFigures, JudgeFigures, KFigure, Summary
from pptarena.types import STATUSES, Status

ERROR_STATUSES = tuple(s for s in STATUSES if s != Status.SCORED)
GROUP_FIELDS = ("category", "edit_type", "difficulty", "mcp_servers")
GROUP_TITLES = {
    "category": "By category",
    "edit_type": "By edit type",
    "difficulty": "By difficulty",
    "mcp_servers": "By MCP servers",
}


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
        return f"{round(value, digits) + 0.0:.{digits}f}"  # + 0.0: never "-0.000"
    return str(value)


def signed(value: float, digits: int = 3) -> str:
    """A difference with its sign (``+0.250``, ``-0.250``, ``+0.000``: never ``-0.000``)."""
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def pct(value: Any) -> str:
    """A 0-1 fraction as a percentage ("–" when missing)."""
    return "–" if value is None else f"{100 * float(value):.1f}%"


def judge_kinds(rows: list[ResultRow]) -> dict[str, set[str]]:
    """Per judge label, the benchmark figures it supports: ``"ppteval"`` and/or ``"pptarena"``."""
    kinds: dict[str, set[str]] = {}
    for r in rows:
        for judge, block in r.scores.items():
            metrics = block.metrics
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


def _isolation_cell(entry: AgentSummary) -> str:
    """What the agent's code ran in (docs/security.md); a reference baseline handed the answer says so."""
    cell = str(entry.isolation or "–")
    return f"{cell} (reference)" if entry.agent_process == "reference" else cell


def leaderboard_table(
    summary: Summary, kinds: dict[str, set[str]] | None = None, title: str = "Leaderboard"
) -> TableData:
    """One row per agent, best first by the first judge's mean over all tasks (95% intervals in brackets)."""
    from pptarena.models.pricing import fmt_usd

    kinds = kinds or {}
    judges = list(summary.judges)
    k = max_epochs(summary)
    headers = ["agent", "isolation", "tasks", "scored", "errors"]
    for j in judges:
        headers.append(f"{j} mean")
    for j in judges:
        if "ppteval" in kinds.get(j, ()):
            headers += [f"{j} success", f"{j} avg"]
        if "pptarena" in kinds.get(j, ()):
            headers += [f"{j} IF/5", f"{j} VQ/5"]
        if k > 1:
            headers += [f"{j} pass@{k}", f"{j} pass^{k}", f"{j} consistency"]
    headers += ["time s", "tokens", "cost"]
    agents = summary.agents

    def key(name: str) -> float:
        first = agents[name].judge(judges[0]) if judges else JudgeFigures()
        return -(first.mean_all or 0.0)

    table = TableData(title, headers)
    for name in sorted(agents, key=key):
        entry = agents[name]
        row = [
            name,
            _isolation_cell(entry),
            str(entry.tasks),
            str(entry.status.get("scored", 0)),
            errors_text(entry.status),
        ]
        for j in judges:
            b = entry.judge(j)
            row.append(f"{ci_text(b.mean_all, b.mean_all_ci95)} (n={b.n})" if b.n else "–")
        for j in judges:
            b = entry.judge(j)
            metrics = b.metrics
            mci = b.metrics_ci95
            if "ppteval" in kinds.get(j, ()):
                sci = b.success_rate_ci95
                row += [
                    pct(b.success_rate) + (f" [{pct(sci[0])}, {pct(sci[1])}]" if sci else ""),
                    fmt(b.mean_all),
                ]
            if "pptarena" in kinds.get(j, ()):
                row += [
                    ci_text(metrics.get("if_score"), mci.get("if_score"), 2),
                    ci_text(metrics.get("vq_score"), mci.get("vq_score"), 2),
                ]
            if k > 1:
                row += epoch_cells(b, k)
        usage = entry.usage
        tokens = sum(  # cache reads and writes are parts of the input tokens
            v
            for k, v in usage.items()
            if k.endswith(("input_tokens", "output_tokens")) and "cache" not in k and isinstance(v, int)
        )
        row += [fmt(entry.duration_s, 1), str(tokens) if tokens else "–", fmt_usd(entry.cost)]
        table.rows.append(row)
    table.note = (
        "mean: over tasks of the per-task mean over epochs, a pair without a score counts 0; "
        "n = attempts the judge scored; [95% bootstrap interval over tasks]; "
        "isolation: the weakest sandbox the agent's code ran in (bwrap; none: trusted, reference or unjailed)"
    )
    if k > 1:
        table.note += f"; pass@{k}/pass^{k}: unbiased estimators over {k} epochs"
    table.note += cost_note(summary)
    semantics: dict[str, dict[str, int]] = {}
    for e in agents.values():
        for j, b in e.judges.items():
            for name, n in (b.labels.get("semantics") or {}).items():
                semantics.setdefault(j, {})[name] = semantics.get(j, {}).get(name, 0) + n
    for j, counts in sorted(semantics.items()):
        said = ", ".join(f"{name} semantics ({n} scores)" for name, n in counts.items())
        table.note += f"; {j}: {said}"
    return table


def breakdown_tables(summary: Summary) -> list[TableData]:
    """Per metadata field (category, edit type, difficulty): group × (agent, judge) mean
    over the group's tasks.
    """
    judges = list(summary.judges)
    agents = summary.agents
    tables = []
    for field_name in GROUP_FIELDS:
        keys = sorted({k for e in agents.values() for k in e.groups.get(field_name) or {}})
        if not keys:
            continue
        headers = [field_name.replace("_", " "), "tasks"] + [f"{a} · {j}" for a in agents for j in judges]
        table = TableData(GROUP_TITLES[field_name], headers)
        for k in keys:
            groups = [(e.groups.get(field_name) or {}).get(k) for e in agents.values()]
            n = max(g.tasks if g is not None else 0 for g in groups)
            row = [k, str(n)]
            for g in groups:
                for j in judges:
                    b = (g.judges.get(j) if g is not None else None) or JudgeFigures()
                    row.append(ci_text(b.mean_all, b.mean_all_ci95))
            table.rows.append(row)
        tables.append(table)
    return tables


def rescore_table(base: Summary, rescores: dict[str, Summary]) -> TableData | None:
    """Original judges next to each re-score's judges: agent × (run, judge) mean over all tasks."""
    if not rescores:
        return None
    columns: list[tuple[str, str, Summary]] = [("run", j, base) for j in base.judges]
    for name, summ in rescores.items():
        columns += [(f"rescore/{name}", j, summ) for j in summ.judges]
    table = TableData("Re-scores", ["agent"] + [f"{src} · {j}" for src, j, _ in columns])
    agents = list(base.agents)
    for summ in rescores.values():
        agents += [a for a in summ.agents if a not in agents]
    for a in agents:
        row = [a]
        for _, j, summ in columns:
            entry = summ.agents.get(a)
            b = entry.judges.get(j) if entry is not None else None
            row.append(ci_text(b.mean_all, b.mean_all_ci95) if b is not None else "–")
        table.rows.append(row)
    table.note = (
        "means over all tasks (unscored pairs count 0) [95% bootstrap interval]; "
        "re-scores live in rescore/<name>/"
    )
    return table


def summary_tables(
    summary: Summary, rows: list[ResultRow], rescores: dict[str, Summary] | None = None
) -> list[TableData]:
    """Every table of the summary: leaderboard, breakdowns, re-scores."""
    tables = [leaderboard_table(summary, judge_kinds(rows))]
    tables += [TableData(t.title, t.headers, t.rows, t.note) for t in split_tables(summary)]  # PPTArena's
    tables += comparison_tables(summary)
    costs = cost_table(summary)
    if costs is not None:
        tables.append(costs)
    by_dataset = rows_by_dataset(rows)
    if len(by_dataset) > 1:  # a run mixing benchmarks: one leaderboard per dataset
        for label, subset in sorted(by_dataset.items()):
            tables.append(
                leaderboard_table(
                    summarize_results(subset), judge_kinds(subset), title=f"Leaderboard · {label}"
                )
            )
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

    console = Console(file=out, force_terminal=True if rich else None, width=None if out.isatty() else 200)
    for t in tables:
        rt = Table(title=t.title, caption=t.note or None, title_justify="left")
        for i, h in enumerate(t.headers):
            rt.add_column(h, justify="left" if i == 0 else "right", overflow="fold")  # never cut a name
        for r in t.rows:
            rt.add_row(*r)
        console.print(rt)


# -------------------------------------------------- statistics: intervals, comparisons, cost, fingerprints


def ci_text(value: Any, ci: Any, digits: int = 3) -> str:
    """``0.667 [0.500, 0.800]`` (just the value when there is no interval; "–" when missing)."""
    if value is None:
        return "–"
    if isinstance(ci, list | tuple) and len(ci) == 2 and None not in ci:
        return f"{fmt(value, digits)} [{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"
    return fmt(value, digits)


def p_text(p: Any) -> str:
    """A p-value for a table cell."""
    if p is None:
        return "–"
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def max_epochs(summary: Summary) -> int:
    """The largest number of epochs of any agent in a summary."""
    return max((int(e.epochs or 1) for e in summary.agents.values()), default=1)


def epoch_cells(block: JudgeFigures, k: int) -> list[str]:
    """pass@k, pass^k (with intervals) and consistency of one judge block."""
    ep = block.epochs or EpochFigures()
    at = ep.pass_at_k.get(str(k)) or KFigure()
    hat = ep.pass_hat_k.get(str(k)) or KFigure()
    return [ci_text(at.value, at.ci95), ci_text(hat.value, hat.ci95), fmt(ep.consistency)]


def comparison_tables(summary: Summary, suffix: str = "") -> list[TableData]:
    """Per judge, a matrix: row agent minus column agent on their common tasks, with interval and p-value."""
    tables = []
    agents = sorted(summary.agents)
    for judge, pairs in summary.comparisons.items():
        if not pairs:
            continue
        cells: dict[tuple[str, str], str] = {}
        for c in pairs.values():
            if c.diff is None:
                continue
            ci = c.ci95
            neg = [-ci[1], -ci[0]] if ci else None
            cells[(c.a, c.b)] = _diff_cell(c.diff, ci, c.p_value, c.n)
            cells[(c.b, c.a)] = _diff_cell(-c.diff, neg, c.p_value, c.n)
        t = TableData(f"Paired comparison · {judge}{suffix}", ["row − column", *agents])
        for a in agents:
            t.rows.append([a, *("·" if a == b else cells.get((a, b), "–") for b in agents)])
        t.note = (
            "difference of per-task mean scores on common tasks, 95% bootstrap interval over tasks, "
            "two-sided paired sign-flip permutation test"
        )
        tables.append(t)
    return tables


def _diff_cell(diff: float, ci: Any, p: Any, n: int) -> str:
    inner = f"[{signed(ci[0])}, {signed(ci[1])}] " if ci else ""
    return f"{signed(diff)} {inner}{p_text(p)} (n={n})"


def fingerprint_table(manifest: Manifest) -> TableData | None:
    """The judges' fingerprints recorded in a run's manifest (each a free-form record)."""
    fps = manifest.judge_fingerprints
    if not fps:
        return None
    t = TableData(
        "Judge fingerprints", ["judge", "id", "component", "version", "models", "sampling", "prompts"]
    )
    for label, fp in fps.items():
        sampling = "; ".join(
            f"{b}: {', '.join(f'{k}={v}' for k, v in s.items())}"
            for b, s in (fp.get("backend_sampling") or {}).items()
            if s
        )
        opts = fp.get("options") or {}
        own = ", ".join(f"{k}={opts[k]}" for k in ("temperature", "max_tokens") if k in opts)
        t.rows.append(
            [
                label,
                str(fp.get("id")),
                str(fp.get("component")),
                str(fp.get("version") or "–"),
                ", ".join(fp.get("models") or []) or "–",
                "; ".join(x for x in (own, sampling) if x) or "–",
                str(fp.get("prompts_sha")),
            ]
        )
    t.note = (
        "every verdict records its judge's id; "
        "a run or re-score refuses verdicts of another id under the same label"
    )
    return t


def cost_table(summary: Summary) -> TableData | None:
    """Cost per agent: its own model calls, each judge's calls, the total; then the run
    (None when nothing was spent). The cost records themselves are free-form
    (:func:`pptarena.models.pricing.pair_cost`).
    """
    from pptarena.models.pricing import cache_saved, fmt_usd

    agents = summary.agents
    run = summary.cost or {}
    if not agents or (run.get("usd") == 0 and not run.get("unpriced_models")):
        return None
    judges = sorted({j for e in agents.values() for j in ((e.cost or {}).get("judges") or {})})
    saved = bool(summary.cache_saved_usd())
    headers = ["agent", "agent calls", *(f"judge {j}" for j in judges), "total"]
    t = TableData("Cost (USD)", headers + (["prompt caching saved"] if saved else []))

    def saved_cell(cost: dict[str, Any] | None) -> list[str]:
        if not saved:
            return []
        amount = cache_saved(cost)
        return [("-" if amount < 0 else "") + fmt_usd({"usd": abs(amount)}) if amount else "–"]

    for name, e in agents.items():
        c = e.cost or {}
        t.rows.append(
            [
                name,
                fmt_usd(c.get("agent")),
                *(fmt_usd((c.get("judges") or {}).get(j)) for j in judges),
                fmt_usd(c),
                *saved_cell(c),
            ]
        )
    t.rows.append(
        [
            "(run)",
            fmt_usd(run.get("agent")),
            *(fmt_usd((run.get("judges") or {}).get(j)) for j in judges),
            fmt_usd(run),
            *saved_cell(run),
        ]
    )
    t.note = (
        "priced from the backend's `pricing` or the bundled table; unknown when a model has no price, "
        "never 0; local (free): models without a price on a server of this machine or network"
    )
    if saved:
        t.note += (
            "; prompt caching saved: the cached reads' discount minus the cache writes' premium "
            "(included in the costs)"
        )
    return t


def cost_note(summary: Summary) -> str:
    """What the leaderboard's note says about cost: what prompt caching saved (when not 0) and
    what "local (free)" means (when a local model was used); "" otherwise."""
    from pptarena.models.pricing import LOCAL_FREE_TEXT, fmt_cache_saved

    run = summary.cost or {}
    note = ""
    if run.get("local_models"):
        note += f"; cost {LOCAL_FREE_TEXT}: {', '.join(run['local_models'])} on a local server, no price"
    said = fmt_cache_saved(run)
    if said:
        note += f"; {said} over the run"
    return note
