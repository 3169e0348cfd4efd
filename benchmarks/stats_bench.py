"""How long the statistics of summary.json take: summarize_results on synthetic result lines.

Usage: python benchmarks/stats_bench.py [--tasks 100] [--epochs 5] [--agents 4] [--judges 3]
    [--bootstrap 2000]
Prints the time of summarize_results with and without intervals (bootstrap 0 turns them off).
"""

from __future__ import annotations

import argparse
import random
import time

from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.results import summarize_results
from pptarena.run.statistics.summary_stats import StatsOptions


def rows(tasks: int, epochs: int, agents: int, judges: int, seed: int = 0) -> list[dict]:
    """Synthetic scored lines with two metrics per judge and a category and difficulty per task."""
    rng = random.Random(seed)
    out = []
    for a in range(agents):
        for t in range(tasks):
            for e in range(1, epochs + 1):
                scores = {
                    f"j{j}": {"score": rng.random(), "metrics": {"m1": rng.random(), "m2": rng.random()}}
                    for j in range(judges)
                }
                out.append(
                    ResultRow.from_json(
                        {
                            "agent": f"agent{a}",
                            "task_id": f"t{t:04d}",
                            "epoch": e,
                            "status": "scored",
                            "scores": scores,
                            "usage": {"input_tokens": 100, "output_tokens": 10},
                            "metadata": {"category": [f"c{t % 5}"], "difficulty": ["easy", "hard"][t % 2]},
                        }
                    )
                )
    return out


def main() -> None:
    """Run the benchmark."""
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", type=int, default=100)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--agents", type=int, default=4)
    p.add_argument("--judges", type=int, default=3)
    p.add_argument("--bootstrap", type=int, default=2000)
    args = p.parse_args()
    data = rows(args.tasks, args.epochs, args.agents, args.judges)
    for n_boot in (0, args.bootstrap):
        t0 = time.perf_counter()
        summarize_results(data, opts=StatsOptions(n_boot=n_boot))
        print(f"{len(data)} lines, bootstrap {n_boot}: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
