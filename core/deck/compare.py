"""Comparing two matched shapes (and their text) into edit records.

An edit is a dict ``{"kind", "slide", "shape", "path", "old", "new"}`` (plus ``detail`` for text
edits, which carries run-level changes). Values are compared after inheritance is resolved, so a
value that moved from inherited to explicit without changing is not an edit.

Why it is long: :func:`shape_edits` compares every kind of shape content (text runs and
paragraph properties, table cells and borders, chart series, fills, lines, geometry, group
children), and each comparison builds the same :func:`edit` records with the same
inheritance-aware value display, so the per-kind comparers stay beside the one function that
dispatches to them.
"""

from __future__ import annotations

from typing import Any

from .align import matching_blocks, opcodes
from .match import lis_indices, match_shapes

RUN_PROPS = ("font", "size", "bold", "italic", "underline", "color")
PARA_PROPS = ("level", "align", "bullet", "spacing")
MAX_CHARS = 20_000  # per paragraph, for character-level formatting comparison


def edit(
    kind: str, slide: int | None, shape: str | None, path: str, old: Any, new: Any, **extra: Any
) -> dict[str, Any]:
    """One edit record."""
    out = {"kind": kind, "slide": slide, "shape": shape, "path": path, "old": old, "new": new}
    out.update(extra)
    return out


def _color_key(color: Any) -> Any:
    # compare colours by what is shown (rgb); fall back to the theme slot when unresolved
    if isinstance(color, dict):
        return (color.get("rgb") or color.get("theme"), color.get("alpha"))
    return color


def _run_value(run: dict[str, Any], prop: str) -> Any:
    val = run.get(prop)
    if prop == "color":
        return _color_key(val)
    if prop in ("bold", "italic"):
        return bool(val)
    if prop == "underline":
        return val or False
    return val


def _char_props(runs: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for run in runs:
        if run.get("break"):
            out.append(("<br>",) * len(RUN_PROPS))
            continue
        props = tuple(_run_value(run, p) for p in RUN_PROPS)
        out.extend([props] * len(run.get("text", "")))
        if len(out) > MAX_CHARS:
            break
    return out


def _display(run_value: Any, prop: str, runs: list[dict[str, Any]], pos: int) -> Any:
    if prop != "color":
        return run_value
    # show the colour dict of the run covering this position
    count = 0
    for run in runs:
        count += len(run.get("text", ""))
        if pos < count:
            return run.get("color")
    return None


def _format_edits(
    pa: dict[str, Any], pb: dict[str, Any], ctx: tuple[int | None, str | None], base: str
) -> list[dict[str, Any]]:
    """font/hyperlink edits between two paragraphs with the same text (run splits do not matter)."""
    slide, shape = ctx
    out = []
    ca = _char_props(pa.get("runs", []))
    cb = _char_props(pb.get("runs", []))
    text = pb.get("text", "")
    text_a = pa.get("text", "")
    if text_a == text:
        aligned = [(k, k) for k in range(min(len(ca), len(cb)))]
    else:
        aligned = []
        for ia, jb, size in matching_blocks(text_a[:MAX_CHARS], text[:MAX_CHARS]):
            aligned.extend((ia + k, jb + k) for k in range(size))
    aligned = [(i, j) for i, j in aligned if i < len(ca) and j < len(cb)]
    for k, prop in enumerate(RUN_PROPS):
        start: int | None = None
        start_a = 0
        cur: tuple[Any, Any] | None = None
        prev_j = -2
        for i, j in [*aligned, (-1, -1)]:
            pair = (ca[i][k], cb[j][k]) if i >= 0 else None
            differs = pair is not None and pair[0] != pair[1]
            if start is not None and (not differs or pair != cur or j != prev_j + 1):
                out.append(
                    edit(
                        "font",
                        slide,
                        shape,
                        f"{base}[{start}:{prev_j + 1}]/{prop}",
                        _display(cur[0], prop, pa["runs"], start_a),  # type: ignore[index]
                        _display(cur[1], prop, pb["runs"], start),  # type: ignore[index]
                        detail=text[start : prev_j + 1],
                    )
                )
                start = None
            if differs and start is None:
                start, start_a, cur = j, i, pair
            prev_j = j
    links_a = [(r.get("text"), r.get("hyperlink")) for r in pa.get("runs", []) if r.get("hyperlink")]
    links_b = [(r.get("text"), r.get("hyperlink")) for r in pb.get("runs", []) if r.get("hyperlink")]
    if links_a != links_b:
        out.append(
            edit(
                "hyperlink",
                slide,
                shape,
                f"{base}/hyperlink",
                [lk for _, lk in links_a] or None,
                [lk for _, lk in links_b] or None,
                detail=[t for t, _ in links_b] or [t for t, _ in links_a],
            )
        )
    return out


def _para_edits(
    pa: dict[str, Any], pb: dict[str, Any], ctx: tuple[int | None, str | None], base: str
) -> list[dict[str, Any]]:
    slide, shape = ctx
    out = []
    for prop in PARA_PROPS:
        va, vb = pa.get(prop), pb.get(prop)
        if prop == "level":
            va, vb = va or 0, vb or 0
        if va != vb:
            out.append(edit("paragraph", slide, shape, f"{base}/{prop}", va, vb))
    return out


def text_edits(
    paras_a: list[dict[str, Any]],
    paras_b: list[dict[str, Any]],
    ctx: tuple[int | None, str | None],
    base: str = "text",
) -> list[dict[str, Any]]:
    """Edits between two paragraph lists: text changes per paragraph, then format and paragraph props."""
    out: list[dict[str, Any]] = []
    ta = [p.get("text", "") for p in paras_a]
    tb = [p.get("text", "") for p in paras_b]
    if not any(ta) and not any(tb):
        # no text on either side: a text body gained or lost empty paragraphs (python-pptx adds one when
        # code merely reads ``shape.text_frame``); nothing is shown, so nothing changed
        return out
    slide, shape = ctx
    if ta == tb:
        for i, (pa, pb) in enumerate(zip(paras_a, paras_b, strict=True)):
            if pa != pb:
                out += _para_edits(pa, pb, ctx, f"{base}/p{i}")
                out += _format_edits(pa, pb, ctx, f"{base}/p{i}")
        return out
    for op, i1, i2, j1, j2 in opcodes(ta, tb):
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if paras_a[i] != paras_b[j]:
                    out += _para_edits(paras_a[i], paras_b[j], ctx, f"{base}/p{j}")
                    out += _format_edits(paras_a[i], paras_b[j], ctx, f"{base}/p{j}")
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            ia = i1 + k if i1 + k < i2 else None
            jb = j1 + k if j1 + k < j2 else None
            old = ta[ia] if ia is not None else None
            new = tb[jb] if jb is not None else None
            runs_old = [r.get("text", "") for r in paras_a[ia]["runs"]] if ia is not None else []
            runs_new = [r.get("text", "") for r in paras_b[jb]["runs"]] if jb is not None else []
            path = f"{base}/p{jb if jb is not None else ia}"
            out.append(
                edit(
                    "text", slide, shape, path, old, new, detail={"runs_old": runs_old, "runs_new": runs_new}
                )
            )
            if ia is not None and jb is not None:
                out += _para_edits(paras_a[ia], paras_b[jb], ctx, path)
                out += _format_edits(paras_a[ia], paras_b[jb], ctx, path)
    return out


_SPAN_KEYS = ("grid_span", "row_span", "merged")
_BORDER_KEYS = ("left", "right", "top", "bottom", "diag_down", "diag_up")


def _line_key(line: Any) -> Any:
    if not isinstance(line, dict):
        return line
    return {k: (_fill_key(v) if k == "fill" else v) for k, v in line.items()}


def _cell_edits(
    ca: dict[str, Any], cb: dict[str, Any], ctx: tuple[int | None, str | None], base: str
) -> list[dict[str, Any]]:
    """Edits between two cells at the same grid position: text, spans, fill, borders, margins,
    anchor, then paragraph and run formatting (``{base}/p{i}...``, as for text frames)."""
    slide, shape = ctx
    out = []
    if ca.get("text") != cb.get("text"):
        out.append(edit("table", slide, shape, base, ca.get("text"), cb.get("text")))
    span_a = {k: ca[k] for k in _SPAN_KEYS if k in ca}
    span_b = {k: cb[k] for k in _SPAN_KEYS if k in cb}
    if span_a != span_b:
        out.append(edit("table", slide, shape, f"{base}/span", span_a, span_b))
    if _fill_key(ca.get("fill")) != _fill_key(cb.get("fill")):
        out.append(edit("fill", slide, shape, f"{base}/fill", ca.get("fill"), cb.get("fill")))
    borders_a, borders_b = ca.get("borders") or {}, cb.get("borders") or {}
    for side in _BORDER_KEYS:
        if _line_key(borders_a.get(side)) != _line_key(borders_b.get(side)):
            out.append(
                edit("line", slide, shape, f"{base}/border/{side}", borders_a.get(side), borders_b.get(side))
            )
    for key in ("margins", "anchor"):
        if ca.get(key) != cb.get(key):
            out.append(edit("table", slide, shape, f"{base}/{key}", ca.get(key), cb.get(key)))
    if ca.get("paragraphs") != cb.get("paragraphs"):
        # text changes are the one cell-level edit above; keep the formatting edits only
        out += [
            e
            for e in text_edits(ca.get("paragraphs") or [], cb.get("paragraphs") or [], ctx, base)
            if e["kind"] != "text"
        ]
    return out


def _table_edits(
    ta: dict[str, Any], tb: dict[str, Any], ctx: tuple[int | None, str | None]
) -> list[dict[str, Any]]:
    slide, shape = ctx
    out = []
    if (ta.get("rows"), ta.get("cols")) != (tb.get("rows"), tb.get("cols")):
        out.append(
            edit(
                "table",
                slide,
                shape,
                "table/size",
                f"{ta.get('rows')}x{ta.get('cols')}",
                f"{tb.get('rows')}x{tb.get('cols')}",
            )
        )
    cells_a, cells_b = ta.get("cells", []), tb.get("cells", [])
    for r in range(max(len(cells_a), len(cells_b))):
        row_a = cells_a[r] if r < len(cells_a) else []
        row_b = cells_b[r] if r < len(cells_b) else []
        for c in range(max(len(row_a), len(row_b))):
            ca = row_a[c] if c < len(row_a) else None
            cb = row_b[c] if c < len(row_b) else None
            if ca == cb:
                continue
            if ca is None or cb is None:
                out.append(
                    edit(
                        "table",
                        slide,
                        shape,
                        f"table/r{r}c{c}",
                        ca.get("text") if ca else None,
                        cb.get("text") if cb else None,
                    )
                )
            else:
                out += _cell_edits(ca, cb, ctx, f"table/r{r}c{c}")
    return out


def _chart_edits(
    ca: dict[str, Any], cb: dict[str, Any], ctx: tuple[int | None, str | None]
) -> list[dict[str, Any]]:
    slide, shape = ctx
    out = []
    if ca.get("types") != cb.get("types"):
        out.append(edit("chart", slide, shape, "chart/type", ca.get("types"), cb.get("types")))
    if ca.get("title") != cb.get("title"):
        out.append(edit("chart", slide, shape, "chart/title", ca.get("title"), cb.get("title")))
    sa, sb = ca.get("series", []), cb.get("series", [])
    for k in range(max(len(sa), len(sb))):
        a = sa[k] if k < len(sa) else None
        b = sb[k] if k < len(sb) else None
        if a == b:
            continue
        if a is None or b is None:
            out.append(edit("chart", slide, shape, f"chart/series{k}", a, b))
            continue
        for key in ("name", "categories"):
            if a.get(key) != b.get(key):
                out.append(edit("chart", slide, shape, f"chart/series{k}/{key}", a.get(key), b.get(key)))
        va, vb = a.get("values", []), b.get("values", [])
        if va != vb:
            if len(va) == len(vb):
                for n, (x, y) in enumerate(zip(va, vb, strict=True)):
                    if x != y:
                        out.append(edit("chart", slide, shape, f"chart/series{k}/values[{n}]", x, y))
            else:
                out.append(edit("chart", slide, shape, f"chart/series{k}/values", va, vb))
    return out


def _fill_key(fill: Any) -> Any:
    if not isinstance(fill, dict):
        return fill
    out = dict(fill)
    for key in ("color", "fg", "bg"):
        if key in out:
            out[key] = _color_key(out[key])
    if "stops" in out:
        out["stops"] = [(s.get("pos"), _color_key(s.get("color"))) for s in out["stops"]]
    return out


def _abs_detail(a: dict[str, Any], b: dict[str, Any], keys: tuple[str, str]) -> dict[str, Any]:
    """For shapes inside groups: ``detail`` with the slide-space values (``abs_old``/``abs_new``)."""
    pa, pb = a.get("abs_position"), b.get("abs_position")
    if pa is None and pb is None:
        return {}
    return {
        "detail": {
            "abs_old": {k: pa.get(k) for k in keys} if pa else None,
            "abs_new": {k: pb.get(k) for k in keys} if pb else None,
        }
    }


def shape_edits(
    a: dict[str, Any], b: dict[str, Any], slide: int | None, id_map: dict[Any, Any] | None = None
) -> list[dict[str, Any]]:
    """All edits between two matched shapes (children of groups included, recursively)."""
    if a == b:
        if id_map is not None and a.get("children"):
            _add_identity(a["children"], id_map)
        return []
    name = b.get("name") if b.get("name") is not None else a.get("name")
    ctx = (slide, name)
    out: list[dict[str, Any]] = []
    if a.get("name") != b.get("name"):
        out.append(edit("rename", slide, name, "name", a.get("name"), b.get("name")))
    if a.get("kind") != b.get("kind"):
        out.append(edit("kind", slide, name, "kind", a.get("kind"), b.get("kind")))
    if a.get("geometry") != b.get("geometry"):
        out.append(edit("geometry", slide, name, "geometry", a.get("geometry"), b.get("geometry")))
    if (a.get("x"), a.get("y")) != (b.get("x"), b.get("y")):
        out.append(
            edit(
                "move",
                slide,
                name,
                "position",
                {"x": a.get("x"), "y": a.get("y")},
                {"x": b.get("x"), "y": b.get("y")},
                **_abs_detail(a, b, ("x", "y")),
            )
        )
    if (a.get("cx"), a.get("cy")) != (b.get("cx"), b.get("cy")):
        out.append(
            edit(
                "resize",
                slide,
                name,
                "size",
                {"cx": a.get("cx"), "cy": a.get("cy")},
                {"cx": b.get("cx"), "cy": b.get("cy")},
                **_abs_detail(a, b, ("cx", "cy")),
            )
        )
    for key in ("rot", "flip_h", "flip_v"):
        va = a.get(key) or (0 if key == "rot" else False)
        vb = b.get(key) or (0 if key == "rot" else False)
        if va != vb:
            out.append(edit("rotate", slide, name, key, va, vb))
    for key in ("fill", "line"):
        if _fill_key(a.get(key)) != _fill_key(b.get(key)):
            out.append(edit(key, slide, name, key, a.get(key), b.get(key)))
    if a.get("hyperlink") != b.get("hyperlink"):
        out.append(edit("hyperlink", slide, name, "hyperlink", a.get("hyperlink"), b.get("hyperlink")))
    if a.get("descr") != b.get("descr"):
        out.append(edit("alt_text", slide, name, "descr", a.get("descr"), b.get("descr")))
    if bool(a.get("hidden")) != bool(b.get("hidden")):
        out.append(edit("visibility", slide, name, "hidden", bool(a.get("hidden")), bool(b.get("hidden"))))
    if a.get("placeholder") != b.get("placeholder"):
        out.append(
            edit("placeholder", slide, name, "placeholder", a.get("placeholder"), b.get("placeholder"))
        )
    if a.get("paragraphs") != b.get("paragraphs"):
        out += text_edits(a.get("paragraphs") or [], b.get("paragraphs") or [], ctx)
    if a.get("picture") != b.get("picture"):
        pa, pb = a.get("picture") or {}, b.get("picture") or {}
        for key in sorted(set(pa) | set(pb)):
            if pa.get(key) != pb.get(key):
                out.append(edit("picture", slide, name, f"picture/{key}", pa.get(key), pb.get(key)))
    if a.get("table") != b.get("table"):
        out += _table_edits(a.get("table") or {}, b.get("table") or {}, ctx)
    if a.get("chart") != b.get("chart"):
        out += _chart_edits(a.get("chart") or {}, b.get("chart") or {}, ctx)
    if a.get("smartart") != b.get("smartart"):
        out.append(
            edit(
                "smartart",
                slide,
                name,
                "smartart/texts",
                (a.get("smartart") or {}).get("texts"),
                (b.get("smartart") or {}).get("texts"),
            )
        )
    if a.get("ole") != b.get("ole"):
        out.append(edit("ole", slide, name, "ole", a.get("ole"), b.get("ole")))
    if a.get("children") != b.get("children"):
        out += tree_edits(a.get("children") or [], b.get("children") or [], slide, id_map)
    elif id_map is not None and a.get("children"):
        _add_identity(a["children"], id_map)
    return out


def tree_edits(
    a: list[dict[str, Any]], b: list[dict[str, Any]], slide: int | None, id_map: dict[Any, Any] | None = None
) -> list[dict[str, Any]]:
    """Edits between two shape lists (one tree level): added/removed, z-order, then per-shape edits.

    ``id_map`` (optional) is filled with matched shape ids A -> B, for animation comparison.
    """
    pairs = match_shapes(a, b)
    out: list[dict[str, Any]] = []
    matched_b = set(pairs.values())
    for i, shape in enumerate(a):
        if i not in pairs:
            out.append(edit("shape_removed", slide, shape.get("name"), "shapes", _brief(shape), None))
    for j, shape in enumerate(b):
        if j not in matched_b:
            out.append(edit("shape_added", slide, shape.get("name"), "shapes", None, _brief(shape)))
    order = sorted(pairs)
    seq = [pairs[i] for i in order]
    keep = lis_indices(seq)
    rank_a = {i: r for r, i in enumerate(order)}
    rank_b = {j: r for r, j in enumerate(sorted(seq))}
    for k, i in enumerate(order):
        if k not in keep:
            j = pairs[i]
            out.append(edit("z_order", slide, b[j].get("name"), "z", rank_a[i], rank_b[j]))
    for i in order:
        j = pairs[i]
        if id_map is not None:
            id_map[a[i].get("id")] = b[j].get("id")
        out += shape_edits(a[i], b[j], slide, id_map)
    return out


def _add_identity(shapes: list[dict[str, Any]], id_map: dict[Any, Any]) -> None:
    for shape in shapes:
        id_map[shape.get("id")] = shape.get("id")
        if shape.get("children"):
            _add_identity(shape["children"], id_map)


def _brief(shape: dict[str, Any]) -> dict[str, Any]:
    out = {"id": shape.get("id"), "kind": shape.get("kind")}
    if shape.get("text"):
        out["text"] = shape["text"][:200]
    return out
