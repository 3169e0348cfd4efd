"""Deck engine benchmark: summary and diff time and peak memory.

Generates python-pptx decks of 10, 50, 200 and 1000 slides (title, a bulleted body with three
paragraphs, a rectangle and a text box per slide) plus an edited copy (every 10th slide: text
changed and a shape moved; one slide deleted; one moved), then measures:

* summary: ``summarize(path)`` of one deck;
* diff: ``diff_decks(a, b)`` from the two paths (both summaries + matching + edits);
* peak memory (tracemalloc, separate run) of the diff;

and the same over every deck of ../shared/corpus (summary + self-diff).

Run: ``python benchmarks/deck_bench.py [--sizes 10,50,200,1000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from pptx import Presentation
from pptx.util import Emu, Pt

from pptarena.deck import DeckError, diff_decks, summarize

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def make_deck(n: int, path: Path) -> None:
    prs = Presentation()
    layout = prs.slide_layouts[1]
    for i in range(n):
        slide = prs.slides.add_slide(layout)
        slide.shapes.title.text = f"Slide {i + 1}: quarterly results"
        body = slide.placeholders[1].text_frame
        body.text = f"Revenue grew {i % 17} percent"
        for k in range(2):
            p = body.add_paragraph()
            p.text = f"Point {k + 1} about topic {i}"
            p.level = 1
        box = slide.shapes.add_textbox(Emu(500000), Emu(5800000), Emu(3000000), Emu(400000))
        box.text_frame.text = f"footnote {i}"
        slide.shapes.add_shape(1, Emu(6000000), Emu(1000000), Emu(1000000), Emu(800000))
    prs.save(path)


def edit_deck(src: Path, dst: Path) -> None:
    prs = Presentation(src)
    for i, slide in enumerate(prs.slides):
        if i % 10 == 0:
            slide.shapes.title.text_frame.paragraphs[0].runs[0].text += " (revised)"
            shape = slide.shapes[-1]
            shape.left = shape.left + Emu(100000)
            slide.shapes.title.text_frame.paragraphs[0].runs[0].font.size = Pt(40)
    lst = prs.slides._sldIdLst
    if len(lst) > 3:
        moved = lst[2]
        lst.remove(moved)
        lst.append(moved)
        victim = lst[1]
        prs.part.drop_rel(victim.rId)
        lst.remove(victim)
    prs.save(dst)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def peak_mib(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / (1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,200,1000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print("| slides | deck KiB | summary s | diff A→B s | edits | diff peak MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            a, b = Path(tmp) / f"a{n}.pptx", Path(tmp) / f"b{n}.pptx"
            make_deck(n, a)
            edit_deck(a, b)
            repeat = args.repeat if n <= 200 else max(1, args.repeat // 2)
            t_sum = timed(lambda a=a: summarize(a), repeat)
            t_diff = timed(lambda a=a, b=b: diff_decks(a, b), repeat)
            edits = diff_decks(a, b).edit_count
            mem = peak_mib(lambda a=a, b=b: diff_decks(a, b))
            print(f"| {n} | {a.stat().st_size // 1024} | {t_sum:.3f} | {t_diff:.3f} | {edits} | {mem:.1f} |")
    if CORPUS.is_dir():
        decks = sorted(
            p for p in CORPUS.iterdir() if p.suffix.lower() in (".pptx", ".pptm", ".ppsx", ".potx")
        )
        total_sum = total_diff = 0.0
        errors = 0
        slides = 0
        worst = (0.0, "")
        for path in decks:
            try:
                t = time.perf_counter()
                s = summarize(path)
                t_sum = time.perf_counter() - t
                t = time.perf_counter()
                diff_decks(s, summarize(path))
                t_diff = time.perf_counter() - t
            except DeckError:
                errors += 1
                continue
            slides += len(s["slides"])
            total_sum += t_sum
            total_diff += t_diff
            worst = max(worst, (t_sum, path.name))
        print(
            f"\ncorpus: {len(decks)} decks, {slides} slides, {errors} DeckError; "
            f"summary total {total_sum:.2f} s, "
            f"self-diff total (incl. 2nd summary) {total_diff:.2f} s; "
            f"slowest summary {worst[0]:.3f} s ({worst[1]})"
        )


if __name__ == "__main__":
    main()
