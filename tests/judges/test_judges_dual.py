"""The dual (IF/VQ) judge through the scripted backend, with a fake renderer (no LibreOffice)."""

from __future__ import annotations

import json

import pytest

from pptarena.models import ImagePart, ModelHub
from pptarena.plugins.judges.dual.judge import DualJudge
from pptarena.types import ComponentContext, JudgeError
from tests.support.structural_dual_fixtures import (
    FakeRenderer,
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
IF_RULE = r"Score instruction following"
VQ_RULE = r"Score the visual quality"


@pytest.fixture
def scripted(tmp_path):
    """``scripted(rules=[...], responses=[...])`` → a real ScriptedBackend (it records every request)."""
    from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions

    def make(**options):
        ctx = ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: None, name="scripted")
        return ScriptedBackend(ScriptedOptions(**options), ctx)

    return make


def context_for(tmp_path, backend):
    hub = ModelHub({"scripted": backend})
    return ComponentContext(cache_dir=tmp_path / "cache", model=hub.factory(), name="dual", label="dual")


def make_judge(context, **options):
    return DualJudge(DualJudge.Options(model="scripted/judge-1", **options), context)


@pytest.fixture
def decks(tmp_path):
    """Target recolours Box0 (slide 1) and retitles slide 2; the prediction recolours Box0 and damages
    slide 3."""
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", recolor(1, "Box0", RED), retitle(2, "Annual review"))
    pred = derive(orig, tmp_path / "pred.pptx", recolor(1, "Box0", RED), set_text(3, "Body2", "lorem ipsum"))
    return orig, target, pred


def run(tmp_path, backend, orig, target, pred, name="case", **options):
    ctx = context_for(tmp_path, backend)
    task, prediction, ev = make_case(
        tmp_path,
        orig,
        target,
        pred,
        renderer=FakeRenderer(),
        model=ctx.model,
        name=name,
        instruction="Fill the box on slide 1 red and retitle slide 2.",
    )
    judge = make_judge(ctx, **options)
    return judge.judge(task, prediction, ev), ev


def requests_of(backend, pattern):
    return [r for r in backend.requests if pattern in r.last_user_text]


def user_text(request):
    """Text parts of every user message of a request: the task-stable one, then the prediction's."""
    return "\n".join(p for m in request.messages if m.role == "user" for p in m.parts() if isinstance(p, str))


def test_prompts_carry_the_evidence_and_the_images(tmp_path, scripted, decks):
    orig, target, pred = decks
    backend = scripted(
        rules=[
            {"match": IF_RULE, "reply": '{"score": 3, "reason": "box done, title missing, slide 3 damaged"}'},
            {
                "match": VQ_RULE,
                "reply": ['{"score": 4, "reason": "clean"}', '{"score": 2, "reason": "garbled"}'],
            },
        ]
    )
    verdict, ev = run(tmp_path, backend, orig, target, pred, chunk_size=2)
    [if_req] = requests_of(backend, IF_RULE)
    assert [(m.role, m.cache_prefix) for m in if_req.messages] == [
        ("system", False),
        ("user", True),  # the task-stable part, marked for prompt caching
        ("user", False),  # the prediction's part
    ]
    stable, text = if_req.messages[1].content, if_req.last_user_text
    assert (
        "Fill the box on slide 1 red" in stable and "title reads 'Annual review'" in stable
    )  # instruction, style target
    target_part = stable.split("## Edits the TARGET")[1].split("## Slides the TARGET")[0]
    pred_part = text.split("## Edits the PREDICTION")[1].split("## Differences remaining")[0]
    assert "Box0" in target_part and "Annual review" in target_part and "Body2" not in target_part
    assert "Box0" in pred_part and "lorem ipsum" in pred_part and "Annual review" not in pred_part
    assert "lorem ipsum" not in stable and "PREDICTION deck" not in stable
    remaining = text.split("## Differences remaining")[1].split("## Slides the PREDICTION")[0]
    assert "Annual review" in remaining and "Body2" in remaining
    # the slides the target touches come first; those only the prediction touches after the mark
    stable_summaries = stable.split("## Slides the TARGET's edits touch")[1]
    assert "ORIGINAL deck: 3 slides, 720.0x540.0 pt; showing slides [1, 2]\n" in stable_summaries
    assert "TARGET deck: 3 slides, 720.0x540.0 pt; showing slides [1, 2]\n" in stable_summaries
    summaries = text.split("## Slides the PREDICTION")[1]
    assert "ORIGINAL deck: 3 slides, 720.0x540.0 pt; showing slides [3] (slides not shown above)" in summaries
    assert "TARGET deck: 3 slides, 720.0x540.0 pt; showing slides [3] (slides not shown above)" in summaries
    assert "PREDICTION deck: 3 slides, 720.0x540.0 pt; showing slides [1, 2, 3]" in summaries
    assert '"E01010"' in stable_summaries and '"E01010"' in summaries  # the new fill colour
    assert text.endswith('Score instruction following. Answer with only {"score": <0-5>, "reason": "..."}.')
    assert if_req.images == [] and if_req.params["temperature"] == 0.0

    vq = requests_of(backend, VQ_RULE)
    assert len(vq) == 2  # slides 1, 2, 3 in chunks of 2
    assert "PREDICTION slides 1, 2" in vq[0].last_user_text and "PREDICTION slides 3" in vq[1].last_user_text
    # the stable part: the target slides that changed visibly (1 and 2), the same in both chunks
    assert vq[0].messages[1] == vq[1].messages[1] and vq[0].messages[1].cache_prefix
    assert "TARGET slide 2 (reference)" in user_text(vq[0]) and "TARGET slide 2" not in vq[1].last_user_text
    # then each prediction slide, followed by the target's version unless the stable part has it
    assert [len(r.images) for r in vq] == [2 + 2, 2 + 2]
    assert "PREDICTION slide 1 (its TARGET version is TARGET slide 1, shown above):" in vq[0].last_user_text
    assert "PREDICTION slide 3:" in vq[1].last_user_text
    assert "TARGET slide 3 (reference):" in vq[1].last_user_text
    # the images are the renders of those slides
    pred_renders = {img.number: img.path.read_bytes() for img in ev.renders("prediction")}
    target_renders = {img.number: img.path.read_bytes() for img in ev.renders("target")}
    assert [i.data for i in vq[0].images] == [
        target_renders[1],
        target_renders[2],
        pred_renders[1],
        pred_renders[2],
    ]
    assert [i.data for i in vq[1].images][2:] == [pred_renders[3], target_renders[3]]
    assert all(isinstance(i, ImagePart) and i.media_type == "image/png" for i in vq[0].images)

    assert verdict.metrics["if_score"] == 3 and verdict.metrics["vq_score"] == 2  # min over chunks
    assert verdict.score == pytest.approx(0.5)
    assert (
        verdict.metrics["judge_backend"] == "scripted"
        and verdict.metrics["judge_model"] == "scripted/judge-1"
    )
    assert verdict.details["judge"]["vq_model"] == "scripted/judge-1"
    assert "box done" in verdict.explanation and "garbled" in verdict.explanation


def test_evidence_files_record_prompts_images_and_answers(tmp_path, scripted, decks):
    orig, target, pred = decks
    backend = scripted(
        rules=[
            {"match": IF_RULE, "reply": '{"score": 4, "reason": "r"}'},
            {"match": VQ_RULE, "reply": '```json\n{"score": 5, "reason": "fine"}\n```'},
        ]
    )
    verdict, _ = run(tmp_path, backend, orig, target, pred)
    folder = tmp_path / "case" / "judges" / "dual"
    if_data = json.loads((folder / "if.json").read_text())
    assert "Annual review" in if_data["prompt"]["stable"] and "lorem ipsum" in if_data["prompt"]["user"]
    assert if_data["attempts"][0]["parsed"]["score"] == 4
    vq_data = json.loads((folder / "vq-01.json").read_text())
    assert [(i["role"], i["slide"], i.get("stable", False)) for i in vq_data["images"]] == [
        ("target", 1, True),
        ("target", 2, True),
        ("prediction", 1, False),
        ("prediction", 2, False),
        ("prediction", 3, False),
        ("target", 3, False),
    ]
    assert all(len(i["sha256"]) == 64 and i["bytes"] > 0 for i in vq_data["images"])
    assert vq_data["images"][0]["why"] == ["changed in target"]
    assert vq_data["images"][2]["why"] == ["changed in prediction", "changed in target"]
    assert vq_data["prompt"]["stable"][0].startswith("The agent was asked: Fill the box")
    assert (
        vq_data["attempts"][0]["answer"].startswith("```json")
        and vq_data["attempts"][0]["parsed"]["form"] == "fenced"
    )
    summary = json.loads((folder / "dual.json").read_text())
    assert summary["score"] == verdict.score == pytest.approx(0.9)


@pytest.mark.slow
def test_images_are_capped_and_long_decks_chunked(tmp_path, scripted):
    orig = build_deck(tmp_path / "orig.pptx", slides=7)
    edits = [retitle(i, f"New title {i}") for i in range(1, 8)]
    target = derive(orig, tmp_path / "target.pptx", *edits)
    pred = derive(orig, tmp_path / "pred.pptx", *edits[:5], move(7, "Box6", 1, 0))
    backend = scripted(rules=[{"match": IF_RULE, "reply": "4"}, {"match": VQ_RULE, "reply": ["5", "3", "4"]}])
    verdict, _ = run(tmp_path, backend, orig, target, pred, chunk_size=3, chunk_aggregate="mean")
    vq = requests_of(backend, VQ_RULE)
    # 7 target slides changed: all 7 in every call's stable part (each is the counterpart of a
    # prediction slide, so none is repeated after it), then 3, 3 and 1 prediction slides
    assert [len(r.images) for r in vq] == [7 + 3, 7 + 3, 7 + 1]
    assert verdict.metrics["vq_score"] == 4.0 and verdict.metrics["vq_chunks"] == 3
    assert verdict.score == pytest.approx((4 + 4.0) / 10)

    capped = scripted(rules=[{"match": IF_RULE, "reply": "4"}, {"match": VQ_RULE, "reply": "3"}])
    v2, _ = run(
        tmp_path,
        capped,
        orig,
        target,
        pred,
        name="capped",
        max_images=2,
        chunk_size=4,
        reference_images=False,
    )
    [req] = requests_of(capped, VQ_RULE)
    assert len(req.images) == 2 and v2.metrics["vq_slides"] == 2
    assert "capped to the 2 most changed" in v2.details["vq"]["selection"]


def test_unchanged_prediction_never_earns_if_credit(tmp_path, scripted, decks):
    orig, target, _ = decks
    noop = derive(orig, tmp_path / "noop.pptx")
    backend = scripted(
        rules=[
            {"match": IF_RULE, "reply": '{"score": 5, "reason": "perfect"}'},
            {"match": VQ_RULE, "reply": '{"score": 5, "reason": "pretty"}'},
        ]
    )
    verdict, _ = run(tmp_path, backend, orig, target, noop)
    assert requests_of(backend, IF_RULE) == []  # decided in code, the model is not asked
    assert verdict.metrics["if_score"] == 0 and verdict.metrics["if_rule"] == "unchanged_prediction"
    assert verdict.score == pytest.approx(0.5)  # VQ is still judged
    # the VQ call shows the slides the target changed (1 and 2), as they look in the prediction
    [vq] = requests_of(backend, VQ_RULE)
    assert "PREDICTION slides 1, 2" in vq.last_user_text


def test_unchanged_target_and_prediction_match_and_identical_shortcut(tmp_path, scripted):
    orig = build_deck(tmp_path / "orig.pptx")
    same_target = derive(orig, tmp_path / "target.pptx", retitle(1, "Quarterly review part 1"))
    noop = derive(orig, tmp_path / "noop.pptx")
    backend = scripted(rules=[{"match": IF_RULE, "reply": "2"}, {"match": VQ_RULE, "reply": "4"}])
    verdict, _ = run(tmp_path, backend, orig, same_target, noop)
    assert verdict.metrics["if_score"] == 5 and verdict.metrics["if_rule"] == "identical_to_target"
    [vq] = requests_of(backend, VQ_RULE)  # nothing changed visibly: the first slides are judged
    assert "no slide changed visibly" in verdict.details["vq"]["selection"] and len(vq.images) == 6
    # without the short-cut, the model decides (an unchanged deck may earn credit: the target is
    # unchanged too)
    backend2 = scripted(rules=[{"match": IF_RULE, "reply": "2"}, {"match": VQ_RULE, "reply": "4"}])
    v2, _ = run(tmp_path, backend2, orig, same_target, noop, name="noshort", shortcut_identical=False)
    assert v2.metrics["if_score"] == 2 and len(requests_of(backend2, IF_RULE)) == 1


def test_one_retry_on_unreadable_answer_then_judge_error(tmp_path, scripted, decks):
    orig, target, pred = decks
    backend = scripted(
        rules=[
            {"match": IF_RULE, "reply": ["I would say it is decent.", '{"score": "4", "reason": "ok"}']},
            {"match": r"could not be read", "reply": '{"score": 4, "reason": "ok on retry"}'},
            {"match": VQ_RULE, "reply": "Score: 3/5"},
        ]
    )
    verdict, _ = run(tmp_path, backend, orig, target, pred)
    retry = [r for r in backend.requests if "could not be read" in r.last_user_text]
    assert len(retry) == 1
    roles = [m.role for m in retry[0].messages]
    assert roles == ["system", "user", "user", "assistant", "user"]  # stable part, prediction's part, ...
    assert retry[0].messages[3].content == "I would say it is decent."
    assert [m.cache_prefix for m in retry[0].messages] == [False, True, False, False, False]
    assert verdict.metrics["if_score"] == 4 and verdict.metrics["vq_score"] == 3
    data = json.loads((tmp_path / "case" / "judges" / "dual" / "if.json").read_text())
    assert [a["attempt"] for a in data["attempts"]] == [1, 2] and "parse_error" in data["attempts"][0]

    bad = scripted(rules=[{"match": ".", "reply": '{"score": 9, "reason": "off the scale"}'}])
    with pytest.raises(
        JudgeError, match=r"IF: the judge model scripted/judge-1 gave no readable 0-5 score .*outside 0-5"
    ):
        run(tmp_path, bad, orig, target, pred, name="bad")
    assert len(bad.requests) == 2  # the call and exactly one retry
    failed = json.loads((tmp_path / "bad" / "judges" / "dual" / "if.json").read_text())
    assert len(failed["attempts"]) == 2 and "outside 0-5" in failed["error"]


def test_vq_chunk_failure_is_a_judge_error(tmp_path, scripted, decks):
    orig, target, pred = decks
    backend = scripted(
        rules=[{"match": IF_RULE, "reply": "3"}, {"match": ".", "reply": ["{}", "nothing to say"]}]
    )
    with pytest.raises(JudgeError, match="VQ chunk 1"):
        run(tmp_path, backend, orig, target, pred)


def test_task_without_target_and_separate_models(tmp_path, scripted):
    orig = build_deck(tmp_path / "orig.pptx")
    pred = derive(orig, tmp_path / "pred.pptx", recolor(1, "Box0", RED))
    backend = scripted(
        rules=[
            {"match": IF_RULE, "reply": '{"score": 5}', "model": "if-model"},
            {"match": VQ_RULE, "reply": '{"score": 4}', "model": "vq-model"},
        ]
    )
    verdict, _ = run(
        tmp_path, backend, orig, None, pred, if_model="scripted/if-model", vq_model="scripted/vq-model"
    )
    [if_req] = requests_of(backend, IF_RULE)
    assert if_req.model == "if-model" and "no target deck for this task" in if_req.messages[1].content
    assert if_req.messages[1].cache_prefix and "Differences remaining" not in user_text(if_req)
    assert "ORIGINAL deck: 3 slides, 720.0x540.0 pt; showing slides [1]\n" in if_req.last_user_text
    [vq] = requests_of(backend, VQ_RULE)
    assert vq.model == "vq-model" and len(vq.images) == 1 and "TARGET" not in user_text(vq)
    assert vq.messages[1].content == "The agent was asked: Fill the box on slide 1 red and retitle slide 2."
    assert verdict.score == pytest.approx(0.9) and verdict.metrics["if_model"] == "scripted/if-model"
    # no target and no change: IF 0 by rule
    backend2 = scripted(rules=[{"match": VQ_RULE, "reply": "4"}])
    v2, _ = run(tmp_path, backend2, orig, None, derive(orig, tmp_path / "n.pptx"), name="n")
    assert v2.metrics["if_score"] == 0


@pytest.mark.slow
def test_bounded_prompts_on_big_diffs(tmp_path, scripted):
    orig = build_deck(tmp_path / "orig.pptx", slides=12)
    edits = [
        set_text(i, f"Body{i - 1}", *(f"paragraph {k} of slide {i} " * 8 for k in range(30)))
        for i in range(1, 13)
    ]
    target = derive(orig, tmp_path / "target.pptx", *edits)
    backend = scripted(rules=[{"match": IF_RULE, "reply": "5"}, {"match": VQ_RULE, "reply": "5"}])
    run(
        tmp_path,
        backend,
        orig,
        target,
        target,
        name="big",
        max_diff_chars=2000,
        max_summary_chars=3000,
        shortcut_identical=False,
    )
    [if_req] = requests_of(backend, IF_RULE)
    text = user_text(if_req)
    assert (
        "characters omitted" in if_req.messages[1].content and "characters omitted" in if_req.last_user_text
    )
    assert len(text) < 3 * 2000 + 3 * 3000 + 3000


@pytest.mark.slow
def test_changes_invisible_to_the_diff_still_count_for_the_if_rules(tmp_path, scripted):
    """Text-frame insets are not in the deck summary: 'unchanged' also compares the content XML."""
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", set_margins(2, "Body1", 0.5))
    rules = [{"match": IF_RULE, "reply": "2"}, {"match": VQ_RULE, "reply": "4"}]
    noop, _ = run(
        tmp_path, scripted(rules=rules), orig, target, derive(orig, tmp_path / "noop.pptx"), name="noop"
    )
    assert noop.metrics["if_score"] == 0 and noop.metrics["if_rule"] == "unchanged_prediction"
    oracle, _ = run(tmp_path, scripted(rules=rules), orig, target, target, name="oracle")
    assert oracle.metrics["if_score"] == 5 and oracle.metrics["if_rule"] == "identical_to_target"
    other = scripted(rules=rules)
    wrong, _ = run(
        tmp_path,
        other,
        orig,
        target,
        derive(orig, tmp_path / "w.pptx", set_margins(2, "Body1", 0.2)),
        name="wrong",
    )
    assert wrong.metrics["if_rule"] == "model" and wrong.metrics["if_score"] == 2


def delete_all_slides(prs):
    """Remove every slide from the slide list (the parts stay, unreferenced)."""
    sld_ids = prs.slides._sldIdLst
    for sld_id in list(sld_ids):
        prs.part.drop_rel(sld_id.rId)
        sld_ids.remove(sld_id)


def test_prediction_without_slides_scores_vq_zero(tmp_path, scripted, decks):
    orig, target, _ = decks
    empty = derive(orig, tmp_path / "empty.pptx", delete_all_slides)
    backend = scripted(
        rules=[
            {"match": IF_RULE, "reply": '{"score": 1, "reason": "everything deleted"}'},
            {"match": VQ_RULE, "reply": '{"score": 5, "reason": "pretty"}'},
        ]
    )
    verdict, _ = run(tmp_path, backend, orig, target, empty, name="empty")
    assert requests_of(backend, VQ_RULE) == []  # nothing to show the model
    assert verdict.metrics["vq_score"] == 0 and verdict.metrics["vq_slides"] == 0
    assert "no slides" in verdict.details["vq"]["selection"]
    assert verdict.score == pytest.approx(0.1)
