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

Task pages whose inputs did not change are not rebuilt (``report/page-inputs.json``): every run
after the first is a *warm* report. ``--cold`` removes that record before each run, so every page
is built (the first report of a run, or one after every pair changed). Each run's wall time is
printed, not only the median.

With ``--before DIR`` (a folder whose ``pptarena`` package is another version's ``core`` with its
``plugins`` inside, put first on ``PYTHONPATH`` for that version's runs) the two versions are
measured interleaved instead, on two copies of the run folder (same folder name, so the pages can
be compared byte for byte): ``--rounds`` rounds, each running, for the reused summary and then the
recomputed one, the other version, this version cold and this version warm, in an order that
turns each round. Medians and ranges are printed, and the two versions' task pages and
``report.html`` (apart from its "report written" time) are compared.

Run: ``python benchmarks/report_bench.py [--pairs 10000] [--run DIR] [--repeat 3] [--recompute]
[--cold] [--no-browser] [--before DIR --rounds 3]``
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

from pptarena.run.folder.results import read_results, summarize_results
from pptarena.run.folder.rundir import RunDir

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


RECORD = Path("report") / "page-inputs.json"  # the task pages' input record (report/pageinputs.py)


def report_once(run_dir: Path, *, recompute: bool, cold: bool, pythonpath: str | None, extra: list[str]):
    """One ``arena report --no-render`` of ``run_dir`` (summary moved away with ``recompute``, the
    pages' record removed with ``cold``; another version's package first on the path with
    ``pythonpath``): (wall s, peak RSS MiB, CPU s)."""
    if cold:
        (run_dir / RECORD).unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pptarena.cli", "report", str(run_dir), "--no-render", *extra]
    if pythonpath:
        cmd = ["env", f"PYTHONPATH={pythonpath}", *cmd]
    summary, stale = run_dir / "summary.json", run_dir / "summary.json.away"
    if recompute and summary.is_file():
        summary.rename(stale)
    try:
        return _run(cmd)
    finally:
        if stale.is_file():
            stale.rename(summary)


def _span(values: list[float]) -> str:
    v = sorted(values)
    return f"{v[len(v) // 2]:.2f} s (range {v[0]:.2f}–{v[-1]:.2f})"


def _same_output(a: Path, b: Path) -> str:
    """Whether two run folders' reports are identical (``report.html`` apart from its written time)."""
    stamp = re.compile(rb"report written [0-9T:+-]+")
    if stamp.sub(b"", (a / "report.html").read_bytes()) != stamp.sub(b"", (b / "report.html").read_bytes()):
        return "report.html differs"
    pages_a = sorted(p.name for p in (a / "report").glob("tasks-*.html"))
    pages_b = sorted(p.name for p in (b / "report").glob("tasks-*.html"))
    if pages_a != pages_b:
        return "the task pages differ in number"
    differ = [n for n in pages_a if (a / "report" / n).read_bytes() != (b / "report" / n).read_bytes()]
    if differ:
        return f"{len(differ)} of {len(pages_a)} task pages differ"
    return f"identical ({len(pages_a)} task pages and report.html)"


def compare(run_dir: Path, before: Path, rounds: int, extra: list[str], tmp: Path) -> None:
    """Interleaved rounds of the other version, this one cold and this one warm (see the module doc)."""
    import os

    copies = {"before": tmp / "before" / run_dir.name, "after": tmp / "after" / run_dir.name}
    for copy in copies.values():
        shutil.copytree(run_dir, copy, symlinks=True, ignore=shutil.ignore_patterns("report", "report.html"))
    order = [("before", False), ("after", True), ("after", False)]
    times: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    for k in range(rounds):
        for mode in ("reused", "recomputed"):
            turn = order[k % 3 :] + order[: k % 3]  # a warm run follows a run of this version
            for version, cold in turn:
                label = "before" if version == "before" else ("after, cold" if cold else "after, warm")
                wall, _, cpu = report_once(
                    copies[version],
                    recompute=mode == "recomputed",
                    cold=cold,
                    pythonpath=str(before.resolve()) if version == "before" else None,
                    extra=extra,
                )
                times.setdefault((mode, label), []).append(wall)
                cpus.setdefault((mode, label), []).append(cpu)
                print(f"round {k + 1}, summary {mode}, {label}: {wall:.2f} s, {cpu:.2f} s CPU", flush=True)
    print(f"load average after: {os.getloadavg()}")
    for (mode, label), walls in times.items():
        print(f"summary {mode:10s} {label:12s} wall {_span(walls)}, CPU {_span(cpus[(mode, label)])}")
    print(f"output, before vs after: {_same_output(copies['before'], copies['after'])}")


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
    parser.add_argument("--cold", action="store_true", help="remove the pages' input record before each run")
    parser.add_argument("--no-browser", action="store_true", help="leave out the Chromium measurement")
    parser.add_argument("--before", type=Path, default=None, help="PYTHONPATH folder of another version")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds with --before")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="report-bench-"))
    run_dir = args.run or tmp / "run"
    if not (run_dir / "results.jsonl").is_file():
        t = time.perf_counter()
        make_run(run_dir, args.pairs)
        print(f"generated {args.pairs} pairs in {time.perf_counter() - t:.1f} s: {run_dir}")
    if not (run_dir / "summary.json").is_file():  # a folder generated before summaries were written
        write_summary(run_dir)
    if args.before is not None:
        try:
            compare(run_dir, args.before, args.rounds, args.report_args.split(), tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    runs = []
    for k in range(args.repeat):
        # the report recomputes the summary with --recompute (a running run, or an older one)
        extra = args.report_args.split()
        once = report_once(run_dir, recompute=args.recompute, cold=args.cold, pythonpath=None, extra=extra)
        runs.append(once)
        print(f"run {k + 1}: {runs[-1][0]:.2f} s wall, {runs[-1][2]:.2f} s CPU", flush=True)
    wall = sorted(r[0] for r in runs)[len(runs) // 2]
    rss = max(r[1] for r in runs)
    cpu = sorted(r[2] for r in runs)[len(runs) // 2]
    print(f"summary.json: {'moved away, recomputed' if args.recompute else 'kept (reused when current)'}")
    print(f"task pages: {'all rebuilt (--cold)' if args.cold else 'rebuilt when their inputs changed'}")
    index = run_dir / "report.html"
    written = index.stat().st_size
    pages = run_dir / "report"
    if pages.is_dir():
        written += sum(p.stat().st_size for p in pages.rglob("*") if p.is_file())
    print(f"arena report: {wall:.2f} s wall, {cpu:.2f} s CPU (medians of {args.repeat}), peak RSS {rss} MiB")
    print(f"report.html {index.stat().st_size / 1e6:.2f} MB; everything written {written / 1e6:.1f} MB")
    if Path(CHROMIUM).exists() and not args.no_browser:
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
