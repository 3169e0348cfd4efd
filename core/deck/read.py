"""Safe reading of PowerPoint packages.

Everything that touches a deck file goes through :class:`Package`: it opens the
zip with limits (entry count, per-part and total uncompressed size, so a zip
bomb cannot exhaust memory), parses XML with a hardened lxml parser (no entity
resolution, no network, no DTDs, no huge trees) and normalises ISO-Strict
namespaces and the macro/show/template main content types to the
Transitional forms python-pptx understands.

Every failure is a single :class:`DeckError` that names the file and the problem.

Why it is long: every deck byte enters through it, so the zip limits, the
hardened parser, the Strict-namespace rewriting and the :class:`Package` that
applies them sit in one place a security review can read at once; it also holds
the namespace and relationship tables the XML-reading deck modules import.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lxml import etree

from ..errors import PptArenaError
from .zipread import RawZip

if TYPE_CHECKING:  # pragma: no cover
    import pptx.presentation

# ----------------------------------------------------------------------------- limits

MAX_FILE_BYTES = 1 << 30  # 1 GiB on disk
MAX_ENTRIES = 20_000  # zip members
MAX_PART_BYTES = 512 << 20  # one uncompressed member (media may be big)
MAX_XML_BYTES = 64 << 20  # one uncompressed XML member
MAX_TOTAL_BYTES = 1 << 30  # all members read for one package
MAX_RATIO = 250  # uncompressed / compressed size of one member (deflate tops out near 1000:1: bombs)
RATIO_FLOOR = 4 << 20  # members smaller than this may compress as well as they like

# ----------------------------------------------------------------------------- namespaces

NS = {
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
    "dgm": "http://schemas.openxmlformats.org/drawingml/2006/diagram",
    "pic": "http://schemas.openxmlformats.org/drawingml/2006/picture",
    "mc": "http://schemas.openxmlformats.org/markup-compatibility/2006",
    "p14": "http://schemas.microsoft.com/office/powerpoint/2010/main",
    "p15": "http://schemas.microsoft.com/office/powerpoint/2012/main",
    "cp": "http://schemas.openxmlformats.org/package/2006/metadata/core-properties",
    "dc": "http://purl.org/dc/elements/1.1/",
    "dcterms": "http://purl.org/dc/terms/",
    "ct": "http://schemas.openxmlformats.org/package/2006/content-types",
    "pr": "http://schemas.openxmlformats.org/package/2006/relationships",
}

RT_BASE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
RT = {
    "officeDocument": RT_BASE + "officeDocument",
    "slide": RT_BASE + "slide",
    "slideLayout": RT_BASE + "slideLayout",
    "slideMaster": RT_BASE + "slideMaster",
    "theme": RT_BASE + "theme",
    "notesSlide": RT_BASE + "notesSlide",
    "image": RT_BASE + "image",
    "chart": RT_BASE + "chart",
    "hyperlink": RT_BASE + "hyperlink",
    "diagramData": RT_BASE + "diagramData",
}

# ISO/IEC 29500 Strict namespace URI prefixes -> Transitional ones (longest first).
_STRICT_PREFIXES: tuple[tuple[bytes, bytes], ...] = (
    (
        b"http://purl.oclc.org/ooxml/officeDocument/relationships",
        b"http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    ),
    (
        b"http://purl.oclc.org/ooxml/presentationml/main",
        b"http://schemas.openxmlformats.org/presentationml/2006/main",
    ),
    (b"http://purl.oclc.org/ooxml/drawingml/", b"http://schemas.openxmlformats.org/drawingml/2006/"),
    (
        b"http://purl.oclc.org/ooxml/officeDocument/",
        b"http://schemas.openxmlformats.org/officeDocument/2006/",
    ),
    (
        b"http://purl.oclc.org/ooxml/schemaLibrary/main",
        b"http://schemas.openxmlformats.org/schemaLibrary/2006/main",
    ),
)
_STRICT_MARK = b"http://purl.oclc.org/ooxml/"

CT_PRESENTATION = "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
_MAIN_CONTENT_TYPES = {
    CT_PRESENTATION,
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
    "application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
    "application/vnd.ms-powerpoint.template.macroEnabled.main+xml",
}

_DOCTYPE = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


class DeckError(PptArenaError):
    """A deck could not be read: corrupt, not PowerPoint, or over a safety limit.

    The message always names the file and the problem.
    """


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


_PARSER = _parser()
# lxml 6 / libxml2 2.14 parsing from several threads at once corrupted the heap here: `arena render` of
# three decks (two renderer threads reading decks) died with "double free" or mixed another part's
# tags into a parse in about one run in five, also with one parser per thread. Parsing is serialised.
_PARSE_LOCK = threading.Lock()


def normalise_strict(data: bytes) -> bytes:
    """Rewrite ISO-Strict namespace URIs in ``data`` to their Transitional forms."""
    if _STRICT_MARK not in data:
        return data
    for old, new in _STRICT_PREFIXES:
        data = data.replace(old, new)
    return data


def parse_xml(data: bytes, what: str) -> etree._Element:
    """Parse untrusted XML bytes with the hardened parser; ``what`` names the source in errors."""
    if _DOCTYPE.search(data[:4096]) or (len(data) > 4096 and _DOCTYPE.search(data)):
        raise DeckError(f"{what}: XML with a DTD or entity declaration is not allowed in a deck")
    try:
        with _PARSE_LOCK:
            root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise DeckError(f"{what}: malformed XML ({exc})") from None
    if root is None:
        raise DeckError(f"{what}: empty XML document")
    return root


@dataclass(frozen=True)
class Rel:
    """One package relationship: id, type, resolved target part name (or URL) and mode."""

    rid: str
    type: str
    target: str
    external: bool


class Package:
    """A bounded, read-only view of an OPC (zip) package.

    Parts are read lazily; XML parts are parsed once and cached. Use
    :func:`open_package` to create one.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self._total = 0
        self._xml: dict[str, etree._Element] = {}
        self._rels: dict[str, dict[str, Rel]] = {}
        from ..trust.safeio import UnsafeFileError, open_regular

        try:  # only a regular file: a FIFO would block for ever, a device (/dev/zero) never ends
            fd = open_regular(self.path, MAX_FILE_BYTES, follow_links=True)
        except UnsafeFileError as exc:
            raise DeckError(f"{self.name}: {str(exc).replace(str(self.path), 'the path')}") from None
        except OSError as exc:
            raise DeckError(f"{self.name}: cannot read file ({exc.strerror or exc})") from None
        os.set_blocking(fd, True)
        self._fh = os.fdopen(fd, "rb")
        try:
            self._zip = zipfile.ZipFile(self._fh)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
            self._fh.close()
            raise DeckError(f"{self.name}: not a zip package ({exc})") from None
        if len(infos) > MAX_ENTRIES:
            raise DeckError(f"{self.name}: {len(infos)} zip entries, over the {MAX_ENTRIES} limit")
        self._infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename.lstrip("/")
            if name in self._infos:
                raise DeckError(f"{self.name}: corrupt package: duplicate zip entry {name!r}")
            self._infos[name] = info
        self._raw = RawZip(self.path)  # fast member reads; zipfile stays the fallback and the judge of errors
        self.strict = False
        self.content_types = self._read_content_types()
        self.main_part = self._find_main_part()

    # -- raw access ------------------------------------------------------------------

    def close(self) -> None:
        """Close the underlying zip file."""
        self._raw.close()
        self._zip.close()
        self._fh.close()

    def __enter__(self) -> Package:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has(self, name: str) -> bool:
        """True if the package has a member called ``name`` (no leading slash)."""
        return name in self._infos

    def names(self) -> list[str]:
        """All member names, in zip order."""
        return list(self._infos)

    def read(self, name: str, limit: int = MAX_PART_BYTES) -> bytes:
        """The uncompressed bytes of member ``name``, bounded by ``limit`` and the package total."""
        info = self._infos.get(name)
        if info is None:
            raise DeckError(f"{self.name}: missing part /{name}")
        if info.file_size > limit:
            raise DeckError(
                f"{self.name}: part /{name} is {info.file_size} bytes uncompressed, over the limit"
            )
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise DeckError(
                f"{self.name}: part /{name} inflates {info.file_size // max(info.compress_size, 1)}:1, "
                f"over the {MAX_RATIO}:1 limit (zip bomb?)"
            )
        data = self._raw.read(info, limit)
        try:
            if data is None:
                with self._zip.open(info) as fh:
                    data = fh.read(limit + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise DeckError(f"{self.name}: cannot read part /{name} ({exc})") from None
        except Exception as exc:  # zlib.error and friends
            raise DeckError(f"{self.name}: cannot read part /{name} ({type(exc).__name__}: {exc})") from None
        if len(data) > limit:
            raise DeckError(f"{self.name}: part /{name} inflates past the size limit (zip bomb?)")
        self._total += len(data)
        if self._total > MAX_TOTAL_BYTES:
            raise DeckError(f"{self.name}: package inflates past {MAX_TOTAL_BYTES} bytes (zip bomb?)")
        return data

    def xml_bytes(self, name: str) -> bytes:
        """Member ``name`` as XML bytes with Strict namespaces normalised."""
        data = self.read(name, MAX_XML_BYTES)
        if _STRICT_MARK in data:
            self.strict = True
            data = normalise_strict(data)
        return data

    def xml(self, name: str) -> etree._Element:
        """The parsed (cached) root element of XML part ``name``."""
        root = self._xml.get(name)
        if root is None:
            root = parse_xml(self.xml_bytes(name), f"{self.name}: /{name}")
            self._xml[name] = root
        return root

    # -- relationships -------------------------------------------------------------------

    def rels(self, part: str) -> dict[str, Rel]:
        """Relationships of ``part`` ("" for the package), keyed by rId. Missing rels part -> {}."""
        cached = self._rels.get(part)
        if cached is not None:
            return cached
        directory, base = posixpath.split(part)
        rels_name = posixpath.join(directory, "_rels", base + ".rels") if part else "_rels/.rels"
        out: dict[str, Rel] = {}
        if self.has(rels_name):
            root = self.xml(rels_name)
            for el in root.iterfind(f"{{{NS['pr']}}}Relationship"):
                rid = el.get("Id") or ""
                rtype = el.get("Type") or ""
                target = el.get("Target") or ""
                external = el.get("TargetMode") == "External"
                if not external:
                    target = resolve_target(directory, target)
                out[rid] = Rel(rid, rtype, target, external)
        self._rels[part] = out
        return out

    def rel_target(self, part: str, rid: str | None, rtype: str | None = None) -> str | None:
        """Part name that ``rid`` of ``part`` points to (internal, existing), else None."""
        if not rid:
            return None
        rel = self.rels(part).get(rid)
        if rel is None or rel.external or (rtype and rel.type != rtype):
            return None
        return rel.target if self.has(rel.target) else None

    def first_rel(self, part: str, rtype: str) -> str | None:
        """Target of the first internal relationship of type ``rtype`` from ``part`` that exists."""
        for rel in self.rels(part).values():
            if rel.type == rtype and not rel.external and self.has(rel.target):
                return rel.target
        return None

    # -- package structure -----------------------------------------------------------------

    def _read_content_types(self) -> dict[str, str]:
        if not self.has("[Content_Types].xml"):
            raise DeckError(f"{self.name}: not an OOXML package (no [Content_Types].xml)")
        root = self.xml("[Content_Types].xml")
        types: dict[str, str] = {}
        defaults: dict[str, str] = {}
        for el in root:
            tag = etree.QName(el).localname if isinstance(el.tag, str) else ""
            if tag == "Default":
                defaults[(el.get("Extension") or "").lower()] = el.get("ContentType") or ""
            elif tag == "Override":
                types[(el.get("PartName") or "").lstrip("/")] = el.get("ContentType") or ""
        self._ct_defaults = defaults
        return types

    def content_type(self, name: str) -> str:
        """Content type of member ``name`` (Override first, then by extension)."""
        ct = self.content_types.get(name)
        if ct is None:
            ct = self._ct_defaults.get(posixpath.splitext(name)[1].lstrip(".").lower(), "")
        return ct

    def _find_main_part(self) -> str:
        main = None
        for rel in self.rels("").values():
            if rel.type == RT["officeDocument"] and not rel.external:
                main = rel.target
                break
        if main is None or not self.has(main):
            raise DeckError(f"{self.name}: no main document part (not an Office package)")
        ct = self.content_type(main)
        if ct not in _MAIN_CONTENT_TYPES:
            raise DeckError(
                f"{self.name}: not a PowerPoint file (main part content type {ct or 'missing'!r})"
            )
        root = self.xml(main)
        if root.tag != f"{{{NS['p']}}}presentation":
            raise DeckError(f"{self.name}: main part /{main} is not a p:presentation")
        return main

    # -- slides --------------------------------------------------------------------------

    def slide_refs(self) -> list[tuple[int, str]]:
        """(sldId, slide part name) for each slide in deck order; entries with dangling rIds are errors."""
        pres = self.xml(self.main_part)
        out: list[tuple[int, str]] = []
        lst = pres.find(f"{{{NS['p']}}}sldIdLst")
        if lst is None:
            return out
        for el in lst.iterfind(f"{{{NS['p']}}}sldId"):
            raw = el.get("id")
            try:
                sld_id = int(raw or "")
            except ValueError:
                raise DeckError(f"{self.name}: slide id {raw!r} is not an integer") from None
            rid = el.get(f"{{{NS['r']}}}id")
            target = self.rel_target(self.main_part, rid)
            if target is None:
                raise DeckError(f"{self.name}: slide {sld_id} points to a missing part (relationship {rid})")
            out.append((sld_id, target))
        return out


def resolve_target(directory: str, target: str) -> str:
    """Resolve a relationship target relative to ``directory`` into a member name."""
    if target.startswith("/"):
        joined = target.lstrip("/")
    else:
        joined = posixpath.join(directory, target)
    norm = posixpath.normpath(joined)
    return "" if norm in (".", "") else norm.lstrip("/")


def open_package(path: str | Path) -> Package:
    """Open ``path`` as a PowerPoint package, raising :class:`DeckError` on any problem."""
    return Package(Path(path))


def _root_show_attr(pkg: Package, part: str) -> bool:
    """True if the slide part's root element says show="0" (reads only the start tag)."""
    data = pkg.xml_bytes(part)
    if _DOCTYPE.search(data[:4096]):
        raise DeckError(f"{pkg.name}: /{part}: XML with a DTD or entity declaration is not allowed in a deck")
    try:
        with _PARSE_LOCK:
            for _event, el in etree.iterparse(
                io.BytesIO(data), events=("start",), resolve_entities=False, no_network=True, load_dtd=False
            ):
                return el.get("show") in ("0", "false")
    except etree.XMLSyntaxError as exc:
        raise DeckError(f"{pkg.name}: /{part}: malformed XML ({exc})") from None
    raise DeckError(f"{pkg.name}: /{part}: empty XML document")


def slide_ids(path: str | Path) -> list[tuple[int, int, bool]]:
    """(1-based number, sldId, hidden) for each slide of the deck at ``path``, in deck order.

    Cheap: reads presentation.xml, its relationships and each slide's start tag only.
    """
    with open_package(path) as pkg:
        return [
            (number, sld_id, _root_show_attr(pkg, part))
            for number, (sld_id, part) in enumerate(pkg.slide_refs(), start=1)
        ]


def normalised_bytes(pkg: Package) -> bytes:
    """The package re-zipped with Strict namespaces and main content type normalised.

    Every XML part is validated with the hardened parser on the way through.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for name in pkg.names():
            if name.endswith("/"):
                continue
            lower = name.lower()
            if lower.endswith((".xml", ".rels")) or name == "[Content_Types].xml":
                data = pkg.xml_bytes(name)
                parse_xml(data, f"{pkg.name}: /{name}")
                if name == "[Content_Types].xml":
                    ct = pkg.content_type(pkg.main_part)
                    if ct != CT_PRESENTATION:
                        data = data.replace(ct.encode(), CT_PRESENTATION.encode())
            else:
                data = pkg.read(name)
            out.writestr(name, data)
    return buf.getvalue()


def open_presentation(path: str | Path) -> pptx.presentation.Presentation:
    """A python-pptx ``Presentation`` for ``path``, loaded safely.

    The package is checked against the limits, every XML part is parsed with the
    hardened parser, Strict namespaces and .pptm/.ppsx/.potx main content types
    are normalised. Any failure raises :class:`DeckError`.
    """
    import pptx

    with open_package(path) as pkg:
        data = normalised_bytes(pkg)
    try:
        return pptx.Presentation(io.BytesIO(data))
    except DeckError:
        raise
    except Exception as exc:  # python-pptx raises a zoo of KeyError/ValueError/AttributeError
        raise DeckError(
            f"{Path(path).name}: python-pptx cannot load it ({type(exc).__name__}: {exc})"
        ) from None
