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

ALIGN = {"l": "left", "ctr": "center", "r": "right", "just": "justify", "dist": "distributed",
         "justLow": "justify_low", "thaiDist": "thai_distributed"}
_LVL_TAGS = tuple(f"{A}lvl{i}pPr" for i in range(1, 10))
_TRUE = ("1", "true", "on")


class TextContext:
    """What text resolution needs from the slide: theme colours, colour map, fonts, link resolver."""

    def __init__(self, theme_colors: dict[str, str], cmap: dict[str, str], fonts: dict[str, Any],
                 hyperlink: Callable[[etree._Element], Any]) -> None:
        self.theme_colors = theme_colors
        self.cmap = cmap
        self.fonts = fonts
        self.hyperlink = hyperlink
        self.cache: dict[tuple[int, ...], Any] = {}


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
        el = style.find(tag)
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
        latin = src.find(A + "latin")
        if latin is not None and latin.get("typeface"):
            out["font"] = _typeface(latin.get("typeface"), ctx.fonts)
        fill = src.find(A + "solidFill")
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
    for d in (p.find(A + "defRPr") for p in chain):
        if d is not None:
            for k, v in _explicit_props(d, ctx).items():
                merged.setdefault(k, v)
    # keeping the chain's proxies alive keeps their ids unique (and lxml hands back the same proxies)
    ctx.cache[key] = (merged, chain)
    return merged


def _run_props(rpr: etree._Element | None, defaults: dict[str, Any], ctx: TextContext,
               style_color: dict[str, Any] | None) -> dict[str, Any]:
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
            link = rpr.find(A + tag)
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
        el = ppr.find(A + tag)
        if el is None:
            continue
        pct = el.find(A + "spcPct")
        pts = el.find(A + "spcPts")
        if pct is not None:
            out[key] = {"pct": pct.get("val")}
        elif pts is not None:
            out[key] = {"pts": pts.get("val")}
    return out or None


def paragraphs(txbody: etree._Element | None, styles: Sequence[etree._Element | None], ctx: TextContext,
               style_color: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Paragraph dicts of a ``p:txBody``/``a:txBody``; ``styles`` is the lstStyle chain after the shape's own."""
    if txbody is None:
        return []
    own = txbody.find(A + "lstStyle")
    chain_styles = [own, *styles]
    out = []
    for p in txbody.iterfind(A + "p"):
        ppr = p.find(A + "pPr")
        try:
            level = int(ppr.get("lvl") or 0) if ppr is not None else 0
        except ValueError:
            level = 0
        chain = ([ppr] if ppr is not None else []) + _level_ppr(chain_styles, level)
        para: dict[str, Any] = {"level": level}
        inherited: list[str] = []
        for src in chain:
            algn = src.get("algn")
            if algn:
                para["align"] = ALIGN.get(algn, algn)
                if src is not ppr:
                    inherited.append("align")
                break
        bullet, inh = _bullet(chain)
        if bullet is not None:
            para["bullet"] = bullet
            if inh or ppr is None:
                inherited.append("bullet")
        spacing = _spacing(ppr)
        if spacing:
            para["spacing"] = spacing
        runs = []
        defaults: dict[str, Any] | None = None
        for child in p:
            tag = child.tag
            if tag == A + "r" or tag == A + "fld":
                t = child.find(A + "t")
                run = {"text": (t.text or "") if t is not None else ""}
                if tag == A + "fld":
                    run["field"] = child.get("type") or "field"
                if defaults is None:
                    defaults = _chain_defaults(chain, ctx)
                run.update(_run_props(child.find(A + "rPr"), defaults, ctx, style_color))
                runs.append(run)
            elif tag == A + "br":
                runs.append({"text": "\n", "break": True})
        para["runs"] = runs
        para["text"] = "".join(r["text"] for r in runs)
        if inherited:
            para["inherited"] = inherited
        out.append(para)
    return out


def frame_text(paras: list[dict[str, Any]]) -> str:
    """All text of a frame: paragraph texts joined by newlines."""
    return "\n".join(p["text"] for p in paras)


def frame_text_simple(txbody: etree._Element | None) -> str:
    """Plain text of a text body (paragraphs joined by newlines, a:br as newline)."""
    if txbody is None:
        return ""
    paras = []
    for p in txbody.iterfind(A + "p"):
        parts = []
        for child in p:
            if child.tag in (A + "r", A + "fld"):
                t = child.find(A + "t")
                parts.append(t.text or "" if t is not None else "")
            elif child.tag == A + "br":
                parts.append("\n")
        paras.append("".join(parts))
    return "\n".join(paras)
