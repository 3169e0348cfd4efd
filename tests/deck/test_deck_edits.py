"""Hand-made edit pairs: each edit is made in-test with python-pptx/lxml on a corpus deck, and the
diff must report exactly the expected edits and nothing else."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from lxml import etree
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.oxml.ns import qn
from pptx.util import Emu, Pt

from pptarena.deck import diff_decks, open_presentation, ppteval_diff
from tests.support.paths import CORPUS

PERF = "poi_2411-Performance_Up.pptx"  # 48 slides, animations, notes, hidden slides
STRESS = "poi_stress013.pptx"  # tables, transitions, entrance/exit animations


def corpus(name: str) -> Path:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus deck {name} not available")
    return path


def pair(tmp_path: Path, name: str, mutate) -> tuple[Path, Path]:
    """Save the deck untouched (A) and after ``mutate(prs)`` (B), both through python-pptx."""
    a, b = tmp_path / "a.pptx", tmp_path / "b.pptx"
    open_presentation(corpus(name)).save(a)
    prs = open_presentation(corpus(name))
    mutate(prs)
    prs.save(b)
    return a, b


def shape(prs, slide_no: int, name: str):
    return next(s for s in prs.slides[slide_no - 1].shapes if s.name == name)


def kinds(diff) -> list[str]:
    return [e["kind"] for e in diff.edits]


def test_text_edit(tmp_path):
    def mutate(prs):
        shape(prs, 4, "Rectangle 3").text_frame.paragraphs[0].runs[0].text = "Make it fast"

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert d.edits == [
        {
            "kind": "text",
            "slide": 4,
            "shape": "Rectangle 3",
            "path": "text/p0",
            "old": "\u201cMake my web server go fast, please\u201d",
            "new": "Make it fast",
            "detail": {
                "runs_old": ["\u201cMake my web server go fast, please\u201d"],
                "runs_new": ["Make it fast"],
            },
        }
    ]


def test_move_and_resize(tmp_path):
    def mutate(prs):
        s = shape(prs, 2, "Text Box 3")
        s.top = s.top + Emu(914400)
        s.width = s.width + Emu(100)

    a, b = pair(tmp_path, PERF, mutate)
    d = diff_decks(a, b)
    assert kinds(d) == ["move", "resize"]
    move, resize = d.edits
    assert move["slide"] == 2 and move["shape"] == "Text Box 3"
    assert move["new"]["y"] - move["old"]["y"] == 914400 and move["new"]["x"] == move["old"]["x"]
    assert resize["new"]["cx"] - resize["old"]["cx"] == 100


def test_recolour_fill(tmp_path):
    def mutate(prs):
        s = shape(prs, 2, "Rectangle 2")
        s.fill.solid()
        s.fill.fore_color.rgb = RGBColor(0x12, 0x34, 0x56)

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert kinds(d) == ["fill"]
    assert d.edits[0]["new"] == {"type": "solid", "color": {"rgb": "123456"}}
    assert d.edits[0]["shape"] == "Rectangle 2" and d.edits[0]["slide"] == 2


def test_font_size_of_one_word(tmp_path):
    """Making part of a run bigger splits the run; only the changed characters are reported."""

    def mutate(prs):
        tf = shape(prs, 6, "Rectangle 3").text_frame
        run = tf.paragraphs[0].runs[0]
        assert run.text == "There is No Silver Bullet"
        run.text = "There is "
        new = tf.paragraphs[0].add_run()
        new.text = "No Silver Bullet"
        new.font.size = Pt(44)

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert [(e["kind"], e["path"], e["new"], e["detail"]) for e in d.edits] == [
        ("font", "text/p0[9:25]/size", 44.0, "No Silver Bullet")
    ]
    assert d.edits[0]["old"] is not None  # the inherited size, resolved through the master


@pytest.mark.slow
def test_delete_insert_reorder_slides(tmp_path):
    def mutate(prs):
        prs.slides.add_slide(prs.slide_layouts[6])  # first: python-pptx names parts by count
        lst = prs.slides._sldIdLst
        moved = lst[4]
        lst.remove(moved)
        lst.insert(1, moved)  # slide 5 -> position 2
        victim = lst[9]  # A's slide 10
        prs.part.drop_rel(victim.rId)
        lst.remove(victim)

    a, b = pair(tmp_path, PERF, mutate)
    d = diff_decks(a, b)
    assert [(e["kind"], e["slide"]) for e in d.edits] == [
        ("slide_moved", 2),
        ("slide_removed", 10),
        ("slide_added", 48),
    ]
    assert d.edits[0]["old"] == 5 and d.edits[0]["new"] == 2
    assert d.slide_matches[:3] == [(1, 1), (5, 2), (2, 3)]
    assert (10, None) in d.slide_matches and (None, 48) in d.slide_matches
    view = ppteval_diff(d)
    assert [s.slide_id for s in view.removed_slides] == ["262"]
    assert len(view.added_slides) == 1 and view.added_slides[0].slide_number == 48
    # PPT-Eval misses pure reorders; we report the one slide that moved
    assert [(o.slide_number, n.slide_number) for o, n in view.modified_slides] == [(5, 2)]


def test_notes(tmp_path):
    def mutate(prs):
        prs.slides[3].notes_slide.notes_text_frame.text = "Speak slowly."

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert kinds(d) == ["notes"]
    assert d.edits[0]["slide"] == 4 and d.edits[0]["new"] == "Speak slowly."
    view = ppteval_diff(d)
    assert [n.notes for _, n in view.modified_slides] == ["Speak slowly."]


def test_transition(tmp_path):
    def mutate(prs):
        sld = prs.slides[0]._element
        trans = etree.SubElement(sld, qn("p:transition"), spd="slow")
        etree.SubElement(trans, qn("p:push"), dir="u")
        # p:transition must come before p:timing
        timing = sld.find(qn("p:timing"))
        if timing is not None:
            timing.addprevious(trans)

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert d.edits == [
        {
            "kind": "transition",
            "slide": 1,
            "shape": None,
            "path": "transition",
            "old": None,
            "new": {"type": "push", "speed": "slow", "duration_ms": 1000, "direction": "u"},
        }
    ]
    view = ppteval_diff(d)
    assert [(t.slide_id, t.transition_type, t.duration, t.direction) for t in view.added_transitions] == [
        (str(d.summary_b["slides"][0]["sld_id"]), "push", 1.0, "u")
    ]


def _first_animated(prs):
    for number, slide in enumerate(prs.slides, start=1):
        ctns = [c for c in slide._element.iter(qn("p:cTn")) if c.get("presetClass")]
        if ctns:
            return number, ctns
    raise AssertionError("no animation")


def test_animation_delay_and_removal(tmp_path):
    state = {}

    def mutate(prs):
        number, ctns = _first_animated(prs)
        state["slide"] = number
        cond = ctns[0].find(qn("p:stCondLst")).find(qn("p:cond"))
        cond.set("delay", "1500")

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert [(e["kind"], e["slide"], e["path"], e["new"]) for e in d.edits] == [
        ("animation", state["slide"], "animations[0]/delay_ms", 1500)
    ]
    view = ppteval_diff(d)
    assert len(view.modified_animations) == 1 and view.modified_animations[0][1].delay == 1.5
    assert view.added_animations == [] and view.removed_animations == []


def test_table_cell(tmp_path):
    state = {}

    def mutate(prs):
        for number, slide in enumerate(prs.slides, start=1):
            for s in slide.shapes:
                if s.has_table:
                    state["where"] = (number, s.name)
                    s.table.cell(1, 0).text_frame.paragraphs[0].runs[0].text = "CHANGED"
                    return
        raise AssertionError("no table")

    d = diff_decks(*pair(tmp_path, STRESS, mutate))
    assert [(e["kind"], e["slide"], e["shape"], e["path"]) for e in d.edits] == [
        ("table", state["where"][0], state["where"][1], "table/r1c0")
    ]
    assert d.edits[0]["new"].startswith("CHANGED")


def test_chart_value(tmp_path):
    def mutate(prs):
        for slide in prs.slides:
            for s in slide.shapes:
                if s.has_chart:
                    chart_space = s.chart.part._element
                    v = next(chart_space.iter(qn("c:val"))).iter(qn("c:v"))
                    first = next(v)
                    first.text = "12345"
                    return
        raise AssertionError("no chart")

    d = diff_decks(*pair(tmp_path, "pythonpptx_shp-shapes.pptx", mutate))
    assert [(e["kind"], e["path"], e["new"]) for e in d.edits] == [
        ("chart", "chart/series0/values[0]", 12345.0)
    ]


def test_layout_change(tmp_path):
    def make_a(prs):
        slide = prs.slides.add_slide(prs.slide_layouts[6])  # Blank
        slide.shapes.add_textbox(Emu(914400), Emu(914400), Emu(914400 * 3), Emu(914400)).text = "hello"

    a, b = tmp_path / "a.pptx", tmp_path / "b.pptx"
    prs = open_presentation(corpus(PERF))
    make_a(prs)
    prs.save(a)
    prs = open_presentation(a)
    slide = prs.slides[-1]
    blank_names = {lay.name for lay in prs.slide_layouts}
    assert slide.slide_layout.name in blank_names
    target = next(lay for lay in prs.slide_layouts if lay.name == "Title Only")
    for rel in slide.part.rels.values():
        if rel.reltype.endswith("/slideLayout"):
            rel._target = target.part
    prs.save(b)
    d = diff_decks(a, b)
    assert [(e["kind"], e["slide"], e["old"], e["new"]) for e in d.edits] == [
        ("layout", 49, "Blank", "Title Only")
    ]


def test_theme_colour(tmp_path):
    def mutate(prs):
        master = prs.slide_masters[0]
        theme_part = next(r.target_part for r in master.part.rels.values() if r.reltype.endswith("/theme"))
        root = etree.fromstring(theme_part.blob)
        accent = root.find(".//" + qn("a:clrScheme")).find(qn("a:accent1"))
        accent[0].tag = qn("a:srgbClr")
        accent[0].attrib.clear()
        accent[0].set("val", "FF00AA")
        theme_part._blob = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)

    d = diff_decks(*pair(tmp_path, STRESS, mutate))
    theme = [e for e in d.edits if e["kind"] == "theme"]
    assert [(e["path"], e["new"]) for e in theme] == [("theme[0]/colors/accent1", "FF00AA")]
    # everything else is a shown colour that now resolves through the new accent1
    others = [e for e in d.edits if e["kind"] != "theme"]
    for e in others:
        assert e["kind"] in ("fill", "line", "font", "background"), e
        assert "FF00AA" in str(e["new"]) or "accent1" in str(e["new"]), e


def test_shape_added_removed_and_z_order(tmp_path):
    def mutate(prs):
        slide = prs.slides[1]
        tree = slide.shapes._spTree
        shapes = [s._element for s in slide.shapes]
        tree.remove(shapes[2])  # Text Box 3 removed
        tree.append(copy.deepcopy(shapes[0]))  # duplicate placeholder at the top... gets a new id:
        tree[-1].find(".//" + qn("p:cNvPr")).set("id", "99")
        tree[-1].find(".//" + qn("p:cNvPr")).set("name", "Copy")
        tree.remove(shapes[1])
        tree.insert(2, shapes[1])  # Rectangle 2 moved below Slide Number Placeholder? (first shape stays)

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    got = sorted((e["kind"], e["shape"]) for e in d.edits)
    assert ("shape_removed", "Text Box 3") in got and ("shape_added", "Copy") in got
    assert all(k in ("shape_removed", "shape_added", "z_order") for k, _ in got), got


def test_hyperlink(tmp_path):
    def mutate(prs):
        run = shape(prs, 4, "Rectangle 3").text_frame.paragraphs[0].runs[0]
        run.hyperlink.address = "https://example.org/"

    d = diff_decks(*pair(tmp_path, PERF, mutate))
    assert [(e["kind"], e["new"]) for e in d.edits] == [("hyperlink", [{"url": "https://example.org/"}])]


def _first_table(prs):
    for number, slide in enumerate(prs.slides, start=1):
        for s in slide.shapes:
            if s.has_table:
                return number, s
    raise AssertionError("no table")


def test_table_cell_fill(tmp_path):
    state = {}

    def mutate(prs):
        number, frame = _first_table(prs)
        state["where"] = (number, frame.name)
        cell = frame.table.cell(0, 1)
        cell.fill.solid()
        cell.fill.fore_color.rgb = RGBColor(0x00, 0x60, 0x6B)

    d = diff_decks(*pair(tmp_path, STRESS, mutate))
    number, name = state["where"]
    assert d.edits == [
        {
            "kind": "fill",
            "slide": number,
            "shape": name,
            "path": "table/r0c1/fill",
            "old": None,
            "new": {"type": "solid", "color": {"rgb": "00606B"}},
        }
    ]
    # PPT-Eval hashes the slide XML, which changed: the slide is modified in its view as well
    view = ppteval_diff(d)
    assert [n.slide_number for _, n in view.modified_slides] == [number]


def test_table_cell_run_bold_and_colour(tmp_path):
    state = {}

    def mutate(prs):
        number, frame = _first_table(prs)
        state["where"] = (number, frame.name)
        run = frame.table.cell(1, 0).text_frame.paragraphs[0].runs[0]
        assert run.text == "Herbie" and not run.font.bold
        run.font.bold = True
        run.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)

    d = diff_decks(*pair(tmp_path, STRESS, mutate))
    number, name = state["where"]
    assert [
        (e["kind"], e["slide"], e["shape"], e["path"], e["old"], e["new"], e["detail"]) for e in d.edits
    ] == [
        ("font", number, name, "table/r1c0/p0[0:6]/bold", False, True, "Herbie"),
        (
            "font",
            number,
            name,
            "table/r1c0/p0[0:6]/color",
            {"theme": "tx1", "rgb": "000000"},
            {"rgb": "FFFFFF"},
            "Herbie",
        ),
    ]


def test_table_cell_text_and_layout_props(tmp_path):
    """A changed cell text is one ``table`` edit (no per-paragraph text edits); anchor, margins and
    borders are reported per cell."""
    from pptx.enum.text import MSO_ANCHOR

    state = {}

    def mutate(prs):
        number, frame = _first_table(prs)
        state["where"] = (number, frame.name)
        cell = frame.table.cell(2, 1)
        state["old_text"] = cell.text_frame.text
        cell.text_frame.paragraphs[0].runs[0].text = "42"
        cell.vertical_anchor = MSO_ANCHOR.BOTTOM
        cell.margin_left = Emu(0)
        tcpr = cell._tc.get_or_add_tcPr()
        ln = etree.Element(qn("a:lnB"), w="25400")
        fill = etree.SubElement(ln, qn("a:solidFill"))
        etree.SubElement(fill, qn("a:srgbClr"), val="FF0000")
        tcpr.insert(0, ln)

    d = diff_decks(*pair(tmp_path, STRESS, mutate))
    number, name = state["where"]
    assert [(e["kind"], e["path"], e["old"], e["new"]) for e in d.edits] == [
        ("table", "table/r2c1", state["old_text"], "42"),
        (
            "line",
            "table/r2c1/border/bottom",
            None,
            {"width": 25400, "fill": {"type": "solid", "color": {"rgb": "FF0000"}}},
        ),
        (
            "table",
            "table/r2c1/margins",
            {"left": 68580, "right": 68580, "top": 34290, "bottom": 34290},
            {"left": 0, "right": 68580, "top": 34290, "bottom": 34290},
        ),
        ("table", "table/r2c1/anchor", None, "bottom"),
    ]
    assert all(e["slide"] == number and e["shape"] == name for e in d.edits)


def test_demo_table_header_task(tmp_path):
    """The demo task onboarding-table-header (header row filled #00606B, bold white text) was
    invisible to the diff before cells carried formatting; now each header cell reports its fill,
    bold and colour."""
    from pptarena.plugins.datasets.demo.decks import build_onboarding
    from pptarena.plugins.datasets.demo.tasks import edit_table_header

    a, b = tmp_path / "a.pptx", tmp_path / "b.pptx"
    build_onboarding(a)
    prs = open_presentation(a)
    edit_table_header(prs)
    prs.save(b)
    d = diff_decks(a, b)
    header = [
        c["text"]
        for c in next(s for s in d.summary_b["slides"][4]["shapes"] if s["kind"] == "table")["table"][
            "cells"
        ][0]
    ]
    expected = []
    for c, text in enumerate(header):
        span = f"[0:{len(text)}]"
        expected += [
            ("fill", f"table/r0c{c}/fill", {"type": "solid", "color": {"rgb": "00606B"}}),
            ("font", f"table/r0c{c}/p0{span}/bold", True),
            ("font", f"table/r0c{c}/p0{span}/color", {"rgb": "FFFFFF"}),
        ]
    assert [(e["kind"], e["path"], e["new"]) for e in d.edits] == expected
    assert {(e["slide"], e["shape"]) for e in d.edits} == {(5, "Table")}


NESTED = "unstructured_group-shapes-nested.pptx"  # Group 14 (offset child space), Group 21 ⊃ Groups 19, 20


def _group(prs, name):
    def walk(shapes):
        for s in shapes:
            if s.name == name:
                return s
            if s.shape_type == MSO_SHAPE_TYPE.GROUP:
                found = walk(s.shapes)
                if found is not None:
                    return found
        return None

    return walk(prs.slides[0].shapes)


def _summary_shape(summary, name):
    def walk(shapes):
        for s in shapes:
            if s["name"] == name:
                return s
            found = walk(s.get("children") or [])
            if found is not None:
                return found
        return None

    return walk(summary["slides"][0]["shapes"])


def test_group_resize_scales_children_in_slide_space(tmp_path):
    """Doubling a group's extent (child extent unchanged) is one resize of the group; its children keep
    their child coordinates but their abs_position doubles around the group's offset."""
    state = {}

    def mutate(prs):
        g = _group(prs, "Group 14")
        state["off"] = (g.left, g.top)
        g.width = g.width * 2
        g.height = g.height * 2

    d = diff_decks(*pair(tmp_path, NESTED, mutate))
    assert [(e["kind"], e["shape"], e["path"]) for e in d.edits] == [("resize", "Group 14", "size")]
    group_a = _summary_shape(d.summary_a, "Group 14")
    group_b = _summary_shape(d.summary_b, "Group 14")
    ch_off = (2326701, 701605)  # a:chOff of Group 14 (child space is offset from slide space)
    for child_a, child_b in zip(group_a["children"], group_b["children"], strict=True):
        assert {k: child_a[k] for k in ("x", "y", "cx", "cy")} == {
            k: child_b[k] for k in ("x", "y", "cx", "cy")
        }
        ox, oy = state["off"]
        assert child_a["abs_position"] == {
            "x": ox + child_a["x"] - ch_off[0],
            "y": oy + child_a["y"] - ch_off[1],
            "cx": child_a["cx"],
            "cy": child_a["cy"],
        }
        assert child_b["abs_position"] == {
            "x": ox + 2 * (child_a["x"] - ch_off[0]),
            "y": oy + 2 * (child_a["y"] - ch_off[1]),
            "cx": 2 * child_a["cx"],
            "cy": 2 * child_a["cy"],
        }
    assert "abs_position" not in group_a  # top-level shapes are in slide space already


def test_move_inside_nested_group_reports_slide_space(tmp_path):
    def mutate(prs):
        g = _group(prs, "Group 19")
        child = g.shapes[0]
        child.left = child.left + Emu(914400)

    d = diff_decks(*pair(tmp_path, NESTED, mutate))
    assert len(d.edits) == 1
    e = d.edits[0]
    assert (e["kind"], e["path"]) == ("move", "position")
    assert e["new"]["x"] - e["old"]["x"] == 914400
    assert e["detail"]["abs_new"]["x"] - e["detail"]["abs_old"]["x"] == 914400
    assert e["detail"]["abs_new"]["y"] == e["detail"]["abs_old"]["y"]
