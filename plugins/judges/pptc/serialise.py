"""What PPTX-Match compares: a deck written out as text by PPTC's reader's rules.

PPTC (``src/ppt_reader.py eval_get_contents`` with ``need_position=False``) turns each deck into
one string and calls two decks equal when the strings are. Comparing the *text* rather than the
values is what makes its verdicts: a chart value stored as NaN prints ``nan`` on both sides and
matches, ``-0.0`` and ``0.0`` print differently and do not, and a table row prints as its cells
between ``|`` bars, so the rows ``A|B``, ``C`` and ``A``, ``B|C`` read the same. This module
writes the same text in its own code, one block per slide header and per shape, so the judge can
name the first block that differs.

Under ``semantics="pptc"`` every python-pptx property PPTC reads is read in PPTC's order, and
whatever PPTC cannot read (a shape whose size is set nowhere in its placeholder inheritance chain,
a linked picture, a placeholder without a text frame) raises :class:`PptcUnreadable` naming it and
the exception PPTC's code raises there. ``semantics="corrected"`` is the same text with those
defects mended (see :data:`SEMANTICS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Semantics = Literal["pptc", "corrected"]
SEMANTICS: dict[str, str] = {
    "pptc": "PPTC's reader exactly: its text, its quirks, and its failures (judge errors)",
    "corrected": (
        "table cells are kept apart (a '|' inside a cell is escaped), chart values equal as numbers "
        "print the same (-0.0 = 0.0), and geometry and picture bytes, which are never compared, are "
        "not read (a placeholder without a size or a linked picture is scored)"
    ),
}
_SCALE = 1000  # PPTC divides positions and sizes by 1000 (its prompts show them that way)


class PptcUnreadable(Exception):
    """PPTC's reader cannot read part of a deck (its evaluation raises there).

    ``where`` names the slide and shape, ``what`` the property, ``pptc_error`` the exception class
    PPTC's own code raises (e.g. ``TypeError`` for a missing size).
    """

    def __init__(self, where: str, what: str, pptc_error: str) -> None:
        super().__init__(f"{where}: {what} (PPTC's reader raises {pptc_error})")
        self.where, self.what, self.pptc_error = where, what, pptc_error


@dataclass
class Block:
    """One part of a deck's text: a slide header or one shape (``where`` names it for messages)."""

    where: str
    text: str


def solid_fill_rgb(owner: Any) -> Any:
    """The fill's RGB when it is a solid fill whose colour has one, else None (PPTC's ``get_fill_color``)."""
    fill = owner.fill
    if fill.type == 1:  # MSO_FILL.SOLID
        color = fill.fore_color
        if hasattr(color, "rgb"):  # only AttributeError means "no RGB", as in PPTC
            return color.rgb
    return None


def _kind(shape: Any) -> str:
    return str(shape.shape_type)


def _tag(shape: Any) -> str:
    first = shape.name.split(" ")[0]
    return first if first != "Google" else _kind(shape).split(" ")[0].strip()


def _read_geometry(shape: Any) -> None:
    """PPTC computes ``height // 1000`` (and width, left, top) for every shape it lists, even when
    positions are not compared; a value set nowhere (``None``) makes it raise ``TypeError``."""
    for attr in ("height", "width", "left", "top"):
        if getattr(shape, attr) is None:
            raise PptcUnreadable(
                "", f"its {attr} is set nowhere in its placeholder inheritance chain", "TypeError"
            )


def _first_font(paragraphs: Any) -> Any:
    try:
        return paragraphs[0].runs[0].font
    except Exception:  # noqa: BLE001 - PPTC falls back to the paragraph's font on any failure
        return paragraphs[0].font


def _rgb_or_none(font: Any) -> Any:
    try:
        return font.color.rgb
    except Exception:  # noqa: BLE001 - PPTC records no colour for anything unreadable
        return None


def _style_line(
    bold: Any,
    italic: Any,
    underline: Any,
    size: Any,
    color: Any,
    fill: Any,
    name: Any,
    spacing: Any,
    align: Any,
) -> str:
    return (
        f"Font Style: bold={bold}, italic={italic}, underline={underline}, size={size}, color={color}, "
        f"fill={fill}, font style={name}, line_space={spacing}, align={align}\n"
    )


def _placeholder(shape: Any) -> str:
    fill = solid_fill_rgb(shape)
    try:
        frame = shape.text_frame
    except AttributeError:
        raise PptcUnreadable("", "a placeholder without a text frame", "AttributeError") from None
    text = frame.text
    paragraphs = frame.paragraphs
    font = _first_font(paragraphs)
    style = _style_line(
        font.bold,
        font.italic,
        font.underline,
        font.size,  # no fallback to the paragraph's size for placeholders (PPTC's text boxes have one)
        _rgb_or_none(font),
        fill,
        font.name,
        paragraphs[0].line_spacing,
        paragraphs[0].alignment,
    )
    return f"[{_tag(shape)}]\nText: \n{text}\n{style}"


def _picture(shape: Any, index: int, semantics: Semantics) -> str:
    if semantics == "pptc":
        try:
            shape.image  # noqa: B018 - PPTC keeps the image; a linked (not embedded) one cannot be read
        except ValueError:
            raise PptcUnreadable("", "a linked picture (no embedded image)", "ValueError") from None
    return f"[Picture {index}]\nPicture Style: rotation={int(shape.rotation)}\n"


def _number(value: Any, semantics: Semantics) -> Any:
    if semantics == "corrected" and isinstance(value, float) and value == 0:
        return 0.0  # -0.0 prints "-0.0"; equal numbers should print the same
    return value


def _chart(shape: Any, semantics: Semantics) -> str:
    chart = shape.chart
    title = chart.chart_title.text_frame.text
    kind = str(chart.chart_type).split(" ")[0]
    text = "[Chart]\n" + (f"Title: {title}\n" if title else "") + f"Chart Type: {kind}\nData:\n"
    try:
        for series in chart.series:
            text += f"{series.name}: "
            for value in series.values:
                text += f"{_number(value, semantics)}, "
            text += "\n"
    except Exception:  # noqa: BLE001 - PPTC keeps the text written before python-pptx failed
        pass
    return text


def _cell(text: str, semantics: Semantics) -> str:
    if semantics == "corrected":
        return text.replace("\\", "\\\\").replace("|", "\\|")
    return text


def _table(shape: Any, semantics: Semantics) -> str:
    table = shape.table
    rows = "".join(
        "|" + "".join(f"{_cell(c.text, semantics)}|" for c in row.cells) + "\n" for row in table.rows
    )
    return f"[Table] with {len(table.rows)} rows and {len(table.columns)} columns\nData:\n{rows}"


def _textbox(shape: Any, index: int) -> str:
    frame = shape.text_frame
    paragraphs = frame.paragraphs
    font = _first_font(paragraphs)
    size = font.size if font.size is not None else paragraphs[0].font.size
    style = _style_line(
        font.bold,
        font.italic,
        font.underline,
        size,
        _rgb_or_none(font),
        solid_fill_rgb(shape),
        font.name,
        paragraphs[0].line_spacing,
        paragraphs[0].alignment,
    )
    return f"[TextBox {index}]\nText: {frame.text}\n{style}"


def _autoshape(shape: Any) -> str:
    text = shape.text_frame.text
    return f"[{_tag(shape)}]\nText: {text}\nShape Style: fill={solid_fill_rgb(shape)}\n"


def _shape_text(shape: Any, kind: str, counters: dict[str, int], semantics: Semantics) -> str | None:
    """The shape's block text, or None when PPTC does not list its type (groups, lines, ...)."""
    listed = ("PLACEHOLDER", "PICTURE", "CHART", "TABLE", "TEXT_BOX", "AUTO_SHAPE")
    word = next((w for w in listed if w in kind), None)
    if word is None:
        return None
    if semantics == "pptc":
        _read_geometry(shape)
    if word == "PLACEHOLDER":
        return _placeholder(shape)
    if word == "PICTURE":
        counters["picture"] += 1
        return _picture(shape, counters["picture"] - 1, semantics)
    if word == "CHART":
        return _chart(shape, semantics)
    if word == "TABLE":
        return _table(shape, semantics)
    if word == "TEXT_BOX":
        counters["textbox"] += 1
        return _textbox(shape, counters["textbox"] - 1)
    return _autoshape(shape)


def deck_blocks(prs: Any, semantics: Semantics = "pptc") -> list[Block]:
    """The deck's text as blocks (slides in order, shapes in shape-tree order).

    Raises :class:`PptcUnreadable` (``semantics="pptc"``) where PPTC's reader raises.
    """
    blocks: list[Block] = []
    for number, slide in enumerate(prs.slides):
        try:
            background = solid_fill_rgb(slide.background)
            notes = slide.notes_slide.notes_text_frame.text
        except Exception as exc:  # noqa: BLE001 - PPTC raises on the same read
            raise PptcUnreadable(
                f"slide {number}", f"python-pptx cannot read it: {exc}", type(exc).__name__
            ) from exc
        header = f"Slide {number} with background color {background}:\n"
        if notes:
            header += f"Notes: {notes}\n"
        blocks.append(Block(f"slide {number}", header))
        counters = {"picture": 0, "textbox": 0}
        for shape in slide.shapes:
            where = f"slide {number}, shape {shape.name!r}"
            try:
                text = _shape_text(shape, _kind(shape), counters, semantics)
            except PptcUnreadable as exc:
                raise PptcUnreadable(where, exc.what, exc.pptc_error) from None
            except Exception as exc:  # noqa: BLE001 - anything else python-pptx raises, PPTC raises too
                raise PptcUnreadable(where, f"python-pptx cannot read it: {exc}", type(exc).__name__) from exc
            if text is not None:
                blocks.append(Block(where, text + "\n"))
    return blocks


def deck_text(prs: Any, semantics: Semantics = "pptc") -> str:
    """The whole deck's text, PPTC's string for ``semantics="pptc"``."""
    return "".join(b.text for b in deck_blocks(prs, semantics))


def first_difference(label: list[Block], pred: list[Block]) -> str:
    """A short description of where two decks' texts first differ."""
    for a, b in zip(label, pred, strict=False):
        if a.text != b.text:
            return f"attributes differ at {b.where}: label {a.text!r} vs prediction {b.text!r}"[:500]
    if len(label) != len(pred):
        return f"the label lists {len(label)} slides and shapes, the prediction {len(pred)}"
    return "the texts differ only in how they split into shapes"
