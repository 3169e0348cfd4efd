"""CLI start-up: ``arena --version`` and ``import pptarena`` against Python's own start (not run by CI).

Runs, interleaved and ``--repeat`` times each, ``python -c pass``, ``arena --version`` and
``python -c "import pptarena"`` as whole processes and prints the medians and their excess over
``python -c pass``. With ``--before DIR`` (a folder whose ``pptarena`` package is another version's
``core`` with its ``plugins`` inside, put first on ``PYTHONPATH``) that version is measured beside
this one in the same loop.

Run: ``python benchmarks/start_bench.py [--repeat 40] [--before DIR]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    """Wall seconds of one command (output discarded)."""
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=env, cwd=cwd)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--before", type=Path, default=None, help="PYTHONPATH folder of another version")
    args = parser.parse_args()
    python = sys.executable
    arena = str(Path(python).with_name("arena"))
    here = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    versions = {"this": here}
    if args.before:
        versions = {"before": {**here, "PYTHONPATH": str(args.before.resolve())}, "after": here}
    cwd = tempfile.gettempdir()  # not the checkout: its folders must not shadow the installed package
    times: dict[str, list[float]] = {"python -c pass": []}
    for _ in range(args.repeat):
        times["python -c pass"].append(timed([python, "-c", "pass"], here, cwd))
        for name, env in versions.items():
            times.setdefault(f"arena --version ({name})", []).append(timed([arena, "--version"], env, cwd))
            times.setdefault(f"import pptarena ({name})", []).append(
                timed([python, "-c", "import pptarena"], env, cwd)
            )
    base = statistics.median(times["python -c pass"])
    print(f"medians of {args.repeat} runs each, interleaved")
    for label, values in times.items():
        median = statistics.median(values)
        extra = "" if label == "python -c pass" else f"  (+{1000 * (median - base):.0f} ms over python)"
        print(f"  {label:28s} {1000 * median:6.0f} ms{extra}")


if __name__ == "__main__":
    main()
