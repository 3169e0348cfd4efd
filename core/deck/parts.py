"""OOXML part handling: which parts of a deck may change, checking a rewritten part, and writing a
package with replaced parts (the guard of PPTPilot's ``xml`` branch and of ``arena mcp``'s
``write_part`` tool).

A rewritten part is accepted only when it is an existing editable part
(slides, slide layouts, slide masters, themes, notes slides, charts,
SmartArt data and drawing parts), is
well-formed (hardened parser: no DTDs or entities, no network, no huge
trees), keeps the original root element and every namespace declaration of
the original root, declares every prefix named in ``mc:Ignorable``, and
references only relationship ids that exist in the part's ``.rels`` (or that
the original already referenced). :func:`write_package` rewrites the zip with
the new parts and copies every other member's bytes unchanged.
"""

from __future__ import annotations

import posixpath
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
MAX_PART_BYTES = 16 << 20
MAX_MEMBER_BYTES = 512 << 20
MAX_TOTAL_BYTES = 1 << 30

EDITABLE = re.compile(
    r"^ppt/(slides/slide|slideLayouts/slideLayout|slideMasters/slideMaster|theme/theme|"
    r"notesSlides/notesSlide|charts/chart|diagrams/data|diagrams/drawing)\d+\.xml$"
)
_DOCTYPE = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


class PartError(ValueError):
    """A rewritten part is unusable; the message names the part and the problem."""


def hardened_parser() -> etree.XMLParser:
    """An lxml parser that resolves no entities, loads no DTD, uses no network and refuses huge trees."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False
    )


def parse_part(name: str, data: bytes) -> etree._Element:
    """Parse part bytes with the hardened parser; :class:`PartError` names the part and the problem."""
    if len(data) > MAX_PART_BYTES:
        raise PartError(f"{name}: {len(data)} bytes, over the {MAX_PART_BYTES} byte limit")
    if _DOCTYPE.search(data):
        raise PartError(f"{name}: DOCTYPE and ENTITY declarations are not allowed")
    try:
        root = etree.fromstring(data, hardened_parser())
    except etree.XMLSyntaxError as exc:
        raise PartError(f"{name}: not well-formed XML: {exc}") from None
    if root is None:
        raise PartError(f"{name}: empty document")
    return root


def rels_name(part: str) -> str:
    """The relationships part of ``part``: ``ppt/slides/_rels/slide1.xml.rels`` for
    ``ppt/slides/slide1.xml``.
    """
    directory, base = posixpath.split(part)
    return posixpath.join(directory, "_rels", base + ".rels")


@dataclass(frozen=True)
class PartRel:
    """One relationship of a part: id, type (last URL segment), target and whether it is external."""

    rid: str
    type: str
    target: str
    external: bool


class DeckParts:
    """Read access to a deck's XML parts and relationships (bounded, hardened)."""

    def __init__(self, path: Path):
        from .read import open_package

        self.path = Path(path)
        self._pkg = open_package(self.path)

    def close(self) -> None:
        """Close the package."""
        self._pkg.close()

    def __enter__(self) -> DeckParts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def editable(self) -> list[str]:
        """Editable part names present in the deck, slides in deck order first."""
        slides = [part for _sid, part in self._pkg.slide_refs()]
        others = sorted((n for n in self._pkg.names() if EDITABLE.match(n) and n not in slides), key=_natural)
        return [s for s in slides if EDITABLE.match(s)] + others

    def text(self, part: str) -> str:
        """The part's XML as text (Strict namespaces normalised)."""
        return self._pkg.xml_bytes(part).decode("utf-8", errors="replace")

    def root(self, part: str) -> etree._Element:
        """The parsed root element of the part."""
        return self._pkg.xml(part)

    def rels(self, part: str) -> list[PartRel]:
        """The part's relationships in id order."""
        return [
            PartRel(r.rid, r.type.rsplit("/", 1)[-1], r.target, r.external)
            for r in sorted(self._pkg.rels(part).values(), key=lambda r: _natural(r.rid))
        ]

    def has(self, part: str) -> bool:
        """True when the package has member ``part``."""
        return self._pkg.has(part)


def _natural(text: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def referenced_rids(root: etree._Element) -> set[str]:
    """Every value of an attribute in the relationships namespace (r:id, r:embed, r:link, ...)."""
    found: set[str] = set()
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        for key, value in el.attrib.items():
            if key.startswith("{" + R_NS + "}"):
                found.add(value)
    return found


def check_part(parts: DeckParts, name: str, data: bytes) -> bytes:
    """Check a rewritten part against the original; return the bytes to write.

    Raises :class:`PartError` naming the part and the problem.
    """
    if not EDITABLE.match(name):
        raise PartError(
            f"{name}: not an editable part (only slides, slide layouts, slide masters, themes, notes slides, "
            "charts and SmartArt data/drawing parts may be rewritten)"
        )
    if not parts.has(name):
        raise PartError(f"{name}: no such part in the deck (new parts cannot be added)")
    new = parse_part(name, data)
    old = parts.root(name)
    if new.tag != old.tag:
        raise PartError(
            f"{name}: root element is {etree.QName(new).localname!r}, expected {etree.QName(old).localname!r}"
            f" ({old.tag})"
        )
    missing = [f"xmlns:{p}" if p else "xmlns" for p, uri in old.nsmap.items() if new.nsmap.get(p) != uri]
    if missing:
        raise PartError(
            f"{name}: the root element lost or changed namespace declarations: {', '.join(missing)}"
        )
    ignorable = new.get(f"{{{MC_NS}}}Ignorable")
    if ignorable:
        undeclared = [p for p in ignorable.split() if p not in new.nsmap]
        if undeclared:
            raise PartError(f"{name}: mc:Ignorable names undeclared prefixes: {', '.join(undeclared)}")
    known = {r.rid for r in parts.rels(name)} | referenced_rids(old)
    unknown = sorted(referenced_rids(new) - known, key=_natural)
    if unknown:
        raise PartError(
            f"{name}: references relationship ids that do not exist in {rels_name(name)}: "
            f"{', '.join(unknown)} (available: {', '.join(sorted(known, key=_natural)) or 'none'})"
        )
    return etree.tostring(new, xml_declaration=True, encoding="UTF-8", standalone=True)


def write_package(src: Path, dst: Path, replacements: dict[str, bytes]) -> None:
    """Write ``src`` to ``dst`` with ``replacements`` (part name → bytes); every other member is
    copied as is.
    """
    if not replacements:
        shutil.copyfile(src, dst)
        return
    tmp = dst.with_name(dst.name + ".tmp")
    seen: set[str] = set()
    total = 0
    try:
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                name = info.filename.lstrip("/")
                if name in replacements:
                    out_info = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                    out_info.compress_type = zipfile.ZIP_DEFLATED
                    out_info.external_attr = info.external_attr
                    zout.writestr(out_info, replacements[name])
                    seen.add(name)
                else:
                    total += info.file_size
                    if info.file_size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES:
                        raise PartError(f"{src.name}: member {name} or the package is over the size limit")
                    with zin.open(info) as fh:
                        data = fh.read(MAX_MEMBER_BYTES + 1)
                    if len(data) > MAX_MEMBER_BYTES:
                        raise PartError(f"{src.name}: member {name} inflates past the size limit")
                    zout.writestr(info, data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    missing = set(replacements) - seen
    if missing:
        tmp.unlink(missing_ok=True)
        raise PartError(f"parts not in the package: {', '.join(sorted(missing))}")
    tmp.replace(dst)
