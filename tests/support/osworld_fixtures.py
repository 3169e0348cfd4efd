"""Deck pairs for the OSWorld checker tests, built from ../shared/corpus with python-pptx.

Each :class:`Case` names a corpus deck, an edit applied to a copy of it (the "result"), the
checker options and, for probes, an edit applied to the expected copy too. Both decks are saved
by python-pptx so they differ only by the edit. Used by tests/judges/test_osworld_differential.py (our
checkers vs OSWorld's own) and tests/datasets/test_osworld.py.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from tests.support.paths import CORPUS

A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"

Edit = Callable[[Any], None]


@dataclass
class Case:
    """One deck pair for ``compare_pptx_files``."""

    name: str
    deck: str
    edit: Edit | None = None
    options: dict[str, Any] = field(default_factory=dict)
    expected_edit: Edit | None = None


# --------------------------------------------------------------------------- finding things


def text_run(prs: Any, nth: int = 0) -> Any:
    """The first run of the ``nth`` top-level text shape (with runs) of the deck."""
    seen = 0
    for slide in prs.slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                for para in shape.text_frame.paragraphs:
                    if para.runs:
                        if seen == nth:
                            return para.runs[0]
                        seen += 1
                        break
    raise LookupError("no text run")


def text_para(prs: Any) -> Any:
    """The first paragraph with runs of a top-level text shape."""
    return text_run(prs)._parent


def first_shape(prs: Any, kind: int | None = None, slide: int | None = None) -> Any:
    """First top-level shape of ``kind`` (MSO_SHAPE_TYPE value; any when None)."""
    slides = [prs.slides[slide]] if slide is not None else list(prs.slides)
    for s in slides:
        for shape in s.shapes:
            try:
                if kind is None or shape.shape_type == kind:
                    return shape
            except NotImplementedError:
                continue
    raise LookupError(f"no shape of type {kind}")


# --------------------------------------------------------------------------- edits


def move(dx: float, kind: int | None = None, slide: int | None = None) -> Edit:
    """Move a shape right by ``dx`` of its width (a fraction)."""

    def edit(prs: Any) -> None:
        shape = first_shape(prs, kind, slide)
        box = (shape.left, shape.top, shape.width, shape.height)  # placeholders inherit: write all four
        shape.left, shape.top, shape.width, shape.height = int(box[0] + max(1, box[2]) * dx), *box[1:]

    return edit


def resize(fw: float = 1.0, fh: float = 1.0, kind: int | None = None, slide: int | None = None) -> Edit:
    """Scale a shape's width/height."""

    def edit(prs: Any) -> None:
        shape = first_shape(prs, kind, slide)
        left, top, width, height = shape.left, shape.top, shape.width, shape.height
        shape.left, shape.top, shape.width, shape.height = left, top, int(width * fw), int(height * fh)

    return edit


def set_run(attr: str, value: Any, nth: int = 0) -> Edit:
    """Set a font attribute of a run (``name``, ``size``, ``bold``, ``italic``, ``underline``)."""

    def edit(prs: Any) -> None:
        setattr(text_run(prs, nth).font, attr, value)

    return edit


def run_text(value: str) -> Edit:
    def edit(prs: Any) -> None:
        text_run(prs).text = value

    return edit


def run_color(rgb: str) -> Edit:
    def edit(prs: Any) -> None:
        from pptx.dml.color import RGBColor

        text_run(prs).font.color.rgb = RGBColor.from_string(rgb)

    return edit


def strike(value: str = "sngStrike") -> Edit:
    def edit(prs: Any) -> None:
        text_run(prs).font._element.set("strike", value)

    return edit


def align(value: Any) -> Edit:
    def edit(prs: Any) -> None:
        text_para(prs).alignment = value

    return edit


def level(value: int) -> Edit:
    def edit(prs: Any) -> None:
        text_para(prs).level = value

    return edit


def bullet(char: str = "•") -> Edit:
    """Give the first paragraph a bullet character."""

    def edit(prs: Any) -> None:
        ppr = text_para(prs)._p.get_or_add_pPr()
        for old in ppr.findall(f"{{{A_NS}}}buChar"):
            ppr.remove(old)
        bu = etree.SubElement(ppr, f"{{{A_NS}}}buChar")
        bu.set("char", char)

    return edit


def background(rgb: str, every: bool = False) -> Edit:
    def edit(prs: Any) -> None:
        from pptx.dml.color import RGBColor

        for slide in prs.slides if every else [prs.slides[0]]:
            slide.background.fill.solid()
            slide.background.fill.fore_color.rgb = RGBColor.from_string(rgb)

    return edit


def notes(text: str) -> Edit:
    def edit(prs: Any) -> None:
        prs.slides[0].notes_slide.notes_text_frame.text = text

    return edit


def add_slide(prs: Any) -> None:
    prs.slides.add_slide(prs.slide_layouts[0])


def drop_shape(prs: Any) -> None:
    shape = first_shape(prs)
    shape._element.getparent().remove(shape._element)


def table_bold(prs: Any) -> None:
    shape = first_shape(prs, 19)
    for row in shape.table.rows:
        for cell in row.cells:
            for para in cell.text_frame.paragraphs:
                for run in para.runs:
                    run.font.bold = True
                    return


def group_align(prs: Any) -> None:
    """Centre the first paragraph of the first text shape inside a group."""
    from pptx.enum.text import PP_ALIGN

    def visit(shapes: Any) -> bool:
        for shape in shapes:
            if shape.shape_type == 6:
                for inner in shape.shapes:
                    if inner.has_text_frame and inner.text_frame.text.strip():
                        para = inner.text_frame.paragraphs[0]
                        para.alignment = (
                            PP_ALIGN.RIGHT if para.alignment != PP_ALIGN.RIGHT else PP_ALIGN.CENTER
                        )
                        return True
                if visit(shape.shapes):
                    return True
        return False

    for slide in prs.slides:
        if visit(slide.shapes):
            return
    raise LookupError("no text in a group")


def group_drop_text(prs: Any) -> None:
    """Remove a text shape from inside a group (top-level counts unchanged)."""
    for slide in prs.slides:
        for shape in slide.shapes:
            if shape.shape_type == 6:
                for inner in shape.shapes:
                    if inner.has_text_frame:
                        inner._element.getparent().remove(inner._element)
                        return
    raise LookupError("no text in a group")


def retitle(text: str, slide: int = 0) -> Edit:
    """Set the text of the first text shape of a slide."""

    def edit(prs: Any) -> None:
        for shape in prs.slides[slide].shapes:
            if shape.has_text_frame:
                shape.text_frame.text = text
                return
        raise LookupError("no text shape")

    return edit


def shift_down(emu: int, kind: int | None = None, slide: int | None = None, text: str | None = None) -> Edit:
    """Move a shape down by ``emu`` (the first text shape with ``text`` when given)."""

    def edit(prs: Any) -> None:
        if text is not None:
            shape = next(s for sl in prs.slides for s in sl.shapes if getattr(s, "text", None) == text)
        else:
            shape = first_shape(prs, kind, slide)
        left, top, width, height = shape.left, shape.top, shape.width, shape.height
        shape.left, shape.top, shape.width, shape.height = left, int(top + emu), width, height

    return edit


def shift_right(emu: int, kind: int | None = None, slide: int | None = None) -> Edit:
    def edit(prs: Any) -> None:
        shape = first_shape(prs, kind, slide)
        left, top, width, height = shape.left, shape.top, shape.width, shape.height
        shape.left, shape.top, shape.width, shape.height = int(left + emu), top, width, height

    return edit


def both(*edits: Edit) -> Edit:
    def edit(prs: Any) -> None:
        for e in edits:
            e(prs)

    return edit


def save_pair(case: Case, folder: Path) -> tuple[Path, Path]:
    """Write ``(result, expected)`` for a case into ``folder``."""
    from pptx import Presentation

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for role, edit in (("result", case.edit), ("expected", case.expected_edit)):
        prs = Presentation(str(CORPUS / case.deck))
        if edit is not None:
            edit(prs)
        path = folder / f"{role}.pptx"
        prs.save(str(path))
        paths.append(path)
    return paths[0], paths[1]


def set_slide_xml(path: Path, member: str, change: Callable[[Any], None]) -> None:
    """Rewrite one XML part of a saved deck in place."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        items = [(i, zf.read(i.filename)) for i in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in items:
            if info.filename == member:
                root = etree.fromstring(data)
                change(root)
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            zf.writestr(info, data)


def add_transition(kind: str) -> Callable[[Any], None]:
    def change(root: Any) -> None:
        transition = etree.Element(f"{{{P_NS}}}transition")
        etree.SubElement(transition, f"{{{P_NS}}}{kind}")
        clr = root.find(f"{{{P_NS}}}clrMapOvr")
        (clr if clr is not None else root.find(f"{{{P_NS}}}cSld")).addnext(transition)

    return change


def recolor_second_last_srgb(value: str) -> Callable[[Any], None]:
    def change(root: Any) -> None:
        found = [c for f in root.iter(f"{{{A_NS}}}solidFill") for c in f.iter(f"{{{A_NS}}}srgbClr")]
        found[-2].set("val", value)

    return change


def xcu(items: dict[str, dict[str, str]]) -> str:
    """A LibreOffice ``registrymodifications.xcu`` with the given ``{path: {prop: value}}`` items."""
    body = "".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, props in items.items()
        for name, value in props.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        f'xmlns:xs="http://www.w3.org/2001/XMLSchema">{body}</oor:items>'
    )


def deepcopy(value: Any) -> Any:
    return copy.deepcopy(value)


def add_table(slide: int, top: int = 1000000) -> Edit:
    """Add a 2x2 table with text to a slide (adding slides until it exists)."""

    def edit(prs: Any) -> None:
        from pptx.util import Emu

        while len(prs.slides) <= slide:
            prs.slides.add_slide(prs.slide_layouts[6])
        frame = prs.slides[slide].shapes.add_table(2, 2, Emu(500000), Emu(top), Emu(4000000), Emu(1200000))
        for i, cell in enumerate(frame.table.iter_cells()):
            cell.text = f"cell {i}"

    return edit


def add_picture(slide: int, left: int = 500000, top: int = 2500000, seed: int = 1) -> Edit:
    """Add a small generated PNG to a slide (adding slides until it exists)."""

    def edit(prs: Any) -> None:
        import io

        from PIL import Image
        from pptx.util import Emu

        while len(prs.slides) <= slide:
            prs.slides.add_slide(prs.slide_layouts[6])
        buf = io.BytesIO()
        Image.new("RGB", (40, 30), (seed * 40 % 256, 90, 200)).save(buf, format="PNG")
        buf.seek(0)
        prs.slides[slide].shapes.add_picture(buf, Emu(left), Emu(top), Emu(2000000), Emu(1500000))

    return edit
