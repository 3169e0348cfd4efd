"""Matching the edits a prediction made against the edits the target made (both from the original).

Used by the ``structural`` judge. Inputs are two :class:`pptarena.deck.DeckDiff` objects:
``original → target`` (what was asked for) and ``original → prediction`` (what was done).

Vocabulary
----------
*edit*
    one record of a diff (``kind``, ``slide``, ``shape``, ``path``, ``old``, ``new``).
*key*
    what an edit changed, independent of the value: ``(slide ref, shape, kind, path)``. Slides are
    referred to by their number **in the original** (through ``slide_matches``), so both diffs
    speak about the same slide even when slides were added or removed. Character ranges of font
    edits (``text/p0[0:7]/size``) are dropped from the path, and all text edits of one shape are
    folded into one ``text`` edit over the shape's whole text, so a different paragraph split
    does not hide a correct edit.
*unit*
    the object an edit belongs to: a shape on a slide, a slide-level property (background,
    transition, notes...), a deck-level property (theme, sections...), or an added slide. Scores
    are averaged per unit, so one requested change that touches many records (a re-worded
    paragraph) weighs as much as one that touches a single record (a recoloured box).
*credit*
    how much of one target edit the prediction reproduced, in [0, 1]: the fraction of the way
    from the original value to the target value that the prediction covered, snapped to 1 within
    a tolerance (positions/sizes: a fraction of the slide size; colours: CIE76 ΔE; numbers: a
    relative tolerance; text: the share of the requested word change reproduced, see
    :mod:`.text_change`; added shapes/slides: normalised similarity). Values without a distance
    count as equal or not.

Why it is long: it is one algorithm in three steps sharing :class:`Item` and :class:`Tolerances`:
normalising both diffs into keyed items, crediting a value against the target's (numbers, geometry
in slide space, colours by ΔE, fills, text), and pairing edits per key into per-unit recall and
precision. The value credit could move to its own module, as the text credit did to
:mod:`.text_change` (not done yet).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from pptarena.deck.align import ratio
from pptarena.plugins.judges.structural.text_change import change_credit

_RANGE_RE = re.compile(r"\[\d+:\d+\]")
_TEXT_PATH_RE = re.compile(r"^text/p\d+$")
_SLIDE_KINDS = ("layout", "master", "hidden", "notes", "transition", "background", "animation")
_TEXT_KINDS = ("text", "table", "notes", "properties", "alt_text", "rename", "chart")
MAX_TEXT = 20_000
# the distance credit falls off over when the original had no comparable value (e.g. no fill before)
UNKNOWN_BASE = {
    "color": 100.0,
    "position": 0.5,
    "number": 1.0,
}  # characters compared per text value (bounded cost on untrusted decks)


@dataclass(frozen=True)
class Tolerances:
    """How close a value must be to the target's to count as reproduced.

    ``position``: fraction of the slide width/height (moves and resizes);
    ``color``: CIE76 ΔE between colours; ``number``: relative difference of numbers (font sizes,
    rotation, chart values); ``text``: the share of the requested change (words removed and
    inserted) at which a text edit counts as reproduced, and for added shapes/slides the normalised
    similarity (1.0 = identical after normalising case, Unicode form and whitespace).
    """

    position: float = 0.02
    color: float = 10.0
    number: float = 0.05
    text: float = 0.95


@dataclass
class Item:
    """One edit, normalised for matching."""

    index: int
    kind: str
    unit: tuple[Any, ...]
    key: tuple[Any, ...]
    old: Any
    new: Any
    edit: dict[str, Any]
    span: tuple[int, int] | None = None


@dataclass
class Match:
    """A target edit and the prediction edit paired with it (or None)."""

    target: Item
    prediction: Item | None
    credit: float


@dataclass
class MatchResult:
    """Everything the structural judge needs to score a prediction."""

    target_items: list[Item]
    prediction_items: list[Item]
    matches: list[Match]
    unit_recall: dict[tuple[Any, ...], float]
    unit_precision: dict[tuple[Any, ...], float]
    collateral_units: list[tuple[Any, ...]] = field(default_factory=list)
    paired: dict[int, float] = field(
        default_factory=dict
    )  # prediction item index -> credit of its target edit

    @property
    def recall(self) -> float:
        """Mean credit over the target's units (1.0 when the target changed nothing)."""
        if not self.unit_recall:
            return 1.0
        return sum(self.unit_recall.values()) / len(self.unit_recall)

    @property
    def precision(self) -> float:
        """Mean, over the prediction's units, of how much of each unit's edits the target also has.

        1.0 when the prediction changed nothing.
        """
        if not self.unit_precision:
            return 1.0
        return sum(self.unit_precision.values()) / len(self.unit_precision)


# --------------------------------------------------------------------------- normalising edits


def _slide_map(matches: Iterable[tuple[int | None, int | None]]) -> dict[int, int]:
    """B slide number → original slide number."""
    return {b: a for a, b in matches if a is not None and b is not None}


def _shapes_by_name(slide: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}

    def walk(shapes: list[dict[str, Any]]) -> None:
        for s in shapes:
            name = s.get("name")
            if name is not None and name not in out:
                out[name] = s
            walk(s.get("children") or [])

    walk((slide or {}).get("shapes") or [])
    return out


def _slide(summary: dict[str, Any], number: int | None) -> dict[str, Any] | None:
    if number is None:
        return None
    slides = summary.get("slides") or []
    if 1 <= number <= len(slides):
        return slides[number - 1]
    return None


def _slide_text(slide: dict[str, Any] | None) -> str:
    if not slide:
        return ""
    parts = [str(slide.get("title") or "")]
    for s in _shapes_by_name(slide).values():
        if s.get("text"):
            parts.append(str(s["text"]))
    return "\n".join(p for p in parts if p)


def normalise(diff: Any) -> list[Item]:
    """The edits of a diff as :class:`Item` objects (text edits folded per shape).

    ``diff`` is a :class:`pptarena.deck.DeckDiff` (``edits``, ``slide_matches``, ``summary_a``,
    ``summary_b``).
    """
    to_orig = _slide_map(diff.slide_matches)
    items: list[Item] = []
    folded: dict[tuple[Any, ...], Item] = {}
    added = 0
    shape_maps: dict[tuple[str, Any], dict[str, Any]] = {}

    def shapes_of(side: str, number: Any) -> dict[str, Any]:  # one name index per slide, not per edit
        key = (side, number)
        if key not in shape_maps:
            shape_maps[key] = _shapes_by_name(
                _slide(diff.summary_a if side == "a" else diff.summary_b, number)
            )
        return shape_maps[key]

    for n, e in enumerate(diff.edits):
        kind = e.get("kind", "")
        slide_b = e.get("slide")
        shape = e.get("shape")
        path = str(e.get("path") or "")
        if kind == "slide_added":
            added += 1
            text = _slide_text(_slide(diff.summary_b, slide_b))
            unit: tuple[Any, ...] = ("added_slide", added)
            items.append(Item(n, kind, unit, ("added_slide",), None, text, e))
            continue
        if kind == "slide_removed":
            ref: Any = ("slide", slide_b)  # slide_removed is numbered as in A (the original)
        elif slide_b is None:
            ref = ("deck",)
        else:
            orig = to_orig.get(slide_b)
            ref = ("slide", orig) if orig is not None else ("new_slide", slide_b)
        if kind in ("slide_removed", "slide_moved"):
            unit = (ref, kind)
        elif shape is None:
            unit = (ref, kind if kind in _SLIDE_KINDS else path.split("/")[0])
        else:
            unit = (ref, "shape", shape)
        if kind == "shape_added":
            # prediction and target may name a new shape differently: match added shapes by content
            unit = (ref, "added_shape", shape)
            items.append(Item(n, kind, unit, (ref, "shape_added"), None, e.get("new"), e))
            continue
        if kind == "text" and _TEXT_PATH_RE.match(path) and shape is not None:
            fkey = (ref, shape, "text")
            if fkey not in folded:
                old_shape = shapes_of("a", ref[1] if ref[0] == "slide" else None).get(shape)
                new_shape = shapes_of("b", slide_b).get(shape)
                old = old_shape.get("text") if old_shape else e.get("old")
                new = new_shape.get("text") if new_shape else e.get("new")
                item = Item(n, "text", unit, (ref, shape, "text", "text"), old, new, e)
                folded[fkey] = item
                items.append(item)
            continue
        span = None
        m = _RANGE_RE.search(path)
        if m:
            a, b = m.group(0)[1:-1].split(":")
            span = (int(a), int(b))
        norm_path = _RANGE_RE.sub("", path)
        items.append(Item(n, kind, unit, (ref, shape, kind, norm_path), e.get("old"), e.get("new"), e, span))
    return items


# --------------------------------------------------------------------------- value distances


def _norm_text(value: Any) -> str:
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = unicodedata.normalize("NFKC", text[:MAX_TEXT]).casefold()
    return " ".join(text.split())


def text_similarity(a: Any, b: Any) -> float:
    """Similarity of two texts in [0, 1] after normalising case, Unicode form and whitespace."""
    x, y = _norm_text(a), _norm_text(b)
    if x == y:
        return 1.0
    if not x or not y:
        return 0.0
    return ratio(x, y)  # difflib's ratio, with a bounded cost on long repetitive texts


def _rgb(value: Any) -> tuple[int, int, int] | None:
    if isinstance(value, dict):
        inner = value.get("color")
        value = value.get("rgb") or (inner.get("rgb") if isinstance(inner, dict) else None)
    if isinstance(value, str) and re.fullmatch(r"[0-9A-Fa-f]{6}", value):
        return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
    return None


def _lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    def lin(c: float) -> float:
        c /= 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def color_distance(a: Any, b: Any) -> float | None:
    """CIE76 ΔE between two colours (``"RRGGBB"`` or dicts with ``rgb``); None when either has no RGB."""
    ra, rb = _rgb(a), _rgb(b)
    if ra is None or rb is None:
        return None
    return math.dist(_lab(ra), _lab(rb))


COLOR_FAR = 5.0  # a colour more than this many colour tolerances from the target is another colour: no credit


def _color_progress(err: float, base: float, tol: float) -> float:
    """Like :func:`_progress`, but a clearly different colour (green for red) earns nothing."""
    return 0.0 if err > COLOR_FAR * tol and err > tol else _progress(err, base, tol)


def _progress(err: float, base: float, tol: float) -> float:
    """Credit for ending ``err`` away from the target when the original was ``base`` away."""
    if err <= tol:
        return 1.0
    if base <= tol:
        return 0.0
    return max(0.0, min(1.0, 1.0 - err / base))


def is_number(v: Any) -> TypeGuard[int | float]:
    """A real number (int or float), not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number_credit(old: Any, new: Any, got: Any, tol: float) -> float:
    scale = max(abs(new), abs(old) if is_number(old) else 0.0, 1e-9)
    base = abs(old - new) / scale if is_number(old) else UNKNOWN_BASE["number"]
    return _progress(abs(got - new) / scale, base, tol)


def _geometry_credit(old: Any, new: Any, got: Any, slide: tuple[int, int], tol: float) -> float:
    if not (isinstance(new, dict) and isinstance(got, dict)):
        return 1.0 if new == got else 0.0
    err = base = 0.0
    for k, v in new.items():
        dim = slide[0] if k in ("x", "cx") else slide[1]
        g = got.get(k)
        if not is_number(v) or not is_number(g):
            return 1.0 if new == got else 0.0
        err = max(err, abs(g - v) / dim)
        o = old.get(k) if isinstance(old, dict) else None
        base = max(base, abs(o - v) / dim if is_number(o) else UNKNOWN_BASE["position"])
    return _progress(err, base, tol)


def _fill_credit(old: Any, new: Any, got: Any, tol: Tolerances) -> float:
    if isinstance(new, dict) and isinstance(got, dict):
        if new.get("type") != got.get("type"):
            return 0.0
        d = color_distance(new.get("color"), got.get("color"))
        if d is not None:
            base = (
                color_distance(new.get("color"), (old or {}).get("color")) if isinstance(old, dict) else None
            )
            return _color_progress(d, base if base is not None else UNKNOWN_BASE["color"], tol.color)
    return 1.0 if _strip_ids(new) == _strip_ids(got) else 0.0


def _strip_ids(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip_ids(x) for k, x in v.items() if k not in ("id", "theme", "inherited")}
    if isinstance(v, list):
        return [_strip_ids(x) for x in v]
    return v


def _slide_space(t: Item, p: Item) -> tuple[Any, Any, Any] | None:
    """(old, new, got) in slide EMU from the diffs' ``abs_old``/``abs_new`` when both edits carry them.

    A shape inside a group has its position/size in the group's child coordinates, which a group
    drawn at another scale stretches or shrinks; the position tolerance is a fraction of the slide.
    """
    dt, dp = t.edit.get("detail"), p.edit.get("detail")
    if not (isinstance(dt, dict) and isinstance(dp, dict)):
        return None
    new, got = dt.get("abs_new"), dp.get("abs_new")
    if not (isinstance(new, dict) and isinstance(got, dict)):
        return None
    return dt.get("abs_old"), new, got


def value_credit(t: Item, p: Item, slide: tuple[int, int], tol: Tolerances) -> float:
    """Credit in [0, 1] for prediction edit ``p`` reproducing target edit ``t`` (same key assumed)."""
    old, new, got = t.old, t.new, p.new
    kind = t.kind
    if kind in ("move", "resize"):
        slide_space = _slide_space(t, p)  # shapes in groups: compare in slide EMU, not child units
        if slide_space is not None:
            old, new, got = slide_space
        credit = _geometry_credit(old, new, got, slide, tol.position)
    elif kind in ("fill", "line", "background"):
        credit = _fill_credit(old, new, got, tol)
    elif kind == "shape_added":
        a, b = new if isinstance(new, dict) else {}, got if isinstance(got, dict) else {}
        if a.get("kind") != b.get("kind"):
            return 0.0
        if not a.get("text") and not b.get("text"):
            return 1.0
        s = text_similarity(a.get("text"), b.get("text"))
        credit = 1.0 if s >= tol.text else s
    elif kind == "slide_added":
        s = text_similarity(new, got)
        credit = 1.0 if s >= tol.text else s
    elif isinstance(new, str) and isinstance(got, str) and kind in _TEXT_KINDS:
        credit = change_credit(
            old, new, got, tol.text
        )  # measured on the requested change, not the whole text
    elif is_number(new) and is_number(got):
        credit = _number_credit(old, new, got, tol.number)
    elif str(t.key[-1]).endswith("/color") or (kind == "theme" and _rgb(new) is not None):
        d = color_distance(new, got)
        base = color_distance(new, old)
        credit = (
            (1.0 if new == got else 0.0)
            if d is None
            else _color_progress(d, base if base is not None else UNKNOWN_BASE["color"], tol.color)
        )
    elif (
        isinstance(new, list) and isinstance(got, list) and new and all(isinstance(x, str) for x in new + got)
    ):
        credit = change_credit(
            "\n".join(map(str, old)) if isinstance(old, list) else old,
            "\n".join(new),
            "\n".join(got),
            tol.text,
        )
    else:
        credit = 1.0 if _strip_ids(new) == _strip_ids(got) else 0.0
    if t.span is not None and p.span is not None:  # font edits: how much of the character range overlaps
        lo, hi = max(t.span[0], p.span[0]), min(t.span[1], p.span[1])
        union = max(t.span[1], p.span[1]) - min(t.span[0], p.span[0])
        credit *= max(0, hi - lo) / union if union > 0 else 1.0
    return credit


# --------------------------------------------------------------------------- matching


MAX_PAIRS_PER_KEY = 20_000
PAIR_WINDOW = 16


def match_edits(target_diff: Any, prediction_diff: Any, tol: Tolerances | None = None) -> MatchResult:
    """Pair target edits with prediction edits and compute per-unit recall and precision.

    Each prediction edit serves at most one target edit; pairs are chosen greedily, best credit
    first, among edits with the same key (added shapes: same slide; added slides: any). When a key
    holds more than ``MAX_PAIRS_PER_KEY`` pairs, each target edit is compared only with the
    prediction edits within ``PAIR_WINDOW`` places of its own rank, so the cost stays linear.
    """
    tol = tol or Tolerances()
    size = (target_diff.summary_a or {}).get("slide_size") or {}
    cx, cy = size.get("cx"), size.get("cy")
    # a missing, zero or negative (untrusted) slide size would make every position error "within tolerance"
    slide = (
        int(cx) if is_number(cx) and cx > 0 else 9144000,
        int(cy) if is_number(cy) and cy > 0 else 6858000,
    )
    t_items = normalise(target_diff)
    p_items = normalise(prediction_diff)
    by_key: dict[tuple[Any, ...], list[Item]] = {}
    for p in p_items:
        by_key.setdefault(p.key, []).append(p)
    t_by_key: dict[tuple[Any, ...], list[int]] = {}
    for ti, t in enumerate(t_items):
        t_by_key.setdefault(t.key, []).append(ti)
    candidates: list[tuple[float, int, int, Item, Item]] = []
    for key, t_indices in t_by_key.items():
        group = by_key.get(key, [])
        all_pairs = len(t_indices) * len(group) <= MAX_PAIRS_PER_KEY
        for rank, ti in enumerate(t_indices):
            t = t_items[ti]
            # huge groups (hundreds of added shapes on one slide, from an untrusted deck): compare each
            # target edit only with prediction edits near the same position in order, keeping this linear
            window = group if all_pairs else group[max(0, rank - PAIR_WINDOW) : rank + PAIR_WINDOW + 1]
            for p in window:
                c = value_credit(t, p, slide, tol)
                candidates.append((c, ti, p.index, t, p))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    used_t: dict[int, Match] = {}
    used_p: set[int] = set()
    credit_of_p: dict[int, float] = {}
    for c, ti, pidx, t, p in candidates:
        if ti in used_t or pidx in used_p:
            continue
        used_t[ti] = Match(t, p, c)
        used_p.add(pidx)
        credit_of_p[pidx] = c
    matches = [used_t.get(i) or Match(t, None, 0.0) for i, t in enumerate(t_items)]

    unit_recall: dict[tuple[Any, ...], list[float]] = {}
    for m in matches:
        unit_recall.setdefault(m.target.unit, []).append(m.credit)
    unit_precision: dict[tuple[Any, ...], list[float]] = {}
    for p in p_items:  # unmatched prediction edits (extra, duplicate or unrelated) earn nothing
        unit_precision.setdefault(p.unit, []).append(credit_of_p.get(p.index, 0.0))
    target_units = {t.unit for t in t_items}
    collateral = [
        u for u in unit_precision if u not in target_units and not _same_new_object(u, target_units)
    ]
    return MatchResult(
        target_items=t_items,
        prediction_items=p_items,
        matches=matches,
        unit_recall={u: sum(v) / len(v) for u, v in unit_recall.items()},
        unit_precision={u: sum(v) / len(v) for u, v in unit_precision.items()},
        collateral_units=collateral,
        paired=credit_of_p,
    )


def _same_new_object(unit: tuple[Any, ...], target_units: set[tuple[Any, ...]]) -> bool:
    """Added shapes/slides are named freely: an added object where the target added one is not collateral."""
    if unit and unit[0] == "added_slide":
        return any(u[0] == "added_slide" for u in target_units)
    if len(unit) == 3 and unit[1] == "added_shape":
        return any(len(u) == 3 and u[0] == unit[0] and u[1] == "added_shape" for u in target_units)
    return False


def describe_unit(unit: tuple[Any, ...]) -> str:
    """A short human label for a unit, e.g. ``slide 2 / shape "Title 1"``."""
    if unit and unit[0] == "added_slide":
        return f"added slide #{unit[1]}"
    ref = unit[0]
    where = (
        "deck" if ref == ("deck",) else (f"slide {ref[1]}" if ref[0] == "slide" else f"new slide {ref[1]}")
    )
    if len(unit) == 3 and unit[1] == "shape":
        return f'{where} / shape "{unit[2]}"'
    if len(unit) == 3 and unit[1] == "added_shape":
        return f'{where} / added shape "{unit[2]}"'
    return f"{where} / {unit[1]}"


__all__ = [
    "Item",
    "Match",
    "MatchResult",
    "Tolerances",
    "color_distance",
    "describe_unit",
    "match_edits",
    "normalise",
    "text_similarity",
    "value_credit",
]
