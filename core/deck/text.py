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


def _run_props(rpr: etree._Element | None, chain: list[etree._Element], ctx: TextContext,
               style_color: dict[str, Any] | None) -> dict[str, Any]:
    """Resolve run properties from rPr and the defRPr chain."""
    out: dict[str, Any] = {}
    inherited: list[str] = []
    sources = [rpr] if rpr is not None else []
    sources += [d for d in (p.find(A + "defRPr") for p in chain) if d is not None]

    def attr(name: str) -> tuple[str | None, bool]:
        for i, src in enumerate(sources):
            val = src.get(name)
            if val is not None:
                return val, i > 0 or rpr is None
        return None, False

    size, inh = attr("sz")
    if size is not None:
        try:
            out["size"] = int(size) / 100
        except ValueError:
            pass
        if inh:
            inherited.append("size")
    for key, name in (("bold", "b"), ("italic", "i")):
        val, inh = attr(name)
        if val is not None:
            out[key] = val in _TRUE
            if inh:
                inherited.append(key)
    val, inh = attr("u")
    if val is not None:
        out["underline"] = False if val == "none" else val
        if inh:
            inherited.append("underline")
    for i, src in enumerate(sources):
        latin = src.find(A + "latin")
        if latin is not None and latin.get("typeface"):
            out["font"] = _typeface(latin.get("typeface"), ctx.fonts)
            if i > 0 or rpr is None:
                inherited.append("font")
            break
    color = None
    own_fill = rpr.find(A + "solidFill") if rpr is not None else None
    if own_fill is not None:
        color = resolve_color(own_fill, ctx.theme_colors, ctx.cmap)
    elif style_color is not None:  # the shape style's font colour beats inherited list styles
        color = style_color
        inherited.append("color")
    else:
        for src in sources[1 if rpr is not None else 0:]:
            fill = src.find(A + "solidFill")
            if fill is not None:
                color = resolve_color(fill, ctx.theme_colors, ctx.cmap)
                inherited.append("color")
                break
    if color:
        out["color"] = color
    if rpr is not None:
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
        for child in p:
            tag = child.tag
            if tag == A + "r" or tag == A + "fld":
                t = child.find(A + "t")
                run = {"text": (t.text or "") if t is not None else ""}
                if tag == A + "fld":
                    run["field"] = child.get("type") or "field"
                run.update(_run_props(child.find(A + "rPr"), chain, ctx, style_color))
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
