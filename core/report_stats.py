"""Leaderboard pieces for the statistics: intervals as text, the paired-comparison matrix, judge fingerprints.

Used by :mod:`pptarena.report` (terminal and HTML tables) and ``arena compare``.
"""

from __future__ import annotations

from typing import Any

from .report import TableData, fmt


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


def max_epochs(summary: dict[str, Any]) -> int:
    """The largest number of epochs of any agent in a summary."""
    return max((int(e.get("epochs") or 1) for e in (summary.get("agents") or {}).values()), default=1)


def epoch_cells(block: dict[str, Any], k: int) -> list[str]:
    """pass@k, pass^k (with intervals) and consistency of one judge block."""
    ep = block.get("epochs") or {}
    at = (ep.get("pass_at_k") or {}).get(str(k)) or {}
    hat = (ep.get("pass_hat_k") or {}).get(str(k)) or {}
    return [ci_text(at.get("value"), at.get("ci95")), ci_text(hat.get("value"), hat.get("ci95")), fmt(ep.get("consistency"))]


def comparison_tables(summary: dict[str, Any]) -> list[TableData]:
    """Per judge, a matrix: row agent minus column agent on their common tasks, with interval and p-value."""
    tables = []
    agents = sorted(summary.get("agents") or {})
    for judge, pairs in (summary.get("comparisons") or {}).items():
        if not pairs:
            continue
        cells: dict[tuple[str, str], str] = {}
        for c in pairs.values():
            if c.get("diff") is None:
                continue
            ci = c.get("ci95")
            neg = [-ci[1], -ci[0]] if ci else None
            cells[(c["a"], c["b"])] = _diff_cell(c["diff"], ci, c.get("p_value"), c["n"])
            cells[(c["b"], c["a"])] = _diff_cell(-c["diff"], neg, c.get("p_value"), c["n"])
        t = TableData(f"Paired comparison · {judge}", ["row − column", *agents])
        for a in agents:
            t.rows.append([a, *("·" if a == b else cells.get((a, b), "–") for b in agents)])
        t.note = ("difference of per-task mean scores on common tasks, 95% bootstrap interval over tasks, "
                  "two-sided paired sign-flip permutation test")
        tables.append(t)
    return tables


def _diff_cell(diff: float, ci: Any, p: Any, n: int) -> str:
    inner = f"[{ci[0]:+.3f}, {ci[1]:+.3f}] " if ci else ""
    return f"{diff:+.3f} {inner}{p_text(p)} (n={n})"


def fingerprint_table(manifest: dict[str, Any]) -> TableData | None:
    """The judges' fingerprints recorded in a run's manifest."""
    fps = manifest.get("judge_fingerprints") or {}
    if not fps:
        return None
    t = TableData("Judge fingerprints", ["judge", "id", "component", "version", "models", "sampling", "prompts"])
    for label, fp in fps.items():
        sampling = "; ".join(f"{b}: {', '.join(f'{k}={v}' for k, v in s.items())}" for b, s in (fp.get("backend_sampling") or {}).items() if s)
        opts = fp.get("options") or {}
        own = ", ".join(f"{k}={opts[k]}" for k in ("temperature", "max_tokens") if k in opts)
        t.rows.append([label, str(fp.get("id")), str(fp.get("component")), str(fp.get("version") or "–"),
                       ", ".join(fp.get("models") or []) or "–", "; ".join(x for x in (own, sampling) if x) or "–",
                       str(fp.get("prompts_sha"))])
    t.note = "every verdict records its judge's id; a run or re-score refuses verdicts of another id under the same label"
    return t


def cost_table(summary: dict[str, Any]) -> TableData | None:
    """Cost per agent: its own model calls, each judge's calls, the total; then the run (None when nothing was spent)."""
    from .pricing import fmt_usd

    agents = summary.get("agents") or {}
    run = summary.get("cost") or {}
    if not agents or (run.get("usd") == 0 and not run.get("unpriced_models")):
        return None
    judges = sorted({j for e in agents.values() for j in ((e.get("cost") or {}).get("judges") or {})})
    t = TableData("Cost (USD)", ["agent", "agent calls", *(f"judge {j}" for j in judges), "total"])
    for name, e in agents.items():
        c = e.get("cost") or {}
        t.rows.append([name, fmt_usd(c.get("agent")), *(fmt_usd((c.get("judges") or {}).get(j)) for j in judges), fmt_usd(c)])
    t.rows.append(["(run)", fmt_usd(run.get("agent")), *(fmt_usd((run.get("judges") or {}).get(j)) for j in judges), fmt_usd(run)])
    t.note = "priced from the backend's `pricing` or the bundled table; unknown when a model has no price, never 0"
    return t
