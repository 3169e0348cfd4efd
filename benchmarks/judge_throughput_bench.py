"""Judging throughput (issue 18, target 5): pairs per second and where the time goes (not run by CI).

Two judges, each through its real ``judge()`` call:

- ``rubric``: the 120 published PPT-Eval rubrics, each judged against the stand-in deck pair of
  benchmarks/rubric_bench.py and the tests (``poi_stress013.pptx`` and an edited copy), the
  scripted backend answering every ``vlm_call`` "YES", real LibreOffice renders (both decks are
  rendered once before timing starts, so the render cache serves every pair: the rendering share
  is the cache copies a pair pays, as in a run with many tasks on one original);
- ``structural``: the demo set's tasks with an oracle prediction (the target deck itself).

Wall time is split with real timers (no behaviour change): **sandbox start-up** (from starting
the sandboxed process to its driver running: bubblewrap, interpreter, imports; the driver's
``ready`` record), **leaf execution** (each function leaf's own run, timed inside its forked
process), **sandbox driver + exit** (the rest of the sandboxed process's life: ppt_diff and context building,
forks, waiting for records, exit), **rendering** (the renderer's calls), **diff** (the deck
engine's ``ppt_diff`` / structural diff, in the judge's process) and **other** (the rest: tree
loading, the model bridge, staging the sandbox, scoring, evidence files).

The rubric judge is measured twice, side by side in one run: ``before`` (this code with issue 18's
changes switched back, :func:`legacy_sandbox`: nothing preloaded, the driver finalising its
interpreter, ``Popen.wait`` polling for the sandbox's exit, ``ppt_diff`` rebuilt through the whole
deck engine) and ``after`` (the defaults). ``--rounds 2`` alternates them to even out the shared
machine's noise. Tree scores are compared between the two.

    python benchmarks/judge_throughput_bench.py [--limit N] [--rounds R] [--only rubric|structural]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PHASES = ("sandbox start-up", "leaf execution", "sandbox driver + exit", "rendering", "diff", "other")


class Phases:
    """Accumulates seconds per phase (one thread at a time)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def timed(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` wrapped so its wall time counts towards ``phase``."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - t0

        return wrapper


class TimedRenderer:
    """A renderer proxy that times ``render`` (everything else is passed through)."""

    def __init__(self, inner: Any, phases: Phases):
        self._inner = inner
        self.render = phases.timed("rendering", inner.render)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _leaf_seconds(node: dict[str, Any]) -> float:
    if node.get("kind") == "leaf":
        return float(node.get("duration_s") or 0.0) if node.get("scorer") == "function" else 0.0
    return sum(_leaf_seconds(c) for c in node.get("children", []))


def report(name: str, pairs: int, wall: float, phases: dict[str, float]) -> dict[str, Any]:
    """Print and return one judge's throughput and phase shares."""
    known = sum(phases.get(p, 0.0) for p in PHASES if p != "other")
    shares = {p: phases.get(p, 0.0) for p in PHASES if p != "other"}
    shares["other"] = max(0.0, wall - known)
    row = {"judge": name, "pairs": pairs, "wall_s": round(wall, 2), "pairs_per_s": round(pairs / wall, 2)}
    row["seconds"] = {p: round(s, 2) for p, s in shares.items()}
    row["share"] = {p: round(s / wall, 3) for p, s in shares.items()}
    parts = ", ".join(f"{p} {100 * s / wall:.0f}% ({s:.1f}s)" for p, s in shares.items())
    print(f"{name}: {pairs} pairs in {wall:.1f}s = {pairs / wall:.2f} pairs/s; {parts}", flush=True)
    return row


LEGACY_DRIVER = "from pptarena.plugins.judges.rubric.child import main\nmain(SANDBOX_INPUT)\n"


def polling_wait(proc: Any, timeout: float | None) -> bool:
    """How ``run_in_session`` waited before issue 18: ``Popen.wait`` (sleeps growing to 50 ms)."""
    import subprocess

    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


@contextlib.contextmanager
def legacy_sandbox(enabled: bool) -> Iterator[None]:
    """With ``enabled``, run the rubric sandbox as before issue 18: no preloaded modules, a driver
    that finalises its interpreter, polling for the sandboxed process's exit, and ``ppt_diff``
    rebuilt through ``pptarena.deck.ppteval`` (which loads the deck engine).
    """
    from pptarena.plugins.judges.rubric import execute
    from pptarena.plugins.judges.rubric import judge as rubric_judge
    from pptarena.trust import procs

    saved = execute.PRELOAD_MODULES, execute._DRIVER, procs.wait_exit, rubric_judge.DIFF_MODULE
    if enabled:
        execute.PRELOAD_MODULES, execute._DRIVER, procs.wait_exit = (), LEGACY_DRIVER, polling_wait
        rubric_judge.DIFF_MODULE = "pptarena.deck.ppteval"  # imports the deck engine in the sandbox
    try:
        yield
    finally:
        execute.PRELOAD_MODULES, execute._DRIVER, procs.wait_exit, rubric_judge.DIFF_MODULE = saved


def bench_rubric(tmp: Path, limit: int | None, legacy: bool, label: str) -> dict[str, Any]:
    """Judge the published rubrics against the stand-in pair (``legacy``: as before issue 18)."""
    from pptarena.evidence import Evidence
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer
    from pptarena.types import ComponentContext, Task
    from tests.support.rubric_fixtures import (
        STAND_IN,
        edited_copy,
        make_evidence,
        make_judge,
        published_rubrics,
        scripted_hub,
    )

    rubrics = list(published_rubrics().items())[:limit]
    if not rubrics or not STAND_IN.is_file():
        sys.exit("needs ../shared/ppteval and ../shared/corpus")
    prediction = tmp / "prediction.pptx"
    if not prediction.exists():
        edited_copy(STAND_IN, prediction)
    renderer = LibreOfficeRenderer(
        LibreOfficeRenderer.Options(size=800),
        ComponentContext(cache_dir=tmp / "cache", model=None),  # type: ignore[arg-type]
    )
    for deck, role in ((STAND_IN, "original"), (prediction, "prediction")):  # fill the render cache
        renderer.render(deck, tmp / "warm" / role)
    _, factory = scripted_hub(tmp, responses=["YES"], on_exhausted="cycle")
    judge = make_judge(tmp, model="scripted/bench", explain="deterministic")
    phases = Phases()
    timed_renderer = TimedRenderer(renderer, phases)
    saved_diff = Evidence.ppteval_diff
    Evidence.ppteval_diff = phases.timed("diff", saved_diff)  # type: ignore[method-assign]
    scores: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        with legacy_sandbox(legacy):
            for task_id, data in rubrics:
                task = Task(id=task_id, instruction="", original=STAND_IN, rubric=data)
                folder = tmp / label / task_id
                evidence = make_evidence(task, prediction, folder, renderer=timed_renderer, model=factory)
                verdict = judge.judge(task, evidence.prediction, evidence)
                scores[task_id] = verdict.score
                details = json.loads(
                    (folder / "judges" / "rubric" / "rubric.json").read_text(encoding="utf-8")
                )
                phases.seconds["sandbox start-up"] += sum(
                    p.get("startup_s") or 0.0 for p in details["sandbox_processes"]
                )
                leaf_s = _leaf_seconds(details["tree"])
                phases.seconds["leaf execution"] += leaf_s
                phases.seconds["sandbox driver + exit"] += max(
                    0.0,
                    sum(p["duration_s"] - (p.get("startup_s") or 0.0) for p in details["sandbox_processes"])
                    - leaf_s,
                )
    finally:
        wall = time.perf_counter() - t0
        Evidence.ppteval_diff = saved_diff  # type: ignore[method-assign]
        renderer.close()
    row = report(f"rubric ({label})", len(rubrics), wall, phases.seconds)
    row["scores"] = scores
    return row


def bench_structural(tmp: Path, limit: int | None) -> dict[str, Any]:
    """Judge every demo task that has a target, with the target as the prediction (oracle)."""
    from pptarena.evidence import Evidence
    from pptarena.plugins.datasets.demo.dataset import DemoDataset
    from pptarena.plugins.judges.structural.judge import StructuralJudge
    from pptarena.types import ComponentContext, Prediction

    ctx = ComponentContext(cache_dir=tmp / "cache", model=None, name="structural", label="structural")  # type: ignore[arg-type]
    tasks = [t for t in DemoDataset(DemoDataset.Options(), ctx).load() if t.target is not None][:limit]
    judge = StructuralJudge(StructuralJudge.Options(), ctx)
    phases = Phases()
    saved = Evidence.diff
    Evidence.diff = phases.timed("diff", saved)  # type: ignore[method-assign]
    t0 = time.perf_counter()
    try:
        for task in tasks:
            assert task.target is not None
            evidence = Evidence(task, Prediction(task.target), tmp / "structural" / task.id, renderer=None)
            judge.judge(task, evidence.prediction, evidence)
    finally:
        wall = time.perf_counter() - t0
        Evidence.diff = saved  # type: ignore[method-assign]
    return report("structural (oracle)", len(tasks), wall, phases.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N rubrics / demo tasks only")
    parser.add_argument("--rounds", type=int, default=1, help="before/after rounds of the rubric judge")
    parser.add_argument("--only", choices=["rubric", "structural"], default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="judge-throughput-"))
    print(f"load average at start: {os.getloadavg()}", flush=True)
    rows = []
    if args.only in (None, "structural"):
        rows.append(bench_structural(tmp, args.limit))
    if args.only in (None, "rubric"):
        for _ in range(args.rounds):
            before = bench_rubric(tmp, args.limit, True, "before")
            after = bench_rubric(tmp, args.limit, False, "after")
            rows += [before, after]
            changed = sorted(k for k in before["scores"] if before["scores"][k] != after["scores"].get(k))
            print(f"tree scores that differ before/after: {changed or 'none'}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
