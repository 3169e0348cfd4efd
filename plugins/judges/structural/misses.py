"""Naming the structural judge's misses: wrong value, wrong object, overlay (look-alike), or missed.

For every requested object (unit) the prediction did not reproduce in full, one class:

``wrong_value``
    the prediction changed the requested object in a requested way (same kind of edit, e.g. the
    same shape's fill or text) but not to the target's value — or changed it in another way only;
``overlay``
    the requested shape is left as it was, but a shape the prediction **added** on the same slide
    covers at least ``COVER`` of the shape's area (before or after the requested edit) and carries
    the target content: text at least ``TEXT_SIMILAR`` similar to the target's text (and closer to
    it than to the original's), or a fill within twice the colour tolerance of the target's fill.
    It renders almost like the target but is not the requested edit: the object still has no
    credit and the added shape counts as damage;
``wrong_object``
    the requested kind of change (edit kind and path, paragraph and cell numbers ignored) was made
    to an object the target left alone — the neighbour moved instead of the requested shape, the
    note written on another slide;
``missed``
    the prediction left the object alone and did none of the above.

The order of the checks is the order above (a change to the requested object itself wins).
"""

from __future__ import annotations

import re
from typing import Any

from pptarena.plugins.judges.structural.edit_match import (
    Item,
    MatchResult,
    Tolerances,
    _shapes_by_name,
    _slide,
    color_distance,
    describe_unit,
    is_number,
    text_similarity,
)

COVER = 0.5
TEXT_SIMILAR = 0.8
MAX_ADDED = 200  # added shapes examined per missed object (bounded cost on untrusted decks)
MISS_CLASSES = ("wrong_value", "wrong_object", "overlay", "missed")
_INDEX_RE = re.compile(r"\d+")


def family(item: Item) -> tuple[str, str]:
    """The kind of change an item makes, independent of the object: (kind, path without indices)."""
    return item.kind, _INDEX_RE.sub("", str(item.key[-1]))


def classify(
    result: MatchResult, damaged: list[tuple[Any, ...]], target_diff: Any, pred_diff: Any, tol: Tolerances
) -> list[dict[str, Any]]:
    """One row per requested unit reproduced below 0.999: ``unit``, ``class``, ``recall``, ``evidence``."""
    rows = []
    damaged_set = set(damaged)
    pred_by_unit: dict[tuple[Any, ...], list[Item]] = {}
    for p in result.prediction_items:
        pred_by_unit.setdefault(p.unit, []).append(p)
    target_by_unit: dict[tuple[Any, ...], list[Item]] = {}
    for t in result.target_items:
        target_by_unit.setdefault(t.unit, []).append(t)
    added_by_ref: dict[Any, list[Item]] = {}  # unrequested added shapes, per original slide
    for p in result.prediction_items:
        if p.kind == "shape_added" and p.unit in damaged_set:
            added_by_ref.setdefault(p.unit[0], []).append(p)
    names: dict[
        tuple[int, Any], dict[str, dict[str, Any]]
    ] = {}  # name index per (summary, slide), built once
    damaged_families = [(u, {family(p) for p in pred_by_unit.get(u, [])}) for u in damaged]
    for unit, recall in result.unit_recall.items():
        if recall >= 0.999:
            continue
        wanted = target_by_unit.get(unit, [])
        families = {family(t) for t in wanted}
        mine = pred_by_unit.get(unit, [])
        cls, evidence = "missed", ""
        if any(family(p) in families for p in mine):
            cls, evidence = "wrong_value", "the requested object was changed, not to the target's value"
        else:
            cover = _overlay(unit, wanted, added_by_ref.get(unit[0], []), target_diff, pred_diff, tol, names)
            if cover:
                cls, evidence = "overlay", cover
            else:
                other = next((u for u, fams in damaged_families if fams & families), None)
                if other is not None:
                    cls, evidence = "wrong_object", f"the requested change was made to {describe_unit(other)}"
                elif mine:
                    cls, evidence = "wrong_value", "the requested object was changed in another way"
        rows.append(
            {"unit": describe_unit(unit), "class": cls, "recall": round(recall, 4), "evidence": evidence}
        )
    return rows


def _box(shape: dict[str, Any] | None) -> tuple[float, float, float, float] | None:
    if not shape:
        return None
    pos = shape.get("abs_position") or shape
    vals = [pos.get(k) for k in ("x", "y", "cx", "cy")]
    nums = [float(v) for v in filter(is_number, vals)]
    if len(nums) != 4 or nums[2] <= 0 or nums[3] <= 0:
        return None
    return nums[0], nums[1], nums[2], nums[3]


def _covered(
    inner: tuple[float, float, float, float] | None, outer: tuple[float, float, float, float] | None
) -> float:
    if inner is None or outer is None:
        return 0.0
    w = min(inner[0] + inner[2], outer[0] + outer[2]) - max(inner[0], outer[0])
    h = min(inner[1] + inner[3], outer[1] + outer[3]) - max(inner[1], outer[1])
    return max(0.0, w) * max(0.0, h) / (inner[2] * inner[3])


def _fill_rgb(shape: dict[str, Any] | None) -> Any:
    fill = (shape or {}).get("fill")
    return fill.get("color") if isinstance(fill, dict) else None


def _names(
    summary: dict[str, Any], number: Any, cache: dict[tuple[int, Any], dict[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    key = (id(summary), number)
    if key not in cache:
        cache[key] = _shapes_by_name(_slide(summary, number))
    return cache[key]


def _overlay(
    unit: tuple[Any, ...],
    wanted: list[Item],
    added: list[Item],
    target_diff: Any,
    pred_diff: Any,
    tol: Tolerances,
    names: dict[tuple[int, Any], dict[str, dict[str, Any]]],
) -> str:
    """Evidence text when an added, unrequested shape covers the requested shape with the target content."""
    if len(unit) != 3 or unit[1] != "shape" or unit[0][0] != "slide":
        return ""
    orig_no = unit[0][1]
    original = _names(target_diff.summary_a, orig_no, names).get(unit[2])
    target_no = next((b for a, b in target_diff.slide_matches if a == orig_no), None)
    target = _names(target_diff.summary_b, target_no, names).get(unit[2])
    if original is None or target is None:
        return ""
    text_changed = text_similarity(original.get("text"), target.get("text")) < 1.0
    fill_changed = any(t.kind == "fill" for t in wanted)
    for p in added[:MAX_ADDED]:
        new_shape = _names(pred_diff.summary_b, p.edit.get("slide"), names).get(str(p.edit.get("shape")))
        cover = max(_covered(_box(original), _box(new_shape)), _covered(_box(target), _box(new_shape)))
        if cover < COVER:
            continue
        carries = ""
        if target.get("text") and (text_changed or not fill_changed):
            sim = text_similarity((new_shape or {}).get("text"), target.get("text"))
            # a requested rewrite: the copy must be closer to the target's text than to the original's
            closer = not text_changed or sim > text_similarity(
                (new_shape or {}).get("text"), original.get("text")
            )
            if sim >= TEXT_SIMILAR and closer:
                carries = f"its text is {sim:.0%} similar to the target's"
        if not carries and fill_changed:
            d = color_distance(_fill_rgb(new_shape), _fill_rgb(target))
            if d is not None and d <= 2 * tol.color:
                carries = f"its fill is ΔE {d:.1f} from the target's"
        if carries:
            return (
                f'the new shape "{p.edit.get("shape")}" covers {cover:.0%} of the requested shape '
                f"and {carries}; the requested shape itself is unchanged"
            )
    return ""


__all__ = ["COVER", "MISS_CLASSES", "TEXT_SIMILAR", "classify", "family"]
