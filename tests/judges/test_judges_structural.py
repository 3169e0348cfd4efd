"""The structural judge on generated decks and a corpus deck: endpoints, partial credit,
tolerances, damage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pptarena.plugins.judges.structural.judge import StructuralJudge
from pptarena.types import ComponentContext, JudgeError
from tests.support.structural_dual_fixtures import (
    build_deck,
    derive,
    make_case,
    move,
    recolor,
    retitle,
    set_margins,
    set_text,
)

RED = (0xE0, 0x10, 0x10)


def judge(**options):
    ctx = ComponentContext(
        cache_dir=Path("/nonexistent"), model=lambda ref: None, name="structural", label="structural"
    )
    return StructuralJudge(StructuralJudge.Options(**options), ctx)


def score(tmp_path, original, target, prediction, name="case", **options):
    task, pred, ev = make_case(tmp_path, original, target, prediction, name=name)
    return judge(**options).judge(task, pred, ev)


# three requested edits on three different objects
EDIT_A = recolor(1, "Box0", RED)
EDIT_B = retitle(2, "Annual review")
EDIT_C = move(3, "Box2", dx_in=-3.0)


@pytest.fixture
def decks(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", EDIT_A, EDIT_B, EDIT_C)
    return orig, target


def test_oracle_scores_one_and_noop_scores_zero(tmp_path, decks):
    orig, target = decks
    oracle = score(tmp_path, orig, target, target, name="oracle")
    assert oracle.score == 1.0
    assert oracle.metrics["recall"] == 1.0 and oracle.metrics["precision"] == 1.0
    assert oracle.metrics["if_like"] == 5
    assert oracle.metrics["target_units"] == 3 and oracle.metrics["units_reproduced"] == 3
    noop = score(tmp_path, orig, target, derive(orig, tmp_path / "noop.pptx"), name="noop")
    assert noop.score == 0.0
    assert noop.metrics["if_like"] == 0 and noop.metrics["prediction_edits"] == 0
    assert "Missed" in noop.explanation


def test_partial_work_earns_credit_in_proportion(tmp_path, decks):
    orig, target = decks
    one = score(tmp_path, orig, target, derive(orig, tmp_path / "one.pptx", EDIT_A), name="one")
    two = score(tmp_path, orig, target, derive(orig, tmp_path / "two.pptx", EDIT_A, EDIT_C), name="two")
    three = score(
        tmp_path, orig, target, derive(orig, tmp_path / "three.pptx", EDIT_A, EDIT_B, EDIT_C), name="3"
    )
    assert one.score == pytest.approx(1 / 3, abs=1e-6)
    assert two.score == pytest.approx(2 / 3, abs=1e-6)
    assert three.score == 1.0
    assert two.score - one.score > 0.25
    assert (one.metrics["if_like"], two.metrics["if_like"]) == (2, 3)
    assert one.metrics["units_reproduced"] == 1 and two.metrics["units_reproduced"] == 2


def test_complete_edit_plus_unrelated_damage_costs_one_missed_edit(tmp_path, decks):
    orig, target = decks
    clean = score(
        tmp_path, orig, target, derive(orig, tmp_path / "clean.pptx", EDIT_A, EDIT_B, EDIT_C), name="clean"
    )
    damaged = score(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "damaged.pptx", EDIT_A, EDIT_B, EDIT_C, set_text(3, "Body2", "lorem ipsum")),
        name="damaged",
    )
    two = score(tmp_path, orig, target, derive(orig, tmp_path / "two.pptx", EDIT_A, EDIT_B), name="two")
    assert clean.score == 1.0
    assert damaged.metrics["collateral_units"] == 1 and damaged.metrics["damaged_units"] == 1
    assert damaged.metrics["recall"] == 1.0
    # one damaged unrelated object costs as much as one of the three requested edits (damage_weight 1)
    assert damaged.score == pytest.approx(2 / 3) == two.score
    assert 'slide 3 / shape "Body2"' in damaged.explanation and "Damage on 1 object" in damaged.explanation
    # more damage costs more
    worse = score(
        tmp_path,
        orig,
        target,
        derive(
            orig,
            tmp_path / "worse.pptx",
            EDIT_A,
            EDIT_B,
            EDIT_C,
            set_text(3, "Body2", "lorem"),
            move(2, "Box1", 1, 1),
        ),
        name="worse",
    )
    assert worse.score == pytest.approx(1 / 3) and worse.metrics["damaged_units"] == 2
    # damage_weight 0 ignores damage; 0.5 makes a damaged object cost half a missed edit
    assert score(tmp_path, orig, target, tmp_path / "damaged.pptx", name="w0", damage_weight=0).score == 1.0
    assert score(
        tmp_path, orig, target, tmp_path / "damaged.pptx", name="w5", damage_weight=0.5
    ).score == pytest.approx(5 / 6)


def test_one_requested_edit_plus_damage_scores_like_the_miss(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", EDIT_A)
    damaged = score(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "damaged.pptx", EDIT_A, set_text(3, "Body2", "lorem ipsum")),
        name="d",
    )
    assert damaged.score == 0.0 and damaged.metrics["recall"] == 1.0  # one fix left to do, as for a noop
    assert score(tmp_path, orig, target, tmp_path / "damaged.pptx", name="d5", damage_weight=0.5).score == 0.5


def test_over_editing_the_requested_objects_costs_less_than_damage_elsewhere(tmp_path, decks):
    from pptx.util import Pt

    def bold_title(prs):
        for p in prs.slides[1].shapes.title.text_frame.paragraphs:
            for r in p.runs:
                r.font.bold = True

    def outline_box0(prs):
        next(x for x in prs.slides[0].shapes if x.name == "Box0").line.width = Pt(4)

    orig, target = decks
    over = score(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "over.pptx", EDIT_A, EDIT_B, EDIT_C, bold_title, outline_box0),
        name="over",
    )
    damaged = score(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "dmg.pptx", EDIT_A, EDIT_B, EDIT_C, move(2, "Box1", 1, 1)),
        name="dmg",
    )
    assert over.metrics["over_edited_units"] == 2 and over.metrics["damaged_units"] == 0
    assert over.score == pytest.approx(1 - 2 * 0.25 / 3)  # a quarter of a missed edit per over-edited object
    assert 1.0 > over.score > damaged.score
    rows = {r["unit"]: r for r in over.details["units"]}
    assert rows['slide 1 / shape "Box0"']["over_edited"] is True
    assert "Unrequested extra edits on 2 requested object(s)" in over.explanation
    heavier = score(tmp_path, orig, target, tmp_path / "over.pptx", name="o1", overedit_weight=1.0)
    assert heavier.score == pytest.approx(1 / 3)


def test_tolerances_positions_colours_and_text(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(
        orig,
        tmp_path / "target.pptx",
        move(1, "Box0", dx_in=-3.0),
        recolor(2, "Box1", RED),
        set_text(3, "Body2", "Revenue fell in region 3", "Costs rose sharply"),
    )
    close = derive(
        orig,
        tmp_path / "close.pptx",
        move(1, "Box0", dx_in=-3.1),  # 0.1in of 10in: within 2%
        recolor(2, "Box1", (0xE4, 0x14, 0x12)),  # ΔE ≈ 1
        set_text(3, "Body2", "revenue  FELL in region 3", "costs rose sharply"),
    )  # case/space only
    near = score(tmp_path, orig, target, close, name="close")
    assert near.score == 1.0, near.details
    halfway = derive(
        orig,
        tmp_path / "half.pptx",
        move(1, "Box0", dx_in=-1.5),
        recolor(2, "Box1", (0x20, 0x40, 0xFF)),
        set_text(3, "Body2", "Revenue fell in region 3", "Costs were flat in region 3"),
    )
    half = score(tmp_path, orig, target, halfway, name="half")
    rows = {r["unit"]: r["recall"] for r in half.details["units"] if r["role"] == "target"}
    assert rows['slide 1 / shape "Box0"'] == pytest.approx(0.5, abs=0.01)  # half of the distance
    assert rows['slide 2 / shape "Box1"'] == 0.0  # blue is further from red than the original navy was
    assert 0.2 < rows['slide 3 / shape "Body2"'] < 0.9  # one of two paragraphs rewritten
    assert 0.0 < half.score < near.score
    # a tighter position tolerance turns the near-miss move into partial credit
    strict = score(tmp_path, orig, target, close, name="strict", position_tolerance=0.001)
    assert strict.score < 1.0


def test_target_without_changes_rewards_leaving_the_deck_alone(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    same = derive(orig, tmp_path / "same.pptx", retitle(1, "Quarterly review part 1"))  # re-saved, no change
    untouched = score(tmp_path, orig, same, derive(orig, tmp_path / "noop.pptx"), name="noop")
    assert untouched.score == 1.0 and untouched.metrics["target_edits"] == 0
    touched = score(tmp_path, orig, same, derive(orig, tmp_path / "touch.pptx", EDIT_A), name="touch")
    assert (
        touched.score == 0.0 and touched.metrics["collateral_units"] == 1
    )  # one damaged object, nothing asked
    assert score(tmp_path, orig, same, tmp_path / "touch.pptx", name="t5", damage_weight=0.5).score == 0.5


def test_font_range_and_added_slides_are_matched(tmp_path):
    from pptx.util import Pt

    def enlarge_title(prs):
        for run in prs.slides[0].shapes.title.text_frame.paragraphs[0].runs:
            run.font.size = Pt(28)

    def add_slide(title):
        def fn(prs):
            s = prs.slides.add_slide(prs.slide_layouts[5])
            s.shapes.title.text = title

        return fn

    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", enlarge_title, add_slide("Summary and next steps"))
    pred = derive(orig, tmp_path / "pred.pptx", enlarge_title, add_slide("SUMMARY and next  steps"))
    v = score(tmp_path, orig, target, pred, name="p")
    assert v.score == 1.0, v.details
    close = derive(orig, tmp_path / "close.pptx", enlarge_title, add_slide("Summary & next steps"))
    c = score(tmp_path, orig, target, close, name="c")
    assert 0.85 < c.score < 1.0  # text similarity 0.91: below the 0.95 tolerance, so partial
    wrong = derive(orig, tmp_path / "wrong.pptx", add_slide("Appendix: raw data tables"))
    w = score(tmp_path, orig, target, wrong, name="w")
    assert w.score < 0.5


def test_missing_target_is_a_judge_error_naming_the_task(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx", slides=1)
    task, pred, ev = make_case(tmp_path, orig, None, orig, name="no-target")
    with pytest.raises(JudgeError, match="no-target.*needs a target deck"):
        judge().judge(task, pred, ev)


def test_evidence_file_lists_matches_units_and_collateral(tmp_path, decks):
    orig, target = decks
    pred = derive(orig, tmp_path / "p.pptx", EDIT_A, set_text(2, "Body1", "something else"))
    task, prediction, ev = make_case(tmp_path, orig, target, pred, name="ev")
    verdict = judge().judge(task, prediction, ev)
    data = json.loads((tmp_path / "ev" / "judges" / "structural" / "structural.json").read_text())
    assert data["score"] == verdict.score
    assert {m["credit"] for m in data["matches"]} == {0.0, 1.0}
    assert any(m["prediction"] and m["prediction"]["shape"] == "Box0" for m in data["matches"])
    assert [e["shape"] for e in data["collateral_edits"]] == ["Body1"]
    assert "Slide 2" in data["target_diff"] and data["options"]["damage_weight"] == 1.0


def test_corpus_deck_endpoints_and_ordering(tmp_path, corpus_dir):
    src = corpus_dir / "pythonpptx_shp-shapes.pptx"
    if not src.exists():
        pytest.skip(f"{src.name} is not in the corpus")

    def table_cell(prs):
        tbl = next(sh for sh in prs.slides[0].shapes if sh.has_table).table
        tbl.cell(0, 0).text = "Region"

    def move_picture(prs):
        pic = next(sh for sh in prs.slides[1].shapes if sh.shape_type == 13)
        pic.left = int(pic.left + 914400)

    def title(prs):
        prs.slides[0].shapes.title.text = "Shapes overview"

    orig = derive(src, tmp_path / "orig.pptx")
    target = derive(src, tmp_path / "target.pptx", table_cell, move_picture, title)
    results = {}
    for name, edits in {
        "noop": (),
        "one": (title,),
        "two": (title, table_cell),
        "damaged": (title, table_cell, move_picture, recolor_first_rect),
        "oracle": (table_cell, move_picture, title),
    }.items():
        pred = derive(src, tmp_path / f"{name}.pptx", *edits)
        results[name] = score(tmp_path, orig, target, pred, name=name).score
    assert results["noop"] == 0.0
    assert results["oracle"] == 1.0
    assert 0.0 < results["one"] < results["two"] < results["oracle"]
    assert results["two"] - results["one"] > 0.25
    assert results["damaged"] < results["oracle"]


def recolor_first_rect(prs):
    from pptx.dml.color import RGBColor

    rect = next(sh for sh in prs.slides[1].shapes if sh.name.startswith("Rectangle"))
    rect.fill.solid()
    rect.fill.fore_color.rgb = RGBColor(0, 200, 0)


def test_changes_the_diff_cannot_see_fall_back_to_xml_parts(tmp_path):
    """Text-frame insets are not in the deck summary: the judge compares the changed XML parts instead."""
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", set_margins(2, "Body1", 0.5))
    results = {}
    for name, edits in {
        "noop": (),
        "oracle": (set_margins(2, "Body1", 0.5),),
        "other_margin": (set_margins(2, "Body1", 0.2),),
        "damaged": (set_margins(2, "Body1", 0.5), retitle(3, "zzz")),
    }.items():
        v = score(tmp_path, orig, target, derive(orig, tmp_path / f"{name}.pptx", *edits), name=name)
        assert v.metrics.get("part_fallback") == 1, name
        results[name] = v
    assert results["noop"].score == 0.0 and results["oracle"].score == 1.0
    assert 0.0 <= results["other_margin"].score < 1.0
    # one collateral part costs as much as the one requested part
    assert results["damaged"].score == 0.0 and results["damaged"].metrics["collateral_units"] == 1
    assert "ppt/slides/slide3.xml" in results["damaged"].explanation


def test_fill_where_the_original_had_none_is_judged_by_colour_distance(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", recolor(1, "Body0", (0x00, 0x60, 0x6B)))
    near = score(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "near.pptx", recolor(1, "Body0", (0x00, 0x65, 0x6B))),
        name="near",
    )
    far = score(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "far.pptx", recolor(1, "Body0", (0xFF, 0x00, 0x00))),
        name="far",
    )
    assert near.score == 1.0
    assert far.score == 0.0


def _group_deck(path: Path, child_dx: int) -> Path:
    """A group drawn at 1/10 of its child coordinate space, with its first child moved
    ``child_dx`` child EMU.
    """
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    group = prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_group_shape()
    child = group.shapes.add_shape(1, Inches(1), Inches(1), Inches(1), Inches(1))
    child.name = "Child"
    group.shapes.add_shape(1, Inches(3), Inches(3), Inches(1), Inches(1)).name = "Other"
    xfrm = group._element.grpSpPr.xfrm
    ch_ext = xfrm.find("{http://schemas.openxmlformats.org/drawingml/2006/main}chExt")
    ch_ext.set("cx", str(int(xfrm.ext.cx) * 10))
    ch_ext.set("cy", str(int(xfrm.ext.cy) * 10))
    child.left = child.left + child_dx
    prs.save(path)
    return path


def test_position_tolerance_is_a_fraction_of_the_slide_for_shapes_in_groups(tmp_path):
    """A child moved 10 in (child units) = 1 in on the slide; 0.9 in child units off is 0.9% of the slide."""
    from pptx.util import Inches

    from pptarena.deck import diff_decks
    from pptarena.plugins.judges.structural.edit_match import match_edits

    original = _group_deck(tmp_path / "o.pptx", 0)
    target = diff_decks(original, _group_deck(tmp_path / "t.pptx", Inches(10)))
    close = diff_decks(original, _group_deck(tmp_path / "p.pptx", Inches(10.9)))
    far = diff_decks(original, _group_deck(tmp_path / "f.pptx", Inches(13)))  # 3% of the slide off
    assert [e["kind"] for e in target.edits] == ["move"]
    assert [m.credit for m in match_edits(target, close).matches] == [1.0]
    assert 0.0 < match_edits(target, far).matches[0].credit < 1.0


def test_a_negative_slide_size_does_not_make_every_move_within_tolerance(tmp_path):
    from pptx.util import Inches

    from pptarena.deck import diff_decks
    from pptarena.plugins.judges.structural.edit_match import match_edits

    original = _group_deck(tmp_path / "o.pptx", 0)
    target = diff_decks(original, _group_deck(tmp_path / "t.pptx", Inches(10)))
    far = diff_decks(original, _group_deck(tmp_path / "f.pptx", Inches(30)))
    target.summary_a["slide_size"] = {"cx": -9144000, "cy": -6858000}
    assert match_edits(target, far).matches[0].credit < 1.0


@pytest.mark.slow
def test_matching_stays_linear_for_hundreds_of_added_shapes(tmp_path):
    """1000 added text boxes in both target and prediction: all matched, via the windowed pairing."""
    from pptx import Presentation
    from pptx.util import Emu

    from pptarena.deck import diff_decks
    from pptarena.plugins.judges.structural import edit_match

    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(str(tmp_path / "o.pptx"))
    for name in ("t", "p"):
        prs = Presentation(str(tmp_path / "o.pptx"))
        for i in range(1000):
            box = prs.slides[0].shapes.add_textbox(Emu(1000 * i), Emu(2000 * i), Emu(100000), Emu(100000))
            box.text_frame.text = f"box {i}"
        prs.save(str(tmp_path / f"{name}.pptx"))
    target, pred = (
        diff_decks(tmp_path / "o.pptx", tmp_path / "t.pptx"),
        diff_decks(tmp_path / "o.pptx", tmp_path / "p.pptx"),
    )
    assert len(target.edits) >= 1000
    assert len(target.edits) ** 2 > edit_match.MAX_PAIRS_PER_KEY  # the windowed path is the one under test
    result = edit_match.match_edits(target, pred)
    assert all(m.credit == 1.0 for m in result.matches)
