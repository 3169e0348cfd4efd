"""Seeded synthetic result lines whose ``summary.json`` figures are pinned in
``tests/fixtures/summary_pins.json`` (issue 25: the statistics engine made faster must give the very
same numbers). The pins were recorded with the code of commit fb660a0, before the engine changed
(the two ``edge_values`` cases later, with a copy of that code on ``PYTHONPATH``);
``python tests/support/summary_pin_rows.py --write`` records them again (only ever on purpose, with a note
in docs/reports.md when a figure is meant to change).

Each case covers a path of the engine: the exact sign-flip test (at most 16 common tasks), the Monte
Carlo one with p near 0.5 (many flipped means near the observed one) and far in the tail, epochs
with pass@k / pass^k, numeric and text metrics, metadata groups of several sizes, bootstrap draws
that fit the draw cache and draws that do not (more than 12,000 tasks), other seeds and resamples,
intervals turned off, odd values (``edge_rows``).
"""

from __future__ import annotations

import json
import math
import random
import sys
from typing import Any

from tests.support.paths import FIXTURES

PINS = FIXTURES / "summary_pins.json"
DEMO_RESULTS = FIXTURES / "summary_pins_demo.jsonl"  # `arena run --config examples/demo.toml`'s lines
CATEGORIES = ("text", "layout", "style", "chart", "table")
STATUSES = ("scored",) * 17 + ("agent_error", "timeout", "judge_error")


def _line(agent: str, task: str, epoch: int, status: str, scores: dict, metadata: dict) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "agent": agent,
        "task_id": task,
        "epoch": epoch,
        "status": status,
        "scores": scores,
        "error": None if status == "scored" else f"{status}: synthetic",
        "duration_s": 1.5,
        "usage": {"input_tokens": 10, "output_tokens": 2},
        "metadata": metadata,
    }


def epochs_rows(tasks: int = 30, agents: int = 3, epochs: int = 3, seed: int = 1) -> list[dict[str, Any]]:
    """Several epochs per task (some attempts missing), two judges: one with a score, a ``success``
    metric, numeric metrics and a text label, one whose score is sometimes absent."""
    rng = random.Random(seed)
    out = []
    for a in range(agents):
        skill = 0.3 + 0.2 * a
        for t in range(tasks):
            meta = {
                "category": [CATEGORIES[t % 5], CATEGORIES[(t + 2) % 5]]
                if t % 3 == 0
                else [CATEGORIES[t % 5]],
                "difficulty": ("easy", "medium", "hard")[t % 3],
                "dataset": "pins",
            }
            for e in range(1, epochs + 1):
                if (t + e + a) % 7 == 0:
                    continue  # an attempt never made
                status = rng.choice(STATUSES)
                scores: dict[str, Any] = {}
                if status == "scored":
                    s = min(1.0, max(0.0, round(rng.gauss(skill, 0.3), 3)))
                    scores["j1"] = {
                        "score": s,
                        "metrics": {
                            "success": s >= 0.8,
                            "recall": round(rng.random(), 3),
                            "edits": rng.randint(0, 4),
                            "semantics": rng.choice(("strict", "corrected")),
                        },
                    }
                    if rng.random() < 0.8:
                        scores["j2"] = {"score": round(rng.random() * skill * 1.5, 3), "metrics": {}}
                    else:
                        scores["j2"] = {"score": None, "metrics": {"note": "no score"}}
                out.append(_line(f"agent{a}", f"t{t:03d}", e, status, scores, meta))
    return out


def bench_rows(pairs: int, seed: int = 7, close: bool = False) -> list[dict[str, Any]]:
    """Lines shaped like ``benchmarks/report_bench.py``'s synthetic run (two agents, one epoch, a rubric
    judge with a ``success`` metric and a structural one). ``close``: the second agent scores like the
    first plus noise, so the paired test's p-value is far from 0."""
    rng = random.Random(seed)
    agents = ["noop", "oracle"]
    out = []
    last: dict[str, float] = {}
    for k in range(pairs):
        task = f"synthetic-{k // 2:05d}-{CATEGORIES[k // 2 % 5]}"
        agent = agents[k % 2]
        status = rng.choice(STATUSES)
        scores = {}
        if status == "scored":
            r = round(rng.random(), 3)
            if close and agent == "oracle" and task in last:
                r = round(min(1.0, max(0.0, last[task] + rng.uniform(-0.3, 0.3))), 3)
            last[task] = r
            scores = {
                "rubric": {"score": r, "metrics": {"success": r == 1.0}},
                "structural": {
                    "score": round(min(1.0, max(0.0, r + rng.uniform(-0.5, 0.5))), 3),
                    "metrics": {},
                },
            }
        meta = {"category": CATEGORIES[k // 2 % 5], "difficulty": rng.choice(("easy", "hard"))}
        out.append(_line(agent, task, 1, status, scores, meta))
    return out


def edge_rows(seed: int = 1, tasks: int = 40) -> list[dict[str, Any]]:
    """Odd but valid values, shuffled lines: scores that are ints, -0.0, None or above 1;
    ``success`` metrics that are ints or bools; text, infinite and missing metrics; one to four
    epochs; list, empty and missing categories; up to three agents and judges."""
    rng = random.Random(seed)
    out = []
    for a in range(3):
        for t in range(tasks):
            if rng.random() < 0.1:
                continue  # a task this agent never attempted
            for e in range(1, rng.choice((1, 1, 2, 4)) + 1):
                scores = {}
                for j in ("j1", "j2", "j3"):
                    if rng.random() < 0.2:
                        continue
                    # a bool or NaN score cannot reach the summary any more (a ResultRow reads True as
                    # 1.0 and refuses NaN); the engine read both as "no score", so None stands in for
                    # them here, drawn from the same random stream: the pinned figures stay comparable
                    score = rng.choice(
                        (rng.random(), round(rng.random(), 2), 0, 1, -0.0, None, None, None, 2)
                    )
                    metrics = {
                        k: rng.choice((True, False, 1, 0, 0.3, "x", "y", None, math.inf, 7))
                        for k in ("success", "m1", "lab")
                        if rng.random() < 0.5
                    }
                    scores[j] = {"score": score, "metrics": metrics}
                meta: dict[str, Any] = {}
                if rng.random() < 0.8:
                    meta["category"] = rng.choice(("c1", ["c1", "c2"], [], "", None, "c3"))
                if rng.random() < 0.5:
                    meta["difficulty"] = rng.choice(("easy", "hard"))
                status = rng.choice(("scored", "agent_error"))
                out.append(_line(f"a{a}", f"t{t}", e, status, scores, meta))
    rng.shuffle(out)
    return out


def demo_rows() -> list[dict[str, Any]]:
    """The 24 lines of a demo run (12 tasks, noop and oracle, rubric and structural judges)."""
    return [json.loads(line) for line in DEMO_RESULTS.read_text(encoding="utf-8").splitlines() if line]


def cases() -> dict[str, tuple[Any, dict[str, Any]]]:
    """``name -> (rows factory, StatsOptions keyword arguments)``; the pinned summaries' inputs."""
    return {
        "demo": (demo_rows, {}),
        "epochs": (epochs_rows, {}),
        "epochs_threshold_seed": (epochs_rows, {"success_threshold": 0.7, "n_boot": 500, "seed": 3}),
        "epochs_no_intervals": (epochs_rows, {"n_boot": 0}),
        "close_900_pairs": (lambda: bench_rows(900, seed=3, close=True), {}),
        "bench_4000_pairs": (lambda: bench_rows(4000), {}),
        "close_4000_pairs_seed5": (
            lambda: bench_rows(4000, seed=11, close=True),
            {"seed": 5, "n_boot": 1000},
        ),
        "close_26000_pairs": (lambda: bench_rows(26_000, seed=5, close=True), {}),
        "edge_values": (edge_rows, {}),
        "edge_values_threshold": (lambda: edge_rows(2, tasks=12), {"success_threshold": 0.5, "n_boot": 300}),
    }


BIG_CASE = "bench_100000_pairs"  # pinned apart (tests/fixtures/summary_pins_100k.json): a slow test


def summary_of(rows: list[dict[str, Any]], **opts: Any) -> dict[str, Any]:
    """The summary as stored in summary.json (through JSON, as a reader sees it)."""
    from pptarena.run.folder.records import ResultRow
    from pptarena.run.folder.results import summarize_results
    from pptarena.run.statistics.summary_stats import StatsOptions

    typed = [ResultRow.from_json(r) for r in rows]
    return json.loads(json.dumps(summarize_results(typed, opts=StatsOptions(**opts)).to_json()))


def main() -> None:
    """``--write``: record the pins with the current code (``--big``: the 100,000-pair one too)."""
    if "--write" not in sys.argv:
        raise SystemExit("usage: python tests/support/summary_pin_rows.py --write [--big]")
    pins = {name: summary_of(make(), **opts) for name, (make, opts) in cases().items()}
    PINS.write_text(json.dumps(pins, sort_keys=True, indent=0) + "\n", encoding="utf-8")
    if "--big" in sys.argv:
        big = summary_of(bench_rows(100_000))
        (FIXTURES / "summary_pins_100k.json").write_text(json.dumps(big, sort_keys=True, indent=0) + "\n")


if __name__ == "__main__":
    main()
