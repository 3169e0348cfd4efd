"""Per-pair overhead of the executors on one host: per-pair interpreter vs warm pool vs Ray.

Usage: python benchmarks/executors_bench.py [--pairs 200] [--jobs 2] [--demo]

Runs ``--pairs`` tasks (generated one-slide decks, no judges) of a cheap agent that copies the
input deck, through the runner's Python API, side by side in one process:

- ``in-process``: the same agent with ``trusted = true`` (reference: no agent process at all);
- ``local, pool = false``: one fresh interpreter per pair (the behaviour before the pool; since
  issue 23 only for agents in plain workers: this third-party agent runs in the runner's warm jails
  in both ``local`` rows, see benchmarks/agent_jail_bench.py for the plain pool against the jail);
- ``local, pool``: the default;
- ``ray``: a local Ray cluster on 127.0.0.1 started before timing (its start-up is reported apart).

Overhead per pair = (wall time - in-process wall time) / pairs. ``--demo`` also times
examples/demo.toml with the local and the ray executor (LibreOffice judges; cold render cache once).
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep Ray on 127.0.0.1
os.environ["PPTARENA_PLUGINS"] = "fakeplugins,executors_plugin"
PLUGIN_MODULES = ROOT / "tests" / "plugin_modules"
sys.path[:0] = [str(HERE), str(PLUGIN_MODULES)]
os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), str(PLUGIN_MODULES), os.environ.get("PYTHONPATH", "")])


def timed_run(tmp: Path, name: str, body: str, jobs: int) -> float:
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.runner import Runner

    cfg = tmp / f"{name}.toml"
    cfg.write_text(body)
    runner = Runner(
        load_config(cfg, get_registry()), get_registry(), tmp / f"run-{name}", jobs=jobs, quiet=True
    )
    t0 = time.perf_counter()
    runner.run()
    secs = time.perf_counter() - t0
    rows = [json.loads(line) for line in (tmp / f"run-{name}" / "results.jsonl").read_text().splitlines()]
    bad = [r for r in rows if r["status"] != "scored"]
    assert not bad, bad[:2]
    return secs


def overheads(tmp: Path, base: str, args: argparse.Namespace, out: dict[str, object], ray: Any) -> None:
    """Time the cheap agent under each executor; fill ``out``."""
    timed_run(
        tmp, "warmup", base + '[[agents]]\nuse = "cheap-inproc"\ntrusted = true\n', args.jobs
    )  # generates the decks
    walls = {
        "in-process": timed_run(
            tmp, "inproc", base + '[[agents]]\nuse = "cheap-inproc"\ntrusted = true\n', args.jobs
        ),
        "local, pool = false": timed_run(
            tmp,
            "perpair",
            base + '[[agents]]\nuse = "cheap"\n[executor]\nuse = "local"\npool = false\n',
            args.jobs,
        ),
        "local, pool": timed_run(tmp, "pool", base + '[[agents]]\nuse = "cheap"\n', args.jobs),
    }
    t0 = time.perf_counter()
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        num_cpus=args.jobs,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        object_store_memory=100 * 1024 * 1024,
    )
    out["ray local cluster start (s)"] = round(time.perf_counter() - t0, 2)
    try:
        walls["ray"] = timed_run(
            tmp, "ray", base + '[[agents]]\nuse = "cheap"\n[executor]\nuse = "ray"\n', args.jobs
        )
        walls["ray (second run, warm workers)"] = timed_run(
            tmp, "ray2", base + '[[agents]]\nuse = "cheap"\n[executor]\nuse = "ray"\n', args.jobs
        )
    finally:
        ray.shutdown()
    ref = walls["in-process"]
    out["wall (s)"] = {k: round(v, 2) for k, v in walls.items()}
    out["per pair (s)"] = {k: round(v / args.pairs, 4) for k, v in walls.items()}
    out["overhead per pair vs in-process (s)"] = {
        k: round((v - ref) / args.pairs, 4) for k, v in walls.items()
    }
    out["ray added per pair vs pool (s)"] = round((walls["ray"] - walls["local, pool"]) / args.pairs, 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--demo", action="store_true", help="also time examples/demo.toml with local and ray")
    ap.add_argument("--demo-only", action="store_true", help="time only examples/demo.toml")
    args = ap.parse_args()
    import ray

    out: dict[str, object] = {
        "machine": (
            f"{platform.machine()} {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, ray {ray.__version__}"
        ),
        "load average before": os.getloadavg(),
        "pairs": args.pairs,
        "jobs": args.jobs,
    }
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        base = (
            f'[dataset]\nuse = "fake"\nroot = "{tmp / "data"}"\ncount = {args.pairs}\n'
            '[renderer]\nuse = "dummy"\n'
        )
        from pptarena.run.configuration.components import Components  # noqa: F401 - warm imports outside the timings

        if args.demo_only:
            args.demo = True
        else:
            overheads(tmp, base, args, out, ray)
        if args.demo:
            os.environ.pop("PPTARENA_PLUGINS", None)
            from pptarena.run.configuration.registry import reset_registry

            reset_registry()
            demo = (ROOT / "examples" / "demo.toml").read_text()
            ray.init(
                address="local",
                _node_ip_address="127.0.0.1",
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                object_store_memory=100 * 1024 * 1024,
            )
            try:
                out["demo.toml wall (s)"] = {
                    "local (first run of the process)": round(timed_run(tmp, "demo-cold", demo, 2), 1),
                    "local": round(timed_run(tmp, "demo-local", demo, 2), 1),
                    "ray": round(timed_run(tmp, "demo-ray", demo + '\n[executor]\nuse = "ray"\n', 2), 1),
                }
            finally:
                ray.shutdown()
    out["load average after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
