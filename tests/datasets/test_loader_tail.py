"""The loaders' shared tail (:mod:`pptarena.plugins.datasets.loader_tail`): id selection, then one
error naming every missing deck; alone, and at the end of the pptarena, ppteval and pptc loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pptarena.plugins.datasets.common import DatasetError
from pptarena.plugins.datasets.loader_tail import select_and_check_decks
from pptarena.plugins.datasets.pptarena_bench import DOWNLOAD_HINT, load_pptarena_tasks
from pptarena.plugins.datasets.pptc import PREPARE_HINT, load_pptc
from pptarena.plugins.datasets.ppteval import load_ppteval_tasks
from pptarena.types import Task


def _deck(path: Path) -> Path:
    """A real one-slide pptx (python-pptx) at ``path``."""
    from pptx import Presentation

    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = path.stem
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))
    return path


def _tasks(tmp_path: Path) -> list[Task]:
    shared = _deck(tmp_path / "shared.pptx")
    return [
        Task(id="a-1", instruction="x", original=shared, target=tmp_path / "gone-1.pptx"),
        Task(id="a-2", instruction="x", original=shared),
        Task(id="b-1", instruction="x", original=tmp_path / "gone-2.pptx"),
    ]


def test_ids_select_in_order_and_a_glob_selecting_nothing_is_an_error(tmp_path):
    tasks = _tasks(tmp_path)
    kept = select_and_check_decks(tasks, ["b-*", "a-2"], source="here", check_decks=False, decks_source="x")
    assert [t.id for t in kept] == ["a-2", "b-1"]
    assert select_and_check_decks(tasks, [], source="here", check_decks=False, decks_source="x") == tasks
    with pytest.raises(DatasetError, match=r"^here: option 'ids' pattern\(s\) \['c-\*'\] match no task id"):
        select_and_check_decks(tasks, ["a-*", "c-*"], source="here", decks_source="x")


def test_every_missing_deck_of_the_kept_tasks_in_one_error_with_the_hint(tmp_path):
    tasks = _tasks(tmp_path)
    with pytest.raises(DatasetError) as err:
        select_and_check_decks(tasks, [], source="s", decks_source="the index", hint="get them here")
    assert str(err.value) == (
        "2 deck(s) missing for the dataset from the index:\n"
        f"  {tmp_path / 'gone-1.pptx'}  (target of a-1)\n"
        f"  {tmp_path / 'gone-2.pptx'}  (original of b-1)\n"
        "get them here"
    )
    kept = select_and_check_decks(tasks, ["a-2"], source="s", decks_source="the index")  # its deck is there
    assert [t.id for t in kept] == ["a-2"]


def test_empty_error_only_when_asked_and_extra_decks_of_kept_tasks_only(tmp_path):
    tasks = _tasks(tmp_path)[1:2]  # a-2: its deck exists
    assert select_and_check_decks([], [], source="s", decks_source="d") == []
    with pytest.raises(DatasetError, match="^nothing left$"):
        select_and_check_decks([], [], source="s", decks_source="d", empty_error="nothing left")
    extra = {"a-2": [tmp_path / "shared.pptx", tmp_path / "label-0.pptx"], "b-1": [tmp_path / "never.pptx"]}
    with pytest.raises(DatasetError) as err:
        select_and_check_decks(
            tasks, [], source="s", decks_source="d", extra_decks=extra, extra_what="turn label"
        )
    assert str(err.value) == (
        "1 deck(s) missing for the dataset from d:\n"
        f"  {tmp_path / 'label-0.pptx'}  (original of a-2 (turn label))"
    )


def test_pptarena_loader_ends_with_the_tail(tmp_path):
    root = tmp_path / "PPTArena"
    root.mkdir()
    index = [
        {"name": "Case 1: A", "prompt": "Do A", "original": "Original/a.pptx", "ground_truth": "GT/a.pptx"},
        {"name": "Case 2: B", "prompt": "Do B", "original": "Original/b.pptx", "ground_truth": "GT/b.pptx"},
    ]
    (root / "evaluation_pairs_refined.json").write_text(json.dumps(index), encoding="utf-8")
    for rel in ("Original/a.pptx", "GT/a.pptx", "Original/b.pptx"):
        _deck(root / rel)
    assert [t.id for t in load_pptarena_tasks(root, ids=["case-1"])] == ["case-1"]
    source = f"PPTArena index {root / 'evaluation_pairs_refined.json'}"
    with pytest.raises(DatasetError) as err:
        load_pptarena_tasks(root)
    assert str(err.value) == (
        f"1 deck(s) missing for the dataset from {source}, deck paths relative to {root}:\n"
        f"  {root / 'GT/b.pptx'}  (target of case-2)\n{DOWNLOAD_HINT}"
    )
    with pytest.raises(DatasetError, match=r"pattern\(s\) \['case-9'\] match no task id"):
        load_pptarena_tasks(root, ids=["case-9"])


def test_ppteval_loader_says_when_no_task_has_the_difficulty(tmp_path):
    registry = tmp_path / "task_registry"
    registry.mkdir()
    entry = {"goal": "Do it", "file_path": "decks/one.pptx", "misc": {"difficulty": "Easy"}}
    (registry / "tasks.json").write_text(json.dumps({"t1": entry}), encoding="utf-8")
    _deck(tmp_path / "decks" / "one.pptx")
    assert [t.id for t in load_ppteval_tasks(tmp_path, difficulty=["easy"])] == ["t1"]
    with pytest.raises(DatasetError) as err:
        load_ppteval_tasks(tmp_path, difficulty=["hard"])
    assert str(err.value) == f"ppteval dataset {registry / 'tasks.json'}: no task has difficulty ['hard']"


def test_pptc_session_needs_every_turns_label(tmp_path):
    folder = tmp_path / "PPT_test_input" / "Create_new_slides"
    folder.mkdir(parents=True)
    turns = [
        {
            "Turn": n,
            "User instruction": f"Turn {n}.",
            "Feasible API sequence": "",
            "Base File": f"PPT_Base_File/0_{n}.pptx",
            "Label File": f"PPT_Label_File/0_{n}.pptx",
        }
        for n in range(2)
    ]
    (folder / "session_0.json").write_text("\n".join(json.dumps(t) for t in turns), encoding="utf-8")
    for rel in ("PPT_Base_File/0_0.pptx", "PPT_Base_File/0_1.pptx", "PPT_Label_File/0_1.pptx"):
        _deck(tmp_path / rel)
    assert [t.id for t in load_pptc(tmp_path, mode="turn", ids=["short-0-1"])] == ["short-0-1"]
    with pytest.raises(DatasetError) as err:  # the session's first turn is judged on its own label too
        load_pptc(tmp_path, mode="session")
    assert str(err.value) == (
        f"1 deck(s) missing for the dataset from {tmp_path} with decks from {tmp_path}:\n"
        f"  {tmp_path / 'PPT_Label_File/0_0.pptx'}  (original of short-0 (turn label))\n{PREPARE_HINT}"
    )
