"""The tsbench dataset on a stand-in folder: TSBench's layout with composed instruction records and
decks from ../shared/corpus under the names TSBench uses (slide_<N>.pptx)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pptarena.plugins.datasets.common import DatasetError
from pptarena.plugins.datasets.tsbench import NO_TARGET, load_tsbench
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import use, write_run_config
from tests.support.paths import CORPUS

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared deck corpus {CORPUS} is absent")

# composed records in TSBench's shape (id "<deck>-<n>" -> text, {slide_num} placeholders)
RECORDS = {
    "3-1": "Make the title on slide {slide_num} bold.",
    "3-2": "Translate the text on slide {slide_num} into Korean.",
    "7-1": "Add speaker notes summarising each slide.",
    "12-1": "Align every picture on slide {slide_num} to the left edge.",
}
HARD = {
    "3-2": {"ideal_description": "All visible text of the slide is in Korean; layout unchanged."},
    "7-9": {
        "instruction": "Edit the content of the embedded video.",
        "ideal_description": "The agent refuses: video content cannot be edited.",
    },
}
DECKS = {
    "3": "docling_powerpoint_comments.pptx",
    "7": "poi_hello-world-signed.pptx",
    "12": "openxmlsdk_Presentation_empty-app.pptx",
}


@pytest.fixture
def root(tmp_path) -> Path:
    base = tmp_path / "TSBench"
    (base / "benchmark_ppts" / "notes" / "slide_3").mkdir(parents=True)
    (base / "benchmark_ppts" / "notes" / "slide_3" / "slide_01.txt").write_text("notes of slide 1")
    (base / "expanded_instruction_379.json").write_text(json.dumps(RECORDS), encoding="utf-8")
    (base / "hard.json").write_text(json.dumps(HARD), encoding="utf-8")
    for number, deck in DECKS.items():
        shutil.copyfile(CORPUS / deck, base / "benchmark_ppts" / f"slide_{number}.pptx")
    return base


def test_records_decks_and_placeholders(root):
    tasks = load_tsbench(root)
    assert [t.id for t in tasks] == list(RECORDS)  # file order
    first = tasks[0]
    assert first.instruction == "Make the title on slide bold."
    assert first.metadata["raw_instruction"] == RECORDS["3-1"]
    assert first.original == root / "benchmark_ppts" / "slide_3.pptx"
    assert first.target is None and first.metadata["no_target_reason"] == NO_TARGET
    assert first.metadata["notes_dir"].endswith("notes/slide_3")
    assert tasks[3].original.name == "slide_12.pptx"
    kept = load_tsbench(root, slide_num="keep")
    assert kept[0].instruction == RECORDS["3-1"]


def test_hard_subset_is_selectable(root):
    hard = load_tsbench(root, subset="hard", hard_file="hard.json")
    assert [t.id for t in hard] == ["3-2", "7-9"]
    assert all(t.metadata["hard"] and t.metadata["difficulty"] == "hard" for t in hard)
    assert hard[0].instruction.startswith("Translate")  # text from the main file
    assert hard[0].style_target == HARD["3-2"]["ideal_description"]
    assert hard[1].original.name == "slide_7.pptx" and hard[1].instruction == HARD["7-9"]["instruction"]
    standard = load_tsbench(root, subset="standard", hard_file="hard.json")
    assert [t.id for t in standard] == ["3-1", "7-1", "12-1"]
    assert len(load_tsbench(root, hard_file="hard.json")) == 5
    with pytest.raises(DatasetError, match="hard_file"):
        load_tsbench(root, subset="hard")


def test_missing_decks_are_named_at_once(root):
    (root / "benchmark_ppts" / "slide_3.pptx").unlink()
    (root / "benchmark_ppts" / "slide_12.pptx").unlink()
    with pytest.raises(DatasetError) as err:
        load_tsbench(root)
    message = str(err.value)
    assert "2 deck(s) missing" in message and "slide_3.pptx" in message and "slide_12.pptx" in message
    assert "Kyudan/TSBench" in message


@pytest.mark.parametrize(
    "content, problem",
    [
        ("[1, 2]", "without instruction text"),
        ('[{"id": "a b", "instruction": "x"}]', "bad prompt id"),
        ('{"3-1": ""}', "non-empty string"),
        ('{"../x": "text"}', "bad prompt id"),
        ('"text"', "expected a JSON object or list"),
    ],
)
def test_malformed_records_are_refused(root, content, problem):
    (root / "expanded_instruction_379.json").write_text(content)
    with pytest.raises(DatasetError, match=problem):
        load_tsbench(root)


def _run(root: Path, tmp_path: Path, judges: list, **parts) -> list[dict]:
    cfg = write_run_config(
        tmp_path / "tsbench.toml",
        run={"jobs": 1},
        dataset=use("tsbench", root=str(root), ids=["3-*"]),
        agents=["noop"],
        judges=judges,
        **parts,
    )
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "run", quiet=True).run()
    return [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]


def test_structural_judge_says_there_is_no_target(root, tmp_path):
    rows = _run(root, tmp_path, ["structural"])
    assert [r["status"] for r in rows] == ["judge_error", "judge_error"]
    assert all("TSBench ships no target decks" in r["error"] for r in rows)


@pytest.mark.slow
@pytest.mark.skipif(
    not (shutil.which("soffice") or shutil.which("libreoffice")), reason="LibreOffice is not installed"
)
def test_dual_judge_scores_without_a_target(root, tmp_path):
    """noop through the dual judge (scripted model): IF is 0 for an unchanged deck, as PPTArena rules."""
    rules = [
        {"match": "Score instruction following", "reply": '{"score": 5, "reason": "done"}'},
        {"match": "Score the visual quality", "reply": '{"score": 4, "reason": "fine"}'},
    ]
    rows = _run(
        root,
        tmp_path,
        [use("dual", model="scripted/j")],
        renderer="libreoffice",
        backends={"scripted": {"rules": rules}},
    )
    assert [r["status"] for r in rows] == ["scored", "scored"], rows
    for row in rows:
        metrics = row["scores"]["dual"]["metrics"]
        assert metrics["if_score"] == 0 and metrics["if_rule"] == "unchanged_prediction"
        assert metrics["vq_score"] == 4  # VQ is judged from the renders with no target deck
