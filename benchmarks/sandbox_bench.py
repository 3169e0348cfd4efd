"""Cost of the trust measures (issue 14), side by side in one run (not run by CI).

Measures the median wall time of:

- a trivial sandboxed Python run, under bubblewrap and with the fallback (``PPTARENA_SANDBOX=off``);
- a batch of 20 trivial rubric leaves (one fork per leaf), both ways;
- the redactor on a typical result row;
- the render guard (nesting check + external-link scan) on the demo decks.

    python benchmarks/sandbox_bench.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def median_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def with_mode(mode: str, fn: Callable[[], object]) -> Callable[[], object]:
    from pptarena.trust import isolation

    def run() -> object:
        os.environ["PPTARENA_SANDBOX"] = mode
        isolation.base_flags.cache_clear()
        try:
            return fn()
        finally:
            os.environ.pop("PPTARENA_SANDBOX", None)
            isolation.base_flags.cache_clear()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves
    from pptarena.trust.redact import redact_obj
    from pptarena.trust.render_guard import check_deck
    from pptarena.trust.sandbox import isolation_level, run_python

    print(f"isolation here: {isolation_level()}")
    trivial = lambda: run_python("sandbox_result(1)")  # noqa: E731
    leaves = [{"id": f"l{i}", "code": "def compute_score():\n    return 'ok', 1\n"} for i in range(20)]
    inputs = {
        "original_ppt_path": "/x/a.pptx",
        "modified_ppt_path": "/x/b.pptx",
        "ppt_diff": None,
        "screenshots": {},
    }
    batch = lambda: run_function_leaves(leaves, inputs, ModelBridge(None), LeafRun())  # noqa: E731
    rows = []
    for name, fn in (("sandboxed python, trivial", trivial), ("20 rubric leaves, one batch", batch)):
        on = median_s(with_mode("auto", fn), args.repeat)
        off = median_s(with_mode("off", fn), args.repeat)
        rows.append((name, on, off))
    print(f"{'measure':34} {'bwrap':>9} {'fallback':>9} {'ratio':>6}")
    for name, on, off in rows:
        print(f"{name:34} {on:8.3f}s {off:8.3f}s {on / off:6.2f}")

    os.environ["SOME_SERVICE_TOKEN"] = "tok-" + "x" * 40
    row = {
        "agent": "a",
        "task_id": "t",
        "status": "scored",
        "error": None,
        "scores": {"structural": {"score": 0.5, "metrics": {f"m{i}": i for i in range(50)}}},
        "metadata": {"category": ["text"] * 5},
        "usage": {"calls": 3},
    }
    t0 = time.perf_counter()
    for _ in range(1000):
        redact_obj(row)
    print(f"redactor, one result row: {(time.perf_counter() - t0) * 1000 / 1000:.3f} ms")

    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set

    decks = sorted(ensure_demo_set(Path(tempfile.mkdtemp())).rglob("*.pptx"))
    t0 = time.perf_counter()
    for deck in decks:
        check_deck(deck)
    print(
        f"render guard: {(time.perf_counter() - t0) * 1000 / len(decks):.1f} ms per deck"
        f" ({len(decks)} demo decks)"
    )


if __name__ == "__main__":
    main()
