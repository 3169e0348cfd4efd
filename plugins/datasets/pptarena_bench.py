"""The ``pptarena`` dataset: PPTArena's ``evaluation_pairs_refined.json`` (100 cases).

``root`` is the dataset folder (the Hugging Face layout: the index at the root next to
``Original/`` and ``GroundTruth/``). The GitHub layout, with the index in ``src/`` and deck
paths relative to the repository root, is found too. Deck paths are joined to ``root``
exactly as written: real names have leading spaces, ``&`` and typos, and are never "fixed".

Task id: ``case-<N>`` when the case name starts with ``Case N:``, otherwise a stable slug of the
name. Options select a subset file (e.g. ``agent_bench/subset25.json``, the 25-case hard
subset), categories and edit types.

Each task describes PPTArena's leaderboard splits in ``metadata["leaderboard"]`` (the block
:mod:`pptarena.run.statistics.split_figures` reads): the Full Set (every case of the index) unless the run
is limited to the subset, the subset the ``subset`` option names, and the sizes of each split and
of its categories (Content, Layout, Styling, Structure, Interactivity) in the benchmark, so the
leaderboard counts a case the run did not cover as 0, as PPTArena's does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

import pptarena
from pptarena.types import Options as BaseOptions
from pptarena.types import Task

from . import fetchers
from .common import (
    DatasetError,
    LoadedDataset,
    check_unique_ids,
    entry_task,
    one_as_list,
    read_json_file,
    resolve_inside,
    slugify,
)
from .loader_tail import select_and_check_decks

INDEX_FILE = "evaluation_pairs_refined.json"
_CASE_NAME = re.compile(r"^\s*Case\s+(\d+)\s*:", re.IGNORECASE)
_REQUIRED = ("name", "prompt", "original")


def case_id(name: str) -> str:
    """The task id of a case: ``case-<N>`` for ``"Case N: ..."``, else a slug of the name.

    >>> case_id("Case 12: Fix Image & Text Overflow")
    'case-12'
    >>> case_id("Climate deck: recolour")
    'climate-deck-recolour'
    """
    match = _CASE_NAME.match(name)
    if match:
        return f"case-{int(match.group(1))}"
    slug = slugify(name)
    if not slug:
        raise DatasetError(f"case name {name!r} has no letters or digits to make an id from")
    return slug


def find_index(root: Path, index: str | None = None) -> tuple[Path, Path]:
    """``(deck_root, index_file)``: the index at ``root`` or (GitHub layout) in ``root/src``."""
    root = Path(root).expanduser()
    if index is not None:
        path = resolve_inside(root, index, root=root, what="option 'index'", where="pptarena dataset")
        return root, path
    for candidate in (root / INDEX_FILE, root / "src" / INDEX_FILE):
        if candidate.is_file():
            return root, candidate
    raise DatasetError(
        f"pptarena dataset: no {INDEX_FILE} in {root} or {root / 'src'} "
        "(option 'root' must be the PPTArena dataset folder)"
    )


def _case_problems(i: int, case: Any) -> list[str]:
    if not isinstance(case, dict):
        return [f"entry {i}: must be an object"]
    problems = [
        f"entry {i}: {key!r} must be a non-empty string"
        for key in _REQUIRED
        if not isinstance(case.get(key), str) or not case.get(key)
    ]
    gt = case.get("ground_truth")
    if gt is not None and (not isinstance(gt, str) or not gt):
        problems.append(f"entry {i}: 'ground_truth' must be a non-empty string or null")
    if case.get("style_target") is not None and not isinstance(case["style_target"], str):
        problems.append(f"entry {i}: 'style_target' must be a string")
    cat = case.get("category", [])
    if not isinstance(cat, str) and not (isinstance(cat, list) and all(isinstance(c, str) for c in cat)):
        problems.append(f"entry {i}: 'category' must be a list of strings")
    if case.get("edit_type") is not None and not isinstance(case["edit_type"], str):
        problems.append(f"entry {i}: 'edit_type' must be a string")
    return problems


def read_subset(path: Path) -> list[str]:
    """Case names (or task ids) listed in a subset file.

    Accepted shapes: a list of names, a list of objects with ``name``, or an object whose
    ``names`` / ``cases`` / ``subset`` key holds such a list.
    """
    data = read_json_file(path, what="PPTArena subset file")
    if isinstance(data, dict):
        for key in ("names", "cases", "subset"):
            if key in data:
                data = data[key]
                break
    if not isinstance(data, list):
        raise DatasetError(f"subset file {path}: expected a list of case names")
    names = []
    for item in data:
        if isinstance(item, dict):
            item = item.get("name")
        if not isinstance(item, str):
            raise DatasetError(f"subset file {path}: entry {item!r} is not a case name")
        names.append(item)
    return names


def load_pptarena_tasks(
    root: Path,
    *,
    index: str | None = None,
    subset: Path | None = None,
    categories: list[str] | tuple[str, ...] = (),
    edit_types: list[str] | tuple[str, ...] = (),
    ids: list[str] | tuple[str, ...] = (),
    check_decks: bool = True,
    subset_only: bool = True,
) -> list[Task]:
    """Read the PPTArena index into tasks (index order), filter, and check the decks.

    With ``subset`` and ``subset_only=False`` every case is kept and the subset's are only marked
    (``metadata["subset"]``), so the leaderboard figures cover the Full Set and the subset.

    Category and edit-type filters are case-insensitive; a case is kept when any of its
    categories is wanted. Raises :class:`DatasetError` with every problem of the index, or
    one error listing every missing deck.
    """
    deck_root, index_file = find_index(root, index)
    cases = read_json_file(index_file, what="PPTArena index")
    if not isinstance(cases, list) or not cases:
        raise DatasetError(f"{index_file}: expected a non-empty JSON list of cases")
    problems = [p for i, case in enumerate(cases) for p in _case_problems(i, case)]
    if problems:
        raise DatasetError(
            f"PPTArena index {index_file}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)
        )

    tasks: list[Task] = []
    for i, case in enumerate(cases):
        where = f"{index_file} entry {i} ({case['name']!r})"
        category = case.get("category", [])
        metadata: dict[str, Any] = {
            "source": "pptarena",
            "name": case["name"],
            "category": [category] if isinstance(category, str) else list(category),
        }
        try:
            task_id = case_id(case["name"])
            original = resolve_inside(
                deck_root, case["original"], root=deck_root, what="original", where=where
            )
            tasks.append(
                entry_task(
                    task_id,
                    case["prompt"],
                    original,
                    case,
                    target_key="ground_truth",
                    base=deck_root,
                    where=where,
                    metadata=metadata,
                )
            )
        except DatasetError as exc:
            problems.append(str(exc))
    if problems:
        raise DatasetError(f"PPTArena index {index_file}:\n  " + "\n  ".join(problems))
    check_unique_ids(tasks, source=f"PPTArena index {index_file}")

    source = f"PPTArena index {index_file}"
    if subset is not None:
        subset_path = Path(subset).expanduser()
        if not subset_path.is_absolute():
            subset_path = deck_root / subset_path
        names = read_subset(subset_path)
        by_key = {t.metadata["name"]: t for t in tasks} | {t.id: t for t in tasks}
        unknown = [n for n in names if n not in by_key]
        if unknown:
            raise DatasetError(
                f"subset file {subset_path}: {len(unknown)} name(s) not in {index_file}: {unknown}"
            )
        keep = {by_key[n].id for n in names}
        members = [t for t in tasks if t.id in keep]
        for t in members:
            t.metadata["subset"] = subset_path.stem
        describe_splits(tasks, members, subset_path.stem, full=not subset_only)
        if subset_only:
            tasks = members
            source += f" (subset {subset_path})"
    else:
        describe_splits(tasks, [], None, full=True)
    tasks = _filter(tasks, "category", categories, source)
    tasks = _filter(tasks, "edit_type", edit_types, source)
    return select_and_check_decks(
        tasks,
        ids,
        source=source,
        check_decks=check_decks,
        decks_source=f"{source}, deck paths relative to {deck_root}",
        hint=DOWNLOAD_HINT,
    )


LEADERBOARD_CATEGORIES = ("Content", "Layout", "Styling", "Structure", "Interactivity")


def _split_size(title: str, tasks: list[Task]) -> dict[str, Any]:
    counts = {c: sum(1 for t in tasks if c in t.metadata["category"]) for c in LEADERBOARD_CATEGORIES}
    return {"title": title, "cases": len(tasks), "categories": counts}


def describe_splits(tasks: list[Task], members: list[Task], subset: str | None, *, full: bool) -> None:
    """Write ``metadata["leaderboard"]`` on every task of the index (see the module docstring).

    ``tasks``: every case of the index; ``members``: the subset's; ``full``: whether the run covers
    the Full Set (False when it is limited to the subset, which PPTArena shows on the subset view only).
    """
    sizes: dict[str, Any] = {}
    if full:
        sizes["full"] = _split_size("Full Set", tasks)
    if subset is not None:
        sizes[subset] = _split_size(f"Subset {subset}", members)
    in_subset = {t.id for t in members}
    for t in tasks:
        splits = (["full"] if full else []) + ([subset] if subset is not None and t.id in in_subset else [])
        t.metadata["leaderboard"] = {
            "splits": splits,
            "categories": [c for c in LEADERBOARD_CATEGORIES if c in t.metadata["category"]],
            "sizes": sizes,
        }


def _filter(tasks: list[Task], key: str, wanted: Iterable[str], source: str) -> list[Task]:
    wanted_lower = {w.strip().lower() for w in wanted}
    if not wanted_lower:
        return tasks

    def values(task: Task) -> set[str]:
        value = task.metadata.get(key)
        items = value if isinstance(value, list) else [value] if value else []
        return {v.strip().lower() for v in items}

    known = set().union(*(values(t) for t in tasks)) if tasks else set()
    unknown = sorted(wanted_lower - known)
    if unknown:
        raise DatasetError(f"{source}: no case has {key} {unknown} (known: {sorted(known)})")
    return [t for t in tasks if values(t) & wanted_lower]


DOWNLOAD_HINT = (
    "PPTArena's decks come with the dataset (https://huggingface.co/datasets/mofengenden/PPTArena); "
    "point option 'root' at the folder holding evaluation_pairs_refined.json and the deck folders, "
    "with names exactly as the index writes them."
)


class PptArenaDataset(LoadedDataset):
    """PPTArena cases with their human ground-truth decks (see docs/datasets.md)."""

    fetch_description = staticmethod(fetchers.pptarena_description)  # arena dataset fetch pptarena
    fetch = staticmethod(fetchers.pptarena_fetch)

    class Options(BaseOptions):
        """Options of the ``pptarena`` dataset."""

        root: Path = Field(description="the PPTArena folder (evaluation_pairs_refined.json and the decks)")
        index: str | None = Field(
            None, description="index file relative to root; default: found automatically"
        )
        subset: str | None = Field(
            None, description='subset file, e.g. "agent_bench/subset25.json" (relative to root, or absolute)'
        )
        subset_only: bool = Field(
            True,
            description="run only the subset's cases (false: run every case; the leaderboard then "
            "gives the Full Set's and the subset's figures)",
        )
        categories: list[str] = Field(
            default_factory=list, description='e.g. ["Layout", "Styling"]; case-insensitive'
        )
        edit_types: list[str] = Field(default_factory=list, description='e.g. ["Charts"]; case-insensitive')
        ids: list[str] = Field(
            default_factory=list, description='shell-style globs on task ids, e.g. ["case-1?"]'
        )

        _one_as_list = field_validator("categories", "edit_types", "ids", mode="before")(one_as_list)

    def load(self) -> list[Task]:
        """Read and validate every selected task (raises :class:`DatasetError`)."""
        o = self.options
        return load_pptarena_tasks(
            o.root,
            index=o.index,
            subset=o.subset,
            subset_only=o.subset_only,
            categories=o.categories,
            edit_types=o.edit_types,
            ids=o.ids,
        )


@pptarena.hookimpl
def register_datasets(register):
    """Register the ``pptarena`` dataset."""
    register("pptarena", PptArenaDataset)
