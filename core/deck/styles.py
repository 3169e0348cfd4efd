"""Themes and colours: theme colour schemes and fonts, colour maps, and DrawingML colour resolution.

Colours are returned as small dicts: ``{"rgb": "4472C4"}`` plus ``"theme": "accent1"`` when the
colour came from the theme (after the master's colour map) and ``"alpha"`` (percent) when set.
Luminance/tint/shade modifiers are applied so a theme colour resolves to the RGB a viewer shows.
"""

from __future__ import annotations

import colorsys
import math
import re
from typing import Any

from lxml import etree

from .read import NS
from .xfind import find_child

A = "{" + NS["a"] + "}"
P = "{" + NS["p"] + "}"

SCHEME_NAMES = (
    "dk1",
    "lt1",
    "dk2",
    "lt2",
    "accent1",
    "accent2",
    "accent3",
    "accent4",
    "accent5",
    "accent6",
    "hlink",
    "folHlink",
)
DEFAULT_CLR_MAP = {"bg1": "lt1", "tx1": "dk1", "bg2": "lt2", "tx2": "dk2"}

_PRESET = {
    "black": "000000",
    "white": "FFFFFF",
    "red": "FF0000",
    "green": "008000",
    "blue": "0000FF",
    "yellow": "FFFF00",
    "gray": "808080",
    "grey": "808080",
    "orange": "FFA500",
    "purple": "800080",
    "darkGray": "A9A9A9",
    "ltGray": "D3D3D3",
    "lightGray": "D3D3D3",
    "navy": "000080",
    "silver": "C0C0C0",
    "cyan": "00FFFF",
    "magenta": "FF00FF",
    "maroon": "800000",
    "teal": "008080",
}
_COLOR_TAGS = {A + t for t in ("srgbClr", "schemeClr", "sysClr", "prstClr", "scrgbClr", "hslClr")}
_FILL_TAGS = {A + t: t for t in ("noFill", "solidFill", "gradFill", "blipFill", "pattFill", "grpFill")}
_HEX6 = re.compile(r"[0-9A-F]{6}")


def local(el: etree._Element) -> str:
    """Local name of an element's tag ('' for comments)."""
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def parse_theme(root: etree._Element) -> dict[str, Any]:
    """Theme name, colour scheme (12 RGB hex values) and major/minor latin fonts."""
    elements = find_child(root, A + "themeElements")
    colors: dict[str, str] = {}
    fonts: dict[str, str | None] = {"major": None, "minor": None}
    scheme_name = None
    if elements is not None:
        scheme = find_child(elements, A + "clrScheme")
        if scheme is not None:
            scheme_name = scheme.get("name")
            for child in scheme:
                name = local(child)
                if name in SCHEME_NAMES and len(child):
                    rgb = _base_rgb(child[0], {}, {})
                    if rgb:
                        colors[name] = rgb
        fscheme = find_child(elements, A + "fontScheme")
        if fscheme is not None:
            for key, tag in (("major", "majorFont"), ("minor", "minorFont")):
                latin = fscheme.find(f"{A}{tag}/{A}latin")
                if latin is not None:
                    fonts[key] = latin.get("typeface")
    return {"name": root.get("name"), "color_scheme": scheme_name, "colors": colors, "fonts": fonts}


def clr_map(el: etree._Element | None) -> dict[str, str]:
    """A p:clrMap (or a:overrideClrMapping) element as a dict; defaults when absent."""
    if el is None:
        return dict(DEFAULT_CLR_MAP)
    return {k: v for k, v in el.attrib.items()}


def _base_rgb(el: etree._Element, theme_colors: dict[str, str], cmap: dict[str, str]) -> str | None:
    name = local(el)
    if name == "srgbClr":
        val = (el.get("val") or "").upper()
        return val if _HEX6.fullmatch(val) else None
    if name == "sysClr":
        val = (el.get("lastClr") or "").upper()
        return val if _HEX6.fullmatch(val) else ("000000" if el.get("val") == "windowText" else "FFFFFF")
    if name == "prstClr":
        return _PRESET.get(el.get("val") or "")
    if name == "schemeClr":
        val = el.get("val") or ""
        return theme_colors.get(cmap.get(val, DEFAULT_CLR_MAP.get(val, val)))
    if name == "scrgbClr":
        try:
            parts = [int(el.get(k) or 0) / 100000 for k in ("r", "g", "b")]
        except ValueError:
            return None
        return "".join(f"{max(0, min(255, round(v * 255))):02X}" for v in parts)
    if name == "hslClr":
        try:
            h = int(el.get("hue") or 0) / 21600000
            s = int(el.get("sat") or 0) / 100000
            lum = int(el.get("lum") or 0) / 100000
        except ValueError:
            return None
        r, g, b = colorsys.hls_to_rgb(h % 1.0, max(0.0, min(1.0, lum)), max(0.0, min(1.0, s)))
        return "".join(f"{max(0, min(255, round(c * 255))):02X}" for c in (r, g, b))
    return None


def _pct(el: etree._Element) -> float | None:
    raw = el.get("val") or ""
    try:
        val = float(raw.rstrip("%")) / (100 if raw.endswith("%") else 100000)
    except ValueError:
        return None
    return val if math.isfinite(val) else None  # "inf"/"nan"/"1e999" parse as floats


def _apply_mods(rgb: str, el: etree._Element) -> tuple[str, int | None]:
    r, g, b = (int(rgb[i : i + 2], 16) / 255 for i in (0, 2, 4))
    alpha = None
    for mod in el:
        name = local(mod)
        val = _pct(mod)
        if val is None:
            continue
        if name == "alpha":
            alpha = round(val * 100)
        elif name in ("lumMod", "lumOff"):
            h, lum, s = colorsys.rgb_to_hls(r, g, b)
            lum = lum * val if name == "lumMod" else lum + val
            r, g, b = colorsys.hls_to_rgb(h, max(0.0, min(1.0, lum)), s)
        elif name == "tint":
            r, g, b = (c + (1 - c) * (1 - val) for c in (r, g, b))
        elif name == "shade":
            r, g, b = (c * val for c in (r, g, b))
    out = "".join(f"{max(0, min(255, round(c * 255))):02X}" for c in (r, g, b))
    return out, alpha


def resolve_color(
    el: etree._Element | None, theme_colors: dict[str, str], cmap: dict[str, str]
) -> dict[str, Any] | None:
    """Resolve a colour choice element (or a parent such as a:solidFill holding one)."""
    if el is None:
        return None
    if el.tag not in _COLOR_TAGS:
        el = next((c for c in el if c.tag in _COLOR_TAGS), None)
        if el is None:
            return None
    out: dict[str, Any] = {}
    if local(el) == "schemeClr":
        out["theme"] = el.get("val")
    rgb = _base_rgb(el, theme_colors, cmap)
    if rgb is None:
        return out or None
    rgb, alpha = _apply_mods(rgb, el) if len(el) else (rgb, None)
    out["rgb"] = rgb
    if alpha is not None and alpha != 100:
        out["alpha"] = alpha
    return out


def find_fill(parent: etree._Element | None) -> etree._Element | None:
    """The fill element (noFill, solidFill, gradFill, blipFill, pattFill, grpFill) directly under parent."""
    if parent is None:
        return None
    for child in parent:
        if child.tag in _FILL_TAGS:
            return child
    return None


def describe_fill(
    fill: etree._Element | None, theme_colors: dict[str, str], cmap: dict[str, str]
) -> dict[str, Any] | None:
    """A fill element as a dict: {"type": "solid", "color": {...}} etc.; None when absent."""
    if fill is None:
        return None
    kind = _FILL_TAGS.get(fill.tag)
    if kind == "noFill":
        return {"type": "none"}
    if kind == "solidFill":
        return {"type": "solid", "color": resolve_color(fill, theme_colors, cmap)}
    if kind == "gradFill":
        stops = []
        for gs in fill.iterfind(f"{A}gsLst/{A}gs"):
            stops.append({"pos": gs.get("pos"), "color": resolve_color(gs, theme_colors, cmap)})
        lin = find_child(fill, A + "lin")
        out: dict[str, Any] = {"type": "gradient", "stops": stops}
        if lin is not None:
            out["angle"] = lin.get("ang")
        return out
    if kind == "pattFill":
        return {
            "type": "pattern",
            "preset": fill.get("prst"),
            "fg": resolve_color(find_child(fill, A + "fgClr"), theme_colors, cmap),
            "bg": resolve_color(find_child(fill, A + "bgClr"), theme_colors, cmap),
        }
    if kind == "blipFill":
        return {"type": "picture"}
    if kind == "grpFill":
        return {"type": "group"}
    return None


def describe_line(
    ln: etree._Element, theme_colors: dict[str, str], cmap: dict[str, str]
) -> dict[str, Any] | None:
    """An a:ln-like element (a:ln, a:lnL, a:lnR...) as {width (EMU), fill, dash};
    None when it sets nothing.
    """
    out: dict[str, Any] = {}
    width = ln.get("w")
    if width:
        out["width"] = int(width) if width.isdigit() else width
    fill = describe_fill(find_fill(ln), theme_colors, cmap)
    if fill is not None:
        out["fill"] = fill
    dash = find_child(ln, A + "prstDash")
    if dash is not None:
        out["dash"] = dash.get("val")
    return out or None
