"""The folder, pptarena and ppteval datasets: parsing, validation and the clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pptarena.plugins.datasets.common import DatasetError, rubric_problems, slugify
from pptarena.plugins.datasets.folder import FolderDataset, load_folder_tasks
from pptarena.plugins.datasets.pptarena_bench import PptArenaDataset, case_id, load_pptarena_tasks
from pptarena.plugins.datasets.ppteval import PptEvalDataset, load_ppteval_tasks
from pptarena.types import ComponentContext
from tests.support.paths import ROOT

PPTEVAL = ROOT.parent / "shared" / "ppteval"


def _context(tmp_path: Path) -> ComponentContext:
    def no_models(ref: str):
        raise AssertionError(f"datasets must not ask for models ({ref})")

    return ComponentContext(cache_dir=tmp_path / "cache", model=no_models)


def _deck(path: Path, title: str = "Stand-in") -> Path:
    """A real one-slide pptx (python-pptx) at ``path``."""
    from pptx import Presentation

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = title
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))
    return path


def _rubric(code_ok: bool = True) -> dict:
    code = "def compute_score():\n    return 'ok', 1.0\n" if code_ok else "def compute_score(:\n"
    return {
        "root": {
            "name": "root",
            "description": "d",
            "is_critical": True,
            "metadata": {},
            "children": [
                {
                    "name": "leaf",
                    "description": "d",
                    "is_critical": True,
                    "metadata": {},
                    "scorer": {"type": "function", "function_code": code},
                },
            ],
        },
        "metadata": {"task": "t"},
    }


# --------------------------------------------------------------------------- rubric schema


def test_rubric_schema_accepts_valid_and_names_every_problem():
    assert rubric_problems(_rubric()) == []
    bad = {
        "root": {
            "name": "r",
            "children": [
                {"name": "a", "scorer": {"type": "shell", "cmd": "rm"}},
                {"name": "a", "is_critical": "yes", "scorer": {"type": "function", "function_code": "x = 1"}},
                {"name": "c", "children": []},
                {"description": "no name or kind"},
            ],
        }
    }
    problems = "\n".join(rubric_problems(bad))
    assert "unsupported scorer type 'shell'" in problems
    assert "'is_critical' must be true or false" in problems
    assert "does not define a top-level compute_score()" in problems
    assert "'children' must be a non-empty list" in problems
    assert "must have either 'children' or 'scorer'" in problems
    assert "node name 'a' is used 2 times" in problems
    assert "not valid Python" in "\n".join(rubric_problems(_rubric(code_ok=False)))


def test_slug_and_case_ids():
    assert case_id("Case 7: Translate to English But Keep French") == "case-7"
    assert case_id("case 12 : Fix Image&Text") == "case-12"
    assert case_id("Climate deck (recolour)") == "climate-deck-recolour"
    assert slugify("  Fix Image&Text Overflow ") == "fix-image-text-overflow"


# --------------------------------------------------------------------------- folder


def _write_task(root: Path, task_id: str, toml: str, decks: tuple[str, ...] = ("original.pptx",)) -> Path:
    folder = root / task_id
    folder.mkdir(parents=True)
    for name in decks:
        _deck(folder / name)
    (folder / "task.toml").write_text(toml, encoding="utf-8")
    return folder


def test_folder_dataset_reads_every_field(tmp_path):
    root = tmp_path / "tasks"
    folder = _write_task(
        root,
        "recolour-title",
        """
instruction = "Make the title red."
original = "original.pptx"
target = "target.pptx"
style_target_file = "style.md"
rubric = "rubric.json"

[metadata]
category = ["Styling"]
edit_type = "Text & Typography"
difficulty = "Easy"
author = "me"
""",
        decks=("original.pptx", "target.pptx"),
    )
    (folder / "style.md").write_text("The title is #FF0000.", encoding="utf-8")
    (folder / "rubric.json").write_text(json.dumps(_rubric()), encoding="utf-8")
    _write_task(root, "plain", 'instruction = "Add a slide."\noriginal = "../_shared/deck.pptx"\n', decks=())
    _deck(root / "_shared" / "deck.pptx")

    dataset = FolderDataset(FolderDataset.Options(root=root), _context(tmp_path))
    tasks = {t.id: t for t in dataset.tasks()}
    assert sorted(tasks) == ["plain", "recolour-title"]
    task = tasks["recolour-title"]
    assert task.instruction == "Make the title red."
    assert task.original == folder / "original.pptx" and task.target == folder / "target.pptx"
    assert task.style_target == "The title is #FF0000."
    assert task.rubric == _rubric()
    assert task.metadata == {
        "category": ["Styling"],
        "edit_type": "Text & Typography",
        "difficulty": "easy",
        "author": "me",
        "source": "folder",
    }
    assert tasks["plain"].target is None and tasks["plain"].original.is_file()


def test_folder_missing_decks_are_listed_in_one_error(tmp_path):
    root = tmp_path / "tasks"
    _write_task(root, "a", 'instruction = "x"\noriginal = "gone.pptx"\ntarget = "also-gone.pptx"\n', decks=())
    _write_task(root, "b", 'instruction = "y"\noriginal = "missing.pptx"\n', decks=())
    with pytest.raises(DatasetError) as err:
        load_folder_tasks(root)
    message = str(err.value)
    assert "3 deck(s) missing" in message and str(root) in message
    for name in ("gone.pptx", "also-gone.pptx", "missing.pptx"):
        assert name in message


def test_folder_reports_every_broken_task_file(tmp_path):
    root = tmp_path / "tasks"
    _write_task(root, "typo-key", 'instruction = "x"\noriginal = "original.pptx"\ninstructions = "y"\n')
    _write_task(root, "escape", 'instruction = "x"\noriginal = "../../outside.pptx"\n')
    _write_task(root, "bad-toml", 'instruction = "x\n')
    _write_task(
        root,
        "bad-level",
        'instruction = "x"\noriginal = "original.pptx"\n[metadata]\ndifficulty = "extreme"\n',
    )
    broken = _write_task(
        root, "bad-rubric", 'instruction = "x"\noriginal = "original.pptx"\nrubric = "r.json"\n'
    )
    (broken / "r.json").write_text(json.dumps(_rubric(code_ok=False)), encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_folder_tasks(root)
    message = str(err.value)
    assert "5 broken task(s)" in message
    assert "instructions: Extra inputs are not permitted" in message
    assert "points outside" in message
    assert "not valid TOML" in message
    assert "difficulty 'extreme'" in message
    assert "not valid Python" in message and "r.json" in message


def test_folder_empty_root_and_id_filter(tmp_path):
    with pytest.raises(DatasetError, match="no tasks under"):
        load_folder_tasks(tmp_path)
    _write_task(tmp_path, "one", 'instruction = "x"\noriginal = "original.pptx"\n')
    _write_task(tmp_path, "two", 'instruction = "x"\noriginal = "original.pptx"\n')
    assert [t.id for t in load_folder_tasks(tmp_path, ["t*"])] == ["two"]
    with pytest.raises(DatasetError, match="match no task id"):
        load_folder_tasks(tmp_path, ["three"])


# --------------------------------------------------------------------------- pptarena

# Names mimic the real index: a leading space, '&', the "GroundTurth" typo, a " copy" suffix and a
# case whose name does not start with "Case N:".
CASES = [
    (
        "Case 1: Translate to English But Keep French",
        "Original/TranslateTestA.pptx",
        "GroundTruth/TranslateGroundTruthA.pptx",
        ["Content"],
        "Text & Typography",
    ),
    (
        "Case 12: Highlight Important Words",
        "Original/ HighlightImportantWords_GroundTestA.pptx",
        "GroundTruth/HighlightImportantWords_GroundTurthA.pptx",
        ["Styling", "Content"],
        "Text & Typography",
    ),
    (
        "Case 31: Fix Image & Text Overflow",
        "Original/FixImage&TextOverFlow_TestB.pptx",
        "GroundTruth/FixImage&TextOverFlow_GroundTruthB.pptx",
        ["Layout"],
        "Images & Pictures",
    ),
    (
        "Case 77: Structural fix",
        "Original/1ea18StructuralFix_TestA copy.pptx",
        "GroundTruth/ObjectDistance_GTA.pptx",
        ["Structure"],
        "Slide/Section Management & Footers",
    ),
    (
        "Climate deck recolour",
        "Original/climate_original.pptx",
        "GroundTruth/climate_ground_truth.pptx",
        ["Styling"],
        "Theme & Background",
    ),
]


def _pptarena_root(tmp_path: Path, with_decks: bool = True) -> Path:
    root = tmp_path / "PPTArena"
    root.mkdir()
    index = [
        {
            "name": n,
            "prompt": f"Do {n}",
            "style_target": f"Target for {n}",
            "original": o,
            "ground_truth": g,
            "category": c,
            "edit_type": e,
        }
        for n, o, g, c, e in CASES
    ]
    (root / "evaluation_pairs_refined.json").write_text(json.dumps(index), encoding="utf-8")
    if with_decks:
        for _, original, truth, _, _ in CASES:
            _deck(root / original)
            _deck(root / truth)
    return root


def test_pptarena_reads_names_exactly_as_written(tmp_path):
    root = _pptarena_root(tmp_path)
    dataset = PptArenaDataset(PptArenaDataset.Options(root=root), _context(tmp_path))
    tasks = list(dataset.tasks())
    assert [t.id for t in tasks] == ["case-1", "case-12", "case-31", "case-77", "climate-deck-recolour"]
    by_id = {t.id: t for t in tasks}
    assert by_id["case-12"].original == root / "Original" / " HighlightImportantWords_GroundTestA.pptx"
    assert by_id["case-12"].target.name == "HighlightImportantWords_GroundTurthA.pptx"
    assert by_id["case-31"].original.name == "FixImage&TextOverFlow_TestB.pptx"
    assert by_id["case-77"].original.name == "1ea18StructuralFix_TestA copy.pptx"
    assert by_id["case-12"].style_target == "Target for Case 12: Highlight Important Words"
    assert {k: v for k, v in by_id["case-12"].metadata.items() if k != "leaderboard"} == {
        "source": "pptarena",
        "name": "Case 12: Highlight Important Words",
        "category": ["Styling", "Content"],
        "edit_type": "Text & Typography",
    }
    assert all(t.rubric is None for t in tasks)


def test_pptarena_missing_decks_one_error_naming_each(tmp_path):
    root = _pptarena_root(tmp_path, with_decks=False)
    _deck(root / CASES[0][1])  # one deck present
    with pytest.raises(DatasetError) as err:
        load_pptarena_tasks(root)
    message = str(err.value)
    assert "9 deck(s) missing" in message
    assert "evaluation_pairs_refined.json" in message
    assert "Original/ HighlightImportantWords_GroundTestA.pptx" in message  # leading space kept
    assert "FixImage&TextOverFlow_TestB.pptx" in message


def test_pptarena_filters_and_subset(tmp_path):
    root = _pptarena_root(tmp_path)
    assert [t.id for t in load_pptarena_tasks(root, categories=["styling"])] == [
        "case-12",
        "climate-deck-recolour",
    ]
    assert [t.id for t in load_pptarena_tasks(root, edit_types=["Images & Pictures"])] == ["case-31"]
    with pytest.raises(DatasetError, match="no case has category"):
        load_pptarena_tasks(root, categories=["Colour"])
    (root / "agent_bench").mkdir()
    (root / "agent_bench" / "subset25.json").write_text(
        json.dumps(["Case 31: Fix Image & Text Overflow", "case-1"]), encoding="utf-8"
    )
    options = PptArenaDataset.Options(root=root, subset="agent_bench/subset25.json")
    tasks = list(PptArenaDataset(options, _context(tmp_path)).tasks())
    assert [t.id for t in tasks] == ["case-1", "case-31"]
    assert tasks[0].metadata["subset"] == "subset25"
    (root / "agent_bench" / "bad.json").write_text(json.dumps({"names": ["Case 99: nope"]}), encoding="utf-8")
    with pytest.raises(DatasetError, match="Case 99: nope"):
        load_pptarena_tasks(root, subset=Path("agent_bench/bad.json"))


def test_pptarena_index_problems(tmp_path):
    root = tmp_path / "bad"
    root.mkdir()
    (root / "evaluation_pairs_refined.json").write_text(
        json.dumps(
            [
                {"name": "Case 1: a", "prompt": "p", "original": "/etc/passwd", "ground_truth": "g.pptx"},
                {"name": "Case 1: b", "prompt": "p", "original": "o.pptx", "ground_truth": "../g.pptx"},
                {"prompt": 3, "original": "o.pptx"},
            ]
        ),
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as err:
        load_pptarena_tasks(root)
    assert "entry 2: 'name' must be a non-empty string" in str(err.value)
    assert "entry 2: 'prompt' must be a non-empty string" in str(err.value)
    (root / "evaluation_pairs_refined.json").write_text(
        json.dumps(
            [
                {"name": "Case 1: a", "prompt": "p", "original": "/etc/passwd", "ground_truth": "g.pptx"},
                {"name": "Case 1: b", "prompt": "p", "original": "o.pptx", "ground_truth": "../g.pptx"},
            ]
        ),
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as err:
        load_pptarena_tasks(root)
    assert "must be relative" in str(err.value) and "points outside" in str(err.value)
    with pytest.raises(DatasetError, match="no evaluation_pairs_refined.json"):
        load_pptarena_tasks(tmp_path / "nowhere")


# --------------------------------------------------------------------------- ppteval (published registry)


@pytest.fixture
def ppteval_root() -> Path:
    if not (PPTEVAL / "task_registry" / "tasks.json").is_file():
        pytest.skip("../shared/ppteval is not available")
    return PPTEVAL


def test_ppteval_all_120_tasks_and_rubrics_parse_and_validate(ppteval_root):
    tasks = load_ppteval_tasks(ppteval_root, check_decks=False)
    assert len(tasks) == 120
    registry = json.loads((ppteval_root / "task_registry" / "tasks.json").read_text(encoding="utf-8"))
    assert [t.id for t in tasks] == list(registry)
    for task in tasks:
        entry = registry[task.id]
        assert task.instruction == entry["goal"]
        published = json.loads((ppteval_root / entry["rubric_path"]).read_text(encoding="utf-8"))
        assert task.rubric == published  # attached unmodified
        assert rubric_problems(task.rubric) == []
        assert task.original == ppteval_root / entry["file_path"]
        assert task.metadata["difficulty"] == entry["misc"]["difficulty"].lower()
    counts = {
        level: len(load_ppteval_tasks(ppteval_root, difficulty=[level], check_decks=False))
        for level in ("Easy", "medium", "HARD")
    }
    assert counts == {"Easy": 51, "medium": 39, "HARD": 30}


@pytest.mark.slow
def test_ppteval_absent_decks_error_names_them(ppteval_root, tmp_path):
    dataset = PptEvalDataset(PptEvalDataset.Options(root=ppteval_root), _context(tmp_path))
    with pytest.raises(DatasetError) as err:
        dataset.tasks()
    message = str(err.value)
    assert "12 deck(s) missing" in message
    assert "Revisiting Classical  Social Experiments [Autosaved].pptx" in message
    assert "application+layer+slide.pptx" in message
    assert "downloaded separately" in message and "decks_dir" in message


def test_ppteval_loads_with_stand_in_decks(ppteval_root, tmp_path):
    registry = json.loads((ppteval_root / "task_registry" / "tasks.json").read_text(encoding="utf-8"))
    decks = tmp_path / "decks"
    for entry in registry.values():
        name = Path(entry["file_path"]).name
        if not (decks / name).exists():
            _deck(decks / name, title=name)
    options = PptEvalDataset.Options(root=ppteval_root / "task_registry", decks_dir=decks, difficulty="hard")
    tasks = list(PptEvalDataset(options, _context(tmp_path)).tasks())
    assert len(tasks) == 30
    assert all(t.original.parent == decks and t.original.is_file() for t in tasks)
    assert all(t.rubric is not None and t.target is None for t in tasks)


def test_ppteval_registry_problems(tmp_path):
    registry = tmp_path / "task_registry"
    (registry / "rubrics").mkdir(parents=True)
    (registry / "rubrics" / "ok.json").write_text(json.dumps(_rubric()), encoding="utf-8")
    (registry / "rubrics" / "broken.json").write_text("{not json", encoding="utf-8")
    (registry / "tasks.json").write_text(
        json.dumps(
            {
                "deck-001": {
                    "goal": "g",
                    "rubric_path": "task_registry/rubrics/ok.json",
                    "tags": ["powerpoint"],
                    "misc": {"difficulty": "Easy"},
                    "file_path": "data/files/PowerPoint/deck.pptx",
                },
                "deck-002": {
                    "goal": "g",
                    "rubric_path": "task_registry/rubrics/broken.json",
                    "tags": ["powerpoint"],
                    "misc": {"difficulty": "Easy"},
                    "file_path": "data/files/PowerPoint/deck.pptx",
                },
                "deck-003": {
                    "goal": "",
                    "rubric_path": "task_registry/rubrics/missing.json",
                    "file_path": "data/files/PowerPoint/deck.pptx",
                },
                "deck-004": {
                    "goal": "g",
                    "rubric_path": "task_registry/rubrics/missing.json",
                    "misc": {"difficulty": "?"},
                    "file_path": "data/files/PowerPoint/deck.pptx",
                },
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as err:
        load_ppteval_tasks(tmp_path)
    message = str(err.value)
    assert "3 problem(s)" in message
    assert "broken.json is not valid JSON" in message
    assert "'deck-003': 'goal' must be a non-empty string" in message
    assert "difficulty '?'" in message


def test_datasets_are_registered_through_entry_points(tmp_path):
    from pydantic import ValidationError

    from pptarena.run.configuration.registry import load_registry

    registry = load_registry(
        only=["datasets-folder", "datasets-pptarena", "datasets-ppteval", "datasets-demo"]
    )
    assert registry.names("datasets") == ["demo", "folder", "pptarena", "ppteval"]
    demo = registry.create("datasets", "demo", {"ids": "birds-*"}, _context(tmp_path))
    assert len(list(demo.tasks())) == 3
    with pytest.raises(ValidationError, match="decks_directory"):
        registry.get("datasets", "ppteval").options_model.model_validate(
            {"root": ".", "decks_directory": "x"}
        )


def test_rubric_validation_accepts_exactly_what_the_rubric_judge_loads():
    """A rubric the dataset accepts must not be refused (or silently broken) when the judge runs it."""
    from pptarena.plugins.judges.rubric.tree import RubricError, compile_leaves, load_rubric

    body = 'def compute_score():\n    return "ok", 1.0\n'

    def one_leaf(code):
        return {
            "root": {
                "name": "r",
                "children": [{"name": "l", "scorer": {"type": "function", "function_code": code}}],
            }
        }

    fenced = one_leaf("```python\n" + body + "```")
    assert rubric_problems(fenced) == [] and compile_leaves(load_rubric(fenced)) == []
    other_fence = one_leaf("```py\n" + body + "```")  # ai-rubric strips only a ```python fence
    assert compile_leaves(load_rubric(other_fence))  # the judge cannot compile it ...
    assert "not valid Python" in "\n".join(rubric_problems(other_fence))  # ... so the dataset refuses it
    wide = {
        "root": {
            "name": "r",
            "children": [
                {"name": f"l{i}", "scorer": {"type": "function", "function_code": body}} for i in range(600)
            ],
        }
    }
    with pytest.raises(RubricError, match="more than 500 nodes"):
        load_rubric(wide)
    assert "more than 500 nodes" in "\n".join(rubric_problems(wide))


def test_ppteval_pptarena_extension_is_validated(tmp_path):
    """misc.pptarena (our extension): one category string is a one-element list, bad types are errors."""
    registry = tmp_path / "task_registry"
    (registry / "rubrics").mkdir(parents=True)
    (registry / "rubrics" / "ok.json").write_text(json.dumps(_rubric()), encoding="utf-8")

    def write(ext):
        (registry / "tasks.json").write_text(
            json.dumps(
                {
                    "deck-001": {
                        "goal": "g",
                        "rubric_path": "task_registry/rubrics/ok.json",
                        "tags": ["powerpoint"],
                        "misc": {"difficulty": "Easy", "pptarena": ext},
                        "file_path": "data/files/PowerPoint/deck.pptx",
                    }
                }
            ),
            encoding="utf-8",
        )

    write({"category": "Content"})
    [task] = load_ppteval_tasks(tmp_path, check_decks=False)
    assert task.metadata["category"] == ["Content"]
    write({"category": [1, 2], "style_target": 5})
    with pytest.raises(DatasetError, match="category must be a list of strings"):
        load_ppteval_tasks(tmp_path, check_decks=False)
    write({"style_target": 5})
    with pytest.raises(DatasetError, match="style_target must be a string"):
        load_ppteval_tasks(tmp_path, check_decks=False)
