"""`arena render` as a whole command vs PPT-Eval's soffice + pdftoppm, and warm slides/s per core.

Usage::

    python benchmarks/render_command_bench.py                      # three corpus decks, 5 rounds
    python benchmarks/render_command_bench.py --rounds 7 --before /tmp/base   # also an older version
    python benchmarks/render_command_bench.py --warm-only --slides 30 200

Part 1, whole commands on the same decks (default: three real decks of ``../shared/corpus``, 66
slides), run interleaved round by round so that the load of this shared machine hits all alike:

* ``ppteval``: what PPT-Eval runs, per deck ``soffice --headless --convert-to pdf`` (on a profile
  initialised beforehand, as on a desktop) then ``pdftoppm -png -r 96`` (1280x720 for 16:9 decks);
* ``arena``: ``python -m pptarena.cli render DECK... --out DIR --no-cache`` in a fresh process (it
  starts its offices, converts and rasterises). Its cache folder (``$PPTARENA_CACHE``) is a
  temporary one, so the first round also builds the pre-initialised office profile: that round is
  reported on its own ("first ever"), the others are the one-off command as users meet it;
* ``before`` (with ``--before DIR``): the same command with ``PYTHONPATH=DIR``, where ``DIR`` holds
  an older ``pptarena`` (e.g. ``git archive BASE core plugins`` laid out as ``DIR/pptarena`` and
  ``DIR/pptarena/plugins``).

Part 2, warm throughput: python-pptx decks of ``--slides`` sizes (render_bench's generator), a
running ``libreoffice`` renderer (1 worker, cache off) renders each deck once to warm up, then
``--repeat`` times; reported are wall slides/s and slides per CPU-second ("per core"): the CPU of
this process (rasterising, PNG encoding) plus that of the office process, read from /proc.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT_DECKS = (
    "pythonpptx_ph-populated-placeholders.pptx",
    "poi_stress013.pptx",
    "poi_aascu_downloadasset_5864.pptx",
)
sys.path.insert(0, str(ROOT / "benchmarks"))


def ppteval(decks: list[Path], out: Path, profile: Path) -> int:
    """PPT-Eval's pipeline, deck after deck; returns the number of PNGs written."""
    for deck in decks:
        subprocess.run(
            ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", "--convert-to", "pdf",
             "--outdir", str(out), str(deck)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        subprocess.run(
            ["pdftoppm", "-png", "-r", "96", str(out / (deck.stem + ".pdf")), str(out / deck.stem)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    return len(list(out.glob("*.png")))


def arena(decks: list[Path], out: Path, env: dict[str, str]) -> int:
    """``arena render`` in a fresh interpreter; the number of PNGs written, -1 when the command failed."""
    cmd = [sys.executable, "-m", "pptarena.cli", "render", *map(str, decks), "--out", str(out), "--no-cache"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        print(f"arena render failed with code {done.returncode}:\n{done.stderr[-1500:]}", flush=True)
        return -1
    return len(list(out.glob("*/slide-*.png")))


def whole_commands(decks: list[Path], rounds: int, before: Path | None, work: Path) -> dict:
    """Interleaved rounds of every variant; medians and the per-round seconds."""
    env = {**os.environ, "PPTARENA_CACHE": str(work / "cache"), "PYTHONFAULTHANDLER": "1"}
    env.pop("PYTHONPATH", None)
    variants: dict[str, object] = {"ppteval": None, "arena": env}
    if before is not None:
        variants["before"] = {**env, "PYTHONPATH": str(before), "PPTARENA_CACHE": str(work / "cache-before")}
    profile = work / "ppteval-profile"
    ppteval(decks[:1], Path(tempfile.mkdtemp(dir=work)), profile)  # initialise it, as on a desktop
    times: dict[str, list[float]] = {name: [] for name in variants}
    pages: dict[str, int] = {}
    failures: dict[str, int] = {name: 0 for name in variants}
    for r in range(rounds + 1):  # round 0: first ever arena command (builds the office profile)
        for name, venv in variants.items():
            out = Path(tempfile.mkdtemp(dir=work))
            started = time.perf_counter()
            n = ppteval(decks, out, profile) if venv is None else arena(decks, out, venv)  # type: ignore[arg-type]
            seconds = time.perf_counter() - started
            shutil.rmtree(out)
            if n < 0:  # a crashed command: counted, not timed
                failures[name] += 1
                seconds = float("nan")
            else:
                pages[name] = n
            times[name].append(seconds)
            print(f"round {r} {name:<8} {seconds:7.2f} s  ({n} PNGs)", flush=True)
    result = {"pages": pages, "failures": failures, "first_round": {k: v[0] for k, v in times.items()}}
    result["rounds"] = times
    result["median"] = {k: statistics.median([t for t in v[1:] if t == t]) for k, v in times.items()}
    base = result["median"]["ppteval"]
    result["speedup"] = {k: base / v for k, v in result["median"].items()}
    ratios = [p / a for p, a in zip(times["ppteval"][1:], times["arena"][1:], strict=True) if a == a]
    result["speedup_per_round"] = {
        "min": min(ratios),
        "median": statistics.median(ratios),
        "max": max(ratios),
    }
    return result


def _cpu_of(session: int | None) -> float:
    """utime + stime in seconds of every live process in ``session`` (the office and its wrappers)."""
    if session is None:
        return 0.0
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:  # field 6 of stat: the session id
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def warm_throughput(sizes: list[int], repeat: int, work: Path) -> list[dict]:
    """Slides/s (wall) and slides per CPU-second of a warm 1-worker renderer."""
    from render_bench import make_deck, renderer

    rows = []
    for n in sizes:
        deck = make_deck(work / f"generated-{n}.pptx", n)
        r = renderer(work, cache=False, workers=1)
        r.render(deck, Path(tempfile.mkdtemp(dir=work)))  # warm up (starts the office)
        office_pid = r._slots[0].office._office_pid  # the office's session (it is started with setsid)
        walls, cpus = [], []
        for _ in range(repeat):
            cpu0, office0, t0 = time.process_time(), _cpu_of(office_pid), time.perf_counter()
            r.render(deck, Path(tempfile.mkdtemp(dir=work)))
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - cpu0 + _cpu_of(office_pid) - office0)
        r.close()
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        row = {"slides": n, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
               "slides_per_s": round(n / wall, 1), "slides_per_cpu_s": round(n / cpu, 1)}  # fmt: skip
        print(f"warm {n:>4} slides: {wall:6.2f} s wall, {cpu:6.2f} s CPU -> {n / wall:5.1f} slides/s, "
              f"{n / cpu:5.1f} slides per CPU-second", flush=True)  # fmt: skip
        rows.append(row)
    return rows


def main() -> None:
    """Run the benchmark; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("decks", nargs="*", type=Path, help="decks for part 1 (default: three corpus decks)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds after the first (median)")
    ap.add_argument("--before", type=Path, help="a folder holding an older pptarena to compare with")
    ap.add_argument("--slides", type=int, nargs="*", default=[30, 200], help="warm deck sizes (part 2)")
    ap.add_argument("--repeat", type=int, default=3, help="warm renders per size (median)")
    ap.add_argument("--warm-only", action="store_true", help="skip part 1")
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    args = ap.parse_args()
    decks = [p.resolve() for p in args.decks] or [CORPUS / name for name in DEFAULT_DECKS]
    print(json.dumps({"cores": os.cpu_count(), "load": os.getloadavg()}), flush=True)
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="render-cmd-bench-") as tmp:
        work = Path(tmp)
        if not args.warm_only:
            missing = [d for d in decks if not d.is_file()]
            if missing or not shutil.which("pdftoppm") or not shutil.which("soffice"):
                sys.exit(f"need soffice, pdftoppm (poppler-utils) and the decks {missing or ''}")
            whole = whole_commands(decks, args.rounds, args.before, work)
            results["whole_commands"] = whole
            keys = ("failures", "first_round", "median", "speedup", "speedup_per_round")
            print(json.dumps({k: whole[k] for k in keys},
                             indent=1), flush=True)  # fmt: skip
        if args.slides:
            results["warm"] = warm_throughput(args.slides, args.repeat, work)
    results["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
