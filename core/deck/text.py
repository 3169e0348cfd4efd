"""Text frames: paragraphs and runs with inherited formatting resolved.

A run's size, font, bold, italic, underline and colour come from its own ``a:rPr`` when set
("explicit"); otherwise from the first style in the inheritance chain that sets it: the shape's
``a:lstStyle``, the matching layout placeholder, the master placeholder, the master's text styles
(title/body/other) and the presentation default text style. Values that did not come from the run
itself are listed in the run's ``inherited`` list. Paragraph alignment and bullets resolve the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lxml import etree

from .styles import A, resolve_color
from .xfind import find_child

ALIGN = {
    "l": "left",
    "ctr": "center",
    "r": "right",
    "just": "justify",
    "dist": "distributed",
    "justLow": "justify_low",
    "thaiDist": "thai_distributed",
}
_LVL_TAGS = tuple(f"{A}lvl{i}pPr" for i in range(1, 10))
_TRUE = ("1", "true", "on")


class TextContext:
    """What text resolution needs from the slide: theme colours, colour map, fonts, link resolver."""

    def __init__(
        self,
        theme_colors: dict[str, str],
        cmap: dict[str, str],
        fonts: dict[str, Any],
        hyperlink: Callable[[etree._Element], Any],
        cache: dict[tuple[Any, ...], Any] | None = None,
    ) -> None:
        self.theme_colors = theme_colors
        self.cmap = cmap
        self.fonts = fonts
        self.hyperlink = hyperlink
        # resolved list-style facts; may be shared by every TextContext with the same colours and fonts
        self.cache: dict[tuple[Any, ...], Any] = {} if cache is None else cache


def _typeface(face: str | None, fonts: dict[str, Any]) -> str | None:
    if face and face.startswith("+mj"):
        return fonts.get("major") or face
    if face and face.startswith("+mn"):
        return fonts.get("minor") or face
    return face


def _level_ppr(styles: Sequence[etree._Element | None], level: int) -> list[etree._Element]:
    tag = _LVL_TAGS[max(0, min(level, 8))]
    out = []
    for style in styles:
        if style is None:
            continue
        el = find_child(style, tag)
        if el is not None:
            out.append(el)
    return out


_PROP_ORDER = ("size", "bold", "italic", "underline", "font", "color")


def _explicit_props(src: etree._Element, ctx: TextContext) -> dict[str, Any]:
    """Run properties written on one a:rPr / a:defRPr element."""
    out: dict[str, Any] = {}
    get = src.get
    size = get("sz")
    if size is not None:
        try:
            out["size"] = int(size) / 100
        except ValueError:
            pass
    for key, name in (("bold", "b"), ("italic", "i")):
        val = get(name)
        if val is not None:
            out[key] = val in _TRUE
    val = get("u")
    if val is not None:
        out["underline"] = False if val == "none" else val
    if len(src):
        latin = find_child(src, A + "latin")
        if latin is not None and latin.get("typeface"):
            out["font"] = _typeface(latin.get("typeface"), ctx.fonts)
        fill = find_child(src, A + "solidFill")
        if fill is not None:
            color = resolve_color(fill, ctx.theme_colors, ctx.cmap)
            if color:
                out["color"] = color
    return out


def _chain_defaults(chain: list[etree._Element], ctx: TextContext) -> dict[str, Any]:
    """Merged defRPr values of a style chain (first wins), cached per chain."""
    key = tuple(id(p) for p in chain)
    cached = ctx.cache.get(key)
    if cached is not None:
        return cached[0]
    merged: dict[str, Any] = {}
    for d in (find_child(p, A + "defRPr") for p in chain):
        if d is not None:
            for k, v in _explicit_props(d, ctx).items():
                merged.setdefault(k, v)
    # keeping the chain's proxies alive keeps their ids unique (and lxml hands back the same proxies)
    ctx.cache[key] = (merged, chain)
    return merged


def _run_props(
    rpr: etree._Element | None, defaults: dict[str, Any], ctx: TextContext, style_color: dict[str, Any] | None
) -> dict[str, Any]:
    """Resolve run properties from rPr, the shape style colour and the chain ``defaults``."""
    own = _explicit_props(rpr, ctx) if rpr is not None else {}
    out: dict[str, Any] = {}
    inherited: list[str] = []
    for key in _PROP_ORDER:
        if key in own:
            out[key] = own[key]
        elif key == "color" and style_color is not None:  # shape style font colour beats list styles
            out[key] = style_color
            inherited.append(key)
        elif key in defaults:
            out[key] = defaults[key]
            inherited.append(key)
    if rpr is not None and len(rpr):
        for tag in ("hlinkClick", "hlinkMouseOver"):
            link = find_child(rpr, A + tag)
            if link is not None:
                target = ctx.hyperlink(link)
                if target is not None:
                    out["hyperlink"] = target
                    break
    if inherited:
        out["inherited"] = inherited
    return out


def _bullet(chain: list[etree._Element]) -> tuple[dict[str, Any] | None, bool]:
    for i, ppr in enumerate(chain):
        for child in ppr:
            tag = child.tag
            if tag == A + "buNone":
                return {"type": "none"}, i > 0
            if tag == A + "buChar":
                return {"type": "char", "char": child.get("char")}, i > 0
            if tag == A + "buAutoNum":
                out = {"type": "number", "scheme": child.get("type")}
                if child.get("startAt"):
                    out["start"] = int(child.get("startAt") or 1)
                return out, i > 0
            if tag == A + "buBlip":
                return {"type": "picture"}, i > 0
    return None, False


def _spacing(ppr: etree._Element | None) -> dict[str, Any] | None:
    if ppr is None:
        return None
    out: dict[str, Any] = {}
    for key, tag in (("line", "lnSpc"), ("before", "spcBef"), ("after", "spcAft")):
        el = find_child(ppr, A + tag)
        if el is None:
            continue
        pct = find_child(el, A + "spcPct")
        pts = find_child(el, A + "spcPts")
        if pct is not None:
            out[key] = {"pct": pct.get("val")}
        elif pts is not None:
            out[key] = {"pts": pts.get("val")}
    return out or None


def _style_level(chain_styles: Sequence[etree._Element | None], level: int, ctx: TextContext) -> list[Any]:
    """What the list styles say at ``level``: [level pPrs, align, bullet, run defaults (lazy)].

    Cached in ``ctx.cache`` per (style elements, level); the cached value keeps the elements
    alive, so their ids stay unique while the cache lives.
    """
    key = ("level", level, *map(id, chain_styles))
    hit = ctx.cache.get(key)
    if hit is not None:
        return hit[0]
    pprs = _level_ppr(chain_styles, level)
    align = None
    for src in pprs:
        algn = src.get("algn")
        if algn:
            align = ALIGN.get(algn, algn)
            break
    bullet, _ = _bullet(pprs)
    entry = [pprs, align, bullet, None]
    ctx.cache[key] = (entry, tuple(chain_styles))
    return entry


def paragraphs(
    txbody: etree._Element | None,
    styles: Sequence[etree._Element | None],
    ctx: TextContext,
    style_color: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Paragraph dicts of a ``p:txBody``/``a:txBody``;
    ``styles`` is the lstStyle chain after the shape's own.
    """
    if txbody is None:
        return []
    own = find_child(txbody, A + "lstStyle")
    if own is not None and not len(own):
        own = None  # an empty a:lstStyle says nothing at any level
    chain_styles = [own, *styles]
    out = []
    for p in txbody.iterchildren(A + "p"):
        ppr = find_child(p, A + "pPr")
        try:
            level = int(ppr.get("lvl") or 0) if ppr is not None else 0
        except ValueError:
            level = 0
        entry = _style_level(chain_styles, level, ctx)
        para: dict[str, Any] = {"level": level}
        inherited: list[str] = []
        algn = ppr.get("algn") if ppr is not None else None
        if algn:
            para["align"] = ALIGN.get(algn, algn)
        elif entry[1] is not None:
            para["align"] = entry[1]
            inherited.append("align")
        bullet = _bullet([ppr])[0] if ppr is not None and len(ppr) else None
        if bullet is not None:
            para["bullet"] = bullet
        elif entry[2] is not None:
            para["bullet"] = dict(entry[2])
            inherited.append("bullet")
        spacing = _spacing(ppr) if ppr is not None and len(ppr) else None
        if spacing:
            para["spacing"] = spacing
        runs = []
        defaults: dict[str, Any] | None = None
        for child in p:
            tag = child.tag
            if tag == _R or tag == _FLD:
                t = rpr = None
                for sub in child:  # one pass for a:rPr and a:t (first of each, like find)
                    stag = sub.tag
                    if stag == _T:
                        if t is None:
                            t = sub
                    elif stag == _RPR and rpr is None:
                        rpr = sub
                run = {"text": (t.text or "") if t is not None else ""}
                if tag == _FLD:
                    run["field"] = child.get("type") or "field"
                if defaults is None:
                    defaults = _paragraph_defaults(ppr, entry, ctx)
                run.update(_run_props(rpr, defaults, ctx, style_color))
                runs.append(run)
            elif tag == _BR:
                runs.append({"text": "\n", "break": True})
        para["runs"] = runs
        para["text"] = "".join(r["text"] for r in runs)
        if inherited:
            para["inherited"] = inherited
        out.append(para)
    return out


_R, _FLD, _BR, _T, _RPR, _DEF_RPR = (A + t for t in ("r", "fld", "br", "t", "rPr", "defRPr"))


def _paragraph_defaults(ppr: etree._Element | None, entry: list[Any], ctx: TextContext) -> dict[str, Any]:
    """Run defaults of one paragraph: its own a:defRPr over the list styles' (first wins)."""
    if entry[3] is None:
        entry[3] = _chain_defaults(entry[0], ctx)
    own = find_child(ppr, _DEF_RPR) if ppr is not None and len(ppr) else None
    if own is None:
        return entry[3]
    merged = dict(entry[3])
    merged.update(_explicit_props(own, ctx))
    return merged


def frame_text(paras: list[dict[str, Any]]) -> str:
    """All text of a frame: paragraph texts joined by newlines."""
    return "\n".join(p["text"] for p in paras)


def frame_text_simple(txbody: etree._Element | None) -> str:
    """Plain text of a text body (paragraphs joined by newlines, a:br as newline)."""
    if txbody is None:
        return ""
    paras = []
    for p in txbody.iterchildren(A + "p"):
        parts = []
        for child in p:
            if child.tag in (A + "r", A + "fld"):
                t = find_child(child, A + "t")
                parts.append(t.text or "" if t is not None else "")
            elif child.tag == A + "br":
                parts.append("\n")
        paras.append("".join(parts))
    return "\n".join(paras)
