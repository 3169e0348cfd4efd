"""``arena report`` on a synthetic run of N pairs (not run by CI).

Generates a run folder of ``--pairs`` (agent, task) pairs — two agents, a rubric-style judge
(with a rubric tree in each pair's verdicts.json) and a structural-style judge, every status
represented, an agent log per pair, and the ``summary.json`` the runner writes at the end — then
measures, as whole processes:

* ``python -m pptarena.cli report RUN --no-render`` (``arena report``; through ``-m`` so that a
  ``PYTHONPATH`` copy of another version can be measured beside this one): wall time, CPU time
  and peak memory (max RSS) of the child; with ``--recompute`` without ``summary.json``, so the
  report recomputes the statistics (a running run's report, or one of a run summarized by an
  older version);
* the size of ``report.html`` and of everything the report wrote;
* headless Chromium on ``report.html``: the page's own time to its first full paint of the task
  table (``data-ready-ms``, when the page sets it) and the whole ``chromium --dump-dom`` command
  against the same command on an empty page.

No decks are generated (pairs show "the original deck is not available"): the report's own cost
is measured, not the deck diffs or renders it would show.

Run: ``python benchmarks/report_bench.py [--pairs 10000] [--run DIR] [--repeat 3] [--recompute]``
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pptarena.run.results import read_results, summarize_results
from pptarena.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.chromium import CHROMIUM, dump_dom  # noqa: E402 - the tests' helper, found through sys.path

STATUSES = ("scored",) * 17 + ("agent_error", "timeout", "judge_error")
CATEGORIES = ("text", "layout", "style", "chart", "table")


def _tree(rng: random.Random, task: str) -> dict:
    leaves = []
    for i in range(4):
        s = rng.choice((0.0, 0.5, 1.0, 1.0))
        leaves.append(
            {
                "node_id": f"n{i}",
                "name": f"check {i} of {task}",
                "score": s,
                "scorer": "code",
                "description": "the title of slide 2 reads the new text",
                "reason": "found it" if s else "missing",
            }
        )
    return {
        "node_id": "root",
        "name": "task done",
        "score": sum(x["score"] for x in leaves) / 4,
        "children": leaves,
    }


def make_run(run_dir: Path, pairs: int, seed: int = 7) -> None:
    """A finished-looking run of ``pairs`` pairs (two agents) in ``run_dir``."""
    rng = random.Random(seed)
    layout = RunDir(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    agents = ["noop", "oracle"]
    manifest = {
        "agents": agents,
        "judges": ["rubric", "structural"],
        "started_at": "2026-11-30T20:00:00+00:00",
        "finished_at": "2026-11-30T21:00:00+00:00",
        "config_path": "synthetic.toml",
    }
    layout.manifest.write_text(json.dumps(manifest))
    lines = []
    for k in range(pairs):
        task = f"synthetic-{k // len(agents):05d}-{CATEGORIES[k // len(agents) % 5]}"
        agent = agents[k % len(agents)]
        status = rng.choice(STATUSES)
        scores = {}
        if status == "scored":
            r = round(rng.random(), 3)
            scores = {
                "rubric": {"score": r, "metrics": {"success": r == 1.0}},
                "structural": {
                    "score": round(min(1.0, max(0.0, r + rng.uniform(-0.5, 0.5))), 3),
                    "metrics": {},
                },
            }
        row = {
            "schema_version": 1,
            "agent": agent,
            "task_id": task,
            "status": status,
            "scores": scores,
            "error": None if status == "scored" else f"{status}: synthetic failure",
            "duration_s": round(rng.uniform(1, 90), 2),
            "usage": {},
            "metadata": {
                "category": CATEGORIES[k // len(agents) % 5],
                "difficulty": rng.choice(("easy", "hard")),
            },
        }
        lines.append(json.dumps(row))
        folder = layout.pair(agent, task)
        folder.mkdir(parents=True, exist_ok=True)
        if scores:
            verdicts = {
                "verdicts": {
                    "rubric": {
                        "score": scores["rubric"]["score"],
                        "explanation": "rubric verdict",
                        "metrics": scores["rubric"]["metrics"],
                        "details": {"tree": _tree(rng, task)},
                    },
                    "structural": {
                        "score": scores["structural"]["score"],
                        "explanation": "structural verdict",
                        "details": {
                            "units": [
                                {"unit": "slide 2 title", "role": "target", "recall": 1.0, "precision": 0.5}
                            ]
                        },
                    },
                }
            }
            (folder / "verdicts.json").write_text(json.dumps(verdicts))
        (folder / "agent.log.jsonl").write_text(
            "\n".join(
                json.dumps({"t": 1000.0 + i, "event": "model_call", "prompt": f"step {i}"}) for i in range(3)
            )
        )
    layout.results.write_text("\n".join(lines) + "\n")
    write_summary(run_dir)


def write_summary(run_dir: Path) -> None:
    """A finished run's ``summary.json``, as the runner writes it at the end (from the lines read back)."""
    layout = RunDir(run_dir)
    layout.summary.write_text(json.dumps(summarize_results(read_results(layout.results)).to_json()))


def _run(cmd: list[str]) -> tuple[float, int, float]:
    """Wall seconds, the child's peak RSS in MiB and its CPU seconds (user + system)."""
    import os

    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:3]} failed: {err[-2000:]}")
    return wall, usage.ru_maxrss // 1024, usage.ru_utime + usage.ru_stime


def chromium_dump(url: str, profile: Path) -> tuple[float, str]:
    """Wall seconds of ``chromium --headless --dump-dom url`` and the DOM it printed."""
    t = time.perf_counter()
    dom = dump_dom(url, profile, timeout=300)
    return time.perf_counter() - t, dom


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--run", type=Path, default=None, help="run folder to (re)use")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report-args", default="", help="extra arguments for arena report")
    parser.add_argument(
        "--recompute", action="store_true", help="without summary.json: the report recomputes the summary"
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="report-bench-"))
    run_dir = args.run or tmp / "run"
    if not (run_dir / "results.jsonl").is_file():
        t = time.perf_counter()
        make_run(run_dir, args.pairs)
        print(f"generated {args.pairs} pairs in {time.perf_counter() - t:.1f} s: {run_dir}")
    if not (run_dir / "summary.json").is_file():  # a folder generated before summaries were written
        write_summary(run_dir)
    cmd = [sys.executable, "-m", "pptarena.cli", "report", str(run_dir), "--no-render"]
    cmd += args.report_args.split()
    summary = run_dir / "summary.json"
    stale = run_dir / "summary.json.away"
    if args.recompute and summary.is_file():
        summary.rename(stale)  # the report recomputes the summary (a running run, or an older one)
    try:
        runs = [_run(cmd) for _ in range(args.repeat)]
    finally:
        if stale.is_file():
            stale.rename(summary)
    wall = sorted(r[0] for r in runs)[len(runs) // 2]
    rss = max(r[1] for r in runs)
    cpu = sorted(r[2] for r in runs)[len(runs) // 2]
    print(f"summary.json: {'moved away, recomputed' if args.recompute else 'kept (reused when current)'}")
    index = run_dir / "report.html"
    written = index.stat().st_size
    pages = run_dir / "report"
    if pages.is_dir():
        written += sum(p.stat().st_size for p in pages.rglob("*") if p.is_file())
    print(f"arena report: {wall:.2f} s wall, {cpu:.2f} s CPU (medians of {args.repeat}), peak RSS {rss} MiB")
    print(f"report.html {index.stat().st_size / 1e6:.2f} MB; everything written {written / 1e6:.1f} MB")
    if Path(CHROMIUM).exists():
        empty = tmp / "empty.html"
        empty.write_text("<!DOCTYPE html><title>x</title><p>x")
        base, _ = chromium_dump(empty.as_uri(), tmp / "profile")
        base, _ = chromium_dump(empty.as_uri(), tmp / "profile")
        whole, dom = chromium_dump(index.as_uri(), tmp / "profile")
        ready = re.search(r'data-ready-ms="([0-9.]+)"', dom)
        print(
            f"chromium --dump-dom: report.html {whole:.2f} s, empty page {base:.2f} s "
            f"(difference {whole - base:.2f} s); page's own ready time "
            f"{(ready.group(1) + ' ms') if ready else 'not reported by the page'}"
        )
    if args.run:
        print(f"run folder kept: {run_dir}")
    shutil.rmtree(tmp, ignore_errors=True)  # the generated run (without --run), Chromium's profile


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
    main()
