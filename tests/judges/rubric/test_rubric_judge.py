"""The ``rubric`` judge end to end: real decks, real LibreOffice renders, the scripted backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pptarena.plugins.judges.rubric.llm import deterministic_reason, format_prompt, parse_llm_score
from pptarena.types import InfraError, JudgeError, Task
from tests.support.rubric_fixtures import (  # noqa: F401 - fixtures
    edit_title,
    leaf,
    make_evidence,
    make_judge,
    parent,
    renderer,
    rubric,
    scripted_hub,
    stand_in_pair,
)

TITLE_CHANGED = """
def compute_score() -> tuple[str, float]:
    from pptx import Presentation
    texts = [s.text_frame.text for s in Presentation(modified_ppt_path).slides[0].shapes if s.has_text_frame]
    return ("title changed" if "Quarterly review" in texts else "title unchanged"), \
float("Quarterly review" in texts)
"""
ONLY_SLIDE_1 = """
def compute_score() -> tuple[str, float]:
    numbers = sorted(old.slide_number for old, new in ppt_diff.modified_slides)
    extra = ppt_diff.added_slides + ppt_diff.removed_slides
    ok = numbers == [1] and not extra
    return f"modified slides {numbers}", 1.0 if ok else 0.0
"""
BROKEN = """
def compute_score() -> tuple[str, float]:
    return "never", {}["boom"]
"""
LOOKS = """
def compute_score() -> tuple[str, float]:
    shot = [s for s in modified_ppt_screenshots if s.slide_number == 1][0]
    answer = vlm_call("Does slide 1 show the title 'Quarterly review'? Answer YES or NO.", \
[shot.image_path], temperature=0.0, max_tokens=5)
    return f"VLM said {answer}", 1.0 if answer.strip().upper().startswith("YES") else 0.0
"""


@pytest.fixture
def edited(stand_in_pair, tmp_path):  # noqa: F811
    original, _ = stand_in_pair
    return original, edit_title(original, tmp_path / "prediction.pptx", "Quarterly review")


def judge_once(tmp_path, rub, original, prediction, renderer=None, models=None, **options):  # noqa: F811
    """Judge ``prediction`` with ``rub``; returns the verdict and the judge's evidence folder."""
    task = Task(id="t-001", instruction="Retitle slide 1", original=original, rubric=rub)
    evidence = make_evidence(task, prediction, tmp_path / "task", renderer=renderer, model=models)
    verdict = make_judge(tmp_path, **options).judge(task, evidence.prediction, evidence)
    return verdict, tmp_path / "task" / "judges" / "rubric"


def test_task_without_rubric_is_a_judge_error(edited, tmp_path):
    original, prediction = edited
    with pytest.raises(JudgeError, match="has no rubric"):
        judge_once(tmp_path, None, original, prediction)


@pytest.mark.slow
def test_scores_a_real_edit_and_keeps_the_scored_tree(edited, tmp_path):
    original, prediction = edited
    rub = rubric(
        parent(
            "Title",
            [leaf("title changed", TITLE_CHANGED), leaf("only slide 1", ONLY_SLIDE_1, critical=False)],
        ),
        leaf("buggy check", BROKEN, critical=False),
    )
    verdict, folder = judge_once(tmp_path, rub, original, prediction)
    # Title = mean of crit (1) - 0.3 * (1 - mean noncrit (1)) = 1; root = 1 - 0.3 * (1 - 0) = 0.7
    assert verdict.score == pytest.approx(0.7)
    assert verdict.metrics == {
        "semantics": "corrected",
        "score": pytest.approx(0.7),
        "success": False,
        "leaves": 3,
        "leaves_passed": 2,
        "leaves_failed": 1,
        "leaf_errors": 1,
        "model_calls": 0,
        "tree_aborted": 0,
    }
    assert "buggy check" in verdict.explanation and "root.1" in verdict.explanation
    tree = json.loads((folder / "rubric.json").read_text())["tree"]
    assert (
        tree["score"] == pytest.approx(0.7)
        and tree["kind"] == "parent"
        and tree["reason_source"] == "deterministic"
    )
    title, buggy = tree["children"]
    assert title["children"][1]["reason"] == "modified slides [1]"
    assert buggy["score"] == 0.0 and buggy["error_type"] == "KeyError" and "boom" in buggy["traceback"]
    scored = json.loads((folder / "scored_rubric.json").read_text())
    assert scored["root"]["children"][0]["children"][0]["scorer"]["type"] == "function"
    assert scored["root"]["score"] == pytest.approx(0.7)
    assert (
        verdict.details["screenshots"]["rendered"] == []
    )  # no leaf names a screenshot list: nothing rendered

    perfect, _ = judge_once(
        tmp_path / "again", rubric(leaf("title changed", TITLE_CHANGED)), original, prediction
    )
    assert perfect.score == 1.0 and perfect.metrics["success"] is True

    m2w, _ = judge_once(tmp_path / "m2w", rub, original, prediction, strategy="mind2web2")
    # mind2web2: Title's critical children are all 1 → mean of its non-critical = 1; at the root every
    # critical child (Title) is exactly 1 → the mean of the non-critical ones (the buggy leaf, 0)
    assert m2w.score == 0.0 and m2w.details["strategy"] == "mind2web2"


@pytest.mark.slow
def test_vlm_leaf_gets_the_rendered_slide_and_the_model_explains(edited, renderer, tmp_path):  # noqa: F811
    original, prediction = edited
    backend, factory = scripted_hub(
        tmp_path,
        rules=[{"match": "Explain in 1 to 5 sentences", "reply": "The title was changed as asked."}],
        responses=["YES"],
    )
    rub = rubric(leaf("looks right", LOOKS), leaf("title changed", TITLE_CHANGED, critical=False))
    task = Task(id="t-002", instruction="Retitle slide 1", original=original, rubric=rub)
    evidence = make_evidence(task, prediction, tmp_path / "task", renderer=renderer, model=factory)
    verdict = make_judge(tmp_path, model="scripted/vision").judge(task, evidence.prediction, evidence)
    assert verdict.score == 1.0
    vlm_request, explain_request = backend.requests
    assert vlm_request.model == "vision" and "Quarterly review" in vlm_request.last_user_text
    assert vlm_request.params == {"temperature": 0.0, "max_tokens": 5}
    slide_one = evidence.renders("prediction")[0]
    assert [img.data for img in vlm_request.images] == [Path(slide_one.path).read_bytes()]
    assert (
        "looks right [CRITICAL]" in explain_request.last_user_text
        and "title changed [NON-CRITICAL]" in explain_request.last_user_text
    )
    assert verdict.explanation == "The title was changed as asked."
    assert verdict.details["screenshots"]["rendered"] == ["prediction"]  # the original was never rendered
    assert not (tmp_path / "task" / "renders" / "original").exists()
    recorded = json.loads((tmp_path / "task" / "judges" / "rubric" / "rubric.json").read_text())
    leaf_record = recorded["tree"]["children"][0]
    assert leaf_record["model_calls"][0]["images"][0]["source"] == str(slide_one.path)
    assert (
        recorded["tree"]["reason_source"] == "model"
        and recorded["explain_calls"][0]["reply"] == "The title was changed as asked."
    )


@pytest.mark.slow
def test_without_a_model_a_vlm_leaf_scores_zero_and_the_verdict_says_why(edited, renderer, tmp_path):  # noqa: F811
    original, prediction = edited
    verdict, _ = judge_once(
        tmp_path, rubric(leaf("looks right", LOOKS)), original, prediction, renderer=renderer
    )
    assert verdict.score == 0.0 and verdict.metrics["leaf_errors"] == 1
    assert "no model configured" in verdict.explanation


def test_ppteval_screenshot_mode_renders_nothing_without_vlm_call(edited, tmp_path):
    original, prediction = edited
    counts = (
        "def compute_score():\n"
        "    return str((len(original_ppt_screenshots), len(modified_ppt_screenshots))), 1\n"
    )
    verdict, folder = judge_once(
        tmp_path, rubric(leaf("counts", counts)), original, prediction, screenshots="ppteval"
    )
    assert (
        verdict.details["tree"]["children"][0]["reason"] == "(0, 0)"
    )  # PPT-Eval: [] when no leaf calls vlm_call


def test_render_failure_is_an_infra_error(edited, tmp_path):
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer
    from pptarena.types import ComponentContext, ComponentUnavailable

    original, prediction = edited
    try:
        broken = LibreOfficeRenderer(
            LibreOfficeRenderer.Options(timeout=0.05, cache=False, retries=0, warm=False),
            ComponentContext(cache_dir=tmp_path / "c", model=None),  # type: ignore[arg-type]
        )
    except ComponentUnavailable as exc:
        pytest.skip(f"LibreOffice is not available: {exc}")
    try:
        with pytest.raises(InfraError, match="timed out"):
            judge_once(tmp_path, rubric(leaf("looks right", LOOKS)), original, prediction, renderer=broken)
    finally:
        broken.close()
    with pytest.raises(InfraError, match="no renderer"):
        judge_once(tmp_path / "none", rubric(leaf("looks right", LOOKS)), original, prediction, renderer=None)


@pytest.mark.slow
def test_backend_failure_and_missing_screenshots_are_infra_errors(edited, renderer, tmp_path):  # noqa: F811
    original, prediction = edited
    backend, factory = scripted_hub(
        tmp_path, responses=[{"error": "fatal", "message": "service unavailable"}]
    )
    guarded = LOOKS.replace("answer = vlm_call(", "try:\n        answer = vlm_call(").replace(
        "max_tokens=5)", "max_tokens=5)\n    except Exception:\n        answer = 'NO'"
    )
    with pytest.raises(InfraError, match="service unavailable"):
        judge_once(
            tmp_path,
            rubric(leaf("looks right", guarded)),
            original,
            prediction,
            renderer=renderer,
            models=factory,
            model="scripted/m",
        )
    assert len(backend.requests) == 1  # no explanation calls to a backend that just failed
    kept = json.loads((tmp_path / "task" / "judges" / "rubric" / "rubric.json").read_text())
    assert kept["tree"]["children"][0]["model_calls"][0]["error"].endswith("service unavailable")
    missing = (
        "def compute_score():\n    from ppteval.verify.ppt.verifier import ScreenshotsUnavailableError\n"
        "    if not [s for s in modified_ppt_screenshots if s.slide_number == 99]:\n"
        "        raise ScreenshotsUnavailableError('slide 99 image missing')\n    return 'ok', 1\n"
    )
    with pytest.raises(InfraError, match="ScreenshotsUnavailableError"):
        judge_once(
            tmp_path / "b", rubric(leaf("needs slide 99", missing)), original, prediction, renderer=renderer
        )


def test_llm_scorer_leaves_use_the_model(edited, tmp_path):
    original, prediction = edited
    backend, factory = scripted_hub(
        tmp_path,
        rules=[{"match": "Grade", "reply": 'Here:\n```json\n{"score": 0.8, "reason": "mostly there"}\n```'}],
    )
    node = {
        **leaf("llm judged", ""),
        "scorer": {
            "type": "llm",
            "system_prompt": "You grade decks.",
            "user_prompt": "Grade {modified_ppt_path}",
        },
    }
    verdict, _ = judge_once(
        tmp_path,
        rubric(node),
        original,
        prediction,
        models=factory,
        explain="deterministic",
        model="scripted/m",
    )
    assert verdict.score == pytest.approx(0.8)
    request = backend.requests[0]
    assert request.messages[0].role == "system" and request.last_user_text == f"Grade {prediction}"
    # the static system prompt is the same for every prediction: marked for prompt caching
    assert [m.cache_prefix for m in request.messages] == [True, False]
    assert request.params == {"temperature": 0.3}


def test_llm_reply_parsing_follows_ai_rubric():
    assert parse_llm_score('{"score": 1, "reason": "all good"}') == (1.0, "all good")
    assert parse_llm_score('```\n{"score": 0.25, "reason": "r"}\n```') == (0.25, "r")
    assert parse_llm_score("score: 0.5\nreason: half done\nmore text") == (0.5, "half done more text")
    assert parse_llm_score("I would say 0.4 overall, maybe 0.6") == (
        0.6,
        "I would say 0.4 overall, maybe 0.6",
    )
    with pytest.raises(ValueError, match="LLM scoring failed"):
        parse_llm_score("no idea")
    text = deterministic_reason(
        0.5,
        [
            {"name": "a", "is_critical": True, "score": 1.0, "reason": "fine"},
            {"name": "b", "is_critical": False, "score": 0.0, "reason": "missing table"},
        ],
    )
    assert (
        text.startswith("Score 0.50: 1/2 sub-criteria fully met.")
        and "b (non-critical, 0.00): missing table" in text
    )


def test_registered_with_validated_options(tmp_path):
    from pydantic import ValidationError

    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import ComponentContext

    spec = get_registry().get("judges", "rubric")
    ctx = ComponentContext(cache_dir=tmp_path, model=None, name="rubric", label="ppteval")  # type: ignore[arg-type]
    judge = get_registry().create(
        "judges", "rubric", {"lam": 0.5, "strategy": "mind2web2", "model": "scripted/m"}, ctx
    )
    assert judge.options.lam == 0.5 and judge.options.strategy == "mind2web2"
    for bad in ({"lamda": 0.3}, {"lam": 1.5}, {"strategy": "median"}, {"model": "no-backend"}):
        with pytest.raises(ValidationError):
            spec.options_model(**bad)


def test_llm_scorer_prompts_cannot_reach_private_attributes_or_blow_up():
    """llm-leaf prompts are str.format-ed in the judge process: the context's fields work, nothing else."""
    from pptarena.plugins.judges.rubric.child import SlideScreenshot, llm_call

    ctx = {
        "llm_call": llm_call,
        "modified_ppt_path": "/d/pred.pptx",
        "modified_ppt_screenshots": [SlideScreenshot(1, "/d/s1.png", "256")],
    }
    text = format_prompt("Grade {modified_ppt_path} {{kept}} {modified_ppt_screenshots[0].image_path}", ctx)
    assert text == "Grade /d/pred.pptx {kept} /d/s1.png"
    assert format_prompt("no context {x}", {}) == "no context {x}"  # ai-rubric formats only with a context
    # plain str.format would put the whole environment (API keys) into the prompt and the evidence
    with pytest.raises(ValueError, match="private attribute"):
        format_prompt("{llm_call.__globals__[mimetypes].os.environ}", ctx)
    with pytest.raises(ValueError, match="too wide"):
        format_prompt("{modified_ppt_path:>999999999}", ctx)
