"""What the office's own mount namespace costs: cold start and warm render, jail on vs off, interleaved.

Usage::

    python benchmarks/render_jail_bench.py --slides 30 --rounds 4

Each round runs both modes one after the other (``PPTARENA_SANDBOX`` unset, then ``off``) in fresh
child processes, so load from other jobs on a shared machine falls on both alike; medians over the
rounds are printed. ``cold``: a new renderer's first deck (starts the office on a copy of the
pre-initialised profile); ``warm``: the median of the next ``--warm`` renders of the same deck (cache
off). "off" is the office without any bubblewrap (memory cap and render guard still on).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, statistics, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from render_bench import make_deck
from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer
from pptarena.types import ComponentContext
work = Path(tempfile.mkdtemp())
deck = make_deck(work / "deck.pptx", int(sys.argv[2]))
opts = LibreOfficeRenderer.Options(cache=False, workers=1)
r = LibreOfficeRenderer(opts, ComponentContext(cache_dir=Path(sys.argv[3]), model=None))
t = time.perf_counter(); r.render(deck, work / "cold"); cold = time.perf_counter() - t
warm = []
for i in range(int(sys.argv[4])):
    t = time.perf_counter(); r.render(deck, work / f"w{i}"); warm.append(time.perf_counter() - t)
r.close()
print(json.dumps({"cold": cold, "warm": statistics.median(warm)}))
"""


def main() -> None:
    """Run the benchmark; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slides", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--warm", type=int, default=5)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parent)
    cache = tempfile.mkdtemp(prefix="render-jail-bench-")  # one profile template for every child
    rows: dict[str, list[dict]] = {"jail": [], "off": []}
    for _ in range(args.rounds):
        for mode in rows:
            env = {k: v for k, v in os.environ.items() if k != "PPTARENA_SANDBOX"}
            if mode == "off":
                env["PPTARENA_SANDBOX"] = "off"
            out = subprocess.run(
                [sys.executable, "-c", CHILD, here, str(args.slides), cache, str(args.warm)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            rows[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for mode, results in rows.items():
        cold = statistics.median(r["cold"] for r in results)
        warm = statistics.median(r["warm"] for r in results)
        print(f"{args.slides} slides, {mode:>4}: cold {cold:6.2f} s   warm {warm:6.2f} s")


if __name__ == "__main__":
    main()
