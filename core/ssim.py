"""Per-slide visual change detection between two renders of a deck (SSIM, scikit-image).

Slides of deck A and deck B are paired first: with ``matches`` from the deck
diff (:attr:`pptarena.deck.diff.DeckDiff.slide_matches`) when given, else by
``sld_id`` (when the two decks share ids), else by position. Each pair is
compared with grayscale SSIM on images scaled to at most ``max_side`` pixels
(the smaller of the two sizes wins; a different aspect ratio is stretched to
fit and flagged with ``size_changed``). Identical files short-cut to 1.0.

Every result row is a dict::

    {"a": 3, "b": 4,               # slide numbers (None for added / removed)
     "a_sld_id": 258, "b_sld_id": 258,
     "status": "matched",          # "matched" | "added" | "removed"
     "ssim": 0.93,                 # 1.0 = identical; 0.0 for added / removed
     "moved": True,                # its order relative to the other matched slides changed
     "size_changed": False,
     "path_a": "...", "path_b": "..."}
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .types import SlideImage

DEFAULT_MAX_SIDE = 512
DEFAULT_THRESHOLD = (
    0.9995  # measured: a one-character title edit scores 0.9979-0.9988 at 512 px; unchanged = 1.0
)
_MIN_SIDE = 7  # SSIM's default window needs at least 7x7 pixels

Match = tuple["int | None", "int | None"]


# --------------------------------------------------------------------------- matching


def _by_number(images: Sequence[SlideImage]) -> dict[int, SlideImage]:
    return {img.number: img for img in images}


def default_matches(images_a: Sequence[SlideImage], images_b: Sequence[SlideImage]) -> list[Match]:
    """Pair slides by ``sld_id`` when both decks share ids (unique within each), else by position."""
    ids_a = [img.sld_id for img in images_a]
    ids_b = [img.sld_id for img in images_b]
    usable = (
        None not in ids_a
        and None not in ids_b
        and len(set(ids_a)) == len(ids_a)
        and len(set(ids_b)) == len(ids_b)
        and bool(set(ids_a) & set(ids_b))
    )
    if usable:
        a_of = {img.sld_id: img.number for img in images_a}
        pairs: list[Match] = [(a_of.get(img.sld_id), img.number) for img in images_b]
        taken = {a for a, _ in pairs if a is not None}
        pairs += [(img.number, None) for img in images_a if img.number not in taken]
        return pairs
    pairs = [(a.number, b.number) for a, b in zip(images_a, images_b, strict=False)]
    pairs += [(a.number, None) for a in images_a[len(images_b) :]]
    pairs += [(None, b.number) for b in images_b[len(images_a) :]]
    return pairs


def _moved(pairs: Sequence[tuple[int, int]]) -> set[tuple[int, int]]:
    """Matched pairs outside a longest run that keeps A's order when read in B's order."""
    from .deck.match import lis_indices

    ordered = sorted(pairs, key=lambda p: p[1])
    keep = lis_indices([a for a, _ in ordered])
    return {ordered[i] for i in range(len(ordered)) if i not in keep}


# --------------------------------------------------------------------------- images


class _GrayCache:
    """Grayscale arrays of slide images at a given maximum side (per call; thread-safe)."""

    def __init__(self, max_side: int):
        self.max_side = max_side
        self._data: dict[tuple[str, tuple[int, int] | None], Any] = {}
        self._lock = threading.Lock()

    def load(self, path: Path, size: tuple[int, int] | None = None) -> Any:
        import numpy as np
        from PIL import Image

        key = (str(path), size)
        with self._lock:
            if key in self._data:
                return self._data[key]
        with Image.open(path) as src:
            gray = src.convert("L")
        if size is None:
            gray.thumbnail((self.max_side, self.max_side), Image.Resampling.BILINEAR)
        elif gray.size != size:
            gray = gray.resize(size, Image.Resampling.BILINEAR)
        arr = np.asarray(gray, dtype=np.float64)
        with self._lock:
            self._data[key] = arr
        return arr


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def image_ssim(
    path_a: Path, path_b: Path, *, max_side: int = DEFAULT_MAX_SIDE, _cache: _GrayCache | None = None
) -> tuple[float, bool]:
    """``(ssim, size_changed)`` of two slide images (grayscale, scaled to at most ``max_side``)."""
    from skimage.metrics import structural_similarity

    cache = _cache or _GrayCache(max_side)
    if _same_file(Path(path_a), Path(path_b)):
        return 1.0, False
    ga = cache.load(Path(path_a))
    gb = cache.load(Path(path_b))
    size_changed = False
    if ga.shape != gb.shape:
        ra, rb = ga.shape[1] / ga.shape[0], gb.shape[1] / gb.shape[0]
        size_changed = abs(ra - rb) > 0.01
        # compare at the smaller of the two sizes
        if ga.size <= gb.size:
            gb = cache.load(Path(path_b), (ga.shape[1], ga.shape[0]))
        else:
            ga = cache.load(Path(path_a), (gb.shape[1], gb.shape[0]))
    if min(ga.shape) < _MIN_SIDE:
        return (1.0 if (ga == gb).all() else 0.0), size_changed
    value = float(structural_similarity(ga, gb, data_range=255.0))
    return max(0.0, min(1.0, value)), size_changed


# --------------------------------------------------------------------------- public API


def slide_ssim(
    images_a: Sequence[SlideImage],
    images_b: Sequence[SlideImage],
    matches: Iterable[Match] | None = None,
    *,
    max_side: int = DEFAULT_MAX_SIDE,
) -> list[dict[str, Any]]:
    """One row per slide pair (see the module docstring), in the order of ``matches``.

    :param matches: ``(a_number | None, b_number | None)`` pairs, e.g. the deck diff's
        ``slide_matches``; None pairs by sld_id, else by position (:func:`default_matches`).
        Numbers that have no image are treated as added / removed.
    """
    a_map, b_map = _by_number(images_a), _by_number(images_b)
    pairs = list(matches) if matches is not None else default_matches(images_a, images_b)
    matched = [(a, b) for a, b in pairs if a in a_map and b in b_map]
    moved = _moved(matched)  # type: ignore[arg-type]
    cache = _GrayCache(max_side)
    rows: list[dict[str, Any]] = []
    for a, b in pairs:
        ia, ib = a_map.get(a) if a is not None else None, b_map.get(b) if b is not None else None
        row: dict[str, Any] = {
            "a": ia.number if ia else None,
            "b": ib.number if ib else None,
            "a_sld_id": ia.sld_id if ia else None,
            "b_sld_id": ib.sld_id if ib else None,
            "path_a": str(ia.path) if ia else None,
            "path_b": str(ib.path) if ib else None,
            "moved": False,
            "size_changed": False,
        }
        if ia is None and ib is None:
            continue
        if ia is None:
            row.update(status="added", ssim=0.0)
        elif ib is None:
            row.update(status="removed", ssim=0.0)
        else:
            value, size_changed = image_ssim(ia.path, ib.path, max_side=max_side, _cache=cache)
            row.update(status="matched", ssim=value, moved=(a, b) in moved, size_changed=size_changed)
        rows.append(row)
    return rows


def changed_slides(
    images_a: Sequence[SlideImage],
    images_b: Sequence[SlideImage],
    matches: Iterable[Match] | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    cap: int | None = None,
    include_moved: bool = False,
    max_side: int = DEFAULT_MAX_SIDE,
) -> list[dict[str, Any]]:
    """The slide pairs whose change is salient, in the order of the matches (rows as in :func:`slide_ssim`).

    A pair is salient when it was added or removed, when its SSIM is below
    ``threshold`` or when its size changed (and, with ``include_moved``, when it
    moved). With ``cap`` only the ``cap`` most changed (lowest SSIM; added and
    removed first) are kept, still in the order of the matches.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    if cap is not None and cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    rows = slide_ssim(images_a, images_b, matches, max_side=max_side)
    salient = [
        r
        for r in rows
        if r["status"] != "matched"
        or r["ssim"] < threshold
        or r["size_changed"]
        or (include_moved and r["moved"])
    ]
    if cap is not None and len(salient) > cap:
        keep = sorted(range(len(salient)), key=lambda i: (salient[i]["ssim"], i))[:cap]
        salient = [salient[i] for i in sorted(keep)]
    return salient


def renders_unchanged(images_a: Sequence[SlideImage], images_b: Sequence[SlideImage]) -> bool:
    """Cheap whole-deck check: same slide count and every slide's pixels identical, in order.

    Compares file bytes first and decodes only when the bytes differ.
    """
    if len(images_a) != len(images_b):
        return False
    from PIL import Image, ImageChops

    for ia, ib in zip(images_a, images_b, strict=True):
        if (ia.width, ia.height) != (ib.width, ib.height):
            return False
        if _same_file(Path(ia.path), Path(ib.path)):
            continue
        with Image.open(ia.path) as pa, Image.open(ib.path) as pb:
            if ImageChops.difference(pa.convert("RGB"), pb.convert("RGB")).getbbox() is not None:
                return False
    return True
