"""Tables (``a:tbl``): cells with text, spans and per-cell formatting.

``read_table`` returns ``{"rows", "cols", "cells"}``; ``cells`` is a list of rows, each a list of
cell dicts in grid order:

* ``text`` — plain text (paragraphs joined by newlines);
* ``grid_span`` / ``row_span`` (when not 1), ``merged`` (a cell covered by a span);
* ``paragraphs`` — the same paragraph → run dicts as text frames (level, alignment, bullets,
  spacing; runs with size, bold, italic, underline, font, colour, hyperlink), resolved through
  the cell's own list style and the presentation default text style;
* ``fill`` — the cell fill written in ``a:tcPr`` (solid/gradient/pattern/picture/none);
* ``borders`` — ``a:lnL``/``lnR``/``lnT``/``lnB``/``lnTlToBr``/``lnBlToTr`` as
  left/right/top/bottom/diag_down/diag_up {width, fill, dash};
* ``margins`` — ``marL``/``marR``/``marT``/``marB`` (EMU) that differ from the OOXML defaults;
* ``anchor`` — vertical anchoring when not top (middle, bottom, justify, distributed).

Only what the cell itself says is reported: formatting that comes from the table style
(``a:tableStyleId`` / firstRow banding) is not resolved. Past ``MAX_FORMATTED_CELLS`` cells in one
table, cells carry text and spans only and the table is marked ``formatting_truncated``.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from .styles import A, describe_fill, describe_line, find_fill
from .text import TextContext, frame_text, frame_text_simple, paragraphs
from .xfind import find_child

MAX_FORMATTED_CELLS = 5_000

ANCHOR = {"t": "top", "ctr": "middle", "b": "bottom", "just": "justify", "dist": "distributed"}
BORDERS = (
    ("left", "lnL"),
    ("right", "lnR"),
    ("top", "lnT"),
    ("bottom", "lnB"),
    ("diag_down", "lnTlToBr"),
    ("diag_up", "lnBlToTr"),
)
_BORDER_TAGS = frozenset(A + tag for _, tag in BORDERS)
# (key, attribute, default in EMU per ECMA-376 a:tcPr)
MARGINS = (
    ("left", "marL", 91440),
    ("right", "marR", 91440),
    ("top", "marT", 45720),
    ("bottom", "marB", 45720),
)


def _cell_format(tcpr: etree._Element, text: TextContext) -> dict[str, Any]:
    out: dict[str, Any] = {}
    fill = describe_fill(find_fill(tcpr), text.theme_colors, text.cmap)
    if fill is not None:
        out["fill"] = fill
    found = {child.tag: child for child in tcpr if child.tag in _BORDER_TAGS}
    if found:
        out["borders"] = {
            key: describe_line(found[A + tag], text.theme_colors, text.cmap) or {}
            for key, tag in BORDERS
            if A + tag in found
        }
    margins = {}
    for key, attr, default in MARGINS:
        raw = tcpr.get(attr)
        if raw is None:
            continue
        value: Any = int(raw) if raw.lstrip("-").isdigit() else raw
        if value != default:
            margins[key] = value
    if margins:
        out["margins"] = margins
    anchor = tcpr.get("anchor")
    if anchor and anchor != "t":
        out["anchor"] = ANCHOR.get(anchor, anchor)
    return out


def read_table(
    tbl: etree._Element, text: TextContext, default_style: etree._Element | None
) -> dict[str, Any]:
    """An ``a:tbl`` element as {rows, cols, cells}; ``default_style`` ends the run-property chain."""
    rows = []
    budget = MAX_FORMATTED_CELLS
    truncated = False
    styles = [default_style]
    for tr in tbl.iterchildren(A + "tr"):
        cells = []
        for tc in tr.iterchildren(A + "tc"):
            txbody = find_child(tc, A + "txBody")
            cell: dict[str, Any] = {}
            if budget > 0:
                budget -= 1
                paras = paragraphs(txbody, styles, text)
                cell["text"] = frame_text(paras)
            else:
                truncated = True
                paras = None
                cell["text"] = frame_text_simple(txbody)
            for key, attr in (("grid_span", "gridSpan"), ("row_span", "rowSpan")):
                raw = tc.get(attr)
                if raw and raw != "1":
                    cell[key] = int(raw) if raw.isdigit() else raw
            if tc.get("hMerge") in ("1", "true") or tc.get("vMerge") in ("1", "true"):
                cell["merged"] = True
            if paras is not None:
                cell["paragraphs"] = paras
                tcpr = find_child(tc, A + "tcPr")
                if tcpr is not None:
                    cell.update(_cell_format(tcpr, text))
            cells.append(cell)
        rows.append(cells)
    out: dict[str, Any] = {
        "rows": len(rows),
        "cols": len(tbl.findall(f"{A}tblGrid/{A}gridCol")),
        "cells": rows,
    }
    if truncated:
        out["formatting_truncated"] = True
    return out
