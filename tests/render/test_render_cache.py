"""core/render.py: PDF → PNG pages, slide files and the content-hash render cache (no office needed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from pptarena.render import (
    RenderCache,
    cached_render,
    clear_slide_files,
    deck_output_dirs,
    pdf_to_pngs,
    slide_file_name,
    target_size,
)
from pptarena.types import InfraError, SlideImage


def make_pdf(path: Path, pages: int, size: tuple[int, int] = (720, 405)) -> Path:
    """A real multi-page PDF (Pillow writes one page per image; 72 dpi → points = pixels)."""
    images = []
    for n in range(pages):
        im = Image.new("RGB", size, "white")
        ImageDraw.Draw(im).rectangle([20 + 30 * n, 20, 120 + 30 * n, 120], fill="black")
        images.append(im)
    images[0].save(path, "PDF", resolution=72.0, save_all=True, append_images=images[1:])
    return path


def test_pdf_pages_become_pngs_with_exact_long_edge(tmp_path):
    pdf = make_pdf(tmp_path / "deck.pdf", 3)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "slide-009.png").write_bytes(b"stale")
    (tmp_path / "out" / "notes.txt").write_text("keep me")
    slides = [(1, 256, False), (2, 257, True), (3, 300, False)]
    images = pdf_to_pngs(pdf, tmp_path / "out", size=1000, slides=slides)
    assert [(i.number, i.sld_id, i.hidden, i.width, i.height) for i in images] == [
        (1, 256, False, 1000, 563),
        (2, 257, True, 1000, 563),
        (3, 300, False, 1000, 563),
    ]
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["notes.txt", "slide-001.png", "slide-002.png", "slide-003.png"]
    with Image.open(images[1].path) as im:
        assert im.size == (1000, 563)
        assert im.convert("L").getextrema() == (0, 255)


def test_page_count_mismatch_is_infra_error(tmp_path):
    pdf = make_pdf(tmp_path / "deck.pdf", 2)
    with pytest.raises(InfraError, match="2 page.*3 slide"):
        pdf_to_pngs(pdf, tmp_path / "out", size=200, slides=[(1, 1, False), (2, 2, False), (3, 3, True)])


def test_unreadable_pdf_is_infra_error(tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 garbage")
    with pytest.raises(InfraError, match="cannot read the PDF"):
        pdf_to_pngs(bad, tmp_path / "out", size=200, slides=[(1, 1, False)])


def test_helpers():
    assert slide_file_name(7) == "slide-007.png" and slide_file_name(1234) == "slide-1234.png"
    assert target_size(960, 540, 1280) == (1280, 720)
    assert target_size(540, 960, 1280) == (720, 1280)
    assert target_size(720, 540, 1280) == (1280, 960)
    with pytest.raises(InfraError):
        target_size(0, 540, 1280)
    dirs = deck_output_dirs(
        [Path("a/x.pptx"), Path("b/x.pptx"), Path("c/X.pptm"), Path("y.pptx")], Path("out")
    )
    assert [d.name for d in dirs.values()] == ["x", "x-2", "X-3", "y"]


def test_clear_slide_files_only_touches_slide_pngs(tmp_path):
    for name in ["slide-001.png", "slide-0002.png", "slide-1.png", "other.png"]:
        (tmp_path / name).write_bytes(b"x")
    clear_slide_files(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.png", "slide-1.png"]


class CountingProducer:
    """A stand-in renderer that draws numbered PNGs and counts its calls."""

    def __init__(self, slides: int = 3):
        self.calls = 0
        self.slides = slides

    def __call__(self, deck: Path, out_dir: Path) -> list[SlideImage]:
        self.calls += 1
        out_dir.mkdir(parents=True, exist_ok=True)
        images = []
        for n in range(1, self.slides + 1):
            path = out_dir / slide_file_name(n)
            Image.new("RGB", (64, 36), (n * 40, 0, 0)).save(path)
            images.append(SlideImage(n, 255 + n, path, 64, 36, hidden=n == 2))
        return images


def test_cache_hit_copies_files_and_skips_the_renderer(tmp_path):
    deck = tmp_path / "d.pptx"
    deck.write_bytes(b"deck bytes v1")
    cache = RenderCache(tmp_path / "renders")
    produce = CountingProducer()
    first = cached_render(
        deck, tmp_path / "o1", renderer="fake", settings={"size": 64}, cache=cache, produce=produce
    )
    started = time.perf_counter()
    second = cached_render(
        deck, tmp_path / "o2", renderer="fake", settings={"size": 64}, cache=cache, produce=produce
    )
    assert (
        time.perf_counter() - started < 5
    )  # sanity only; the speed target is measured by benchmarks/render_bench.py
    assert produce.calls == 1
    assert [(i.number, i.sld_id, i.hidden, i.width) for i in second] == [
        (i.number, i.sld_id, i.hidden, i.width) for i in first
    ]
    assert all(i.path.parent == tmp_path / "o2" for i in second)
    assert [i.path.read_bytes() for i in second] == [i.path.read_bytes() for i in first]
    second[0].path.write_bytes(b"scribbled")  # editing an output never corrupts the cache
    third = cached_render(
        deck, tmp_path / "o3", renderer="fake", settings={"size": 64}, cache=cache, produce=produce
    )
    assert third[0].path.read_bytes() == first[0].path.read_bytes()


def test_cache_key_covers_bytes_renderer_and_settings(tmp_path):
    deck = tmp_path / "d.pptx"
    deck.write_bytes(b"v1")
    key = RenderCache.key(deck, "libreoffice", {"size": 1280})
    assert key == RenderCache.key(deck, "libreoffice", {"size": 1280})
    assert key != RenderCache.key(deck, "libreoffice", {"size": 640})
    assert key != RenderCache.key(deck, "powerpoint", {"size": 1280})
    renamed = tmp_path / "other-name.pptx"
    renamed.write_bytes(b"v1")
    assert key == RenderCache.key(renamed, "libreoffice", {"size": 1280})  # content, not the name
    deck.write_bytes(b"v2")
    assert key != RenderCache.key(deck, "libreoffice", {"size": 1280})


def test_damaged_entry_is_a_miss_and_no_cache_always_renders(tmp_path):
    deck = tmp_path / "d.pptx"
    deck.write_bytes(b"bytes")
    cache = RenderCache(tmp_path / "renders")
    produce = CountingProducer(2)
    cached_render(deck, tmp_path / "o1", renderer="fake", settings={}, cache=cache, produce=produce)
    entry = cache.entry(RenderCache.key(deck, "fake", {}))
    meta = json.loads((entry / "meta.json").read_text())
    assert [s["number"] for s in meta["slides"]] == [1, 2]
    (entry / "slide-002.png").unlink()
    assert cache.load(RenderCache.key(deck, "fake", {}), tmp_path / "o2") is None
    (entry / "meta.json").write_text("{not json")
    assert cache.load(RenderCache.key(deck, "fake", {}), tmp_path / "o2") is None
    cached_render(deck, tmp_path / "o3", renderer="fake", settings={}, cache=None, produce=produce)
    cached_render(deck, tmp_path / "o3", renderer="fake", settings={}, cache=None, produce=produce)
    assert produce.calls == 3
    with pytest.raises(FileNotFoundError, match="deck not found"):
        cached_render(
            tmp_path / "missing.pptx",
            tmp_path / "o4",
            renderer="fake",
            settings={},
            cache=cache,
            produce=produce,
        )
