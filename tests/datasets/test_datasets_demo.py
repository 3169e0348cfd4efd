"""The bundled demo set: generated decks, rubrics that really check the edits, caching, export round trip."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pptarena.cli.dataset import export_dataset, pptarena_id
from pptarena.plugins.datasets.common import DatasetError, rubric_problems
from pptarena.plugins.datasets.demo.dataset import (
    GENERATOR_VERSION,
    DemoDataset,
    build_demo_set,
    ensure_demo_set,
)
from pptarena.plugins.datasets.pptarena_bench import case_id, load_pptarena_tasks
from pptarena.plugins.datasets.ppteval import load_ppteval_tasks
from pptarena.types import ComponentContext
from tests.support.config import demo_dataset
from tests.support.paths import ROOT

PPT_EVAL_CONTEXT = (
    "ppt_diff",
    "original_ppt_screenshots",
    "modified_ppt_screenshots",
    "llm_call",
    "vlm_call",
)
CATEGORIES = {"Content", "Layout", "Styling", "Interactivity", "Structure"}


def _context(cache: Path) -> ComponentContext:
    def no_models(ref: str):
        raise AssertionError(f"the demo set must not ask for models ({ref})")

    return ComponentContext(cache_dir=cache, model=no_models)


@pytest.fixture(scope="module")
def demo_tasks(tmp_path_factory):
    cache = tmp_path_factory.mktemp("demo-cache")
    return list(DemoDataset(DemoDataset.Options(), _context(cache)).tasks())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- a tiny PPT-Eval leaf harness


def run_leaf(code: str, original: Path, modified: Path) -> tuple[str, float]:
    """Run a function leaf the way ai-rubric does: exec with the context as globals, call compute_score()."""
    context = {name: None for name in PPT_EVAL_CONTEXT}
    context.update(original_ppt_path=str(original), modified_ppt_path=str(modified))
    namespace: dict = {}
    exec(code, context, namespace)  # noqa: S102 - our own generated leaf code
    reason, score = namespace["compute_score"]()
    assert isinstance(reason, str) and isinstance(score, float) and 0.0 <= score <= 1.0
    return reason, score


def score_tree(node: dict, original: Path, modified: Path, leaf_scores: dict) -> float:
    """PPT-Eval's "default" aggregation with lambda = 0.3."""
    if "scorer" in node:
        score = run_leaf(node["scorer"]["function_code"], original, modified)[1]
        leaf_scores[node["name"]] = (score, node["is_critical"])
        return score
    scored = [
        (score_tree(c, original, modified, leaf_scores), c.get("is_critical", False))
        for c in node["children"]
    ]
    critical = [s for s, c in scored if c]
    other = [s for s, c in scored if not c]
    if critical and other:
        return max(0.0, sum(critical) / len(critical) - 0.3 * (1 - sum(other) / len(other)))
    return sum(s for s, _ in scored) / len(scored)


# --------------------------------------------------------------------------- the tasks


def test_demo_tasks_cover_categories_and_difficulties(demo_tasks):
    assert 10 <= len(demo_tasks) <= 12
    assert {c for t in demo_tasks for c in t.metadata["category"]} == CATEGORIES
    assert {t.metadata["difficulty"] for t in demo_tasks} == {"easy", "medium", "hard"}
    for task in demo_tasks:
        assert task.metadata["source"] == "demo" and task.metadata["edit_type"]
        assert task.instruction and task.style_target and len(task.style_target) > 40
        assert task.original.is_file() and task.target.is_file()
        assert _sha(task.original) != _sha(task.target), task.id
        assert rubric_problems(task.rubric) == [], task.id
        assert task.rubric["metadata"]["task"] == task.instruction
    assert len({t.original for t in demo_tasks}) == 3


def test_demo_rubrics_score_target_one_and_original_zero(demo_tasks):
    for task in demo_tasks:
        on_target: dict = {}
        on_original: dict = {}
        assert score_tree(task.rubric["root"], task.original, task.target, on_target) == 1.0, task.id
        assert score_tree(task.rubric["root"], task.original, task.original, on_original) == 0.0, task.id
        assert all(score == 1.0 for score, _ in on_target.values()), (task.id, on_target)
        critical = {name: score for name, (score, is_critical) in on_original.items() if is_critical}
        assert critical and all(score == 0.0 for score in critical.values()), (task.id, on_original)


def test_demo_leaves_survive_a_broken_prediction(demo_tasks, tmp_path):
    broken = tmp_path / "broken.pptx"
    broken.write_bytes(b"not a zip")
    task = demo_tasks[0]
    node = task.rubric["root"]
    while "scorer" not in node:
        node = node["children"][0]
    reason, score = run_leaf(node["scorer"]["function_code"], task.original, broken)
    assert score == 0.0 and "could not run" in reason


def test_demo_decks_have_the_promised_features(demo_tasks):
    from pptx import Presentation

    layouts, features = set(), set()
    for deck in sorted({t.original for t in demo_tasks}):
        prs = Presentation(str(deck))
        assert prs.slides[0].slide_layout.name == "Title Slide"
        for slide in prs.slides:
            layouts.add(slide.slide_layout.name)
            assert slide.has_notes_slide and slide.notes_slide.notes_text_frame.text.strip(), deck
            for shape in slide.shapes:
                if shape.has_text_frame and any(p.level == 1 for p in shape.text_frame.paragraphs):
                    features.add("two-level bullets")
                features.update(
                    name
                    for name, flag in (
                        ("table", getattr(shape, "has_table", False)),
                        ("chart", getattr(shape, "has_chart", False)),
                        ("picture", shape.shape_type == 13),
                    )
                    if flag
                )
        with zipfile.ZipFile(deck) as package:
            slides_xml = [package.read(n) for n in package.namelist() if n.startswith("ppt/slides/slide")]
        if any(b"<p:transition" in xml for xml in slides_xml):
            features.add("transition")
        if any(b"<p:timing" in xml and b'presetClass="entr"' in xml for xml in slides_xml):
            features.add("animation")
    assert features == {"two-level bullets", "table", "chart", "picture", "transition", "animation"}
    assert len(layouts) >= 3, layouts


@pytest.mark.slow
def test_demo_decks_render_in_libreoffice(demo_tasks, tmp_path):
    soffice = shutil.which("soffice")
    if soffice is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    import pypdfium2
    from pptx import Presentation

    deck = next(t.target for t in demo_tasks if t.id == "qbr-chart-target")
    profile = (tmp_path / "profile").as_uri()
    subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={profile}",
            "--headless",
            "--convert-to",
            "pdf",
            "--outdir",
            str(tmp_path),
            str(deck),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    pdf = pypdfium2.PdfDocument(str(tmp_path / f"{deck.stem}.pdf"))
    assert len(pdf) == len(Presentation(str(deck)).slides) == 6
    pdf.close()


# --------------------------------------------------------------------------- generation and cache


@pytest.mark.slow
def test_demo_generation_is_deterministic(tmp_path):
    build_demo_set(tmp_path / "a")
    build_demo_set(tmp_path / "b")
    first = (tmp_path / "a" / "MANIFEST.json").read_text()
    assert first == (tmp_path / "b" / "MANIFEST.json").read_text()
    assert json.loads(first)["generator_version"] == GENERATOR_VERSION


_BUILD_SNIPPET = """
import sys
from pathlib import Path
from pptarena.plugins.datasets.demo.dataset import ensure_demo_set
print(ensure_demo_set(Path(sys.argv[1])))
"""


@pytest.mark.slow
def test_demo_first_use_is_safe_across_processes(tmp_path):
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _BUILD_SNIPPET, str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    expected = str(cache / "demo" / f"v{GENERATOR_VERSION}")
    assert [out.strip() for out, _ in outputs] == [expected, expected]
    assert sorted(p.name for p in (cache / "demo").iterdir()) == [f"v{GENERATOR_VERSION}"]  # no staging left
    again = DemoDataset(DemoDataset.Options(ids="qbr-*"), _context(cache)).tasks()
    assert sorted(t.id for t in again) == sorted(
        ["qbr-fix-typos", "qbr-add-region-row", "qbr-chart-target", "qbr-move-next-steps", "qbr-link-report"]
    )


def test_demo_damaged_cache_is_reported(tmp_path):
    root = ensure_demo_set(tmp_path)
    (root / "qbr-fix-typos" / "target.pptx").unlink()
    with pytest.raises(DatasetError, match="delete that folder to rebuild"):
        DemoDataset(DemoDataset.Options(), _context(tmp_path)).tasks()


# --------------------------------------------------------------------------- export round trip


def _same_decks(a: Path | None, b: Path | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and _sha(a) == _sha(b))


def test_demo_round_trips_through_pptarena_layout(demo_tasks, tmp_path):
    summary = export_dataset(demo_tasks, "pptarena", tmp_path / "arena")
    assert summary["tasks"] == len(demo_tasks) and summary["notes"] == []
    assert summary["decks"] == 3 + len(demo_tasks)  # shared originals written once
    back = {t.id: t for t in load_pptarena_tasks(tmp_path / "arena")}
    assert list(back) == [t.id for t in demo_tasks]
    for task in demo_tasks:
        loaded = back[task.id]
        assert loaded.instruction == task.instruction and loaded.style_target == task.style_target
        assert _same_decks(loaded.original, task.original) and _same_decks(loaded.target, task.target)
        assert loaded.metadata["category"] == task.metadata["category"]
        assert loaded.metadata["edit_type"] == task.metadata["edit_type"]


def test_demo_round_trips_through_ppteval_layout(demo_tasks, tmp_path):
    summary = export_dataset(demo_tasks, "ppteval", tmp_path / "ppteval")
    assert summary["notes"] == []
    registry = json.loads((tmp_path / "ppteval" / "task_registry" / "tasks.json").read_text(encoding="utf-8"))
    entry = registry[demo_tasks[0].id]
    assert list(entry) == ["goal", "rubric_path", "tags", "misc", "file_path"]
    assert entry["file_path"].startswith("data/files/PowerPoint/") and entry["tags"] == ["powerpoint"]
    assert entry["misc"]["difficulty"] in {"Easy", "Medium", "Hard"}
    back = {t.id: t for t in load_ppteval_tasks(tmp_path / "ppteval")}
    assert list(back) == [t.id for t in demo_tasks]
    for task in demo_tasks:
        loaded = back[task.id]
        assert loaded.instruction == task.instruction and loaded.rubric == task.rubric
        assert loaded.style_target == task.style_target
        assert _same_decks(loaded.original, task.original) and _same_decks(loaded.target, task.target)
        for key in ("category", "edit_type", "difficulty"):
            assert loaded.metadata[key] == task.metadata[key]


def test_export_refuses_non_empty_folder_and_reports_renamed_ids(demo_tasks, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        export_dataset(demo_tasks, "ppteval", tmp_path / "full")
    with pytest.raises(ValueError, match="unknown export format"):
        export_dataset(demo_tasks, "csv", tmp_path / "new")
    from dataclasses import replace

    odd = [replace(demo_tasks[0], id="Obesity-004", rubric=None)]
    arena = export_dataset(odd, "pptarena", tmp_path / "odd-arena")
    assert "obesity-004" in " ".join(arena["notes"])
    assert [t.id for t in load_pptarena_tasks(tmp_path / "odd-arena")] == ["obesity-004"]
    ppteval = export_dataset(odd, "ppteval", tmp_path / "odd-ppteval")
    assert "no rubric" in " ".join(ppteval["notes"])
    assert [(t.id, t.rubric) for t in load_ppteval_tasks(tmp_path / "odd-ppteval")] == [("Obesity-004", None)]


@pytest.mark.parametrize("name", ["Case 3: Fix & Align", "  case 10 : x", "Climate deck (v2)", "Überblick"])
def test_export_id_rule_matches_the_pptarena_loader(name):
    assert pptarena_id(name) == case_id(name)


def test_cli_dataset_export(tmp_path, run_config):
    from pptarena.cli.main import cli

    config = run_config("demo.toml", dataset=demo_dataset("birds-*"), agents=["noop"], renderer="libreoffice")
    result = CliRunner().invoke(
        cli, ["dataset", "export", "--config", str(config), "--format", "pptarena", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 3 task(s)" in result.output
    assert [t.id for t in load_pptarena_tasks(tmp_path / "out")] == [
        "birds-align-pictures",
        "birds-fade-transitions",
        "birds-title-colour",
    ]
    again = CliRunner().invoke(
        cli, ["dataset", "export", "--config", str(config), "--format", "ppteval", str(tmp_path / "out")]
    )
    assert again.exit_code != 0 and "not empty" in again.output


def test_docs_rubric_example_is_valid_and_checks_the_edit(demo_tasks):
    import re

    doc = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    rubric = json.loads(re.search(r"```json\n(.*?)```", doc, re.S).group(1))
    assert rubric_problems(rubric) == []
    task = next(t for t in demo_tasks if t.id == "birds-title-colour")
    assert score_tree(rubric["root"], task.original, task.target, {}) == 1.0
    assert score_tree(rubric["root"], task.original, task.original, {}) == 0.0


def test_ppteval_export_keeps_rubrics_of_ids_that_clean_to_one_file_name(demo_tasks, tmp_path):
    from dataclasses import replace

    a, b = demo_tasks[0], demo_tasks[1]
    assert a.rubric != b.rubric
    clash = [replace(a, id="deck:1"), replace(b, id="deck?1")]  # both become deck_1.json
    export_dataset(clash, "ppteval", tmp_path / "clash")
    loaded = {t.id: t.rubric for t in load_ppteval_tasks(tmp_path / "clash")}
    assert loaded == {"deck:1": a.rubric, "deck?1": b.rubric}
