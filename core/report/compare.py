"""``arena compare RUN_A RUN_B [...]``: the same agents and tasks across runs (judge drift, agent versions).

Every run after the first is compared with the first. For each agent present in both and each
judge label present in both (or the only judge of each run, when each has exactly one; or the
pairs given as ``judge_map``, ``--judge A=B`` on the command line, for a judge under another label
such as a re-score's ``structural-lenient``):

* ``diff``: mean over common tasks of (per-task mean score in B) - (per-task mean score in A),
  with a 95% bootstrap interval over tasks and the paired sign-flip permutation p-value
  (see :mod:`pptarena.run.statistics.stats`);
* ``tau_b``: Kendall's tau_b between the two runs' per-task scores (how well B orders the tasks
  like A does; ties corrected);
* ``moved``: the tasks whose score changed most.

Each run's own agent-vs-agent matrix (``summary.json`` ``comparisons``) is shown too.

A run folder is anything with a ``results.jsonl`` (a re-score folder ``RUN/rescore/NAME`` works too).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pptarena.report.data import load_run
from pptarena.report.meta_stats import kendall_tau_b
from pptarena.report.tables import TableData, ci_text, comparison_tables, fmt, p_text, signed
from pptarena.run.folder.summary_record import Summary
from pptarena.run.statistics.stats import DEFAULT_N_BOOT, DEFAULT_SEED, paired_comparison, task_means

MOVED = 5
LEFT_OUT_EXAMPLES = 5


def left_out(base: Any, other: Any, judges: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """What a comparison of ``other`` with ``base`` leaves out, and why: agents of one run only, judge
    labels not compared, and per agent compared the tasks one run scored and the other did not.

    Each entry is ``{"what": "agent" | "judge" | "tasks", "run": "A" | "B", ...,  "why": sentence}``
    (``tasks`` entries name the agent, count the tasks and list a few).
    """
    out: list[dict[str, Any]] = []
    first, second = f"the first run ({base.run_dir.name})", f"the other run ({other.run_dir.name})"
    for name, mine, theirs, run in (
        (first, base.agents, other.agents, "A"),
        (second, other.agents, base.agents, "B"),
    ):
        for agent in mine:
            if agent not in theirs:
                out.append(
                    {
                        "what": "agent",
                        "run": run,
                        "agent": agent,
                        "why": f"agent {agent} is only in {name}",
                    }
                )
    used_a = {a for a, _ in judges}
    used_b = {b for _, b in judges}
    for name, labels, used, run in ((first, base.judges, used_a, "A"), (second, other.judges, used_b, "B")):
        for label in labels:
            if label not in used:
                out.append(
                    {
                        "what": "judge",
                        "run": run,
                        "judge": label,
                        "why": f"judge {label} of {name} has no counterpart in the other run "
                        "(pair labels with --judge A=B)",
                    }
                )
    for agent in [a for a in base.agents if a in other.agents]:
        tasks_a = {r.task_id for r in base.rows if r.agent == agent}
        tasks_b = {r.task_id for r in other.rows if r.agent == agent}
        for name, only, run in ((first, tasks_a - tasks_b, "A"), (second, tasks_b - tasks_a, "B")):
            if only:
                out.append(
                    {
                        "what": "tasks",
                        "run": run,
                        "agent": agent,
                        "count": len(only),
                        "tasks": sorted(only)[:LEFT_OUT_EXAMPLES],
                        "why": f"{len(only)} task(s) of agent {agent} are only in {name} "
                        f"(e.g. {', '.join(sorted(only)[:LEFT_OUT_EXAMPLES])}); differences are over "
                        "the common tasks",
                    }
                )
    return out


def judge_pairs(a: list[str], b: list[str], judge_map: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Judge labels to compare: ``judge_map``'s pairs when given, else those in both runs, else the
    only judge of each.

    :raises ValueError: a label of ``judge_map`` that its run does not have (the labels listed).
    """
    if judge_map:
        for label, labels, which in [(x, a, "first") for x in judge_map] + [
            (y, b, "other") for y in judge_map.values()
        ]:
            if label not in labels:
                raise ValueError(
                    f"--judge: the {which} run has no judge labelled {label!r}; its judges: "
                    f"{', '.join(labels) or 'none'}"
                )
        return list(judge_map.items())
    common = [j for j in a if j in b]
    if common:
        return [(j, j) for j in common]
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    return []


def _tau(x: list[float], y: list[float]) -> float | None:
    if len(x) < 2:
        return None
    t = kendall_tau_b(x, y)
    return None if math.isnan(t) else round(float(t), 4)


def _comparisons_json(summary: Summary) -> dict[str, Any]:
    """A run's agent-vs-agent comparisons as ``summary.json`` holds them (judge → ``a|b`` → figures)."""
    return {
        judge: {key: c.to_json() for key, c in pairs.items()} for judge, pairs in summary.comparisons.items()
    }


def compare_runs(
    run_dirs: list[Path],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    judge_map: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Compare every run with the first; returns a JSON-ready report.

    ``judge_map`` pairs a judge label of the first run with one of the others (``{"structural":
    "structural-lenient"}``).
    """
    if len(run_dirs) < 2:
        raise ValueError("compare needs at least two runs")
    runs = [load_run(Path(d), with_rescores=False) for d in run_dirs]
    base = runs[0]
    out: dict[str, Any] = {
        "base": str(base.run_dir),
        "bootstrap": {"n_boot": n_boot, "seed": seed},
        "comparisons": [],
        # within each run: every two agents on their common tasks (as in the run's report)
        "agent_comparisons": {str(r.run_dir): _comparisons_json(r.summary) for r in runs},
    }
    for other in runs[1:]:
        entry: dict[str, Any] = {"run": str(other.run_dir), "pairs": [], "overall": {}}
        jp = judge_pairs(base.judges, other.judges, judge_map)
        if not jp:
            entry["problem"] = "no judge label in common (and not exactly one judge in each run)"
        agents = [a for a in base.agents if a in other.agents]
        entry["left_out"] = left_out(base, other, jp)
        for ja, jb in jp:
            all_x: list[float] = []
            all_y: list[float] = []
            for agent in agents:
                x = task_means([r for r in base.rows if r.agent == agent], ja)
                y = task_means([r for r in other.rows if r.agent == agent], jb)
                common = sorted(set(x) & set(y))
                xs, ys = [x[t] for t in common], [y[t] for t in common]
                all_x += xs
                all_y += ys
                cmp = paired_comparison(y, x, n_boot=n_boot, seed=seed)
                moved = sorted(common, key=lambda t: (-abs(y[t] - x[t]), t))[:MOVED]
                entry["pairs"].append(
                    {
                        "agent": agent,
                        "judge_a": ja,
                        "judge_b": jb,
                        **cmp,
                        "mean_a": round(sum(xs) / len(xs), 4) if xs else None,
                        "mean_b": round(sum(ys) / len(ys), 4) if ys else None,
                        "tau_b": _tau(xs, ys),
                        "moved": [
                            {
                                "task_id": t,
                                "a": round(x[t], 4),
                                "b": round(y[t], 4),
                                "diff": round(y[t] - x[t], 4),
                            }
                            for t in moved
                            if abs(y[t] - x[t]) > 1e-12
                        ],
                    }
                )
            entry["overall"][f"{ja}|{jb}"] = {"items": len(all_x), "tau_b": _tau(all_x, all_y)}
        out["comparisons"].append(entry)
    return out


def compare_tables(report: dict[str, Any]) -> list[TableData]:
    """The comparison as tables: per (agent, judge) differences, then the tasks that moved most."""
    tables = []
    for run, comparisons in (report.get("agent_comparisons") or {}).items():
        agents = sorted(
            {name for pairs in comparisons.values() for c in pairs.values() for name in (c["a"], c["b"])}
        )
        matrix = Summary.model_validate({"agents": dict.fromkeys(agents, {}), "comparisons": comparisons})
        tables += comparison_tables(matrix, f" ({Path(run).name})")
    for c in report["comparisons"]:
        name = Path(c["run"]).name
        t = TableData(
            f"{name} − {Path(report['base']).name}",
            ["agent", "judge", "tasks", "mean A", "mean B", "B − A [95% CI]", "p", "τ_b"],
        )
        for p in c["pairs"]:
            judge = p["judge_a"] if p["judge_a"] == p["judge_b"] else f"{p['judge_a']} → {p['judge_b']}"
            t.rows.append(
                [
                    p["agent"],
                    judge,
                    str(p["n"]),
                    fmt(p["mean_a"]),
                    fmt(p["mean_b"]),
                    ci_text(p["diff"], p["ci95"]),
                    p_text(p["p_value"]),
                    fmt(p["tau_b"]),
                ]
            )
        overall = "; ".join(
            f"{k.replace('|', ' vs ')}: τ_b {fmt(v['tau_b'])} over {v['items']} (agent, task) scores"
            for k, v in c["overall"].items()
        )
        t.note = c.get("problem") or (
            "per-task means over epochs; paired sign-flip permutation test; " + overall
        )
        tables.append(t)
        moved = TableData(f"Tasks that moved most ({name})", ["agent", "judge", "task", "A", "B", "B − A"])
        for p in c["pairs"]:
            for m in p["moved"]:
                moved.rows.append(
                    [p["agent"], p["judge_b"], m["task_id"], fmt(m["a"]), fmt(m["b"]), signed(m["diff"])]
                )
        if moved.rows:
            tables.append(moved)
    return tables


def left_out_lines(report: dict[str, Any]) -> list[str]:
    """One line per thing a comparison left out (see :func:`left_out`), naming the two runs."""
    base = Path(report["base"]).name
    return [
        f"left out of {Path(c['run']).name} − {base}: {item['why']}"
        for c in report["comparisons"]
        for item in c.get("left_out") or []
    ]
