"""core/ssim.py on synthetic slide images: matching, added/removed/moved slides, sizes, threshold, cap."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from pptarena.ssim import changed_slides, default_matches, image_ssim, renders_unchanged, slide_ssim
from pptarena.types import SlideImage


def slide(
    tmp: Path, name: str, number: int, sld_id: int | None, *, label: str, size=(640, 360), box=0
) -> SlideImage:
    """A slide-like image: white page, a title bar, text-ish stripes depending on ``label``."""
    im = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(im)
    w, h = size
    d.rectangle([0, 0, w, h // 6], fill=(30, 60, 120))
    seed = sum(map(ord, label))
    for row in range(6):
        length = int(w * (0.3 + ((seed * (row + 3)) % 50) / 100))
        top = h // 4 + row * h // 10
        d.rectangle([w // 12, top, length, top + h // 30], fill="black")
    if box:
        d.ellipse([w - box - 10, h - box - 10, w - 10, h - 10], fill="red")
    path = tmp / f"{name}-{number:03d}.png"
    im.save(path)
    return SlideImage(number, sld_id, path, w, h)


def deck(tmp: Path, name: str, specs) -> list[SlideImage]:
    return [slide(tmp, name, n, sid, label=label, **kw) for n, (sid, label, kw) in enumerate(specs, start=1)]


def test_identical_renders_score_one_and_are_unchanged(tmp_path):
    a = deck(tmp_path, "a", [(256, "intro", {}), (257, "body", {}), (258, "end", {})])
    b = []
    for img in a:
        copy = tmp_path / ("b" + img.path.name[1:])
        shutil.copyfile(img.path, copy)
        b.append(SlideImage(img.number, img.sld_id, copy, img.width, img.height))
    rows = slide_ssim(a, b)
    assert [(r["a"], r["b"], r["status"], r["ssim"], r["moved"]) for r in rows] == [
        (1, 1, "matched", 1.0, False),
        (2, 2, "matched", 1.0, False),
        (3, 3, "matched", 1.0, False),
    ]
    assert changed_slides(a, b) == []
    assert renders_unchanged(a, b)
    assert not renders_unchanged(a, b[:2])


def test_one_changed_slide_is_the_only_one_reported(tmp_path):
    a = deck(tmp_path, "a", [(256, "intro", {}), (257, "body", {}), (258, "end", {})])
    b = deck(tmp_path, "b", [(256, "intro", {}), (257, "body", {"box": 40}), (258, "end", {})])
    changed = changed_slides(a, b)
    assert [(c["a"], c["b"]) for c in changed] == [(2, 2)]
    assert 0.9 < changed[0]["ssim"] < 0.999  # a small red circle on a white corner
    assert not renders_unchanged(a, b)


def test_matching_by_sld_id_finds_moves_additions_and_removals(tmp_path):
    a = deck(tmp_path, "a", [(256, "one", {}), (257, "two", {}), (258, "three", {}), (259, "four", {})])
    # B: slide 258 moved to the front, 257 deleted, a new slide 300 appended
    b = deck(tmp_path, "b", [(258, "three", {}), (256, "one", {}), (259, "four", {}), (300, "new", {})])
    assert default_matches(a, b) == [(3, 1), (1, 2), (4, 3), (None, 4), (2, None)]
    rows = slide_ssim(a, b)
    assert [(r["a"], r["b"], r["status"], r["moved"]) for r in rows] == [
        (3, 1, "matched", True),
        (1, 2, "matched", False),
        (4, 3, "matched", False),
        (None, 4, "added", False),
        (2, None, "removed", False),
    ]
    assert all(r["ssim"] == 1.0 for r in rows if r["status"] == "matched")
    assert [(c["a"], c["b"], c["status"]) for c in changed_slides(a, b)] == [
        (None, 4, "added"),
        (2, None, "removed"),
    ]
    moved = changed_slides(a, b, include_moved=True)
    assert [(c["a"], c["b"]) for c in moved] == [(3, 1), (None, 4), (2, None)]


def test_explicit_matches_win_and_position_is_the_fallback(tmp_path):
    a = deck(tmp_path, "a", [(None, "one", {}), (None, "two", {})])
    b = deck(tmp_path, "b", [(None, "one", {}), (None, "two", {}), (None, "three", {})])
    assert default_matches(a, b) == [(1, 1), (2, 2), (None, 3)]
    rows = slide_ssim(a, b, matches=[(1, 2), (2, None), (None, 1), (None, 3)])
    assert [(r["a"], r["b"], r["status"]) for r in rows] == [
        (1, 2, "matched"),
        (2, None, "removed"),
        (None, 1, "added"),
        (None, 3, "added"),
    ]
    assert rows[0]["ssim"] < 1.0
    # decks that share no sld_id at all (e.g. rebuilt by another tool) are paired by position
    c = deck(tmp_path, "c", [(900, "one", {}), (901, "two", {})])
    d = deck(tmp_path, "d", [(256, "one", {}), (257, "two", {})])
    assert default_matches(c, d) == [(1, 1), (2, 2)]


def test_size_mismatch_is_handled_and_flagged(tmp_path):
    a = [slide(tmp_path, "a", 1, 256, label="x", size=(1280, 720))]
    same_shape = [slide(tmp_path, "b", 1, 256, label="x", size=(640, 360))]
    other_shape = [slide(tmp_path, "c", 1, 256, label="x", size=(640, 480))]
    row = slide_ssim(a, same_shape)[0]
    assert row["ssim"] > 0.95 and row["size_changed"] is False
    row = slide_ssim(a, other_shape)[0]
    assert row["size_changed"] is True
    assert [c["b"] for c in changed_slides(a, other_shape)] == [1]
    value, changed = image_ssim(a[0].path, other_shape[0].path)
    assert 0.0 <= value <= 1.0 and changed


def test_threshold_and_cap(tmp_path):
    a = deck(tmp_path, "a", [(256 + i, f"s{i}", {}) for i in range(5)])
    b = deck(
        tmp_path,
        "b",
        [
            (256, "s0", {}),
            (257, "s1", {"box": 20}),
            (258, "s2", {"box": 120}),
            (259, "s3", {}),
            (260, "s4", {"box": 60}),
        ],
    )
    everything = changed_slides(a, b)
    assert [c["b"] for c in everything] == [2, 3, 5]
    by_change = sorted(everything, key=lambda c: c["ssim"])
    assert by_change[0]["b"] == 3  # the biggest circle changes the most
    capped = changed_slides(a, b, cap=2)
    assert [c["b"] for c in capped] == sorted(c["b"] for c in by_change[:2])  # most changed, in deck order
    assert changed_slides(a, b, cap=0) == []
    lenient = changed_slides(a, b, threshold=by_change[1]["ssim"])
    assert [c["b"] for c in lenient] == [3]
    with pytest.raises(ValueError):
        changed_slides(a, b, threshold=1.5)
