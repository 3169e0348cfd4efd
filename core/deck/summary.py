"""The deterministic JSON summary of a deck.

``summarize(path)`` returns a plain dict (JSON-ready, same input -> same output) whose top level
has ``schema``, ``file``, ``slide_size``, ``properties``, ``sections``, ``themes``, ``masters`` and
``slides``. The JSON Schema is ``pptarena/schemas/deck-summary.schema.json``; docs/deck.md describes
every field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lxml import etree

from .read import NS, RT, DeckError, Package, open_package
from .shapes import PlaceholderIndex, ShapeContext, hyperlink_target, read_tree
from .styles import A, P, clr_map, describe_fill, find_fill, parse_theme, resolve_color
from .text import TextContext, frame_text, paragraphs
from .timing import animations, transition
from .xfind import find_child, find_path

SCHEMA_ID = "pptarena/deck-summary/1"
RT_CORE = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
P14 = "{" + NS["p14"] + "}"
R_ID = "{" + NS["r"] + "}id"
_CORE_FIELDS = (
    ("title", NS["dc"], "title"),
    ("subject", NS["dc"], "subject"),
    ("creator", NS["dc"], "creator"),
    ("keywords", NS["cp"], "keywords"),
    ("description", NS["dc"], "description"),
    ("category", NS["cp"], "category"),
    ("last_modified_by", NS["cp"], "lastModifiedBy"),
    ("revision", NS["cp"], "revision"),
    ("created", NS["dcterms"], "created"),
    ("modified", NS["dcterms"], "modified"),
)


class _Master:
    """Cached facts about one slide master."""

    def __init__(self, pkg: Package, part: str) -> None:
        root = pkg.xml(part)
        self.part = part
        self.name = _csld_name(root)
        self.theme_part = pkg.first_rel(part, RT["theme"])
        self.theme: dict[str, Any] = (
            parse_theme(pkg.xml(self.theme_part))
            if self.theme_part
            else {"name": None, "color_scheme": None, "colors": {}, "fonts": {"major": None, "minor": None}}
        )
        self.cmap = clr_map(find_child(root, P + "clrMap"))
        self.phs = PlaceholderIndex(root)
        styles = find_child(root, P + "txStyles")
        self.tx_styles = {
            key: find_child(styles, P + tag) if styles is not None else None
            for key, tag in (("title", "titleStyle"), ("body", "bodyStyle"), ("other", "otherStyle"))
        }
        self.bg = find_path(root, P + "cSld", P + "bg")


class _Layout:
    """Cached facts about one slide layout."""

    def __init__(self, pkg: Package, part: str) -> None:
        root = pkg.xml(part)
        self.part = part
        self.name = _csld_name(root)
        self.master_part = pkg.first_rel(part, RT["slideMaster"])
        self.phs = PlaceholderIndex(root)
        self.bg = find_path(root, P + "cSld", P + "bg")


def _csld_name(root: etree._Element) -> str | None:
    csld = find_child(root, P + "cSld")
    return csld.get("name") if csld is not None else None


class _Deck:
    """Shared, cached state while summarising one package."""

    def __init__(self, pkg: Package) -> None:
        self.pkg = pkg
        self.pres = pkg.xml(pkg.main_part)
        self.masters: dict[str, _Master] = {}
        self.layouts: dict[str, _Layout] = {}
        self.default_style = find_child(self.pres, P + "defaultTextStyle")
        # list-style resolution caches, one per (master, colour map): what text resolution depends on
        self.text_caches: dict[tuple[Any, ...], dict[tuple[Any, ...], Any]] = {}

    def text_cache(self, master: _Master | None, cmap: dict[str, str]) -> dict[tuple[Any, ...], Any]:
        """The shared text-style cache for slides under ``master`` with colour map ``cmap``."""
        key = (master.part if master else None, *sorted(cmap.items()))
        return self.text_caches.setdefault(key, {})

    def master(self, part: str | None) -> _Master | None:
        if part is None:
            return None
        if part not in self.masters:
            self.masters[part] = _Master(self.pkg, part)
        return self.masters[part]

    def layout(self, part: str | None) -> _Layout | None:
        if part is None:
            return None
        if part not in self.layouts:
            self.layouts[part] = _Layout(self.pkg, part)
        return self.layouts[part]


def _properties(pkg: Package) -> dict[str, Any]:
    part = None
    for rel in pkg.rels("").values():
        if rel.type == RT_CORE and not rel.external and pkg.has(rel.target):
            part = rel.target
    if part is None:
        return {}
    root = pkg.xml(part)
    out: dict[str, Any] = {}
    for key, ns, tag in _CORE_FIELDS:
        el = find_child(root, f"{{{ns}}}{tag}")
        if el is not None and el.text:
            out[key] = el.text.strip()
    return out


def _sections(pres: etree._Element) -> list[dict[str, Any]]:
    out = []
    for section in pres.iter(P14 + "section"):
        ids = []
        for sid in section.iter(P14 + "sldId"):
            try:
                ids.append(int(sid.get("id") or ""))
            except ValueError:
                continue
        out.append({"name": section.get("name"), "slides": ids})
    return out


def _slide_size(pres: etree._Element) -> dict[str, Any]:
    size = find_child(pres, P + "sldSz")
    if size is None:
        return {}
    out: dict[str, Any] = {}
    for key in ("cx", "cy"):
        try:
            out[key] = int(size.get(key) or 0)
        except ValueError:
            out[key] = None
    if size.get("type"):
        out["type"] = size.get("type")
    return out


def _background(
    bg: etree._Element | None, colors: dict[str, str], cmap: dict[str, str]
) -> dict[str, Any] | None:
    if bg is None:
        return None
    pr = find_child(bg, P + "bgPr")
    if pr is not None:
        return describe_fill(find_fill(pr), colors, cmap)
    ref = find_child(bg, P + "bgRef")
    if ref is not None:
        return {"type": "theme_style", "idx": ref.get("idx"), "color": resolve_color(ref, colors, cmap)}
    return None


def _notes(deck: _Deck, slide_part: str, text_ctx: TextContext) -> str | None:
    part = deck.pkg.first_rel(slide_part, RT["notesSlide"])
    if part is None:
        return None
    root = deck.pkg.xml(part)
    texts = []
    tree = find_path(root, P + "cSld", P + "spTree")
    if tree is None:
        return None
    for sp in tree.iter(P + "sp"):
        ph = find_path(sp, P + "nvSpPr", P + "nvPr", P + "ph")
        if ph is None or ph.get("type") != "body":
            continue
        texts.append(frame_text(paragraphs(find_child(sp, P + "txBody"), [], text_ctx)))
    return "\n".join(texts) if texts else None


def _masters_summary(deck: _Deck) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pkg = deck.pkg
    masters = []
    themes: dict[str, dict[str, Any]] = {}
    lst = find_child(deck.pres, P + "sldMasterIdLst")
    for mid in lst.iterchildren(P + "sldMasterId") if lst is not None else []:
        part = pkg.rel_target(pkg.main_part, mid.get(R_ID))
        master = deck.master(part)
        if master is None:
            continue
        layouts = []
        mroot = pkg.xml(master.part)
        llst = find_child(mroot, P + "sldLayoutIdLst")
        for lid in llst.iterchildren(P + "sldLayoutId") if llst is not None else []:
            lpart = pkg.rel_target(master.part, lid.get(R_ID))
            layout = deck.layout(lpart)
            if layout is not None:
                layouts.append({"part": layout.part, "name": layout.name})
        masters.append(
            {"part": master.part, "name": master.name, "theme": master.theme_part, "layouts": layouts}
        )
        if master.theme_part and master.theme_part not in themes:
            themes[master.theme_part] = {"part": master.theme_part, **master.theme}
    return masters, list(themes.values())


def _slide(deck: _Deck, number: int, sld_id: int, part: str, part_ids: dict[str, int]) -> dict[str, Any]:
    pkg = deck.pkg
    root = pkg.xml(part)
    if root.tag != P + "sld":
        raise DeckError(f"{pkg.name}: /{part} is not a slide (root element {etree.QName(root).localname})")
    layout = deck.layout(pkg.first_rel(part, RT["slideLayout"]))
    master = deck.master(layout.master_part if layout else None)
    colors: dict[str, str] = master.theme["colors"] if master else {}
    fonts: dict[str, Any] = master.theme["fonts"] if master else {}
    cmap = dict(master.cmap) if master else clr_map(None)
    override = find_path(root, P + "clrMapOvr", A + "overrideClrMapping")
    if override is not None:
        cmap.update(override.attrib)
    ctx = ShapeContext(
        pkg,
        part,
        None,  # type: ignore[arg-type]  # the text context is set just below (it needs ctx)
        layout.phs if layout else None,
        master.phs if master else None,
        master.tx_styles if master else {},
        deck.default_style,
    )
    ctx.text = TextContext(
        colors, cmap, fonts, lambda link: hyperlink_target(link, ctx, part_ids), deck.text_cache(master, cmap)
    )
    csld = find_child(root, P + "cSld")
    tree = find_child(csld, P + "spTree") if csld is not None else None
    shapes = read_tree(tree, ctx, part_ids) if tree is not None else []
    background = _background(find_child(csld, P + "bg") if csld is not None else None, colors, cmap)
    bg_inherited = False
    if background is None:
        for src in (layout.bg if layout else None, master.bg if master else None):
            background = _background(src, colors, cmap)
            if background is not None:
                bg_inherited = True
                break
    slide: dict[str, Any] = {
        "number": number,
        "sld_id": sld_id,
        "part": part,
        "layout": layout.name if layout else None,
        "master": master.name if master else None,
        "hidden": root.get("show") in ("0", "false"),
        "title": _title(shapes),
        "background": background,
    }
    if bg_inherited:
        slide["background_inherited"] = True
    slide["transition"] = transition(root)
    slide["animations"] = animations(root)
    slide["notes"] = _notes(deck, part, ctx.text)
    slide["shapes"] = shapes
    return slide


def _title(shapes: list[dict[str, Any]]) -> str | None:
    for shape in shapes:
        ph = shape.get("placeholder")
        if ph and ph.get("type") in ("title", "ctrTitle"):
            return shape.get("text") or None
    return None


def summarize_package(pkg: Package) -> dict[str, Any]:
    """The summary of an open :class:`Package` (see :func:`summarize`)."""
    deck = _Deck(pkg)
    refs = pkg.slide_refs()
    part_ids = {part: sld_id for sld_id, part in refs}
    masters, themes = _masters_summary(deck)
    slides = [_slide(deck, n, sld_id, part, part_ids) for n, (sld_id, part) in enumerate(refs, start=1)]
    return {
        "schema": SCHEMA_ID,
        "file": pkg.name,
        "slide_size": _slide_size(deck.pres),
        "properties": _properties(pkg),
        "sections": _sections(deck.pres),
        "themes": themes,
        "masters": masters,
        "slides": slides,
    }


def summarize(path: str | Path) -> dict[str, Any]:
    """The deterministic JSON summary of the deck at ``path``; raises :class:`DeckError` if unreadable."""
    with open_package(path) as pkg:
        try:
            return summarize_package(pkg)
        except DeckError:
            raise
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
            raise DeckError(f"{pkg.name}: cannot summarise ({type(exc).__name__}: {exc})") from exc


def to_json_text(summary: dict[str, Any]) -> str:
    """Canonical JSON text of a summary (UTF-8 friendly, 1-space indent, stable)."""
    return json.dumps(summary, ensure_ascii=False, indent=1)


def slide_flags(slide: dict[str, Any], *, notes: bool = False) -> list[str]:
    """Short markers for a summarised slide: hidden, its transition, its animation count (and notes)."""
    flags = []
    if slide.get("hidden"):
        flags.append("hidden")
    if slide.get("transition"):
        flags.append(f"transition={slide['transition'].get('type')}")
    if slide.get("animations"):
        flags.append(f"{len(slide['animations'])} animation(s)")
    if notes and slide.get("notes"):
        flags.append("notes")
    return flags
