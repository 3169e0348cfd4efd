"""The structural diff of two decks: a flat, deterministic list of edits.

``diff_decks(a, b)`` matches slides (sldId, then content), shapes (id, name, similarity) and
reports edits in a fixed order: deck-level edits first, then slide by slide in ``slide_matches``
order. See docs/deck.md for the edit kinds and their ``path`` values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .align import opcodes
from .compare import _fill_key, edit, tree_edits
from .match import lis_indices, match_slides
from .summary import summarize

_PROPERTY_KEYS = ("title", "subject", "creator", "keywords", "description", "category")
_ANIM_KEY = ("class", "preset", "subtype", "target", "text")
_ANIM_PROPS = ("trigger", "delay_ms", "duration_ms")


@dataclass
class DeckDiff:
    """Result of :func:`diff_decks`.

    ``edits``: list of edit dicts (kind, slide, shape, path, old, new[, detail]).
    ``slide_matches``: (number in A, number in B) pairs, 1-based, None where added/removed.
    ``summary_a``/``summary_b``: the two summaries the diff was computed from.
    ``shape_maps``: per matched slide pair (A number, B number), matched shape ids A -> B.
    """

    edits: list[dict[str, Any]]
    slide_matches: list[tuple[int | None, int | None]]
    summary_a: dict[str, Any] = field(repr=False)
    summary_b: dict[str, Any] = field(repr=False)
    shape_maps: dict[tuple[int, int], dict[Any, Any]] = field(default_factory=dict, repr=False)

    @property
    def edit_count(self) -> int:
        """Number of edits."""
        return len(self.edits)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: a, b (file names), edit_count, edits, slide_matches."""
        return {
            "a": self.summary_a.get("file"),
            "b": self.summary_b.get("file"),
            "edit_count": self.edit_count,
            "edits": self.edits,
            "slide_matches": [list(p) for p in self.slide_matches],
        }

    def to_text(self) -> str:
        """Short, human-readable form grouped by slide."""
        return render_text(self)


def _as_summary(deck: str | Path | dict[str, Any]) -> dict[str, Any]:
    if isinstance(deck, dict):
        return deck
    return summarize(deck)


def _ordered_matches(pairs: dict[int, int], n_a: int, n_b: int) -> list[tuple[int | None, int | None]]:
    inverse = {j: i for i, j in pairs.items()}
    out: list[tuple[int | None, int | None]] = []
    pending = [i for i in range(n_a) if i not in pairs]
    p = 0
    for j in range(n_b):
        i = inverse.get(j)
        if i is not None:
            while p < len(pending) and pending[p] < i:
                out.append((pending[p], None))
                p += 1
            out.append((i, j))
        else:
            out.append((None, j))
    out.extend((i, None) for i in pending[p:])
    return out


def _anim_key(effect: dict[str, Any], id_map: dict[Any, Any] | None) -> tuple[Any, ...]:
    key = [effect.get(k) for k in _ANIM_KEY]
    if id_map is not None:
        key[3] = id_map.get(key[3], key[3])  # targets we could not resolve keep their id
    return tuple(key)


def align_animations(
    a: list[dict[str, Any]], b: list[dict[str, Any]], id_map: dict[Any, Any]
) -> list[tuple[int | None, int | None, bool]]:
    """Align two timelines: (index in A or None, index in B or None, same effect?) in order.

    Effects are the same when class, preset, subtype, (mapped) target and text flag agree.
    """
    keys_a = [_anim_key(e, id_map) for e in a]
    keys_b = [_anim_key(e, None) for e in b]
    out: list[tuple[int | None, int | None, bool]] = []
    for op, i1, i2, j1, j2 in opcodes(keys_a, keys_b):
        if op == "equal":
            out.extend((i, j, True) for i, j in zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            out.append((i1 + k if i1 + k < i2 else None, j1 + k if j1 + k < j2 else None, False))
    return out


def animation_edits(
    a: list[dict[str, Any]], b: list[dict[str, Any]], slide: int, id_map: dict[Any, Any]
) -> list[dict[str, Any]]:
    """Edits between two animation timelines (targets of A mapped through the shape match)."""
    if not a and not b:
        return []
    out = []
    for i, j, same in align_animations(a, b, id_map):
        if same and i is not None and j is not None:
            for prop in _ANIM_PROPS:
                if a[i].get(prop) != b[j].get(prop):
                    out.append(
                        edit(
                            "animation",
                            slide,
                            None,
                            f"animations[{j}]/{prop}",
                            a[i].get(prop),
                            b[j].get(prop),
                        )
                    )
            continue
        out.append(
            edit(
                "animation",
                slide,
                None,
                f"animations[{j if j is not None else i}]",
                a[i] if i is not None else None,
                b[j] if j is not None else None,
            )
        )
    return out


def slide_edits(
    sa: dict[str, Any], sb: dict[str, Any], id_map: dict[Any, Any] | None = None
) -> list[dict[str, Any]]:
    """Edits between two matched slides (numbered as in B); ``id_map`` receives matched shape ids A -> B."""
    n = sb["number"]
    if id_map is None:
        id_map = {}
    out = []
    for key, kind in (
        ("layout", "layout"),
        ("master", "master"),
        ("hidden", "hidden"),
        ("notes", "notes"),
        ("transition", "transition"),
    ):
        if sa.get(key) != sb.get(key):
            out.append(edit(kind, n, None, key, sa.get(key), sb.get(key)))
    if _fill_key(sa.get("background")) != _fill_key(sb.get("background")):
        out.append(edit("background", n, None, "background", sa.get("background"), sb.get("background")))
    if sa.get("shapes") != sb.get("shapes"):
        out += tree_edits(sa.get("shapes") or [], sb.get("shapes") or [], n, id_map)
    else:
        id_map.update(_identity_ids(sa.get("shapes") or []))
    out += animation_edits(sa.get("animations") or [], sb.get("animations") or [], n, id_map)
    return out


def _identity_ids(shapes: list[dict[str, Any]]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for shape in shapes:
        out[shape.get("id")] = shape.get("id")
        if shape.get("children"):
            out.update(_identity_ids(shape["children"]))
    return out


def _theme_edits(ta: list[dict[str, Any]], tb: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for k in range(max(len(ta), len(tb))):
        a = ta[k] if k < len(ta) else {}
        b = tb[k] if k < len(tb) else {}
        label = f"theme[{k}]"
        if not a or not b:
            out.append(
                edit("theme", None, None, label, a.get("name") if a else None, b.get("name") if b else None)
            )
            continue
        for slot in sorted(set(a.get("colors", {})) | set(b.get("colors", {}))):
            va, vb = a.get("colors", {}).get(slot), b.get("colors", {}).get(slot)
            if va != vb:
                out.append(edit("theme", None, None, f"{label}/colors/{slot}", va, vb))
        for slot in ("major", "minor"):
            va, vb = (a.get("fonts") or {}).get(slot), (b.get("fonts") or {}).get(slot)
            if va != vb:
                out.append(edit("theme", None, None, f"{label}/fonts/{slot}", va, vb))
        if a.get("name") != b.get("name"):
            out.append(edit("theme", None, None, f"{label}/name", a.get("name"), b.get("name")))
    return out


def deck_edits(a: dict[str, Any], b: dict[str, Any], sld_map: dict[Any, Any]) -> list[dict[str, Any]]:
    """Deck-level edits: slide size, properties, themes, masters/layouts, sections."""
    out = []
    sa, sb = a.get("slide_size") or {}, b.get("slide_size") or {}
    if (sa.get("cx"), sa.get("cy")) != (sb.get("cx"), sb.get("cy")):
        out.append(edit("slide_size", None, None, "slide_size", sa, sb))
    pa, pb = a.get("properties") or {}, b.get("properties") or {}
    for key in _PROPERTY_KEYS:
        if pa.get(key) != pb.get(key):
            out.append(edit("properties", None, None, f"properties/{key}", pa.get(key), pb.get(key)))
    out += _theme_edits(a.get("themes") or [], b.get("themes") or [])
    ma, mb = a.get("masters") or [], b.get("masters") or []
    if [m.get("name") for m in ma] != [m.get("name") for m in mb]:
        out.append(
            edit("master", None, None, "masters", [m.get("name") for m in ma], [m.get("name") for m in mb])
        )
    for k in range(min(len(ma), len(mb))):
        la = [lay.get("name") for lay in ma[k].get("layouts", [])]
        lb = [lay.get("name") for lay in mb[k].get("layouts", [])]
        if la != lb:
            out.append(edit("master", None, None, f"masters[{k}]/layouts", la, lb))
    secs_a = [
        (s.get("name"), [sld_map.get(i, ("removed", i)) for i in s.get("slides", [])])
        for s in a.get("sections") or []
    ]
    secs_b = [(s.get("name"), list(s.get("slides", []))) for s in b.get("sections") or []]
    if secs_a != secs_b:
        out.append(
            edit(
                "section",
                None,
                None,
                "sections",
                [s.get("name") for s in a.get("sections") or []],
                [s.get("name") for s in b.get("sections") or []],
                detail={"old": a.get("sections"), "new": b.get("sections")},
            )
        )
    return out


def diff_summaries(a: dict[str, Any], b: dict[str, Any]) -> DeckDiff:
    """The diff of two summaries (see :func:`diff_decks`)."""
    slides_a, slides_b = a.get("slides") or [], b.get("slides") or []
    pairs = match_slides(slides_a, slides_b)
    order = _ordered_matches(pairs, len(slides_a), len(slides_b))
    sld_map = {slides_a[i]["sld_id"]: slides_b[j]["sld_id"] for i, j in pairs.items()}
    edits = deck_edits(a, b, sld_map)
    ranked = sorted(pairs)
    keep = lis_indices([pairs[i] for i in ranked])
    moved = {ranked[k] for k in range(len(ranked)) if k not in keep}
    shape_maps: dict[tuple[int, int], dict[Any, Any]] = {}
    for i, j in order:
        if j is None:
            s = slides_a[i]  # type: ignore[index]
            edits.append(
                edit(
                    "slide_removed",
                    s["number"],
                    None,
                    "slides",
                    {"sld_id": s["sld_id"], "title": s.get("title")},
                    None,
                )
            )
            continue
        sb = slides_b[j]
        if i is None:
            edits.append(
                edit(
                    "slide_added",
                    sb["number"],
                    None,
                    "slides",
                    None,
                    {"sld_id": sb["sld_id"], "title": sb.get("title")},
                )
            )
            continue
        sa = slides_a[i]
        if i in moved:
            edits.append(edit("slide_moved", sb["number"], None, "number", sa["number"], sb["number"]))
        id_map: dict[Any, Any] = {}
        edits += slide_edits(sa, sb, id_map)
        shape_maps[(sa["number"], sb["number"])] = id_map
    matches = [(i + 1 if i is not None else None, j + 1 if j is not None else None) for i, j in order]
    return DeckDiff(edits=edits, slide_matches=matches, summary_a=a, summary_b=b, shape_maps=shape_maps)


def diff_decks(a: str | Path | dict[str, Any], b: str | Path | dict[str, Any]) -> DeckDiff:
    """Structural diff of deck ``a`` (before) and ``b`` (after).

    ``a``/``b`` are deck paths or summaries already computed by :func:`summarize` (to avoid
    re-reading). Raises :class:`DeckError` when a deck cannot be read.
    """
    return diff_summaries(_as_summary(a), _as_summary(b))


# ----------------------------------------------------------------------------- text form

_EMU_PER_IN = 914400


def _short(value: Any, limit: int = 70) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        text = value.replace("\n", "⏎")
        return json.dumps(text[:limit] + ("…" if len(text) > limit else ""), ensure_ascii=False)
    if isinstance(value, dict) and set(value) <= {"x", "y", "cx", "cy"}:
        return " ".join(
            f"{k}={v / _EMU_PER_IN:.2f}in" if isinstance(v, int) else f"{k}={v}" for k, v in value.items()
        )
    if isinstance(value, dict) and "rgb" in value:
        return "#" + str(value["rgb"]) + (f" ({value['theme']})" if value.get("theme") else "")
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text[:limit] + ("…" if len(text) > limit else "")


def _line(e: dict[str, Any]) -> str:
    who = f"[{e['shape']}] " if e.get("shape") else ""
    if e["kind"] in ("shape_added", "slide_added"):
        return f"  {e['kind']:<13} {who}{_short(e['new'])}"
    if e["kind"] in ("shape_removed", "slide_removed"):
        return f"  {e['kind']:<13} {who}{_short(e['old'])}"
    old, new = e["old"], e["new"]
    if e["kind"] == "fill":
        old, new = (v.get("color", v) if isinstance(v, dict) else v for v in (old, new))
    return f"  {e['kind']:<13} {who}{e['path']}: {_short(old)} → {_short(new)}"


def render_text(d: DeckDiff) -> str:
    """The text form of a diff: header, deck-level edits, then one block per slide."""
    a, b = d.summary_a.get("file"), d.summary_b.get("file")
    lines = [f"{d.edit_count} edit{'s' if d.edit_count != 1 else ''}: {a} → {b}"]
    deck = [e for e in d.edits if e["slide"] is None]
    if deck:
        lines.append("Deck")
        lines += [_line(e) for e in deck]
    current: tuple[str, int] | None = None
    old_numbers = {nb: na for na, nb in d.slide_matches if nb is not None}
    for e in d.edits:
        if e["slide"] is None:
            continue
        side = "A" if e["kind"] == "slide_removed" else "B"
        key = (side, e["slide"])
        if key != current:
            current = key
            if side == "A":
                lines.append(f"Slide {e['slide']} of A")
            else:
                was = old_numbers.get(e["slide"])
                moved = was is not None and was != e["slide"]
                suffix = f" (was {was})" if moved else ""
                lines.append("Slide {}{}".format(e["slide"], suffix))
        lines.append(_line(e))
    return "\n".join(lines)


__all__ = ["DeckDiff", "diff_decks", "diff_summaries"]
