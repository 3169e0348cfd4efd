"""The structural judge on near misses: text credit on the requested change, named misses,
empty text bodies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pptarena.plugins.judges.structural.judge import StructuralJudge
from pptarena.plugins.judges.structural.text_change import change_credit, words
from pptarena.types import ComponentContext
from tests.support.structural_dual_fixtures import (
    build_deck,
    derive,
    make_case,
    move,
    recolor,
    retitle,
    set_text,
)

RED = (0xE0, 0x10, 0x10)
LONG = (
    "Our regional teams reported steady growth across every product line this quarter, with the strongest "
    "results in the northern markets where new distribution partners opened eleven stores and online sales "
    "doubled compared with the same period last year, while costs stayed within the approved budget."
)


def judge(**options):
    ctx = ComponentContext(
        cache_dir=Path("/nonexistent"), model=lambda ref: None, name="structural", label="structural"
    )
    return StructuralJudge(StructuralJudge.Options(**options), ctx)


def verdict(tmp_path, original, target, prediction, name, **options):
    task, pred, ev = make_case(tmp_path, original, target, prediction, name=name)
    return judge(**options).judge(task, pred, ev)


def misses(v):
    return {m["unit"]: m["class"] for m in v.details["misses"]}


# ------------------------------------------------------------------ text credit on the change


def test_change_credit_counts_the_requested_words_only():
    target = LONG.replace("eleven stores", "twelve flagship stores")
    assert change_credit(LONG, target, target, 0.95) == 1.0
    assert change_credit(LONG, target, LONG, 0.95) == 0.0  # unchanged: 98% similar, but no change made
    wrong = LONG.replace("eleven stores", "several small kiosks")
    assert change_credit(LONG, target, wrong, 0.95) == 0.0  # the right span, the wrong words
    assert (
        change_credit(None, "Remind the audience about the deadline", "Order lunch for the team", 0.95) == 0.0
    )
    # case, spacing and Unicode form do not matter
    assert change_credit(LONG, target, target.upper().replace(" ", "  "), 0.95) == 1.0
    # half of a two-place rewrite earns half; the tolerance is relative to the size of the change
    both = target.replace("doubled", "tripled")
    half = change_credit(LONG, both, target, 0.95)
    assert 0.4 < half < 0.7
    assert change_credit(LONG, both, target, 0.5) == 1.0
    # the requested rewrite plus unrequested rewording elsewhere loses in proportion
    extra = target.replace("steady", "modest")
    assert 0.0 < change_credit(LONG, target, extra, 0.95) < 1.0


def test_words_split_punctuation_and_cjk():
    assert words("Hello, World!") == ["hello", ",", "world", "!"]
    assert words("売上が増加") == ["売", "上", "が", "増", "加"]
    assert words(None) == [] and words(12) == ["12"]


def test_a_long_paragraph_rewrite_is_not_reproduced_by_leaving_it_or_using_wrong_words(tmp_path):
    orig = derive(build_deck(tmp_path / "base.pptx"), tmp_path / "orig.pptx", set_text(1, "Body0", LONG))
    target_text = LONG.replace("eleven stores", "twelve flagship stores")
    target = derive(
        orig, tmp_path / "target.pptx", set_text(1, "Body0", target_text), recolor(2, "Box1", RED)
    )
    right = verdict(tmp_path, orig, target, target, "right")
    assert right.score == 1.0
    # the shape re-typed without the change (a whitespace-only edit): no credit for the rewrite
    same = verdict(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "same.pptx", set_text(1, "Body0", LONG + " "), recolor(2, "Box1", RED)),
        "same",
    )
    wrong = verdict(
        tmp_path,
        orig,
        target,
        derive(
            orig,
            tmp_path / "wrong.pptx",
            set_text(1, "Body0", LONG.replace("eleven stores", "several small kiosks")),
            recolor(2, "Box1", RED),
        ),
        "wrong",
    )
    assert same.score == pytest.approx(0.5) and wrong.score == pytest.approx(0.5)
    assert misses(wrong) == {'slide 1 / shape "Body0"': "wrong_value"}


# ------------------------------------------------------------------ naming the misses


@pytest.fixture
def three(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    edits = (recolor(1, "Box0", RED), retitle(2, "Annual review"), move(3, "Box2", dx_in=-3.0))
    return orig, derive(orig, tmp_path / "target.pptx", *edits), edits


def test_wrong_value_wrong_object_and_missed_are_named(tmp_path, three):
    orig, target, (a, b, c) = three
    wrong_value = verdict(
        tmp_path, orig, target, derive(orig, tmp_path / "wv.pptx", a, b, move(3, "Box2", dx_in=2.0)), "wv"
    )
    wrong_object = verdict(
        tmp_path, orig, target, derive(orig, tmp_path / "wo.pptx", a, b, move(3, "Body2", dx_in=-3.0)), "wo"
    )
    missed = verdict(tmp_path, orig, target, derive(orig, tmp_path / "mi.pptx", a, b), "mi")
    assert misses(wrong_value) == {'slide 3 / shape "Box2"': "wrong_value"}
    assert misses(wrong_object) == {'slide 3 / shape "Box2"': "wrong_object"}
    assert misses(missed) == {'slide 3 / shape "Box2"': "missed"}
    assert wrong_object.metrics["miss_wrong_object"] == 1 and wrong_object.metrics["damaged_units"] == 1
    assert "(wrong_object)" in wrong_object.explanation
    row = wrong_object.details["misses"][0]
    assert 'slide 3 / shape "Body2"' in row["evidence"]
    # a wrong value is no better than leaving the object alone; the wrong object is worse (a miss plus damage)
    assert wrong_value.score == pytest.approx(2 / 3) == missed.score
    assert wrong_object.score == pytest.approx(1 / 3)


def _cover(slide: int, name: str, text: str | None = None, rgb: tuple[int, int, int] | None = None):
    def fn(prs):
        from pptx.dml.color import RGBColor

        s = prs.slides[slide - 1]
        sh = next(x for x in s.shapes if x.name == name)
        box = (
            s.shapes.add_textbox(sh.left, sh.top, sh.width, sh.height)
            if text
            else s.shapes.add_shape(1, sh.left, sh.top, sh.width, sh.height)
        )
        if text:
            box.text_frame.text = text
        if rgb:
            box.fill.solid()
            box.fill.fore_color.rgb = RGBColor(*rgb)

    return fn


def test_an_overlay_look_alike_is_named_and_scored_as_a_miss(tmp_path, three):
    orig, target, (a, b, c) = three
    title_cover = _cover(2, "Title 1", text="Annual review")
    overlay = verdict(tmp_path, orig, target, derive(orig, tmp_path / "ov.pptx", a, title_cover, c), "ov")
    assert misses(overlay) == {'slide 2 / shape "Title 1"': "overlay"}
    assert overlay.metrics["miss_overlay"] == 1 and overlay.metrics["damaged_units"] == 1
    assert overlay.score == pytest.approx(1 / 3)  # the miss, plus the unrequested shape
    assert "covers 100%" in overlay.details["misses"][0]["evidence"]
    fill_cover = verdict(
        tmp_path, orig, target, derive(orig, tmp_path / "fc.pptx", _cover(1, "Box0", rgb=RED), b, c), "fc"
    )
    assert misses(fill_cover) == {'slide 1 / shape "Box0"': "overlay"}
    # a new shape elsewhere on the slide, or with other content, is damage but not an overlay
    elsewhere = verdict(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "el.pptx", a, _cover(2, "Body1", text="Annual review"), c),
        "el",
    )
    assert misses(elsewhere) == {'slide 2 / shape "Title 1"': "missed"}
    other = verdict(
        tmp_path,
        orig,
        target,
        derive(orig, tmp_path / "ot.pptx", a, _cover(2, "Title 1", text="Budget"), c),
        "ot",
    )
    assert misses(other) == {'slide 2 / shape "Title 1"': "missed"}
    complete = verdict(tmp_path, orig, target, target, "complete")
    assert complete.score > overlay.score and complete.details["misses"] == []


# ------------------------------------------------------------------ empty text bodies are not edits


def _drop_txbody(prs):
    sh = next(x for x in prs.slides[0].shapes if x.name == "Box0")
    sh._element.remove(sh._element.txBody)


def _read_text_frames(prs):
    for slide in prs.slides:
        for sh in slide.shapes:
            if sh.has_text_frame:
                _ = sh.text_frame  # python-pptx adds an empty p:txBody to shapes that had none


def test_a_shape_gaining_an_empty_text_body_is_not_an_edit(tmp_path):
    from pptarena.deck import diff_decks, ppteval_diff, summarize

    orig = derive(build_deck(tmp_path / "base.pptx"), tmp_path / "orig.pptx", _drop_txbody)
    touched = derive(orig, tmp_path / "touched.pptx", _read_text_frames)
    box = lambda p: next(s for s in summarize(p)["slides"][0]["shapes"] if s["name"] == "Box0")  # noqa: E731
    assert (
        box(orig).get("paragraphs") is None and box(touched)["paragraphs"][0]["text"] == ""
    )  # the body is there
    assert diff_decks(orig, touched).edits == [] and diff_decks(touched, orig).edits == []
    assert ppteval_diff(orig, touched).modified_slides == []
    target = derive(orig, tmp_path / "target.pptx", recolor(2, "Box1", RED))
    v = verdict(
        tmp_path, orig, target, derive(touched, tmp_path / "pred.pptx", recolor(2, "Box1", RED)), "noise"
    )
    assert v.score == 1.0 and v.metrics["prediction_edits"] == 1
    # real text written into the new body is still an edit
    written = derive(orig, tmp_path / "written.pptx", set_text(1, "Box0", "Hello"))
    assert [e["kind"] for e in diff_decks(orig, written).edits] == ["text"]


def test_the_report_lists_the_misses_and_the_costs(tmp_path, three):
    from pptarena.report.verdicts import verdict_html

    orig, target, (a, b, c) = three
    v = verdict(
        tmp_path, orig, target, derive(orig, tmp_path / "wo.pptx", a, b, move(3, "Body2", dx_in=-3.0)), "wo"
    )
    html = verdict_html(
        "structural",
        {"score": v.score, "metrics": v.metrics, "explanation": v.explanation, "details": v.details},
    )
    assert '<span class="miss">wrong_object</span>' in html
    assert "the requested change was made to slide 3 / shape &quot;Body2&quot;" in html
    assert "<td>damaged</td>" in html and "miss_wrong_object=1" in html
