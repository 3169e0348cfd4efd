"""Per-pair overhead of the jailed agent worker (issue 23): noop in process vs plain warm pool vs jail.

Usage: python benchmarks/agent_jail_bench.py [--pairs 200] [--jobs 2]

Runs ``--pairs`` one-slide tasks of the built-in ``noop`` agent (no judges) through the runner's
Python API, one variant after the other in one process:

- ``in-process``: ``trusted = true`` (no agent process at all: the reference);
- ``plain warm pool``: the local executor's warm worker pool without a jail (what every untrusted
  agent ran in before; here reached with ``PPTARENA_SANDBOX=off`` and weak isolation allowed);
- ``jailed warm pool``: the default since issue 23, warm bubblewrap jails, the task without its
  answer, model/render/log through the bridge, the workspace copied out.

Overhead per pair = (wall time - in-process wall time) / pairs. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
os.environ["PPTARENA_PLUGINS"] = "fakeplugins"
sys.path[:0] = [str(ROOT / "tests" / "plugin_modules")]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "tests" / "plugin_modules"), os.environ.get("PYTHONPATH", "")]
)


def timed_run(tmp: Path, name: str, body: str, jobs: int, **kw: object) -> float:
    """Wall time of one run of ``body``; every pair must be scored or the benchmark fails."""
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.runner import Runner

    cfg = tmp / f"{name}.toml"
    cfg.write_text(body)
    runner = Runner(
        load_config(cfg, get_registry()), get_registry(), tmp / f"run-{name}", jobs=jobs, quiet=True, **kw
    )
    t0 = time.perf_counter()
    runner.run()
    secs = time.perf_counter() - t0
    rows = [json.loads(line) for line in (tmp / f"run-{name}" / "results.jsonl").read_text().splitlines()]
    bad = [r for r in rows if r["status"] != "scored"]
    assert not bad, bad[:2]
    return secs


def main() -> None:
    """Run the three variants and print the wall times and overheads as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    from pptarena.run.jail.agent_jail import jail_available

    if not jail_available():
        raise SystemExit("bubblewrap is not usable here: nothing to measure")
    out: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load average before": os.getloadavg(),
        "pairs": args.pairs,
        "jobs": args.jobs,
    }
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        base = f'[dataset]\nuse = "fake"\nroot = "{tmp / "data"}"\ncount = {args.pairs}\n'
        base += '[renderer]\nuse = "dummy"\n'
        trusted = base + '[[agents]]\nuse = "noop"\ntrusted = true\n'
        timed_run(tmp, "warmup", trusted, args.jobs)  # generates the decks
        walls = {"in-process": timed_run(tmp, "inproc", trusted, args.jobs)}
        os.environ["PPTARENA_SANDBOX"] = "off"
        walls["plain warm pool"] = timed_run(
            tmp, "plain", base + '[[agents]]\nuse = "noop"\n', args.jobs, allow_weak_isolation=True
        )
        del os.environ["PPTARENA_SANDBOX"]
        walls["jailed warm pool"] = timed_run(tmp, "jail", base + '[[agents]]\nuse = "noop"\n', args.jobs)
    ref = walls["in-process"]
    out["wall s"] = {k: round(v, 2) for k, v in walls.items()}
    out["per pair s"] = {k: round(v / args.pairs, 4) for k, v in walls.items()}
    out["overhead per pair vs in-process s"] = {
        k: round((v - ref) / args.pairs, 4) for k, v in walls.items() if k != "in-process"
    }
    out["load average after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
