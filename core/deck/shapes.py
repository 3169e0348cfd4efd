"""Shapes of a slide's shape tree, in z-order, as plain dicts.

Each shape has ``id``, ``name``, ``kind`` (text_box, autoshape, freeform, placeholder, picture,
media, table, chart, smartart, ole, graphic_frame, group, connector, content_part) and, where they
apply: ``geometry``, ``placeholder`` {type, idx}, position/size ``x``, ``y``, ``cx``, ``cy`` (EMU),
``rot`` (degrees), ``flip_h``/``flip_v``, ``fill``, ``line``, ``hyperlink``, ``text`` and
``paragraphs``, ``picture``, ``table``, ``chart``, ``smartart``, ``ole`` and ``children`` (groups).
``inherited`` lists the top-level keys that were taken from the layout/master placeholder or the
shape style rather than written on the shape itself.

Why it is long: :func:`read_shape` reads all fourteen shape kinds, and the facts they have in
common (placeholder inheritance from layout and master, shape-style colours, group transforms to
slide space) are resolved here once for all of them; the per-kind readers (pictures, charts,
SmartArt) are small and only called from that dispatch.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from .read import NS, RT, Package
from .styles import A, P, describe_fill, describe_line, find_fill, local, resolve_color
from .tables import read_table
from .text import TextContext, frame_text, frame_text_simple, paragraphs
from .xfind import find_child, find_path

C = "{" + NS["c"] + "}"
R_ID = "{" + NS["r"] + "}id"
R_EMBED = "{" + NS["r"] + "}embed"
R_LINK = "{" + NS["r"] + "}link"
R_DM = "{" + NS["r"] + "}dm"
MC = "{" + NS["mc"] + "}"
DGM = "{" + NS["dgm"] + "}"

URI_TABLE = "http://schemas.openxmlformats.org/drawingml/2006/table"
URI_CHART = "http://schemas.openxmlformats.org/drawingml/2006/chart"
URI_DIAGRAM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
URI_OLE = "http://schemas.openxmlformats.org/presentationml/2006/ole"

MAX_GROUP_DEPTH = 64
MAX_CHART_POINTS = 100_000

Transform = tuple[float, float, float, float]  # (ox, oy, sx, sy): x_slide = ox + sx * x_child

_SHAPE_TAGS = {P + t for t in ("sp", "pic", "graphicFrame", "grpSp", "cxnSp", "contentPart")}
_MASTER_TYPE = {"ctrTitle": "title", "title": "title", "dt": "dt", "ftr": "ftr", "sldNum": "sldNum"}


class ShapeContext:
    """Per-slide facts the shape reader needs (package, part, text context, inheritance sources)."""

    def __init__(
        self,
        pkg: Package,
        part: str,
        text: TextContext,
        layout_phs: PlaceholderIndex | None,
        master_phs: PlaceholderIndex | None,
        tx_styles: dict[str, etree._Element | None],
        default_style: etree._Element | None,
    ) -> None:
        self.pkg = pkg
        self.part = part
        self.text = text
        self.layout_phs = layout_phs
        self.master_phs = master_phs
        self.tx_styles = tx_styles
        self.default_style = default_style


class PlaceholderIndex:
    """Placeholders of a layout or master, looked up by idx and by type."""

    def __init__(self, root: etree._Element | None) -> None:
        self.by_idx: dict[str, etree._Element] = {}
        self.by_type: dict[str, etree._Element] = {}
        self.memo: dict[tuple[Any, ...], Any] = {}  # per-placeholder inheritance facts (shapes._inherited)
        if root is None:
            return
        tree = find_path(root, P + "cSld", P + "spTree")
        if tree is None:
            return
        for sp in tree.iter(P + "sp", P + "pic", P + "graphicFrame"):
            ph = _ph(sp)
            if ph is None:
                continue
            ptype = ph.get("type") or "obj"
            idx = ph.get("idx")
            if idx is not None:
                self.by_idx.setdefault(idx, sp)
            self.by_type.setdefault(ptype, sp)

    def find(self, ptype: str, idx: str | None, master: bool = False) -> etree._Element | None:
        """The matching placeholder: by idx (layouts), else by type (body stands in on masters)."""
        if not master and idx is not None and idx in self.by_idx:
            return self.by_idx[idx]
        if master:
            mtype = _MASTER_TYPE.get(ptype, "body")
            return self.by_type.get(mtype)
        found = self.by_type.get(ptype)
        if found is None and ptype in ("ctrTitle", "title"):
            found = self.by_type.get("title") or self.by_type.get("ctrTitle")
        return found


def _nv(el: etree._Element) -> etree._Element | None:
    for child in el:
        tag = child.tag
        if isinstance(tag, str) and tag.startswith("nv", tag.rfind("}") + 1):
            return child
    return None


def _ph(el: etree._Element) -> etree._Element | None:
    nv = _nv(el)
    if nv is None:
        return None
    return find_path(nv, P + "nvPr", P + "ph")


_XFRM_PATHS = {P + "graphicFrame": (P + "xfrm",), P + "grpSp": (P + "grpSpPr", A + "xfrm")}
_SP_XFRM = (P + "spPr", A + "xfrm")


def _xfrm(el: etree._Element) -> etree._Element | None:
    return find_path(el, *_XFRM_PATHS.get(el.tag, _SP_XFRM))


def _geometry(xfrm: etree._Element | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if xfrm is None:
        return out
    off = find_child(xfrm, A + "off")
    ext = find_child(xfrm, A + "ext")
    try:
        if off is not None:
            out["x"] = int(off.get("x") or 0)
            out["y"] = int(off.get("y") or 0)
        if ext is not None:
            out["cx"] = int(ext.get("cx") or 0)
            out["cy"] = int(ext.get("cy") or 0)
        rot = int(xfrm.get("rot") or 0)
    except ValueError:
        return out
    if rot:
        out["rot"] = round(rot / 60000, 3)
    if xfrm.get("flipH") in ("1", "true"):
        out["flip_h"] = True
    if xfrm.get("flipV") in ("1", "true"):
        out["flip_v"] = True
    return out


def hyperlink_target(link: etree._Element, ctx: ShapeContext, slide_ids: dict[str, int]) -> Any:
    """A hyperlink element as {"url"}, {"slide": sldId} or {"action"}; None if it points nowhere."""
    action = link.get("action") or ""
    rid = link.get(R_ID)
    rel = ctx.pkg.rels(ctx.part).get(rid) if rid else None
    if rel is not None and rel.external:
        return {"url": rel.target}
    if rel is not None and rel.type == RT["slide"]:
        return {"slide": slide_ids.get(rel.target)}
    if action:
        return {"action": action}
    if rel is not None:
        return {"target": rel.target}
    return None


def _image_hash(pkg: Package, part: str | None) -> str | None:
    if part is None:
        return None
    info = pkg._infos.get(part)  # crc32 + size: cheap and needs no inflation
    return f"{info.CRC:08x}:{info.file_size}" if info is not None else None


def _picture(el: etree._Element, ctx: ShapeContext) -> dict[str, Any]:
    blip_fill = find_child(el, P + "blipFill")
    if blip_fill is None:
        blip_fill = find_child(el, A + "blipFill")
    out: dict[str, Any] = {}
    if blip_fill is None:
        return out
    blip = find_child(blip_fill, A + "blip")
    if blip is not None:
        if blip.get(R_EMBED):
            out["image"] = _image_hash(ctx.pkg, ctx.pkg.rel_target(ctx.part, blip.get(R_EMBED)))
        elif blip.get(R_LINK):
            rel = ctx.pkg.rels(ctx.part).get(blip.get(R_LINK) or "")
            out["linked"] = rel.target if rel is not None else None
    src = find_child(blip_fill, A + "srcRect")
    if src is not None:
        crop = {
            k: int(v)
            for k, v in src.attrib.items()
            if k in ("l", "t", "r", "b") and v.lstrip("-").isdigit() and int(v)
        }
        if crop:
            out["crop"] = crop
    return out


def _points(parent: etree._Element | None, numeric: bool) -> list[Any]:
    if parent is None:
        return []
    pts: dict[int, Any] = {}
    for pt in parent.iter(C + "pt"):
        if len(pts) >= MAX_CHART_POINTS:
            break
        v = find_child(pt, C + "v")
        raw = v.text if v is not None else None
        try:
            idx = int(pt.get("idx") or len(pts))
        except ValueError:
            idx = len(pts)
        if numeric:
            try:
                pts[idx] = float(raw) if raw is not None else None
            except ValueError:
                pts[idx] = raw
        else:
            pts[idx] = raw
    return [pts[i] for i in sorted(pts)]


def _chart(ctx: ShapeContext, rid: str | None) -> dict[str, Any]:
    part = ctx.pkg.rel_target(ctx.part, rid)
    if part is None:
        return {"missing": True}
    root = ctx.pkg.xml(part)
    chart = find_child(root, C + "chart")
    plot = find_child(chart, C + "plotArea") if chart is not None else None
    out: dict[str, Any] = {"types": [], "series": []}
    if chart is not None:
        title = find_child(chart, C + "title")
        if title is not None:
            out["title"] = "".join(t.text or "" for t in title.iter(A + "t")) or None
    if plot is None:
        return out
    for group in plot:
        name = local(group)
        if not name.endswith("Chart"):
            continue
        bar_dir = find_child(group, C + "barDir")
        out["types"].append(name + (f":{bar_dir.get('val')}" if bar_dir is not None else ""))
        for ser in group.iterchildren(C + "ser"):
            tx = find_child(ser, C + "tx")
            sname = None
            if tx is not None:
                v = next(tx.iter(C + "v"), None)
                sname = v.text if v is not None else None
            cat = find_child(ser, C + "cat")
            if cat is None:
                cat = find_child(ser, C + "xVal")
            val = find_child(ser, C + "val")
            if val is None:
                val = find_child(ser, C + "yVal")
            out["series"].append(
                {"name": sname, "categories": _points(cat, False), "values": _points(val, True)}
            )
    return out


def _smartart(ctx: ShapeContext, rel_ids: etree._Element | None) -> dict[str, Any]:
    part = ctx.pkg.rel_target(ctx.part, rel_ids.get(R_DM) if rel_ids is not None else None)
    if part is None:
        return {"texts": []}
    root = ctx.pkg.xml(part)
    texts = []
    for pt in root.iter(DGM + "pt"):
        t = find_child(pt, DGM + "t")
        if t is not None:
            text = frame_text_simple(t)
            if text:
                texts.append(text)
    return {"texts": texts}


def _style_color(
    el: etree._Element, ctx: ShapeContext, ref: str, style: etree._Element | None | bool = True
) -> dict[str, Any] | None:
    """Colour of the shape style's ``ref`` (fillRef/lnRef/fontRef); ``style`` is the p:style when known."""
    if style is True:
        style = find_child(el, _STYLE)
    if style is None or style is False:
        return None
    ref_el = find_child(style, A + ref)
    if ref_el is None or (ref != "fontRef" and ref_el.get("idx") in ("0", None)):
        return None
    return resolve_color(ref_el, ctx.text.theme_colors, ctx.text.cmap)


_STYLE = P + "style"
_SP_PR = P + "spPr"
_TX_BODY = P + "txBody"
_CUST_GEOM, _PRST_GEOM = A + "custGeom", A + "prstGeom"
_NVPR_PH = (P + "nvPr", P + "ph")


def _line(
    sppr: etree._Element | None,
    el: etree._Element,
    ctx: ShapeContext,
    style: etree._Element | None | bool = True,
) -> tuple[Any, bool]:
    ln = find_child(sppr, A + "ln") if sppr is not None else None
    if ln is None:
        color = _style_color(el, ctx, "lnRef", style)
        return ({"style": True, "color": color} if color else None), True
    return describe_line(ln, ctx.text.theme_colors, ctx.text.cmap), False


def _placeholder_sources(ph: etree._Element, ctx: ShapeContext) -> tuple[list[etree._Element], str]:
    ptype = ph.get("type") or "obj"
    idx = ph.get("idx")
    sources = []
    layout_sp = ctx.layout_phs.find(ptype, idx) if ctx.layout_phs else None
    if layout_sp is not None:
        sources.append(layout_sp)
        lph = _ph(layout_sp)
        ptype_m = (lph.get("type") or ptype) if lph is not None else ptype
    else:
        ptype_m = ptype
    master_sp = ctx.master_phs.find(ptype_m, idx, master=True) if ctx.master_phs else None
    if master_sp is not None:
        sources.append(master_sp)
    return sources, ptype_m


class _Inherited:
    """What a placeholder inherits, resolved once per (layout, master, type, idx)."""

    __slots__ = ("sources", "ptype", "lst_styles", "geometries")

    def __init__(self, ph: etree._Element, ctx: ShapeContext) -> None:
        self.sources, self.ptype = _placeholder_sources(ph, ctx)
        self.lst_styles = [find_path(s, *_TX_LST_STYLE) for s in self.sources]
        self.geometries = [_geometry(_xfrm(s)) for s in self.sources]


_TX_LST_STYLE = (P + "txBody", A + "lstStyle")


def _inherited(ph: etree._Element, ctx: ShapeContext) -> _Inherited:
    """The placeholder's inheritance facts, memoised on the layout's :class:`PlaceholderIndex`."""
    if ctx.layout_phs is None:
        return _Inherited(ph, ctx)
    key = (ph.get("type"), ph.get("idx"), id(ctx.master_phs))
    memo = ctx.layout_phs.memo
    found = memo.get(key)
    if found is None:
        found = memo[key] = _Inherited(ph, ctx)
    return found


def _tx_style(ptype: str | None, ctx: ShapeContext) -> etree._Element | None:
    if ptype is None:
        return ctx.default_style
    if ptype in ("title", "ctrTitle"):
        return ctx.tx_styles.get("title")
    if ptype in ("body", "obj", "subTitle", "tbl", "chart", "dgm", "media", "clipArt", "pic"):
        return ctx.tx_styles.get("body")
    return ctx.tx_styles.get("other")


def _child_transform(el: etree._Element, transform: Transform | None) -> Transform:
    """The child-space → slide-space transform inside group ``el`` (composed with its parent's)."""
    ox, oy, sx, sy = transform or (0.0, 0.0, 1.0, 1.0)
    xfrm = _xfrm(el)
    if xfrm is None:
        return ox, oy, sx, sy
    vals: dict[str, int] = {}
    for tag, keys in (
        ("off", ("x", "y")),
        ("ext", ("cx", "cy")),
        ("chOff", ("x", "y")),
        ("chExt", ("cx", "cy")),
    ):
        sub = find_child(xfrm, A + tag)
        for k in keys:
            raw = sub.get(k) if sub is not None else None
            try:
                vals[tag + k] = int(raw) if raw is not None else 0
            except ValueError:
                vals[tag + k] = 0
    # a zero child extent (or group extent) gives no usable scale: keep 1
    gx = vals["extcx"] / vals["chExtcx"] if vals["chExtcx"] and vals["extcx"] else 1.0
    gy = vals["extcy"] / vals["chExtcy"] if vals["chExtcy"] and vals["extcy"] else 1.0
    return (
        ox + sx * (vals["offx"] - vals["chOffx"] * gx),
        oy + sy * (vals["offy"] - vals["chOffy"] * gy),
        sx * gx,
        sy * gy,
    )


def _abs_position(geo: dict[str, Any], transform: Transform) -> dict[str, int]:
    ox, oy, sx, sy = transform
    out = {}
    if "x" in geo:
        out["x"] = round(ox + sx * geo["x"])
        out["y"] = round(oy + sy * geo["y"])
    if "cx" in geo:
        out["cx"] = round(sx * geo["cx"])
        out["cy"] = round(sy * geo["cy"])
    return out


def read_shape(
    el: etree._Element,
    ctx: ShapeContext,
    slide_ids: dict[str, int],
    depth: int = 0,
    transform: Transform | None = None,
) -> dict[str, Any]:
    """One shape element (p:sp, p:pic, p:graphicFrame, p:grpSp, p:cxnSp, p:contentPart) as a dict.

    ``transform`` is set for shapes inside a group: it maps the group's child coordinates to
    slide space, and the shape then gets ``abs_position`` {x, y, cx, cy} in slide EMU.
    """
    tag = local(el)
    nv = _nv(el)
    cnv = nv[0] if nv is not None and len(nv) else None
    out: dict[str, Any] = {
        "id": int(cnv.get("id")) if cnv is not None and (cnv.get("id") or "").isdigit() else None,
        "name": cnv.get("name") if cnv is not None else None,
        "kind": tag,
    }
    inherited: list[str] = []
    ph = find_path(nv, *_NVPR_PH) if nv is not None else None
    inh: _Inherited | None = None
    if ph is not None:
        out["placeholder"] = {
            "type": ph.get("type") or "obj",
            "idx": int(ph.get("idx") or 0) if (ph.get("idx") or "0").isdigit() else ph.get("idx"),
        }
        inh = _inherited(ph, ctx)
    kids: dict[Any, etree._Element] = {}
    for sub in el:  # first child of each tag, as find() would return it
        kids.setdefault(sub.tag, sub)
    sppr = kids.get(_SP_PR)
    sppr_kids: dict[Any, etree._Element] = {}
    if sppr is not None:
        for sub in sppr:
            sppr_kids.setdefault(sub.tag, sub)
    if tag == "sp":
        if ph is not None:
            out["kind"] = "placeholder"
        elif (
            cnv is not None
            and nv is not None
            and (cnv_sp := find_child(nv, P + "cNvSpPr")) is not None
            and cnv_sp.get("txBox") in ("1", "true")
        ):
            out["kind"] = "text_box"
        elif _CUST_GEOM in sppr_kids:
            out["kind"] = "freeform"
        else:
            out["kind"] = "autoshape"
    elif tag == "cxnSp":
        out["kind"] = "connector"
    elif tag == "grpSp":
        out["kind"] = "group"
    elif tag == "contentPart":
        out["kind"] = "content_part"
    elif tag == "pic":
        nvpr = find_child(nv, P + "nvPr") if nv is not None else None
        media = nvpr is not None and any(
            local(c) in ("videoFile", "audioFile", "quickTimeFile", "wavAudioFile") for c in nvpr
        )
        out["kind"] = "media" if media else "picture"
    prst = sppr_kids.get(_PRST_GEOM)
    if prst is not None:
        out["geometry"] = prst.get("prst")
    geo = _geometry(_xfrm(el))
    if inh is not None and inh.sources and not all(k in geo for k in ("x", "y", "cx", "cy")):
        for base in inh.geometries:
            if "x" in base and "x" not in geo:
                geo.update(x=base["x"], y=base["y"])
                inherited.append("position")
            if "cx" in base and "cx" not in geo:
                geo.update(cx=base["cx"], cy=base["cy"])
                inherited.append("size")
    out.update(geo)
    if transform is not None:
        absolute = _abs_position(geo, transform)
        if absolute:
            out["abs_position"] = absolute
    if cnv is not None:
        if cnv.get("descr"):
            out["descr"] = cnv.get("descr")
        if cnv.get("hidden") in ("1", "true"):
            out["hidden"] = True
        link = find_child(cnv, A + "hlinkClick")
        if link is not None:
            target = hyperlink_target(link, ctx, slide_ids)
            if target is not None:
                out["hyperlink"] = target
    style = kids.get(_STYLE)
    if tag in ("sp", "cxnSp", "pic"):
        fill = describe_fill(find_fill(sppr), ctx.text.theme_colors, ctx.text.cmap)
        if fill is None and tag == "sp":
            color = _style_color(el, ctx, "fillRef", style)
            if color is not None:
                fill = {"type": "style", "color": color}
                inherited.append("fill")
        if fill is not None:
            out["fill"] = fill
        line, line_inherited = _line(sppr, el, ctx, style)
        if line is not None:
            out["line"] = line
            if line_inherited:
                inherited.append("line")
    if tag == "sp":
        txbody = kids.get(_TX_BODY)
        if txbody is not None:
            styles = (
                [*inh.lst_styles, _tx_style(inh.ptype, ctx)] if inh is not None else [_tx_style(None, ctx)]
            )
            style_color = _style_color(el, ctx, "fontRef", style) if ph is None else None
            paras = paragraphs(txbody, styles, ctx.text, style_color)
            out["text"] = frame_text(paras)
            out["paragraphs"] = paras
    elif tag == "pic":
        out["picture"] = _picture(el, ctx)
    elif tag == "graphicFrame":
        gdata = find_path(el, A + "graphic", A + "graphicData")
        uri = gdata.get("uri") if gdata is not None else None
        if uri == URI_TABLE and gdata is not None:
            out["kind"] = "table"
            tbl = find_child(gdata, A + "tbl")
            out["table"] = (
                read_table(tbl, ctx.text, _tx_style(None, ctx))
                if tbl is not None
                else {"rows": 0, "cols": 0, "cells": []}
            )
        elif uri == URI_CHART and gdata is not None:
            out["kind"] = "chart"
            chart_ref = find_child(gdata, C + "chart")
            out["chart"] = _chart(ctx, chart_ref.get(R_ID) if chart_ref is not None else None)
        elif uri == URI_DIAGRAM and gdata is not None:
            out["kind"] = "smartart"
            out["smartart"] = _smartart(ctx, find_child(gdata, DGM + "relIds"))
        elif gdata is not None and (uri == URI_OLE or next(gdata.iter(P + "oleObj"), None) is not None):
            out["kind"] = "ole"
            obj = next(gdata.iter(P + "oleObj"), None)
            if obj is not None:
                out["ole"] = {"prog_id": obj.get("progId"), "name": obj.get("name")}
        else:
            out["kind"] = "graphic_frame"
    elif tag == "grpSp":
        out["children"] = read_tree(el, ctx, slide_ids, depth + 1, _child_transform(el, transform))
    if inherited:
        out["inherited"] = inherited
    return out


def read_tree(
    tree: etree._Element,
    ctx: ShapeContext,
    slide_ids: dict[str, int],
    depth: int = 0,
    transform: Transform | None = None,
) -> list[dict[str, Any]]:
    """All shapes directly under ``tree`` (p:spTree or p:grpSp) in z-order (mc:AlternateContent resolved).

    ``transform`` (ox, oy, sx, sy) maps child coordinates to slide space (x' = ox + sx * x) when
    ``tree`` is a group; None for the slide's own tree.
    """
    if depth > MAX_GROUP_DEPTH:
        return []
    out = []
    for child in tree:
        tag = child.tag
        if tag in _SHAPE_TAGS:
            out.append(read_shape(child, ctx, slide_ids, depth, transform))
        elif tag == MC + "AlternateContent":
            branch = find_child(child, MC + "Choice")
            if branch is None or not any(c.tag in _SHAPE_TAGS for c in branch):
                branch = find_child(child, MC + "Fallback")
            if branch is not None:
                for sub in branch:
                    if sub.tag in _SHAPE_TAGS:
                        out.append(read_shape(sub, ctx, slide_ids, depth, transform))
    return out
