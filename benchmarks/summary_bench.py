"""The summary behind ``arena report`` and ``arena view``'s run page on a synthetic run (not run by CI).

Builds (or reuses, ``--run``) the synthetic run of ``benchmarks/report_bench.py`` (two agents, two
judges, every status, one epoch) and measures, each as a fresh process (``/usr/bin/time``-like: wall,
CPU = user + system of the child, peak RSS):

* ``summarize``: ``read_results`` then ``summarize_results`` (the statistics recomputed), and
  whether the figures equal ``summary.json``'s (the one the run was made with, e.g. by an older
  version: equal means that no figure changed); ``--write-summary FILE`` writes the recomputed
  summary's JSON text (``cmp`` two versions' files: byte-identical); the load average before each;
* ``load_run, summary.json current``: :func:`pptarena.report.data.load_run` reusing the stored summary;
* ``view summary job, recomputed`` / ``reused``: ``python -m pptarena.view.summaryjob RUN`` (the view's
  leaderboard part: load_run plus the report's tables and plots), without and with ``summary.json``.

``PYTHONPATH=/path/to/other/version python benchmarks/summary_bench.py ...`` measures another version
(the children run ``python -m``).

Run: ``python benchmarks/summary_bench.py [--pairs 100000] [--run DIR] [--repeat 1] [--summarize-only]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CHILD_SUMMARIZE = """
import json, sys, time
from pathlib import Path
from pptarena.run.folder.results import read_results, summarize_results
run = Path(sys.argv[1])
t = time.perf_counter(); c = time.process_time()
rows = read_results(run / "results.jsonl")
t1 = time.perf_counter(); c1 = time.process_time()
computed = summarize_results(rows).to_json()
t2 = time.perf_counter(); c2 = time.process_time()
if len(sys.argv) > 3:  # the summary's JSON text, for a byte-for-byte comparison between versions
    Path(sys.argv[3]).write_text(json.dumps(computed, indent=2, ensure_ascii=False) + "\\n", encoding="utf-8")
summary = json.loads(json.dumps(computed))
stored = run / sys.argv[2]
same = "n/a"
if stored.is_file():
    want = json.loads(stored.read_text())
    for k in ("budget", "isolation"):
        want.pop(k, None)
    same = "yes" if want == summary else "NO"
print(json.dumps({"read": [t1 - t, c1 - c], "summarize": [t2 - t1, c2 - c1], "equal": same}))
"""

CHILD_LOAD = """
import json, sys, time
from pathlib import Path
from pptarena.report.data import load_run
t = time.perf_counter(); c = time.process_time()
data = load_run(Path(sys.argv[1]))
print(json.dumps({"load_run": [time.perf_counter() - t, time.process_time() - c], "rows": len(data.rows)}))
"""


def run_child(cmd: list[str]) -> tuple[float, float, float, str]:
    """Wall s, CPU s (user + system), peak RSS MiB and stdout of a child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:4]} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--run", type=Path, default=None, help="reuse (or create) the synthetic run here")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--write-summary", type=Path, default=None, help="write the summary's JSON here")
    ap.add_argument("--summarize-only", action="store_true", help="skip load_run and the view's summary jobs")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="summary-bench-"))
    run = args.run or tmp / "run"
    if not (run / "results.jsonl").is_file():
        from report_bench import make_run

        make_run(run, args.pairs)
    summary = run / "summary.json"
    if not summary.is_file():
        from report_bench import write_summary

        write_summary(run)
    py = sys.executable
    print(
        f"run: {run} ({sum(1 for _ in (run / 'results.jsonl').open())} lines), load {os.getloadavg()[0]:.1f}"
    )
    for _ in range(args.repeat):
        load = os.getloadavg()[0]
        extra = [str(args.write_summary)] if args.write_summary else []
        wall, cpu, rss, out = run_child([py, "-c", CHILD_SUMMARIZE, str(run), "summary.json", *extra])
        got = json.loads(out)
        print(
            f"summarize (read_results + summarize_results): {wall:.2f} s wall, {cpu:.2f} s CPU "
            f"(with the statistics helper process), {rss:.0f} MiB; read {got['read'][0]:.2f} s, "
            f"summarize {got['summarize'][0]:.2f} s wall ({got['summarize'][1]:.2f} s CPU of this process); "
            f"equal to summary.json: {got['equal']}; load before {load:.1f}"
        )
        if args.summarize_only:
            continue
        wall, cpu, rss, out = run_child([py, "-c", CHILD_LOAD, str(run)])
        print(
            f"load_run, summary.json current: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MiB; "
            f"{out.strip()}"
        )
        wall, cpu, rss, _ = run_child([py, "-m", "pptarena.view.summaryjob", str(run)])
        print(f"view summary job, summary.json current: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MiB")
        away = run / "summary.json.away"
        summary.rename(away)
        try:
            wall, cpu, rss, _ = run_child([py, "-m", "pptarena.view.summaryjob", str(run)])
        finally:
            away.rename(summary)
        print(f"view summary job, recomputed: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MiB")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
