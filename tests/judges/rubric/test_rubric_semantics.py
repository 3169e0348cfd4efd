"""The rubric judge's two semantics side by side on real decks (rows 5, 6 and 10 of issue 19's table).

Rows 1-4 and 7-11 (the ``ppt_diff`` view) are proven against PPT-Eval's code in
tests/judges/rubric/test_ppteval_semantics.py; these tests cover what the judge itself does differently.
"""

from __future__ import annotations

import json

import pytest

from pptarena.types import Task
from tests.support.config import use, write_run_config
from tests.support.rubric_fixtures import (  # noqa: F401 - fixtures
    edit_title,
    leaf,
    make_evidence,
    make_judge,
    renderer,
    rubric,
    stand_in_pair,
)

PASS = 'def compute_score():\n    return "fine", 1.0\n'
BROKEN = 'def compute_score():\n    return "never", {}["boom"]\n'
NEEDS_SHOTS = """
def compute_score():
    from ppteval.verify.ppt.verifier import ScreenshotsUnavailableError
    if not modified_ppt_screenshots:
        raise ScreenshotsUnavailableError("no screenshots")
    return f"{len(modified_ppt_screenshots)} slides seen", 1.0
"""
SEES_MOVE = """
def compute_score():
    moved = [new.slide_number for old, new in ppt_diff.modified_slides]
    return f"modified {moved}", 1.0 if not moved else 0.0
"""


def _task(rub, original, semantics_tag=None):
    metadata = {"rubric_semantics": semantics_tag} if semantics_tag else {}
    return Task(id="t-001", instruction="x", original=original, rubric=rub, metadata=metadata)


def _judge(tmp_path, task, prediction, renderer=None, **options):  # noqa: F811
    evidence = make_evidence(task, prediction, tmp_path / "task", renderer=renderer)
    verdict = make_judge(tmp_path, **options).judge(task, evidence.prediction, evidence)
    return verdict, json.loads((tmp_path / "task" / "judges" / "rubric" / "rubric.json").read_text())


@pytest.fixture
def retitled(stand_in_pair, tmp_path):  # noqa: F811
    original, _ = stand_in_pair
    return original, edit_title(original, tmp_path / "retitled.pptx", "Quarterly review")


@pytest.mark.slow
def test_auto_follows_the_task_tag_and_a_raising_leaf_aborts_the_tree_only_under_ppteval(retitled, tmp_path):
    original, prediction = retitled
    rub = rubric(leaf("ok", PASS), leaf("buggy", BROKEN, critical=False), leaf("after", PASS))
    corrected, details = _judge(tmp_path / "c", _task(rub, original), prediction)
    assert corrected.metrics["semantics"] == "corrected" and corrected.metrics["tree_aborted"] == 0
    assert corrected.score == pytest.approx(1.0 - 0.3 * 1.0)  # the buggy leaf scores 0, the rest counts
    ppteval, details = _judge(tmp_path / "p", _task(rub, original, "ppteval"), prediction)
    assert ppteval.metrics["semantics"] == "ppteval" and ppteval.metrics["tree_aborted"] == 1
    assert ppteval.score == 0.0 and ppteval.metrics["success"] is False
    assert "Verification error: Function scoring failed: KeyError" in ppteval.explanation
    assert details["aborted"]["leaf"] == "root.1" and details["aborted"][
        "tree_score_without_abort"
    ] == pytest.approx(0.2)  # (1+0)/2 - 0.3
    after = details["tree"]["children"][2]
    assert after["not_run"] is True and "not run" in after["reason"]  # PPT-Eval never evaluates it
    forced, _ = _judge(tmp_path / "f", _task(rub, original, "ppteval"), prediction, semantics="corrected")
    assert forced.metrics["semantics"] == "corrected" and forced.score == pytest.approx(0.7)


@pytest.mark.slow
def test_screenshot_gate_ppteval_gives_no_screenshots_without_vlm_call(retitled, tmp_path, renderer):  # noqa: F811
    original, prediction = retitled
    rub = rubric(leaf("looks at slides", NEEDS_SHOTS))
    corrected, details = _judge(tmp_path / "c", _task(rub, original), prediction, renderer=renderer)
    assert corrected.score == 1.0 and details["screenshots"] == {
        "mode": "referenced",
        "rendered": ["prediction"],
    }
    ppteval, details = _judge(tmp_path / "p", _task(rub, original, "ppteval"), prediction, renderer=renderer)
    assert details["screenshots"] == {"mode": "ppteval", "rendered": []}
    assert ppteval.score == 0.0 and "ScreenshotsUnavailableError" in ppteval.explanation


@pytest.mark.slow
def test_a_slide_move_is_no_modification_under_ppteval(stand_in_pair, tmp_path):  # noqa: F811
    from pptx import Presentation

    original, _ = stand_in_pair
    prs = Presentation(str(original))
    lst = prs.slides._sldIdLst
    first = list(lst)[0]
    lst.remove(first)
    lst.append(first)
    prs.save(str(tmp_path / "moved.pptx"))
    rub = rubric(leaf("no slide modified", SEES_MOVE))
    corrected, _ = _judge(tmp_path / "c", _task(rub, original), tmp_path / "moved.pptx")
    ppteval, _ = _judge(tmp_path / "p", _task(rub, original, "ppteval"), tmp_path / "moved.pptx")
    assert corrected.score == 0.0  # pptarena reports the moved slides
    assert ppteval.score == 1.0  # PPT-Eval does not: only the slide part counts


@pytest.mark.slow
def test_unreadable_prediction_is_graded_under_ppteval_and_refused_otherwise(stand_in_pair, tmp_path):  # noqa: F811
    original, _ = stand_in_pair
    broken = tmp_path / "broken.pptx"
    broken.write_bytes(original.read_bytes()[:5000])
    rub = rubric(leaf("no slide modified", SEES_MOVE))
    judge = make_judge(tmp_path)
    assert judge.grades_invalid_decks(_task(rub, original, "ppteval"))
    assert not judge.grades_invalid_decks(_task(rub, original))
    ppteval, details = _judge(tmp_path / "p", _task(rub, original, "ppteval"), broken)
    assert ppteval.score == 1.0  # no slide is "modified": they are all removed, as in PPT-Eval
    from pptarena.deck import DeckError

    with pytest.raises(DeckError):
        _judge(tmp_path / "c", _task(rub, original), broken)


@pytest.mark.slow
def test_run_keeps_ppteval_score_of_unreadable_deck(stand_in_pair, tmp_path):  # noqa: F811
    """Row 10 through the runner: status agent_error, yet the rubric score (0.0 here) is kept, as
    PPT-Eval counts it."""
    import shutil

    from pptarena.report.tables import judge_kinds, leaderboard_table
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.folder.results import read_results
    from pptarena.run.runner import Runner

    original, _ = stand_in_pair
    task = tmp_path / "data" / "t1"
    task.mkdir(parents=True)
    shutil.copyfile(original, task / "original.pptx")
    raises_on_bad_deck = (
        "def compute_score():\n    from pptx import Presentation\n"
        '    Presentation(modified_ppt_path)\n    return "opened", 1.0\n'
    )
    (task / "rubric.json").write_text(
        json.dumps(rubric(leaf("opens", raises_on_bad_deck), leaf("moves", SEES_MOVE)))
    )
    (task / "task.toml").write_text('instruction = "x"\noriginal = "original.pptx"\nrubric = "rubric.json"\n')
    made = tmp_path / "predictions"  # predictions made elsewhere, e.g. a PPT-Eval CLI run: one is truncated
    made.mkdir()
    (made / "t1.pptx").write_bytes(original.read_bytes()[:4000])
    config = write_run_config(
        tmp_path / "run.toml",
        dataset=use("folder", root="data"),
        agents=[use("precomputed", label="breaker", dir=str(made)), "noop"],
        judges=[
            use("rubric", label="pe", semantics="ppteval", explain="deterministic"),
            use("rubric", label="fixed", semantics="corrected", explain="deterministic"),
        ],
    )
    summary = Runner(
        load_config(config, get_registry()), get_registry(), tmp_path / "out", jobs=1, quiet=True
    ).run()
    rows = {r.agent: r for r in read_results(tmp_path / "out" / "results.jsonl")}
    broken = rows["breaker"]
    assert broken.status == "agent_error" and "not a valid deck" in broken.error
    assert set(broken.scores) == {"pe"}  # the corrected judge refuses it, the ppteval one grades it
    assert broken.score("pe") == 0.0 and broken.scores["pe"].metrics["tree_aborted"] == 1
    assert rows["noop"].score("pe") == 1.0 and rows["noop"].score("fixed") == 1.0
    block = summary.agents["breaker"].judges["pe"]
    assert block.n == 1 and block.labels == {"semantics": {"ppteval": 1}}
    assert summary.agents["noop"].judges["fixed"].labels == {"semantics": {"corrected": 1}}
    note = leaderboard_table(summary, judge_kinds(list(rows.values()))).note
    assert "pe: ppteval semantics (2 scores)" in note and "fixed: corrected semantics (1 scores)" in note
