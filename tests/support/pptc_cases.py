"""Differential cases for ``pptx_match`` against PPTC's own ``calc_acc``, built from a corpus deck.

Every case is ``(name, label, prediction, instruction)``. The decks start from
``../shared/corpus/pythonpptx_shp-shapes.pptx`` (placeholders, pictures, a table, a pie chart, a
line, a group, a diagram frame) plus one slide this module adds with an object of every kind PPTC's
restrictions name (text boxes, a three-series chart, a table, two pictures, each auto shape) at known
places. Families: every attribute PPTC prints (changed → a fail, unchanged or position-only → a
pass), PPTC's serialisation quirks (NaN, -0.0, an unparsable chart value, ``|`` in table cells),
decks PPTC's reader cannot read, every object name and relation word against the slide and against
another object (with ±1 EMU boundaries), and malformed restrictions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.pptc_reference import PPTC

CORPUS = PPTC.parent / "corpus"
SOURCE = CORPUS / "pythonpptx_shp-shapes.pptx"
MID_X, MID_Y = 4_572_000, 3_429_000
KINDS = {  # restriction name -> auto shape added for it (PPTC looks for the name's word)
    "rectangle": "RECTANGLE",
    "rounded_rectangle": "ROUNDED_RECTANGLE",
    "star": "STAR_5_POINT",
    "circle": "OVAL",
    "cloud": "CLOUD",
    "triangle": "ISOSCELES_TRIANGLE",
    "callout": "RECTANGULAR_CALLOUT",
    "right_arrow": "RIGHT_ARROW",
}
OBJECTS = ["textbox", "textbox 1", "table", "chart", "picture", "picture 1", "image", "arrow", *KINDS]
Case = tuple[str, Path, Path, str]


def _open(path: Path) -> Any:
    from pptx import Presentation

    return Presentation(str(path))


def build_base(tmp: Path) -> Path:
    """The corpus deck plus slide 2 holding every object kind at known, non-overlapping places."""
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.enum.shapes import MSO_SHAPE
    from pptx.util import Emu, Pt

    prs = _open(SOURCE)
    image = tmp / "picture.png"
    image.write_bytes(next(s for s in prs.slides[0].shapes if s.name == "Picture 5").image.blob)
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    unit = 400_000
    for i in range(2):
        box = slide.shapes.add_textbox(Emu(100_000 + i * 1_000_000), Emu(100_000), Emu(unit), Emu(unit))
        run = box.text_frame.paragraphs[0].add_run()
        run.text, run.font.size = f"box {i}", Pt(18 + i)
    box.text_frame.paragraphs[0].runs[0].font.size = None  # text box 1: size from its paragraph
    box.text_frame.paragraphs[0].font.size = Pt(22)
    table = slide.shapes.add_table(2, 2, Emu(2_200_000), Emu(100_000), Emu(unit * 2), Emu(unit)).table
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"r{r}c{c}"
    data = CategoryChartData()
    data.categories = ["a", "b", "c"]
    for n, values in (("S1", (1, 2, 3)), ("S2", (4, 5, 6)), ("S3", (7, 8, 9))):
        data.add_series(n, values)
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Emu(5_000_000), Emu(100_000), Emu(unit * 3), Emu(unit * 2), data
    ).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Chart title"
    for i in range(2):
        slide.shapes.add_picture(
            str(image), Emu(100_000 + i * 1_000_000), Emu(3_800_000), Emu(unit), Emu(unit)
        )
    for i, kind in enumerate(KINDS.values()):
        shape = slide.shapes.add_shape(
            getattr(MSO_SHAPE, kind), Emu(100_000 + i * 1_100_000), Emu(5_500_000), Emu(unit), Emu(unit)
        )
        shape.text_frame.text = kind.lower()
    path = tmp / "base.pptx"
    prs.save(str(path))
    return path


class Builder:
    """Writes prediction decks: a copy of a deck with one edit applied."""

    def __init__(self, tmp: Path, base: Path) -> None:
        self.tmp, self.base, self.cases = tmp, base, []  # type: ignore[var-annotated]

    def deck(self, name: str, edit: Callable[[Any], Any], start: Path | None = None) -> Path:
        """``start`` (default: the base) with ``edit`` applied, saved as ``<name>.pptx``."""
        prs = _open(start or self.base)
        edit(prs)
        path = self.tmp / f"{name}.pptx"
        prs.save(str(path))
        return path

    def pair(self, name: str, edit: Callable[[Any], Any], instruction: str = "Edit.") -> None:
        """Label = the base, prediction = the base edited."""
        self.cases.append((name, self.base, self.deck(name, edit), instruction))


def shape(prs: Any, slide: int, name: str) -> Any:
    """The shape called ``name`` on ``slide`` (LookupError when absent)."""
    for s in prs.slides[slide].shapes:
        if s.name == name:
            return s
    raise LookupError(name)


def named(prs: Any, slide: int, word: str) -> Any:
    """The first shape on ``slide`` whose name contains ``word``."""
    return next(s for s in prs.slides[slide].shapes if word in s.name)


def _kind_shape(prs: Any, slide: int, word: str, n: int = 0) -> Any:
    return [s for s in prs.slides[slide].shapes if word in str(s.shape_type)][n]


def _run(prs: Any, name: str = "Title 3") -> Any:
    return shape(prs, 0, name).text_frame.paragraphs[0].runs[0]


def _chart_values(prs: Any) -> list[Any]:
    chart = _kind_shape(prs, 2, "CHART").chart
    return chart._chartSpace.xpath(".//c:ser/c:val//c:pt/c:v")


def _set_value(index: int, text: str) -> Callable[[Any], None]:
    def edit(prs: Any) -> None:
        _chart_values(prs)[index].text = text

    return edit


def attribute_cases(b: Builder) -> None:
    """Every attribute PPTC prints, changed (fail) or left alone (pass)."""
    from pptx.dml.color import RGBColor
    from pptx.enum.text import PP_ALIGN
    from pptx.util import Emu, Pt

    b.cases.append(("identical", b.base, b.base, "Edit."))
    b.pair("resaved", lambda p: None)
    title_font = [
        ("bold", lambda p: setattr(_run(p).font, "bold", True)),
        ("italic", lambda p: setattr(_run(p).font, "italic", True)),
        ("underline", lambda p: setattr(_run(p).font, "underline", True)),
        ("size", lambda p: setattr(_run(p).font, "size", Pt(13))),
        ("colour", lambda p: setattr(_run(p).font.color, "rgb", RGBColor(1, 2, 3))),
        ("font-name", lambda p: setattr(_run(p).font, "name", "Arial")),
        (
            "line-spacing",
            lambda p: setattr(shape(p, 0, "Title 3").text_frame.paragraphs[0], "line_spacing", 1.5),
        ),
        (
            "line-spacing-pt",
            lambda p: setattr(shape(p, 0, "Title 3").text_frame.paragraphs[0], "line_spacing", Pt(20)),
        ),
        (
            "alignment",
            lambda p: setattr(shape(p, 0, "Title 3").text_frame.paragraphs[0], "alignment", PP_ALIGN.RIGHT),
        ),
        ("text", lambda p: setattr(_run(p), "text", "other")),
        (
            "text-second-paragraph",
            lambda p: setattr(
                shape(p, 0, "Content Placeholder 4").text_frame.paragraphs[1].runs[0], "text", "x"
            ),
        ),
        (
            "style-second-run",
            lambda p: setattr(
                shape(p, 0, "Content Placeholder 4").text_frame.paragraphs[1].runs[0].font, "bold", True
            ),
        ),
    ]
    for name, edit in title_font:
        b.pair(f"placeholder-{name}", edit)

    def fill(name: str, slide: int, rgb: tuple[int, int, int]) -> Callable[[Any], None]:
        def edit(p: Any) -> None:
            s = shape(p, slide, name)
            s.fill.solid()
            s.fill.fore_color.rgb = RGBColor(*rgb)

        return edit

    b.pair("placeholder-fill", fill("Title 3", 0, (9, 9, 9)))
    b.pair("autoshape-fill", fill("Rectangle 8", 1, (9, 9, 9)))
    b.pair("autoshape-text", lambda p: setattr(shape(p, 1, "Rectangle 8").text_frame, "text", "x"))
    b.pair("autoshape-renamed-tag", lambda p: setattr(shape(p, 1, "Rectangle 8"), "name", "Box 8"))
    b.pair(
        "autoshape-renamed-same-tag", lambda p: setattr(shape(p, 1, "Rectangle 8"), "name", "Rectangle 99")
    )
    box = lambda p, i=0: _kind_shape(p, 2, "TEXT_BOX", i)  # noqa: E731
    b.pair("textbox-text", lambda p: setattr(box(p).text_frame.paragraphs[0].runs[0], "text", "y"))
    b.pair("textbox-size", lambda p: setattr(box(p).text_frame.paragraphs[0].runs[0].font, "size", Pt(30)))
    b.pair(
        "textbox-paragraph-size", lambda p: setattr(box(p, 1).text_frame.paragraphs[0].font, "size", Pt(40))
    )
    b.pair(
        "textbox-fill",
        lambda p: (box(p).fill.solid(), setattr(box(p).fill.fore_color, "rgb", RGBColor(5, 5, 5))),
    )
    b.pair("textbox-moved", lambda p: setattr(box(p), "left", box(p).left + 5))
    b.pair("textbox-resized", lambda p: setattr(box(p), "width", box(p).width * 2))

    def swap_boxes(p: Any) -> None:
        tree = p.slides[2].shapes._spTree
        first, second = box(p)._element, box(p, 1)._element
        tree.remove(first)
        second.addnext(first)

    b.pair("textbox-order", swap_boxes)
    b.pair("picture-rotation", lambda p: setattr(_kind_shape(p, 0, "PICTURE"), "rotation", 30.0))
    b.pair("picture-rotation-fraction", lambda p: setattr(_kind_shape(p, 0, "PICTURE"), "rotation", 0.4))
    b.pair("picture-moved", lambda p: setattr(_kind_shape(p, 0, "PICTURE"), "top", 10))
    table = lambda p: _kind_shape(p, 2, "TABLE").table  # noqa: E731
    b.pair("table-cell", lambda p: setattr(table(p).cell(1, 1), "text", "changed"))
    b.pair(
        "table-cell-swap",
        lambda p: (
            setattr(table(p).cell(0, 0), "text", "r0c1"),
            setattr(table(p).cell(0, 1), "text", "r0c0"),
        ),
    )
    b.pair("table-column-width", lambda p: setattr(table(p).columns[0], "width", Emu(500_000)))
    chart = lambda p: _kind_shape(p, 2, "CHART").chart  # noqa: E731
    b.pair("chart-title", lambda p: setattr(chart(p).chart_title.text_frame, "text", "Other"))
    b.pair(
        "chart-series-name",
        lambda p: setattr(chart(p)._chartSpace.xpath(".//c:ser/c:tx//c:v")[1], "text", "T2"),
    )
    b.pair("chart-value", _set_value(4, "5.5"))
    b.pair("chart-value-same-number", _set_value(4, "5.0"))
    b.pair("chart-value-exponent", _set_value(4, "0.5e1"))

    def chart_type(p: Any) -> None:
        from pptx.chart.data import CategoryChartData
        from pptx.enum.chart import XL_CHART_TYPE

        frame = _kind_shape(p, 2, "CHART")
        data = CategoryChartData()
        data.categories = ["a", "b", "c"]
        for n, values in (("S1", (1, 2, 3)), ("S2", (4, 5, 6)), ("S3", (7, 8, 9))):
            data.add_series(n, values)
        graphic = p.slides[2].shapes.add_chart(
            XL_CHART_TYPE.LINE, frame.left, frame.top, frame.width, frame.height, data
        )
        graphic.chart.has_title = True
        graphic.chart.chart_title.text_frame.text = "Chart title"
        frame._element.addnext(graphic._element)
        frame._element.getparent().remove(frame._element)

    b.pair("chart-type", chart_type)

    def background(p: Any) -> None:
        p.slides[1].background.fill.solid()
        p.slides[1].background.fill.fore_color.rgb = RGBColor(0, 0, 255)

    b.pair("background", background)
    b.pair("notes", lambda p: setattr(p.slides[1].notes_slide.notes_text_frame, "text", "note"))
    b.pair("notes-blank", lambda p: setattr(p.slides[1].notes_slide.notes_text_frame, "text", ""))
    b.pair(
        "shape-removed",
        lambda p: shape(p, 1, "Rectangle 8")._element.getparent().remove(shape(p, 1, "Rectangle 8")._element),
    )
    b.pair("shape-added", lambda p: p.slides[1].shapes.add_textbox(0, 0, 10, 10))
    b.pair(
        "line-moved", lambda p: setattr(shape(p, 1, "Straight Arrow Connector 6"), "left", 0)
    )  # lines are not listed
    b.pair(
        "line-removed",
        lambda p: (
            shape(p, 1, "Straight Arrow Connector 6")
            ._element.getparent()
            .remove(shape(p, 1, "Straight Arrow Connector 6")._element)
        ),
    )
    b.pair(
        "group-removed",
        lambda p: shape(p, 1, "Group 4")._element.getparent().remove(shape(p, 1, "Group 4")._element),
    )
    b.pair("slide-added", lambda p: p.slides.add_slide(p.slide_layouts[0]))

    def slides_swapped(p: Any) -> None:
        ids = p.slides._sldIdLst
        first = ids[0]
        ids.remove(first)
        ids.insert(1, first)

    b.pair("slides-swapped", slides_swapped)


def quirk_cases(b: Builder) -> None:
    """PPTC's serialisation quirks: NaN, -0.0, an unparsable value, ``|`` in table cells."""
    nan = b.deck("nan-label", _set_value(4, "NaN"))
    b.cases.append(("nan-against-itself", nan, nan, "Edit."))
    b.cases.append(("nan-against-resave", nan, b.deck("nan-resaved", lambda p: None, nan), "Edit."))
    b.cases.append(("nan-against-number", nan, b.base, "Edit."))
    b.cases.append(("nan-spelt-nan", nan, b.deck("nan-lower", _set_value(4, "nan")), "Edit."))
    zero = b.deck("zero", _set_value(4, "0"))
    b.cases.append(("minus-zero-vs-zero", zero, b.deck("minus-zero", _set_value(4, "-0")), "Edit."))
    b.cases.append(("zero-vs-zero-point", zero, b.deck("zero-point", _set_value(4, "0.0")), "Edit."))
    broken = b.deck("na-label", _set_value(4, "#N/A"))  # python-pptx fails in series 2
    b.cases.append(
        (
            "na-later-series-differ",
            broken,
            b.deck("na-later", lambda p: (_set_value(4, "#N/A")(p), _set_value(7, "99")(p))),
            "Edit.",
        )
    )
    b.cases.append(
        (
            "na-same-series-earlier-value",
            broken,
            b.deck("na-earlier", lambda p: (_set_value(4, "#N/A")(p), _set_value(3, "99")(p))),
            "Edit.",
        )
    )
    b.cases.append(
        (
            "na-first-series-differs",
            broken,
            b.deck("na-first", lambda p: (_set_value(4, "#N/A")(p), _set_value(0, "99")(p))),
            "Edit.",
        )
    )
    b.cases.append(("na-against-clean", broken, b.base, "Edit."))

    def cells(*texts: str) -> Callable[[Any], None]:
        def edit(p: Any) -> None:
            table = _kind_shape(p, 2, "TABLE").table
            for cell, text in zip(table.rows[0].cells, texts, strict=True):
                cell.text = text

        return edit

    bars = b.deck("bars-label", cells("A|B", "C"))
    b.cases.append(("table-bar-moves-cells", bars, b.deck("bars-moved", cells("A", "B|C")), "Edit."))
    b.cases.append(
        (
            "table-bar-empty-cell",
            b.deck("bars-empty", cells("A|", "")),
            b.deck("bars-empty2", cells("", "|A")),
            "Edit.",
        )
    )
    b.cases.append(("table-no-bar", bars, b.deck("bars-none", cells("AB", "C")), "Edit."))


def _no_size(name: str) -> Callable[[Any], None]:
    """Remove the size and position of placeholder ``name`` on slide 0 and of its layout and master
    placeholders: python-pptx then reads its width as None."""

    def edit(p: Any) -> None:
        ph: Any = shape(p, 0, name)
        while ph is not None:
            for xfrm in ph._element.spPr.xpath("a:xfrm"):
                ph._element.spPr.remove(xfrm)
            ph = getattr(ph, "_base_placeholder", None)

    return edit


def _linked_picture(p: Any) -> None:
    pic = _kind_shape(p, 0, "PICTURE")
    blip = pic._element.blipFill.blip
    r = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
    image_rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"
    rid = p.slides[0].part.relate_to("https://example.invalid/picture.png", image_rel, is_external=True)
    del blip.attrib[f"{r}embed"]
    blip.set(f"{r}link", rid)


def unreadable_cases(b: Builder) -> None:
    """Decks PPTC's reader raises on: a placeholder with no size in its chain, a linked picture,
    a picture placeholder; in the label and in the prediction."""
    nosize = b.deck("title-no-size", _no_size("Title 3"))
    b.cases.append(("title-no-size-prediction", b.base, nosize, "Edit."))
    b.cases.append(("title-no-size-label", nosize, b.base, "Edit."))
    b.cases.append(
        (
            "content-no-size-prediction",
            b.base,
            b.deck("content-no-size", _no_size("Content Placeholder 4")),
            "Edit.",
        )
    )

    def date_placeholder(p: Any) -> None:  # a date placeholder of the slide's own, without size
        title = shape(p, 0, "Title 3")._element
        date = copy.deepcopy(title)
        date.nvSpPr.cNvPr.set("id", "99")
        date.nvSpPr.cNvPr.set("name", "Date Placeholder 99")
        date.nvSpPr.nvPr.ph.set("type", "dt")
        date.nvSpPr.nvPr.ph.set("idx", "57")  # no layout placeholder has this idx
        for xfrm in date.spPr.xpath("a:xfrm"):  # the layout has no date placeholder to inherit from
            date.spPr.remove(xfrm)
        title.addnext(date)

    b.cases.append(("date-no-size-prediction", b.base, b.deck("date-no-size", date_placeholder), "Edit."))
    linked = b.deck("linked-picture", _linked_picture)
    b.cases.append(("linked-picture-prediction", b.base, linked, "Edit."))
    b.cases.append(("linked-picture-label", linked, linked, "Edit."))
    populated = CORPUS / "pythonpptx_ph-populated-placeholders.pptx"  # a picture placeholder
    b.cases.append(("picture-placeholder", populated, populated, "Edit."))
    entr = CORPUS / "openxmlsdk_test_entr_exit.pptx"  # a 3-D bar chart python-pptx cannot type
    b.cases.append(("unsupported-chart", entr, entr, "Edit."))


def position_cases(b: Builder) -> None:
    """Every object name and relation word, against the slide and against objects, and boundaries."""
    from pptx.util import Emu

    words = ["left", "top", "right", "bottom", "center"]
    for i, obj in enumerate(OBJECTS):  # every object, each with two relation words in turn
        for rel in (words[i % 5], words[(i + 2) % 5]):
            b.cases.append((f"pos-{obj}-slide-{rel}", b.base, b.base, f"Move. ## 2, {obj}, slide, {rel}"))
    for rel in words:
        b.cases.append((f"pos-star-slide-all-{rel}", b.base, b.base, f"Move. ## 2, star, slide, {rel}"))
    pairs = [("textbox", "table"), ("table", "textbox"), ("chart", "picture"), ("picture", "chart")]
    pairs += [("star", "circle"), ("circle", "star"), ("picture 1", "textbox 1"), ("cloud", "callout")]
    relations = [*words, "right top", "left corner", "bottom.", "below", "right bottom"]
    for i, (a, other) in enumerate(pairs):  # every relation against objects, each pair with three
        for rel in (relations[i % 10], relations[(i + 4) % 10], relations[(i + 7) % 10]):
            b.cases.append((f"pos-{a}-{other}-{rel}", b.base, b.base, f"Move. ## 2, {a}, {other}, {rel}"))
    for a in ("title", "content", "image", "picture", "table", "chart"):
        b.cases.append((f"pos-slide0-{a}", b.base, b.base, f"Move. ## 0, {a}, slide, top left"))
    b.cases.append(("pos-title-content", b.base, b.base, "Move. ## 0, title, content, top"))
    # ±1 EMU around each boundary (strict inequalities)
    for word in ("left", "right", "top", "bottom"):
        for delta in (-1, 0, 1):

            def place(p: Any, word: str = word, delta: int = delta) -> None:
                s = _kind_shape(p, 2, "TEXT_BOX")
                edge = {"left": MID_X - s.width, "right": MID_X, "top": MID_Y - s.height, "bottom": MID_Y}[
                    word
                ]
                if word in ("left", "right"):
                    s.left = Emu(edge + delta)
                else:
                    s.top = Emu(edge + delta)

            deck = b.deck(f"edge-slide-{word}-{delta}", place)
            b.cases.append(
                (f"edge-slide-{word}{delta:+d}", b.base, deck, f"Move. ## 2, textbox, slide, {word}")
            )

            def beside(p: Any, word: str = word, delta: int = delta) -> None:
                a, t = _kind_shape(p, 2, "TEXT_BOX"), _kind_shape(p, 2, "TABLE")
                if word == "left":
                    a.left = Emu(t.left - a.width + delta)
                elif word == "right":
                    a.left = Emu(t.left + t.width + delta)
                elif word == "top":
                    a.top = Emu(t.top - a.height + delta)
                else:
                    a.top = Emu(t.top + t.height + delta)

            deck = b.deck(f"edge-object-{word}-{delta}", beside)
            b.cases.append(
                (f"edge-object-{word}{delta:+d}", b.base, deck, f"Move. ## 2, textbox, table, {word}")
            )
    for delta in (-1, 0, 1):

        def straddle(p: Any, delta: int = delta) -> None:
            s = _kind_shape(p, 2, "TEXT_BOX")
            s.left, s.top = Emu(MID_X - s.width // 2), Emu(MID_Y + delta)

        deck = b.deck(f"edge-center-{delta}", straddle)
        b.cases.append((f"edge-center{delta:+d}", b.base, deck, "Move. ## 2, textbox, slide, center"))
    # restrictions PPTC fails or raises on
    for name, rule in [
        ("bad-slide", "9, star, slide, left"),
        ("negative-slide", "-1, star, slide, bottom"),
        ("missing-object", "2, textbox 7, slide, left"),
        ("unknown-name", "2, hexagon, slide, left"),
        ("index-not-number", "2, textbox2, slide, left"),
        ("spaces", "  2 ,  star ,slide,  bottom  "),
        ("three-fields", "2, star, left"),
        ("five-fields", "2, star, slide, left, top"),
        ("empty", ""),
    ]:
        b.cases.append((f"rule-{name}", b.base, b.base, f"Move. ## {rule}"))
    b.cases.append(
        ("rules-two-one-fails", b.base, b.base, "Move. ## 2, star, slide, bottom ## 2, star, slide, top")
    )
    b.cases.append(("rules-fail-then-malformed", b.base, b.base, "Move. ## 2, star, slide, top ## 2, star"))
    b.cases.append(
        (
            "rule-and-attribute-differ",
            b.base,
            b.deck("rule-attr", lambda p: setattr(_run(p), "text", "z")),
            "Edit. ## 2, star, slide, bottom",
        )
    )


def all_cases(tmp: Path) -> list[Case]:
    """Every turn case (sessions are built separately)."""
    b = Builder(tmp, build_base(tmp))
    attribute_cases(b)
    quirk_cases(b)
    unreadable_cases(b)
    position_cases(b)
    return b.cases
