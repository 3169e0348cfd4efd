"""``arena label stats`` computation on a synthetic campaign (not run by CI).

Builds (or reuses, ``--dir``) the synthetic run of ``benchmarks/report_bench.py`` (two agents, two
judges, every status) with ``--pairs`` pairs, and four campaigns over its first ``--items`` pairs
made with the real :mod:`pptarena.label.store` API: absolute and pairwise, each with 2 and with 4
annotators who label every item (noisy copies of a hidden truth). For each campaign it times
:func:`pptarena.label.stats.campaign_stats` (what the campaign page computes, with its
``CAMPAIGN_PAGE_BOOTSTRAP`` resamples, and what ``arena label stats`` computes with 1000) cold —
``--repeat`` times (cold: the run's judge series read again, as on a server's first view) — each
time then appends one new label and times it again (the view after one new label), and with ``--profile``
prints the cProfile split by function of one cold computation.

Run: ``python benchmarks/label_stats_bench.py [--pairs 20000] [--items 1000] [--dir DIR]
[--repeat 3] [--n-boot 300] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from report_bench import make_run  # noqa: E402

from pptarena.label import stats as label_stats  # noqa: E402
from pptarena.label.stats import campaign_stats  # noqa: E402
from pptarena.label.store import Campaign, create_campaign  # noqa: E402
from pptarena.run.folder.results import read_results  # noqa: E402


def absolute_label(rng: random.Random, truth: int) -> dict:
    """A noisy absolute label around ``truth`` (0-4)."""
    near = lambda: min(4, max(0, truth + rng.choice((-1, 0, 0, 0, 1))))  # noqa: E731
    return {"if": near(), "vq": near(), "damage": "yes" if truth < 2 and rng.random() < 0.7 else "no"}


def pairwise_label(rng: random.Random, truth: str) -> dict:
    """A noisy pairwise choice around ``truth``."""
    return {"choice": truth if rng.random() < 0.75 else rng.choice(("a", "b", "tie"))}


def build_campaign(path: Path, run: Path, rows: list, protocol: str, annotators: int, items: int) -> None:
    """A campaign of ``items`` items over ``run``, every item labelled by every annotator."""
    rng = random.Random(annotators * 31 + len(protocol))
    if protocol == "absolute":
        spec = [(0, r.task_id, r.agent, 1, None, None, None) for r in rows[:items]]
    else:  # the two agents of one task side by side
        by_task: dict[str, list[str]] = {}
        for r in rows:
            by_task.setdefault(r.task_id, []).append(r.agent)
        spec = [(0, t, a[0], 1, a[1], 1, None) for t, a in by_task.items() if len(a) >= 2][:items]
    people = [f"p{i}" for i in range(annotators)]
    queue = [(i + 1, False) for i in range(len(spec))]
    campaign = create_campaign(
        path, name=path.stem, protocol=protocol, runs=[str(run.resolve())], items=spec,
        queues={p: queue for p in people}, tokens={p: f"{p}-token" for p in people},
        meta={"blind": True, "seed": 0},
    )  # fmt: skip
    try:
        campaign._conn.execute("PRAGMA synchronous=OFF")  # building only: no fsync per label
        for item in range(1, len(spec) + 1):
            if protocol == "absolute":
                truth = rng.randrange(5)
                for p in people:
                    campaign.append(p, item, absolute_label(rng, truth), 10.0)
            else:
                truth = rng.choice(("a", "b", "tie"))
                for p in people:
                    campaign.append(p, item, pairwise_label(rng, truth), 10.0)
    finally:
        campaign.close()


def timed_stats(campaign: Campaign, n_boot: int, cold: bool = False) -> float:
    """Seconds of one :func:`campaign_stats` (``cold``: the run's judge series read again)."""
    cache = getattr(label_stats, "_SERIES_CACHE", None)  # absent in the code before the fast path
    if cold and cache is not None:
        cache.clear()
    t = time.perf_counter()
    campaign_stats(campaign, n_boot=n_boot)
    return time.perf_counter() - t


def profile_split(campaign: Campaign, n_boot: int, top: int = 14) -> str:
    """cProfile of one computation: the functions with the most cumulative and own time."""
    getattr(label_stats, "_SERIES_CACHE", {}).clear()
    prof = cProfile.Profile()
    prof.enable()
    campaign_stats(campaign, n_boot=n_boot)
    prof.disable()
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top + 6)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--dir", type=Path, default=None, help="reuse (or create) the run and campaigns here")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-boot", type=int, default=300, help="the campaign page's resamples (300)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--only", default=None, help="one campaign, e.g. absolute-2")
    args = ap.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="label-stats-bench-"))
    run = base / "run"
    if not (run / "results.jsonl").is_file():
        t = time.perf_counter()
        make_run(run, args.pairs)
        print(
            f"synthetic run of {args.pairs} pairs made in {time.perf_counter() - t:.0f} s: {run}",
            file=sys.stderr,
        )
    rows = read_results(run / "results.jsonl")
    print(f"{len(rows)} pairs, {args.items} items, {args.n_boot} resamples; run {run}\n")
    print("| campaign | cold, median (min–max) | after one new label, median (min–max) |\n|---|---|---|")
    for protocol in ("absolute", "pairwise"):
        for annotators in (2, 4):
            name = f"{protocol}-{annotators}"
            if args.only and args.only != name:
                continue
            path = base / "campaigns" / f"{name}.sqlite"
            if not path.exists():
                build_campaign(path, run, rows, protocol, annotators, args.items)
            cold, after = [], []
            with Campaign.open(path) as campaign:
                for k in range(args.repeat):
                    cold.append(timed_stats(campaign, args.n_boot, cold=True))
                    item = 1 + k % len(campaign.items)
                    fields = (
                        {"if": k % 5, "vq": 2, "damage": "no"} if protocol == "absolute" else {"choice": "a"}
                    )
                    campaign.append("p0", item, fields, 1.0)
                    after.append(timed_stats(campaign, args.n_boot))
                print(
                    f"| {name} | {statistics.median(cold):.2f} s ({min(cold):.2f}–{max(cold):.2f}) | "
                    f"{statistics.median(after):.2f} s ({min(after):.2f}–{max(after):.2f}) |",
                    flush=True,
                )
                if args.profile:
                    split = profile_split(campaign, args.n_boot)
                    print(f"\nprofile of {name}:\n\n```\n{split}```\n")


if __name__ == "__main__":
    main()
