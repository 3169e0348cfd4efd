"""Time of the ``rubric`` judge over the 120 published PPT-Eval rubrics (not run by CI).

Every rubric is judged against the same stand-in pair (a corpus deck and a lightly edited
copy, see tests/support/rubric_fixtures.py) through the full judge: rubric loading, ppt_diff, lazy
LibreOffice renders (the render cache makes every render after the first a copy), one
sandboxed process per rubric, the scripted backend answering every vlm_call "YES", and the
evidence files. Also times the same 481 leaves run as one sandbox batch (what the test does).

    python benchmarks/rubric_bench.py [--jobs N] [--explain model|deterministic]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pptarena.types import ComponentContext, Task  # noqa: E402
from tests.support.rubric_fixtures import (  # noqa: E402
    STAND_IN,
    edited_copy,
    make_evidence,
    make_judge,
    published_rubrics,
    scripted_hub,
)


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="rubrics judged at once (threads)")
    parser.add_argument("--explain", default="deterministic", choices=["deterministic", "model"])
    args = parser.parse_args()
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer

    rubrics = published_rubrics()
    if not rubrics or not STAND_IN.is_file():
        sys.exit("needs ../shared/ppteval and ../shared/corpus")
    tmp = Path(tempfile.mkdtemp(prefix="rubric-bench-"))
    prediction = edited_copy(STAND_IN, tmp / "prediction.pptx")
    renderer = LibreOfficeRenderer(
        LibreOfficeRenderer.Options(size=800), ComponentContext(cache_dir=tmp / "cache", model=None)
    )  # type: ignore[arg-type]
    _, factory = scripted_hub(tmp, responses=["YES"], on_exhausted="cycle")
    judge = make_judge(tmp, model="scripted/bench", explain=args.explain)

    t0 = time.perf_counter()
    for deck, role in ((STAND_IN, "original"), (prediction, "prediction")):
        renderer.render(deck, tmp / "warm" / role)
    render_s = time.perf_counter() - t0

    def one(item: tuple[str, dict]) -> tuple[str, float, dict]:
        task_id, data = item
        task = Task(id=task_id, instruction="", original=STAND_IN, rubric=data)
        evidence = make_evidence(task, prediction, tmp / "tasks" / task_id, renderer=renderer, model=factory)
        started = time.perf_counter()
        verdict = judge.judge(task, evidence.prediction, evidence)
        return task_id, time.perf_counter() - started, verdict.metrics

    cpu0, t0 = child_cpu(), time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, rubrics.items()))
    wall = time.perf_counter() - t0
    cpu = child_cpu() - cpu0
    renderer.close()
    times = sorted(t for _, t, _ in results)
    errors = Counter()
    for _, _, m in results:
        errors["leaf_errors"] += m["leaf_errors"]
        errors["leaves"] += m["leaves"]
        errors["model_calls"] += m["model_calls"]
    print(f"first renders of both stand-in decks (cold): {render_s:.1f}s")
    print(f"{len(results)} rubrics judged, jobs={args.jobs}: wall {wall:.1f}s, sandbox CPU {cpu:.1f}s")
    print(f"per rubric: median {times[len(times) // 2]:.2f}s, max {times[-1]:.2f}s")
    print(
        f"leaves {errors['leaves']}, leaf errors {errors['leaf_errors']}, model calls {errors['model_calls']}"
    )


if __name__ == "__main__":
    main()
