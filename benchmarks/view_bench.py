"""``arena view`` on a synthetic run of N pairs (not run by CI).

Builds (or reuses, ``--run``) the synthetic run of ``benchmarks/report_bench.py`` (two agents, two
judges, every status, a verdicts.json and an agent log per pair), a campaign of 1,000 absolute items
over it, starts ``arena view RUN --no-render`` as a process and measures, over HTTP on loopback:

* index: time from the server's start until the task table answers with all N pairs;
* run page, task-table pages (filters, sorts, a far page), pair pages (each a different pair, so
  nothing cached): the server's own time (the ``Server-Timing`` header the app sets) and the
  client's wall time, median and max;
* label writes: p50 / p95 of 300 sequential POSTs (each committed with ``synchronous=FULL``);
* the leaderboard part of the run page (``arena report``'s summary code, run by the server in a
  child process): time until the page reports it up to date;
* the server's memory: VmRSS and VmHWM (peak) from ``/proc``.

Run: ``python benchmarks/view_bench.py [--pairs 100000] [--run DIR] [--repeat 5] [--recompute]``
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from report_bench import make_run, write_summary  # noqa: E402

from pptarena.label.store import create_campaign  # noqa: E402
from pptarena.report.data import stored_summary  # noqa: E402
from pptarena.run.folder.results import read_results  # noqa: E402
from pptarena.run.statistics.summary_stats import stats_options  # noqa: E402
from pptarena.view.runs import run_id  # noqa: E402
from tests.support.view_fixtures import free_port  # noqa: E402


def server_ms(r: httpx.Response) -> float:
    """The app's own time from the ``Server-Timing`` header."""
    m = re.search(r"dur=([0-9.]+)", r.headers.get("server-timing", ""))
    return float(m.group(1)) if m else float("nan")


def timed(client: httpx.Client, method: str, url: str, **kw) -> tuple[float, float, httpx.Response]:
    """(server ms, wall ms, response)."""
    t = time.perf_counter()
    r = client.request(method, url, **kw)
    wall = 1000 * (time.perf_counter() - t)
    r.raise_for_status()
    return server_ms(r), wall, r


def memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    text = Path(f"/proc/{pid}/status").read_text()
    get = lambda k: int(re.search(rf"{k}:\s+(\d+)", text).group(1)) / 1024  # noqa: E731
    return get("VmRSS"), get("VmHWM")


def row(name: str, samples: list[tuple[float, float]]) -> str:
    srv = [s for s, _ in samples]
    wall = [w for _, w in samples]
    return (
        f"| {name} | {statistics.median(srv):.1f} ms (max {max(srv):.1f}) | "
        f"{statistics.median(wall):.1f} ms (max {max(wall):.1f}) |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--run", type=Path, default=None, help="reuse (or create) the synthetic run here")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--recompute", action="store_true", help="remove summary.json: the summary is recomputed")
    args = ap.parse_args()
    run = args.run or Path(tempfile.mkdtemp(prefix="view-bench-")) / "run"
    if not (run / "results.jsonl").is_file():
        t = time.perf_counter()
        make_run(run, args.pairs)
        print(
            f"synthetic run of {args.pairs} pairs made in {time.perf_counter() - t:.0f} s: {run}",
            file=sys.stderr,
        )
    rows = read_results(run / "results.jsonl")
    pairs = len(rows)
    if args.recompute:
        (run / "summary.json").unlink(missing_ok=True)
    elif stored_summary(run / "summary.json", rows, stats_options(None).to_json()) is None:
        write_summary(run)  # as a finished run has it (older code's summary.json is recomputed, not reused)
    campaign = run / "campaigns" / "bench.sqlite"
    if campaign.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{campaign}{suffix}").unlink(missing_ok=True)
    items = [(0, r.task_id, r.agent, 1, None, None, None) for r in rows[:1000]]
    public_id = create_campaign(  # the API names items by their public ids (random per campaign)
        campaign, name="bench", protocol="absolute", runs=[str(run.resolve())], items=items,
        queues={"bench": [(i + 1, False) for i in range(len(items))]}, tokens={"bench": "bench-token"},
        meta={"blind": True, "seed": 0},
    ).public_id  # fmt: skip
    del rows
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pptarena.cli", "view", str(run), "--port", str(port), "--no-render"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    rid = run_id(run)
    client = httpx.Client(base_url=base, timeout=600)
    try:
        while True:
            try:
                if client.get(f"/r/{rid}/api/table").json()["pairs"] == pairs:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        index_s = time.perf_counter() - started
        # the run page (the first visit starts the leaderboard's computation in a child process)
        summary_started = time.perf_counter()
        run_page = [timed(client, "GET", f"/r/{rid}")[:2] for _ in range(args.repeat)]
        summary_s = None
        while summary_s is None and time.perf_counter() - summary_started < 1800:
            if client.get(f"/r/{rid}/api/since", params={"seq": 10**9}).json()["summary_fresh"]:
                summary_s = time.perf_counter() - summary_started
            else:
                time.sleep(0.2)
        run_page_full = [timed(client, "GET", f"/r/{rid}")[:2] for _ in range(args.repeat)]
        queries = {
            "table: first page": {},
            "table: status=timeout": {"status": "timeout"},
            "table: sort by a judge, descending": {"sort": "-judge:rubric"},
            "table: text filter + disagreement ≥ 0.3": {"q": "layout", "dis": "0.3"},
            "table: sort by task, page 1000": {"sort": "task", "page": "1000"},
        }
        tables = {
            name: [timed(client, "GET", f"/r/{rid}", params=q)[:2] for _ in range(args.repeat)]
            for name, q in queries.items()
        }
        rng = random.Random(1)
        table = client.get(f"/r/{rid}/api/table", params={"per_page": 50, "page": 7}).json()["rows"]
        chosen = [table[rng.randrange(len(table))] for _ in range(args.repeat)]
        first = table[0]  # the first pair page loads the plugin registry (the run's dataset)
        first_pair = [
            timed(
                client, "GET", f"/r/{rid}/pair", params={"task": first["task_id"], "agent": first["agent"]}
            )[:2]
        ]
        pair_pages = [
            timed(client, "GET", f"/r/{rid}/pair", params={"task": r["task_id"], "agent": r["agent"]})[:2]
            for r in chosen
        ]
        # label writes
        r = client.get("/login", params={"token": "bench-token"}, follow_redirects=False)
        page = client.get(r.headers["location"]).text
        cid = re.search(r'data-campaign="([^"]+)"', page).group(1)
        csrf = re.search(r'data-csrf="([^"]+)"', page).group(1)
        writes = []
        label = {"vq": 2, "damage": "no"}
        for k in range(300):
            writes.append(
                timed(
                    client, "POST", f"/c/{cid}/api/label",
                    json={"item": public_id(k % 1000 + 1), "fields": {**label, "if": k % 5}, "seconds": 1.0},
                    headers={"X-CSRF-Token": csrf, "Origin": base},
                )[:2]
            )  # fmt: skip
        rss, hwm = memory(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    walls = sorted(w for _, w in writes)
    srvs = sorted(s for s, _ in writes)
    p95 = lambda xs: xs[int(0.95 * (len(xs) - 1))]  # noqa: E731
    print(f"\n{pairs} pairs, run {run}\n")
    print(f"index built (server start → table answers with every pair): {index_s:.1f} s")
    print(f"leaderboard part up to date after the first run page visit: {summary_s:.1f} s\n")
    print("| request | server time, median (max) | wall, median (max) |\n|---|---|---|")
    print(row("run page (leaderboard still computing)", run_page))
    print(row("run page (leaderboard shown)", run_page_full))
    for name, samples in tables.items():
        print(row(name, samples))
    print(row("first pair page (loads the plugin registry)", first_pair))
    print(row("pair page (a different pair each time)", pair_pages))
    print(
        f"| label write (300) | p50 {statistics.median(srvs):.1f} ms, p95 {p95(srvs):.1f} ms | "
        f"p50 {statistics.median(walls):.1f} ms, p95 {p95(walls):.1f} ms |"
    )
    print(f"\nserver memory: RSS {rss:.0f} MB, peak (VmHWM) {hwm:.0f} MB")


if __name__ == "__main__":
    main()
