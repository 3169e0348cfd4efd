"""What a renderer may be given: decks that point nowhere outside themselves, without bomb-deep nesting.

Before a deck goes to an office (the LibreOffice renderer calls :func:`render_copy`), every reference
that could make the office read something other than the package is removed from a private copy:

- **relationships that are not internal**: LibreOffice treats every ``TargetMode`` other than the exact
  string ``Internal`` as external (python-pptx only the exact ``External``), so a relationship is kept
  only when its mode is absent or ``internal`` in any case (rewritten to ``Internal`` in the copy).
  Linked pictures, media, OLE objects (``p:oleObj`` links), templates, external workbooks and DDE
  links (``externalLink`` parts) all end up here and are dropped; a linked picture renders as the
  office's placeholder. External *hyperlinks* stay (they change how text looks) unless their target
  is not ``http(s):`` or ``mailto:``: such a target is replaced by ``https://removed.invalid/`` (the
  office does not follow hyperlinks while rendering, but a picture may name a hyperlink's id).
- **internal targets that leave the package**: a target with a URI scheme (``file:``, ``smb:``,
  ``vnd.sun.star…``), a backslash, a leading ``//``, or a path that climbs above the package root
  (``../../..``, percent-encoded or not), or an absolute path naming no member (``/etc/passwd``), is
  dropped.
- **external references inside SVG** (any member that is or sniffs as SVG, gzipped or not):
  ``<image>``/``<feImage>`` whose ``href`` is not ``data:``, any other ``href`` that is not a
  ``#fragment`` (``<use>``, ``<pattern>``…), CSS ``url()`` and ``@import`` of anything but
  ``#fragment``/``data:``, processing instructions (``xml-stylesheet``), entity references, the
  document type (with its entities), ``<script>`` and ``<foreignObject>``. An SVG that does not parse
  is replaced by an empty one.
- **chart ``c:externalData``** naming a workbook outside the package: the element goes with its
  relationship (the office draws charts from the values cached in the chart part); an embedded
  workbook's ``c:externalData`` stays.

**Nesting is bounded**: a slide, layout or master whose group shapes nest deeper than
:data:`MAX_GROUP_DEPTH` (a few kilobytes of such XML drove LibreOffice to 16 GB) is refused with a
:class:`~pptarena.deck.DeckError`, the deck's own fault (``agent_error`` for a prediction).

The package is read through the deck engine, so its size, entry and ratio limits apply too. What this
does not cover (embedded packages such as an ``.xlsx`` inside the deck, other image formats) is kept
out of reach by the renderer's mount namespace instead: the office sees only the deck copy, its
profile and system folders (see :mod:`pptarena.plugins.renderers.libreoffice.office_jail`).
"""

from __future__ import annotations

import gzip
import posixpath
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

MAX_GROUP_DEPTH = 24  # real decks nest groups a handful deep
MAX_SVG_BYTES = 64 << 20
_SHAPE_PARTS = re.compile(r"^ppt/(slides|slideLayouts|slideMasters|notesSlides)/[^/]+\.xml$")
_CHART_PARTS = re.compile(r"(^|/)charts/[^/]+\.xml$")
_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
_PR = "http://schemas.openxmlformats.org/package/2006/relationships"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_SAFE_HYPERLINK = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)
_NEUTRAL_HYPERLINK = "https://removed.invalid/"
_SVG_SNIFF = re.compile(
    rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*|<!DOCTYPE[^>]*(\[.*?\])?\s*>\s*|<\?[^>]*>\s*)*<([\w.\-]+:)?svg[\s>/]",
    re.IGNORECASE | re.DOTALL,
)
_CSS_URL = re.compile(r"url\(\s*(['\"]?)(.*?)\1\s*\)", re.IGNORECASE | re.DOTALL)
_CSS_IMPORT = re.compile(r"@import[^;]*;?", re.IGNORECASE)
EMPTY_SVG = b'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>\n'


def group_depth(root: object) -> int:
    """The deepest nesting of ``p:grpSp`` elements under ``root`` (an lxml element)."""
    deepest = 0
    for el in root.iter(f"{{{_P}}}grpSp"):  # type: ignore[attr-defined]
        depth = 1 + sum(1 for _ in el.iterancestors(f"{{{_P}}}grpSp"))
        deepest = max(deepest, depth)
        if deepest > MAX_GROUP_DEPTH:
            break
    return deepest


# --------------------------------------------------------------------------- relationships


def leaves_package(rels_name: str, target: str, members: frozenset[str] | None = None) -> bool:
    """True when an *internal* ``target`` of the relationships part ``rels_name`` points outside the
    package: a URI scheme, a backslash, ``//host``, a path climbing above the package root, or (with
    the package's ``members``) an absolute path that names no member (``/etc/passwd``)."""
    text = unquote(target).strip()
    if not text or "\\" in text or text.startswith("//") or _SCHEME.match(text) or "\x00" in text:
        return bool(text)
    folder = posixpath.dirname(posixpath.dirname(rels_name))  # ppt/slides/_rels/x.rels -> ppt/slides
    joined = text.lstrip("/") if text.startswith("/") else posixpath.join(folder, text)
    norm = posixpath.normpath(joined) if joined else "."
    if norm == ".." or norm.startswith("../"):
        return True
    return text.startswith("/") and members is not None and norm not in members


def _rel_change(rels_name: str, rel: object, members: frozenset[str] | None = None) -> str | None:
    """What to do with one ``Relationship`` element: None (keep), ``"drop"``, ``"neutral"`` (external
    hyperlink to a harmless target) or ``"internal"`` (spell the mode ``Internal``)."""
    get = rel.get  # type: ignore[attr-defined]
    mode = get("TargetMode")
    target = get("Target") or ""
    if mode is not None and mode.strip().lower() != "internal":
        if (get("Type") or "").endswith("/hyperlink"):
            return None if _SAFE_HYPERLINK.match(target.strip()) and mode == "External" else "neutral"
        return "drop"
    if leaves_package(rels_name, target, members):
        return "drop"
    return "internal" if mode is not None and mode != "Internal" else None


def _clean_rels(
    name: str, data: bytes, findings: list[str], members: frozenset[str] | None = None
) -> tuple[bytes | None, set[str]]:
    """The rels part without what leaves the package (None when nothing changes), and the ids dropped."""
    from lxml import etree

    from ..deck.read import parse_xml

    root = parse_xml(data, name)
    dropped: set[str] = set()
    changed = False
    for rel in list(root.iterfind(f"{{{_PR}}}Relationship")):
        change = _rel_change(name, rel, members)
        if change is None:
            continue
        changed = True
        findings.append(f"/{name}: {rel.get('Target')} ({change})")
        if change == "drop":
            dropped.add(rel.get("Id") or "")
            root.remove(rel)
        elif change == "neutral":
            rel.set("Target", _NEUTRAL_HYPERLINK)
            rel.set("TargetMode", "External")
        else:
            rel.set("TargetMode", "Internal")
    if not changed:
        return None, dropped
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True), dropped


def _rels_name(part: str) -> str:
    folder, base = posixpath.split(part)
    return posixpath.join(folder, "_rels", base + ".rels")


def _clean_chart(name: str, data: bytes, dropped: set[str], findings: list[str]) -> bytes | None:
    """The chart part without the ``c:externalData`` elements whose relationship was dropped (a
    workbook outside the package); an embedded workbook's stays (the office draws from the cache)."""
    from lxml import etree

    from ..deck.read import parse_xml

    if not dropped or b"externalData" not in data:
        return None
    root = parse_xml(data, name)
    found = False
    for el in list(root.iter("{*}externalData")):  # Transitional or Strict namespace
        rid = next((v for k, v in el.attrib.items() if etree.QName(k).localname == "id"), None)
        if rid in dropped:
            el.getparent().remove(el)
            findings.append(f"/{name}: c:externalData {rid}")
            found = True
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True) if found else None


# --------------------------------------------------------------------------- SVG


def looks_like_svg(name: str, head: bytes) -> bool:
    """True for a member named ``*.svg`` or whose first bytes are an SVG document."""
    return name.lower().endswith(".svg") or bool(_SVG_SNIFF.match(head.lstrip(b"\xef\xbb\xbf")))


def _local_ref(value: str, allow_data: bool) -> bool:
    v = value.strip()
    return v.startswith("#") or (allow_data and v[:5].lower() == "data:")


def _clean_css(text: str) -> tuple[str, bool]:
    """CSS without ``@import`` and with every ``url()`` that is not ``#x``/``data:`` emptied."""
    changed = False

    def url(m: re.Match[str]) -> str:
        nonlocal changed
        if _local_ref(m.group(2), allow_data=True):
            return m.group(0)
        changed = True
        return "none"

    out = _CSS_URL.sub(url, text)
    if _CSS_IMPORT.search(out):
        out, changed = _CSS_IMPORT.sub("", out), True
    return out, changed


def sanitize_svg(data: bytes) -> bytes | None:
    """``data`` without references outside itself (see the module text); None when it holds none.

    An SVG that does not parse comes back as :data:`EMPTY_SVG`.
    """
    from lxml import etree

    from ..deck.read import _PARSE_LOCK

    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
    )
    try:
        with _PARSE_LOCK:
            root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return EMPTY_SVG
    if root is None:
        return EMPTY_SVG
    doc = root.getroottree()
    changed = doc.docinfo.internalDTD is not None or doc.docinfo.doctype != ""
    changed = changed or root.getprevious() is not None or root.getnext() is not None  # PIs around root
    for el in list(root.iter()):
        if not isinstance(el.tag, str):  # processing instruction or entity reference
            parent = el.getparent()
            if parent is not None:
                parent.remove(el)
                changed = True
            continue
        local = etree.QName(el).localname.lower()
        if local in ("script", "foreignobject") and el.getparent() is not None:
            el.getparent().remove(el)
            changed = True
            continue
        if local == "style" and el.text:
            el.text, did = _clean_css(el.text)
            changed = changed or did
        for attr, value in list(el.attrib.items()):
            name = etree.QName(attr).localname.lower()
            if name == "href":
                if not _local_ref(value, allow_data=local in ("image", "feimage")):
                    del el.attrib[attr]
                    changed = True
            elif "url(" in value.lower() or "@import" in value.lower():
                cleaned, did = _clean_css(value)
                if did:
                    el.set(attr, cleaned)
                    changed = True
    if not changed:
        return None
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")  # the root only: no DOCTYPE, no PIs


def _clean_svg_member(name: str, data: bytes, findings: list[str]) -> bytes | None:
    gz = data[:2] == b"\x1f\x8b"
    if gz:
        try:
            with gzip.GzipFile(fileobj=__import__("io").BytesIO(data)) as fh:
                plain = fh.read(MAX_SVG_BYTES + 1)
        except (OSError, EOFError):
            return None
        if len(plain) > MAX_SVG_BYTES:
            findings.append(f"/{name}: gzipped member over {MAX_SVG_BYTES} bytes (emptied)")
            return gzip.compress(EMPTY_SVG)
    else:
        plain = data
    if not looks_like_svg(name if not gz else name.removesuffix("z"), plain[:4096]):
        return None
    cleaned = sanitize_svg(plain)
    if cleaned is None:
        return None
    findings.append(f"/{name}: SVG with references outside itself")
    return gzip.compress(cleaned) if gz else cleaned


# --------------------------------------------------------------------------- the plan


def _plan(path: Path) -> tuple[dict[str, bytes], list[str]]:
    """Members to replace in the render copy (name → new bytes) and what each change removes.

    :raises DeckError: unreadable, or groups nested deeper than :data:`MAX_GROUP_DEPTH`.
    """
    from ..deck import DeckError
    from ..deck.read import open_package

    changes: dict[str, bytes] = {}
    findings: list[str] = []
    dropped: dict[str, set[str]] = {}  # rels part -> ids of the relationships dropped from it
    with open_package(path) as pkg, zipfile.ZipFile(path) as raw:
        names = pkg.names()
        members = frozenset(names)
        for name in names:
            if _SHAPE_PARTS.match(name):
                depth = group_depth(pkg.xml(name))
                if depth > MAX_GROUP_DEPTH:
                    raise DeckError(
                        f"{Path(path).name}: /{name} nests groups {depth}+ deep, "
                        f"over the {MAX_GROUP_DEPTH} limit"
                    )
            if name.endswith(".rels"):
                new, dropped[name] = _clean_rels(name, pkg.read(name), findings, members)
                if new is not None:
                    changes[name] = new
            elif not name.endswith("/") and not _CHART_PARTS.search(name):
                with raw.open(name) as fh:
                    head = fh.read(4096)
                if head[:2] == b"\x1f\x8b" or looks_like_svg(name, head):
                    new = _clean_svg_member(name, pkg.read(name), findings)
                    if new is not None:
                        changes[name] = new
        for name in names:  # charts last: they need their relationships' verdicts
            if _CHART_PARTS.search(name):
                new = _clean_chart(name, pkg.read(name), dropped.get(_rels_name(name), set()), findings)
                if new is not None:
                    changes[name] = new
    return changes, findings


def check_deck(path: Path) -> list[str]:
    """Refuse a bomb-deep deck (:class:`DeckError`); return what :func:`render_copy` would remove."""
    return _plan(Path(path))[1]


def _write_copy(src: Path, dst: Path, changes: dict[str, bytes]) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename in changes:
                zout.writestr(info, changes[info.filename])
            else:
                with zin.open(info) as fin, zout.open(info, "w") as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)


@contextmanager
def render_copy(deck: Path) -> Iterator[Path]:
    """The deck to hand to a renderer: ``deck`` itself, or a private copy without outside references.

    :raises DeckError: the deck cannot be read or nests groups too deep.
    """
    changes, _ = _plan(Path(deck))
    if not changes:
        yield deck
        return
    scratch = Path(tempfile.mkdtemp(prefix="pptarena-render-"))
    try:
        safe = scratch / Path(deck).name
        _write_copy(Path(deck), safe, changes)
        yield safe
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
