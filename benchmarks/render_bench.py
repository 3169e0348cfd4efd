"""Rendering benchmark: slides per second cold / warm, one and two workers, cache hits.

Usage::

    python benchmarks/render_bench.py                  # 30- and 200-slide generated decks
    python benchmarks/render_bench.py --slides 30 --repeat 3 --deck ../shared/corpus/poi_stress021_rtl.pptx

Decks are generated with python-pptx into a temporary folder (title, bullets,
shapes, a table on every 3rd slide, a picture on every 5th), so the numbers
do not depend on files outside the repository; ``--deck`` adds real decks.

Rows:

* ``ppteval baseline``: what PPT-Eval runs per deck, ``soffice --headless
  --convert-to pdf`` (profile already initialised) then ``pdftoppm -png -r 96``.
* ``oneshot``: our renderer with ``warm=false`` (a fresh soffice per deck).
* ``cold``: a new renderer's first deck (starts LibreOffice on a copy of the pre-initialised
  profile, which the first renderer of the run built); see render_command_bench.py for whole commands.
* ``warm``: later decks on a running renderer (cache off).
* ``warm x2 decks, workers=N``: two decks through ``render_many``.
* ``cached``: the same deck again with the cache on (copies the PNGs).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pptarena.types import ComponentContext


def make_deck(path: Path, slides: int) -> Path:
    """A deterministic deck of ``slides`` slides with text, shapes, tables and pictures."""
    from PIL import Image, ImageDraw
    from pptx import Presentation
    from pptx.util import Inches, Pt

    prs = Presentation()
    prs.slide_width, prs.slide_height = Inches(13.333), Inches(7.5)
    pic = io.BytesIO()
    im = Image.new("RGB", (400, 300), (240, 240, 255))
    ImageDraw.Draw(im).ellipse([50, 50, 350, 250], fill=(200, 80, 40))
    im.save(pic, "PNG")
    for n in range(1, slides + 1):
        s = prs.slides.add_slide(prs.slide_layouts[1])
        s.shapes.title.text = f"Section {n // 10 + 1}: topic {n}"
        body = s.placeholders[1].text_frame
        body.text = f"Key point {n}.1 about the quarterly results and what they mean"
        for k in range(2, 6):
            body.add_paragraph().text = f"Supporting detail {n}.{k} with a few more words to wrap"
        box = s.shapes.add_shape(1, Inches(9.5), Inches(5.5), Inches(3), Inches(1.2))
        box.text_frame.text = f"Callout {n}"
        box.text_frame.paragraphs[0].runs[0].font.size = Pt(20)
        if n % 3 == 0:
            table = s.shapes.add_table(4, 4, Inches(7), Inches(1.8), Inches(5.5), Inches(2.5)).table
            for r in range(4):
                for c in range(4):
                    table.cell(r, c).text = f"{r * c + n}"
        if n % 5 == 0:
            pic.seek(0)
            s.shapes.add_picture(pic, Inches(0.5), Inches(5.2), Inches(2.4), Inches(1.8))
    prs.save(str(path))
    return path


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median wall time of ``repeat`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def ppteval_baseline(deck: Path, work: Path, profile: Path) -> int:
    """soffice --convert-to pdf + pdftoppm -png -r 96, as PPT-Eval does it (returns page count)."""
    out = Path(tempfile.mkdtemp(dir=work))
    subprocess.run(
        [
            "soffice",
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out),
            str(deck),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    subprocess.run(
        ["pdftoppm", "-png", "-r", "96", str(out / (deck.stem + ".pdf")), str(out / "slide")],
        check=True,
        capture_output=True,
        timeout=600,
    )
    count = len(list(out.glob("slide-*.png")))
    shutil.rmtree(out)
    return count


def renderer(work: Path, **options):
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer

    opts = LibreOfficeRenderer.Options(**{"cache_dir": work / "cache", **options})
    return LibreOfficeRenderer(opts, ComponentContext(cache_dir=work, model=lambda ref: None))


def bench_deck(deck: Path, slides: int, work: Path, repeat: int, rows: list[dict]) -> None:
    def row(what: str, seconds: float, n: int) -> None:
        rows.append(
            {
                "deck": deck.name,
                "slides": slides,
                "what": what,
                "seconds": round(seconds, 3),
                "slides_per_s": round(n / seconds, 1) if seconds else None,
            }
        )
        print(f"  {what:<34} {seconds:8.3f} s  {n / seconds:8.1f} slides/s", flush=True)

    def out() -> Path:
        return Path(tempfile.mkdtemp(dir=work))

    print(f"{deck.name}: {slides} slides", flush=True)
    if shutil.which("pdftoppm"):
        profile = work / "baseline-profile"
        ppteval_baseline(deck, work, profile)  # initialise the profile once, like a normal desktop
        t, n = timed(lambda: ppteval_baseline(deck, work, profile), repeat)
        assert n == slides, (n, slides)
        row("ppteval baseline (soffice+pdftoppm)", t, slides)
    else:
        print("  (pdftoppm not installed: baseline skipped; apt-get install poppler-utils)")

    r = renderer(work, warm=False, cache=False)
    t, _ = timed(lambda: r.render(deck, out()), repeat)
    r.close()
    row("oneshot (fresh soffice per deck)", t, slides)

    colds, warms = [], []
    for _ in range(repeat):
        r = renderer(work, cache=False)
        started = time.perf_counter()
        r.render(deck, out())
        colds.append(time.perf_counter() - started)
        t, _ = timed(lambda r=r: r.render(deck, out()), 1)
        warms.append(t)
        assert r.mode == "warm"
        r.close()
    row("cold (starts LibreOffice)", statistics.median(colds), slides)
    r = renderer(work, cache=False)
    r.render(deck, out())
    t_warm, _ = timed(lambda: r.render(deck, out()), repeat)
    row("warm, 1 worker", t_warm, slides)
    copy = work / f"copy-{deck.name}"
    shutil.copyfile(deck, copy)
    t, _ = timed(lambda: r.render_many([deck, copy], out()), repeat)
    r.close()
    row("warm x2 decks, workers=1", t, 2 * slides)
    r2 = renderer(work, cache=False, workers=2)
    r2.render_many([deck, copy], out())  # start both offices
    t, _ = timed(lambda: r2.render_many([deck, copy], out()), repeat)
    r2.close()
    row("warm x2 decks, workers=2", t, 2 * slides)

    rc = renderer(work, cache=True)
    rc.render(deck, out())
    t, _ = timed(lambda: rc.render(deck, out()), max(5, repeat))
    rc.close()
    row("cached re-render", t, slides)


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lo = subprocess.run(["soffice", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "libreoffice": lo,
        "platform": platform.platform(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slides", type=int, nargs="*", default=[30, 200], help="generated deck sizes")
    ap.add_argument("--deck", type=Path, action="append", default=[], help="also benchmark this deck")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median reported)")
    ap.add_argument("--json", type=Path, help="write the rows as JSON here")
    args = ap.parse_args()
    info = machine()
    print(json.dumps(info), flush=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="render-bench-") as tmp:
        work = Path(tmp)
        decks = [(make_deck(work / f"generated-{n}.pptx", n), n) for n in args.slides]
        for path in args.deck:
            from pptarena.deck import slide_ids

            decks.append((path, len(slide_ids(path))))
        for deck, n in decks:
            bench_deck(deck, n, work, args.repeat, rows)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
