"""Core overheads: CLI start-up, config errors, and runner cost per (agent, task) pair.

Usage: python benchmarks/core_bench.py [--repeat 5]

Measures, as wall-clock medians over ``--repeat`` runs:
- ``arena --help`` and ``arena plugins --json`` (plugin loading must stay cheap);
- a config that names agent ``oracel``: time until the error (target: under 2 s);
- the runner's per-pair overhead with an in-process agent and with a worker-process agent
  on generated one-slide tasks (no judges), from a run of 20 tasks with --jobs 2.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    return time.perf_counter() - t0, out.returncode


def median(cmd: list[str], repeat: int, **kw) -> float:
    return statistics.median(timed(cmd, **kw)[0] for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    arena = [sys.executable, "-m", "pptarena.cli"]
    results: dict[str, float] = {}
    results["arena --help (s)"] = median([*arena, "--help"], args.repeat)
    results["arena plugins --json (s)"] = median([*arena, "plugins", "--json"], args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        bad = tmpd / "bad.toml"
        bad.write_text('[dataset]\nuse = "demo"\n[[agents]]\nuse = "oracel"\n')
        results["config error for 'oracel' (s)"] = median([*arena, "run", "--config", str(bad)], args.repeat)
        env = {
            **os.environ,
            "PPTARENA_PLUGINS": "fakeplugins",
            "PYTHONPATH": str(HERE.parent / "tests" / "plugin_modules"),
        }
        for agent, label in (("slowcopy", "in-process"), ("retitle", "worker process")):
            cfg = tmpd / f"{agent}.toml"
            cfg.write_text(
                '[dataset]\nuse = "fake"\nroot = "data"\ncount = 20\n'
                f'[renderer]\nuse = "dummy"\n[[agents]]\nuse = "{agent}"\n'
            )
            # warm the dataset (generated decks) once
            subprocess.run([*arena, "tasks", "--config", str(cfg)], env=env, capture_output=True)
            secs, rc = timed(
                [
                    *arena,
                    "run",
                    "--config",
                    str(cfg),
                    "--out",
                    str(tmpd / f"run-{agent}"),
                    "--jobs",
                    "2",
                    "--quiet",
                ],
                env=env,
            )
            assert rc == 0, f"run failed for {agent}"
            results[f"20 pairs, {label} agent, --jobs 2 (s)"] = secs
            results[f"per pair, {label} agent (s)"] = secs / 20
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
                **{k: round(v, 3) for k, v in results.items()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
