"""``arena author check``: known-answer decks (original 0, target 1.0, partials < 1) through the
rubric judge."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pptarena.authoring.check import RubricChecker, format_table
from pptarena.run.configuration.registry import get_registry
from pptarena.types import Task
from tests.support.author_fixtures import (
    DEMO_TASK,
    copy_demo_tasks,
    demo_root,
    demo_rubric,
    leaf,
    rubric_of,
    run_cli,
)
from tests.support.paths import CORPUS, PPTEVAL

READS = (
    "    from pptx import Presentation\n"
    "    text = Presentation(modified_ppt_path).slides[1].placeholders[1].text_frame.text\n"
)


def _cache() -> Path:
    return Path(os.environ["PPTARENA_CACHE"])


def _with_rubric(root: Path, task_id: str, rubric: dict, new_id: str) -> Path:
    """A copy of demo task ``task_id`` named ``new_id`` with ``rubric``."""
    folder = root / new_id
    shutil.copytree(root / task_id, folder)
    (folder / "rubric.json").write_text(json.dumps(rubric), encoding="utf-8")
    return folder


def _one_typo_fixed(original: Path, dest: Path) -> Path:
    from pptx import Presentation

    prs = Presentation(str(original))
    for paragraph in prs.slides[1].placeholders[1].text_frame.paragraphs:
        for run in paragraph.runs:
            run.text = run.text.replace("Quartely", "Quarterly")
    dest.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(dest))
    return dest


@pytest.mark.slow
def test_the_demo_set_passes(tmp_path):
    result = run_cli("check", str(demo_root(_cache())))
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()[2:14]]
    assert len(rows) == 12
    assert all(r[1] == "0.00" and r[2] == "1.00" and r[-1] == "ok" for r in rows), result.output
    assert "12 rubric(s) checked, 0 flagged" in result.output


@pytest.mark.slow
def test_bad_rubrics_are_flagged_and_partials_are_run(tmp_path):
    root = copy_demo_tasks(_cache(), tmp_path / "tasks", DEMO_TASK, keep=("target.pptx", "rubric.json"))
    good = root / DEMO_TASK
    _with_rubric(
        root,
        DEMO_TASK,
        rubric_of(leaf("always", "def compute_score():\n    return ('fine', 1.0)\n")),
        "always-one",
    )
    _with_rubric(
        root,
        DEMO_TASK,
        rubric_of(
            leaf(
                "spelling check that crashes", "def compute_score():\n" + READS + "    return ('x', 1 / 0)\n"
            )
        ),
        "crashes",
    )
    _with_rubric(
        root,
        DEMO_TASK,
        rubric_of(
            leaf(
                "spelling checked against a wrong value",
                "def compute_score():\n"
                + READS
                + "    return ('looked', 1.0 if 'Quarterly!' in text else 0.0)\n",
            )
        ),
        "wrong-value",
    )
    _with_rubric(
        root,
        DEMO_TASK,
        rubric_of(
            leaf(
                "unrelated",
                "def compute_score():\n"
                + READS
                + "    return ('count', 1.0 if len(text) > 10**6 else 0.0)\n",
            )
        ),
        "off-topic",
    )
    full = _with_rubric(root, DEMO_TASK, demo_rubric(_cache()), "accepts-partial")
    (full / "partials").mkdir()
    shutil.copy2(full / "target.pptx", full / "partials" / "complete.pptx")
    original = good.parent / "_decks" / "qbr.pptx"
    _one_typo_fixed(original, good / "partials" / "one-typo.pptx")
    _one_typo_fixed(original, good / "half" / "listed.pptx")
    with (good / "task.toml").open("a", encoding="utf-8") as fh:
        fh.write('partials = ["half/listed.pptx"]\n')

    result = run_cli("check", str(root), "--json")
    assert result.exit_code == 1
    checks = {c["task_id"]: c for c in json.loads(result.output)}
    assert checks[DEMO_TASK]["flags"] == []
    cases = {c["case"]: c["score"] for c in checks[DEMO_TASK]["cases"]}
    assert cases["original"] == 0.0 and cases["target"] == 1.0
    assert 0.0 <= cases["partial:one-typo.pptx"] < 1.0 and 0.0 <= cases["partial:listed.pptx"] < 1.0
    assert set(checks["always-one"]["flags"]) == {"original>0", "blind"}
    assert "no leaf reads the edited deck" in " ".join(checks["always-one"]["problems"])
    assert set(checks["crashes"]["flags"]) == {"crash", "target<1"}
    assert "ZeroDivisionError" in checks["crashes"]["problems"][0]
    assert checks["wrong-value"]["flags"] == ["target<1"]
    assert set(checks["off-topic"]["flags"]) == {"target<1", "blind"}
    assert any("mentions any key term" in p for p in checks["off-topic"]["problems"])
    assert checks["accepts-partial"]["flags"] == ["partial=1"]

    table = run_cli("check", str(root)).output
    assert "6 rubric(s) checked, 5 flagged" in table
    assert "always-one: the unchanged original scores 1.000 (expected 0)" in table


def test_no_renders_reports_rubrics_that_need_screenshots(tmp_path):
    root = copy_demo_tasks(_cache(), tmp_path / "tasks", DEMO_TASK, keep=("target.pptx",))
    visual = rubric_of(
        leaf(
            "looks right",
            "def compute_score():\n    shots = modified_ppt_screenshots\n"
            "    return ('Quarterly', 1.0 if shots else 0.0)\n",
        )
    )
    (root / DEMO_TASK / "rubric.json").write_text(json.dumps(visual), encoding="utf-8")
    with (root / DEMO_TASK / "task.toml").open("r+", encoding="utf-8") as fh:
        text = fh.read().replace('target = "target.pptx"', 'target = "target.pptx"\nrubric = "rubric.json"')
        fh.seek(0)
        fh.write(text)
    result = run_cli("check", str(root / DEMO_TASK), "--no-renders")
    assert result.exit_code == 1
    assert "error" in result.output and "renders are switched off" in result.output


@pytest.mark.slow
@pytest.mark.skipif(
    not (PPTEVAL / "task_registry").is_dir() or not (CORPUS / "poi_stress013.pptx").is_file(),
    reason="../shared/ppteval or the stand-in corpus deck is not available",
)
def test_the_120_published_rubrics_on_a_stand_in_deck(tmp_path):
    """PPT-Eval ships no targets and no decks: check what can be checked on a stand-in original."""
    from pptarena.cli.render import make_renderer

    registry = json.loads((PPTEVAL / "task_registry" / "tasks.json").read_text(encoding="utf-8"))
    stand_in = CORPUS / "poi_stress013.pptx"
    tasks = [
        (
            Task(
                tid,
                entry["goal"],
                stand_in,
                rubric=json.loads((PPTEVAL / entry["rubric_path"]).read_text(encoding="utf-8")),
            ),
            None,
        )
        for tid, entry in registry.items()
    ]
    renderer = make_renderer("libreoffice", {}, _cache())
    checker = RubricChecker(get_registry(), cache_dir=_cache(), renderer=renderer, work_dir=tmp_path / "work")
    try:
        checks = checker.check(tasks)
    finally:
        renderer.close()
    assert len(checks) == 120
    assert all("no target deck: the target check (score 1.0) was skipped" in c.notes for c in checks)
    assert all(c.case("original") is not None and c.case("target") is None for c in checks)
    assert not [c.task_id for c in checks if "error" in c.flags]
    # the latent NameErrors: the three the format notes list, plus two comprehension variables in Durand-025
    lint = {c.task_id for c in checks if "lint" in c.flags}
    assert lint == {
        "HSC Careers and Expo FINAL COM MOD-072",
        "Aircraft_surface-009",
        "Accounting Equation-012",
        "Jean-Nicolas-Louis Durand-025",
    }
    assert not [c.task_id for c in checks if "blind" in c.flags]
    # visual leaves without a model are noted, not counted as rubric crashes
    assert any("need a model" in n for c in checks for n in c.notes)
    assert checker._batches <= 3  # merged per deck pair (chunks of <= 400 nodes), not 120 judge calls
    assert "120 rubric(s) checked" in format_table(checks)


@pytest.mark.slow
def test_config_dataset_selection_and_usage_errors(tmp_path):
    from tests.support.paths import ROOT

    result = run_cli("check", "--config", str(ROOT / "examples" / "demo.toml"), "--task-id", "birds-*")
    assert result.exit_code == 0, result.output
    assert "3 task(s): 3 rubric(s) checked, 0 flagged" in result.output
    result = run_cli("check", "--config", str(ROOT / "examples" / "demo.toml"), "--task-id", "nope-*")
    assert result.exit_code != 0 and "match no task" in result.output
    result = run_cli("check")
    assert result.exit_code == 2 and "give a task folder" in result.output
