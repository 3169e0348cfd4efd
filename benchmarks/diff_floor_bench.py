"""The 200-slide diff against its floor and against PPT-Eval's diff (not run by CI).

In one process (median of ``--repeat``):

* floor: unzip and lxml-parse every XML part of both decks (nothing else);
* ``diff_decks(a, b)`` and its ratio to the floor (issue 18 target: <= 4);
* ``ppteval_diff(a, b)`` (our PPT-Eval view, which includes the diff).

As whole processes (median of ``--repeat``, wall clock): ``arena diff A B --json`` against
PPT-Eval's own slide-level diff (``PowerPointDiffEvaluator.compare_files`` from
../shared/ppteval/reference, run in a child interpreter only here; needs ``xmltodict``), and
``python -c pass`` for the interpreter's own start.

The pair is ``deck_bench.py``'s: 200 python-pptx slides and a copy with every 10th title edited,
one shape moved, one slide deleted and one moved.

Run: ``python benchmarks/diff_floor_bench.py [--repeat 7] [--decks DIR] [--profile] [--cpu]``. To
compare two versions side by side, run it alternately with ``PYTHONPATH`` pointing at a folder
whose ``pptarena`` is the other version's ``core``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "ppteval" / "reference"
sys.path.insert(0, str(ROOT / "benchmarks"))

# Runs PPT-Eval's diff in a child process: stubs the modules diff.py imports but does not use here.
PPTEVAL_CHILD = r"""
import json, sys, types
for name in ("ppteval.utils", "ppteval.utils.onedrive", "ppteval.utils.powerpoint"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["ppteval.utils.onedrive"].OneDriveClient = object
sys.modules["ppteval.utils.powerpoint"].convert_powerpoint_to_images_sync = None
import importlib.util
pkg = types.ModuleType("ppteval"); pkg.__path__ = [sys.argv[1] + "/ppteval"]; sys.modules["ppteval"] = pkg
for sub in ("verify", "verify.ppt"):
    m = types.ModuleType("ppteval." + sub); m.__path__ = [sys.argv[1] + "/ppteval/" + sub.replace(".", "/")]
    sys.modules["ppteval." + sub] = m
from ppteval.verify.ppt.diff import PowerPointDiffEvaluator
d = PowerPointDiffEvaluator().compare_files(sys.argv[2], sys.argv[3])
print(json.dumps(d.to_dict(), default=str)[:80])
"""


def floor(a: Path, b: Path) -> int:
    """Unzip and parse every XML part of both decks; returns the element count (so nothing is skipped)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True)
    count = 0
    for path in (a, b):
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.filename.endswith((".xml", ".rels")):
                    root = etree.fromstring(zf.read(info), parser)
                    count += len(root)
    return count


CLOCK = time.perf_counter


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = CLOCK()
        fn()
        times.append(CLOCK() - t)
    return statistics.median(times)


def whole(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system, the child's own) of a command."""
    import os

    walls, cpus = [], []
    for i in range(repeat + 1):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{cmd[:3]} failed")
        if i:  # the first run warms the file cache
            walls.append(time.perf_counter() - t)
            cpus.append(usage.ru_utime + usage.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def pair(folder: Path) -> tuple[Path, Path]:
    """The 200-slide pair (made once in ``folder``)."""
    from deck_bench import edit_deck, make_deck

    folder.mkdir(parents=True, exist_ok=True)
    a, b = folder / "gen200-a.pptx", folder / "gen200-b.pptx"
    if not a.exists() or not b.exists():
        make_deck(200, a)
        edit_deck(a, b)
    return a, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--decks", type=Path, default=Path("/tmp/pptarena-golden-decks"))
    parser.add_argument("--profile", action="store_true", help="print a cProfile of diff_decks instead")
    parser.add_argument("--in-process-only", action="store_true")
    parser.add_argument(
        "--cpu", action="store_true", help="in-process times as CPU time (steadier under load)"
    )
    args = parser.parse_args()
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    from pptarena.deck import diff_decks, ppteval_diff

    a, b = pair(args.decks)
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(5):
            diff_decks(a, b)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    diff_decks(a, b)  # warm imports
    t_floor = timed(lambda: floor(a, b), args.repeat)
    t_diff = timed(lambda: diff_decks(a, b), args.repeat)
    t_view = timed(lambda: ppteval_diff(a, b), args.repeat)
    print(f"floor (unzip + parse all XML of both) {t_floor:.4f} s")
    print(f"diff_decks                            {t_diff:.4f} s  ({t_diff / t_floor:.1f}x floor)")
    print(f"ppteval_diff (our view)               {t_view:.4f} s  ({t_view / t_floor:.1f}x floor)")
    if args.in_process_only:
        return
    py = sys.executable
    arena = str(Path(py).with_name("arena"))
    t_py = whole([py, "-c", "pass"], args.repeat)
    t_arena = whole([arena, "diff", str(a), str(b), "--json"], args.repeat)
    print("whole processes (wall s / CPU s):")
    print(f"python -c pass                        {t_py[0]:.3f} / {t_py[1]:.3f}")
    print(f"arena diff --json                     {t_arena[0]:.3f} / {t_arena[1]:.3f}")
    if (REFERENCE / "ppteval" / "verify" / "ppt" / "diff.py").is_file():
        t_ref = whole([py, "-c", PPTEVAL_CHILD, str(REFERENCE), str(a), str(b)], args.repeat)
        print(
            f"PPT-Eval compare_files                {t_ref[0]:.3f} / {t_ref[1]:.3f}  -> arena/PPT-Eval "
            f"{t_arena[0] / t_ref[0]:.2f} (wall), {t_arena[1] / t_ref[1]:.2f} (CPU)"
        )
    else:
        print("PPT-Eval reference code not found: skipped")


if __name__ == "__main__":
    main()
