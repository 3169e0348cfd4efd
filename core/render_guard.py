"""What a renderer may be given: decks without external links and without bomb-deep nesting.

Before a deck goes to an office (the LibreOffice renderer calls :func:`render_copy`):

- **external links are removed**: every relationship with ``TargetMode="External"`` other than a
  hyperlink (linked pictures, media, OLE objects, templates, external data) is dropped from a
  private copy, so rendering cannot read ``file:///…`` targets outside the deck nor make network
  requests; a linked picture renders as the office's placeholder. Hyperlinks stay (the office does
  not follow them while rendering).
- **nesting is bounded**: a slide, layout or master whose group shapes nest deeper than
  :data:`MAX_GROUP_DEPTH` (a few kilobytes of such XML drove LibreOffice to 16 GB) is refused with a
  :class:`~pptarena.deck.DeckError`, the deck's own fault (``agent_error`` for a prediction).

The package is read through the deck engine, so its size, entry and ratio limits apply too.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAX_GROUP_DEPTH = 24  # real decks nest groups a handful deep
_SHAPE_PARTS = re.compile(r"^ppt/(slides|slideLayouts|slideMasters|notesSlides)/[^/]+\.xml$")
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_PR = "http://schemas.openxmlformats.org/package/2006/relationships"


def group_depth(root: object) -> int:
    """The deepest nesting of ``p:grpSp`` elements under ``root`` (an lxml element)."""
    deepest = 0
    for el in root.iter(f"{{{_P}}}grpSp"):  # type: ignore[attr-defined]
        depth = 1 + sum(1 for _ in el.iterancestors(f"{{{_P}}}grpSp"))
        deepest = max(deepest, depth)
        if deepest > MAX_GROUP_DEPTH:
            break
    return deepest


def check_deck(path: Path) -> list[str]:
    """Refuse a bomb-deep deck (:class:`DeckError`); return the external link targets it holds."""
    from .deck import DeckError
    from .deck.read import open_package, parse_xml

    links: list[str] = []
    with open_package(path) as pkg:
        for name in pkg.names():
            if _SHAPE_PARTS.match(name):
                depth = group_depth(pkg.xml(name))
                if depth > MAX_GROUP_DEPTH:
                    raise DeckError(
                        f"{Path(path).name}: /{name} nests groups {depth}+ deep, "
                        f"over the {MAX_GROUP_DEPTH} limit"
                    )
            elif name.endswith(".rels"):
                root = parse_xml(pkg.read(name), f"{Path(path).name}: /{name}")
                for rel in root.iterfind(f"{{{_PR}}}Relationship"):
                    if rel.get("TargetMode") == "External" and not (rel.get("Type") or "").endswith(
                        "/hyperlink"
                    ):
                        links.append(f"/{name}: {rel.get('Target')}")
    return links


def _strip_external(src: Path, dst: Path) -> None:
    from lxml import etree

    from .deck.read import parse_xml

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".rels"):
                root = parse_xml(data, info.filename)
                for rel in list(root.iterfind(f"{{{_PR}}}Relationship")):
                    if rel.get("TargetMode") == "External" and not (rel.get("Type") or "").endswith(
                        "/hyperlink"
                    ):
                        root.remove(rel)
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            zout.writestr(info, data)


@contextmanager
def render_copy(deck: Path) -> Iterator[Path]:
    """The deck to hand to a renderer: ``deck`` itself, or a private copy without external links.

    :raises DeckError: the deck cannot be read or nests groups too deep.
    """
    links = check_deck(deck)
    if not links:
        yield deck
        return
    scratch = Path(tempfile.mkdtemp(prefix="pptarena-render-"))
    try:
        safe = scratch / deck.name
        _strip_external(deck, safe)
        yield safe
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
