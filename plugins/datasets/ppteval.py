"""The ``ppteval`` dataset: PPT-Eval's ``task_registry`` (120 tasks over 12 decks).

``root`` is a checkout of microsoft/ppteval (the folder holding ``task_registry/``); the
registry folder itself is accepted too. Decks are read from ``root/<file_path>``
(``data/files/PowerPoint/<stem>.pptx``) or, with option ``decks_dir``, from
``decks_dir/<file name>``. The PPT-Eval decks are not in that repository: when they are
absent the error names every missing file and says how to get them.

Each task's rubric (``task_registry/rubrics/<id>.json``) is validated and attached to the task
unmodified for the ``rubric`` judge, and the task is tagged ``rubric_semantics = "ppteval"``
(option ``rubric_semantics``) so that judge grades it with PPT-Eval's published semantics.

An optional ``misc.pptarena`` object in an entry (written by ``arena dataset export``; ignored
by PPT-Eval's own loader) carries ``target``, ``style_target``, ``category`` and ``edit_type``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

import pptarena
from pptarena.types import Options as BaseOptions
from pptarena.types import Task

from . import fetchers
from .common import (
    DatasetError,
    LoadedDataset,
    entry_task,
    load_rubric,
    normalise_difficulty,
    one_as_list,
    read_json_file,
    resolve_inside,
)
from .loader_tail import select_and_check_decks

REGISTRY_DIR = "task_registry"
TASKS_FILE = "tasks.json"
DOWNLOAD_HINT = (
    "The PPT-Eval decks are not in the PPT-Eval git repository: they are downloaded separately "
    "(data/files/PowerPoint/files.txt lists the archive.org URLs; the repository's hydrate_data.py "
    "fetches them). Put them under <root>/data/files/PowerPoint/ or point option 'decks_dir' at "
    "the folder that holds them."
)
_ENTRY_KEYS = {"goal": str, "file_path": str}


def find_registry(root: Path) -> tuple[Path, Path]:
    """``(workspace_root, tasks.json)`` for a PPT-Eval checkout or its task_registry folder."""
    root = Path(root).expanduser()
    if (root / REGISTRY_DIR / TASKS_FILE).is_file():
        return root, root / REGISTRY_DIR / TASKS_FILE
    if (root / TASKS_FILE).is_file():  # root is the registry folder itself
        return root.parent, root / TASKS_FILE
    raise DatasetError(
        f"ppteval dataset: no {REGISTRY_DIR}/{TASKS_FILE} under {root} "
        "(option 'root' must be a checkout of microsoft/ppteval)"
    )


def _entry_problems(task_id: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{task_id!r}: entry must be an object"]
    problems = []
    for key, kind in _ENTRY_KEYS.items():
        if not isinstance(entry.get(key), kind) or not entry.get(key):
            problems.append(f"{task_id!r}: {key!r} must be a non-empty string")
    if "rubric_path" in entry and (not isinstance(entry["rubric_path"], str) or not entry["rubric_path"]):
        problems.append(f"{task_id!r}: 'rubric_path' must be a non-empty string")
    misc = entry.get("misc", {})
    if not isinstance(misc, dict):
        problems.append(f"{task_id!r}: 'misc' must be an object")
    tags = entry.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append(f"{task_id!r}: 'tags' must be a list of strings")
    return problems


def _extension(entry: dict[str, Any], where: str) -> dict[str, Any]:
    ext = entry.get("misc", {}).get("pptarena") or {}
    if not isinstance(ext, dict):
        raise DatasetError(f"{where}: misc.pptarena must be an object")
    category = ext.get("category")
    if isinstance(category, str):  # one category: a one-element list (list("Content") would split it)
        ext = {**ext, "category": [category]}
    elif category is not None and not (
        isinstance(category, list) and all(isinstance(c, str) for c in category)
    ):
        raise DatasetError(f"{where}: misc.pptarena.category must be a list of strings")
    for key in ("style_target", "edit_type", "target"):
        if ext.get(key) is not None and not isinstance(ext[key], str):
            raise DatasetError(f"{where}: misc.pptarena.{key} must be a string")
    return ext


def load_ppteval_tasks(
    root: Path,
    decks_dir: Path | None = None,
    difficulty: list[str] | tuple[str, ...] = (),
    ids: list[str] | tuple[str, ...] = (),
    check_decks: bool = True,
    semantics: str = "ppteval",
) -> list[Task]:
    """Read PPT-Eval's registry under ``root`` into tasks, in tasks.json order.

    Every entry and rubric is validated (one error lists all problems); then, unless
    ``check_decks`` is false, one error lists every missing deck. Each task's metadata says
    ``rubric_semantics = semantics``, which the ``rubric`` judge follows when its own option
    ``semantics`` is ``"auto"`` (the default).
    """
    workspace, tasks_file = find_registry(root)
    registry = read_json_file(tasks_file, what="PPT-Eval tasks.json")
    if not isinstance(registry, dict) or not registry:
        raise DatasetError(f"{tasks_file}: expected a non-empty object keyed by task id")
    wanted = {normalise_difficulty(d, where="option 'difficulty'") for d in difficulty}
    decks = Path(decks_dir).expanduser() if decks_dir is not None else None
    if decks is not None and not decks.is_dir():
        raise DatasetError(f"ppteval dataset: decks_dir {decks} is not a directory")

    tasks: list[Task] = []
    problems: list[str] = []
    for task_id, entry in registry.items():
        entry_problems = _entry_problems(task_id, entry)
        if entry_problems:
            problems.extend(entry_problems)
            continue
        where = f"{tasks_file} task {task_id!r}"
        try:
            misc = entry.get("misc", {})
            level = misc.get("difficulty")
            level = normalise_difficulty(level, where=where) if level is not None else None
            if wanted and level not in wanted:
                continue
            rubric = None
            if "rubric_path" in entry:  # always present in PPT-Eval; absent in exports of rubric-less tasks
                rubric = load_rubric(
                    resolve_inside(
                        workspace, entry["rubric_path"], root=workspace, what="rubric_path", where=where
                    ),
                    where=f"task {task_id}",
                )
            deck_rel = entry["file_path"]
            if decks is not None:
                original = decks / Path(deck_rel).name
            else:
                original = resolve_inside(workspace, deck_rel, root=workspace, what="file_path", where=where)
            ext = _extension(entry, where)
            metadata: dict[str, Any] = {
                "source": "ppteval",
                "rubric_semantics": semantics,
                "category": list(ext.get("category") or []),
                "tags": list(entry.get("tags", [])),
                "deck": Path(deck_rel).stem,
            }
            if level is not None:
                metadata["difficulty"] = level
            tasks.append(
                entry_task(
                    task_id,
                    entry["goal"],
                    original,
                    ext,
                    target_key="target",
                    what="misc.pptarena.target",
                    base=workspace,
                    where=where,
                    metadata=metadata,
                    rubric=rubric,
                )
            )
        except DatasetError as exc:
            problems.append(str(exc))
    if problems:
        raise DatasetError(
            f"ppteval dataset {tasks_file}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)
        )
    return select_and_check_decks(
        tasks,
        ids,
        source=f"ppteval dataset {tasks_file}",
        empty_error=f"ppteval dataset {tasks_file}: no task has difficulty {sorted(wanted)}",
        check_decks=check_decks,
        decks_source=f"{tasks_file}" + (f" with decks_dir {decks}" if decks is not None else ""),
        hint=DOWNLOAD_HINT,
    )


class PptEvalDataset(LoadedDataset):
    """PPT-Eval tasks with their rubric trees (see docs/datasets.md)."""

    fetch_description = staticmethod(fetchers.ppteval_description)  # arena dataset fetch ppteval
    fetch = staticmethod(fetchers.ppteval_fetch)

    class Options(BaseOptions):
        """Options of the ``ppteval`` dataset."""

        root: Path = Field(description="a PPT-Eval checkout (or its task_registry folder)")
        decks_dir: Path | None = Field(
            None, description="folder holding the decks (default: root/<file_path>)"
        )
        difficulty: list[str] = Field(
            default_factory=list, description='e.g. ["hard"]; case-insensitive; empty = all'
        )
        ids: list[str] = Field(default_factory=list, description="shell-style globs on task ids")
        rubric_semantics: Literal["ppteval", "corrected"] = Field(
            "ppteval",
            description="how the rubric judge (semantics = auto) grades these tasks: PPT-Eval's published "
            "semantics, so numbers compare with the paper, or pptarena's corrected ones",
        )

        _one_as_list = field_validator("difficulty", "ids", mode="before")(one_as_list)

    def load(self) -> list[Task]:
        """Read and validate every selected task (raises :class:`DatasetError`)."""
        o = self.options
        return load_ppteval_tasks(o.root, o.decks_dir, o.difficulty, o.ids, semantics=o.rubric_semantics)


@pptarena.hookimpl
def register_datasets(register):
    """Register the ``ppteval`` dataset."""
    register("ppteval", PptEvalDataset)
