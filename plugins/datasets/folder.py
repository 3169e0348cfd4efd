"""The ``folder`` dataset: your own tasks, one folder per task.

Layout (documented in docs/datasets.md)::

    root/
      <task_id>/
        task.toml        instruction, original, [target], [style_target | style_target_file],
                         [rubric], [metadata]
        original.pptx    (any name; paths are relative to the task folder)

Folders without a ``task.toml`` and names starting with ``.`` or ``_`` are ignored, so shared
assets can live next to the tasks (``root/_decks/``). Every path must stay inside ``root``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

import pptarena
from pptarena.types import Options as BaseOptions
from pptarena.types import Task

from .common import (
    MAX_INDEX_BYTES,
    DatasetError,
    LoadedDataset,
    load_rubric,
    normalise_difficulty,
    resolve_inside,
)
from .loader_tail import select_and_check_decks

TASK_FILE = "task.toml"
MAX_STYLE_TARGET_BYTES = 256 * 1024


class TaskMetadata(BaseModel):
    """The ``[metadata]`` table of a task.toml; unknown keys are kept as they are."""

    model_config = ConfigDict(extra="allow")

    category: list[str] = []
    edit_type: str | None = None
    difficulty: str | None = None

    @field_validator("category", mode="before")
    @classmethod
    def _one_category_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class TaskFile(BaseModel):
    """The schema of ``task.toml`` (unknown top-level keys are rejected)."""

    model_config = ConfigDict(extra="forbid")

    instruction: str
    original: str
    target: str | None = None
    style_target: str | None = None
    style_target_file: str | None = None
    rubric: str | None = None
    metadata: TaskMetadata = TaskMetadata()


def _format_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def read_task_folder(folder: Path, root: Path) -> Task:
    """Build one :class:`Task` from ``folder/task.toml`` (decks are not checked here)."""
    task_file = folder / TASK_FILE
    where = str(task_file)
    size = task_file.stat().st_size
    if size > MAX_INDEX_BYTES:
        raise DatasetError(f"{where} is {size} bytes, over the {MAX_INDEX_BYTES}-byte limit")
    try:
        raw = tomllib.loads(task_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{where} is not valid TOML: {exc}") from None
    try:
        spec = TaskFile.model_validate(raw)
    except ValidationError as exc:
        raise DatasetError(f"{where}: {_format_validation_error(exc)}") from None
    if not spec.instruction.strip():
        raise DatasetError(f"{where}: 'instruction' is empty")
    if spec.style_target is not None and spec.style_target_file is not None:
        raise DatasetError(f"{where}: give either 'style_target' or 'style_target_file', not both")

    def path_of(key: str, value: str) -> Path:
        return resolve_inside(folder, value, root=root, what=key, where=where)

    style_target = spec.style_target
    if spec.style_target_file is not None:
        style_path = path_of("style_target_file", spec.style_target_file)
        if not style_path.is_file():
            raise DatasetError(f"{where}: style_target_file {style_path} does not exist")
        if style_path.stat().st_size > MAX_STYLE_TARGET_BYTES:
            raise DatasetError(f"{where}: style_target_file {style_path} is over 256 kB")
        style_target = style_path.read_text(encoding="utf-8")

    rubric = None
    if spec.rubric is not None:
        rubric = load_rubric(path_of("rubric", spec.rubric), where=f"task {folder.name}")

    metadata = spec.metadata.model_dump(exclude_none=True)
    if "difficulty" in metadata:
        metadata["difficulty"] = normalise_difficulty(metadata["difficulty"], where=where)
    metadata.setdefault("source", "folder")
    return Task(
        id=folder.name,
        instruction=spec.instruction,
        original=path_of("original", spec.original),
        target=path_of("target", spec.target) if spec.target is not None else None,
        style_target=style_target,
        rubric=rubric,
        metadata=metadata,
    )


def load_folder_tasks(root: Path, ids: list[str] | tuple[str, ...] = ()) -> list[Task]:
    """Read every task under ``root``, validate it and check its decks exist.

    Raises :class:`DatasetError` listing every broken task file, or every missing deck.
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DatasetError(f"folder dataset: root {root} is not a directory")
    folders = sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and (p / TASK_FILE).is_file()
    )
    if not folders:
        raise DatasetError(f"folder dataset: no tasks under {root} (expected {root}/<task_id>/{TASK_FILE})")
    tasks: list[Task] = []
    problems: list[str] = []
    for folder in folders:
        try:
            tasks.append(read_task_folder(folder, root))
        except DatasetError as exc:
            problems.append(str(exc))
    if problems:
        raise DatasetError(f"folder dataset {root}: {len(problems)} broken task(s):\n" + "\n".join(problems))
    source = f"folder dataset {root}"
    return select_and_check_decks(tasks, ids, source=source, decks_source=source)


class FolderDataset(LoadedDataset):
    """Tasks from ``root/<task_id>/task.toml`` folders (see docs/datasets.md)."""

    class Options(BaseOptions):
        """Options of the ``folder`` dataset."""

        root: Path = Field(description="folder holding one sub-folder with a task.toml per task")
        ids: list[str] = Field(default_factory=list, description="shell-style globs on task ids; empty = all")

    def load(self) -> list[Task]:
        """Read and validate every selected task (raises :class:`DatasetError`)."""
        return load_folder_tasks(self.options.root, self.options.ids)


@pptarena.hookimpl
def register_datasets(register):
    """Register the ``folder`` dataset."""
    register("folder", FolderDataset)
