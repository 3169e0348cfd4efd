"""The ``tsbench`` dataset: TSBench (Talk-to-Your-Slides) editing instructions.

``root`` is the dataset folder (Hugging Face ``Kyudan/TSBench``, or PPTPilot's ``src/tsbench``):
``expanded_instruction_379.json`` maps a prompt id to its instruction text, in file order; the
deck of prompt ``<base>-<n>`` is ``benchmark_ppts/slide_<base>.pptx``. Every missing deck is named
in one error. ``{slide_num}`` placeholders are removed as PPTPilot's TSBench harness does
(``slide_num = "keep"`` leaves them); the raw text stays in ``metadata.raw_instruction``.

The Hard subset is selected with ``subset = "hard"`` (or excluded with ``"standard"``) from the
file named by ``hard_file``. Its exact upstream format is not published in a form we could read,
so the loader accepts what secondary sources describe: an object ``id → instruction`` or
``id → {"instruction": ..., "ideal_description": ...}``, or a list of such records with ``id``
(or a list of ids). Hard records that are not in the main file are added as tasks of their own;
an ``ideal_description`` (the reference outcome TSBench's judge receives) becomes the task's
``style_target`` (shown to judges, never to the agent).

TSBench ships **no target decks**: judge it with ``dual`` (or another model judge); the
``structural`` judge needs a target and says so for every TSBench task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

import pptarena
from pptarena.types import Options as BaseOptions
from pptarena.types import Task

from .common import DatasetError, LoadedDataset, one_as_list, read_json_file
from .loader_tail import select_and_check_decks

INSTRUCTIONS_FILE = "expanded_instruction_379.json"
DECKS_DIR = "benchmark_ppts"
MAX_TEXT = 20_000
NO_TARGET = "TSBench ships no target decks (it is judged reference-free, by a model judge such as dual)"
DOWNLOAD_HINT = (
    "TSBench's decks are in the Hugging Face dataset Kyudan/TSBench: `huggingface-cli download "
    "Kyudan/TSBench --repo-type dataset --local-dir <root>` puts them under <root>/benchmark_ppts/."
)
_PLACEHOLDER = re.compile(r"\s*\{slide_num\}")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: instruction must be a non-empty string")
    if len(value) > MAX_TEXT:
        raise DatasetError(f"{where}: instruction is longer than {MAX_TEXT} characters")
    return value


def _records(data: Any, where: str) -> dict[str, dict[str, Any]]:
    """``id → {"instruction"?: str, "ideal_description"?: str, "category"?: str}`` from any accepted shape."""
    out: dict[str, dict[str, Any]] = {}
    if isinstance(data, dict):
        items: Iterable[tuple[Any, Any]] = data.items()
    elif isinstance(data, list):
        items = ((r.get("id") if isinstance(r, dict) else r, r if isinstance(r, dict) else {}) for r in data)
    else:
        raise DatasetError(f"{where}: expected a JSON object or list, got {type(data).__name__}")
    for key, value in items:
        key = str(key) if isinstance(key, str | int) else key
        if not isinstance(key, str) or not _ID.match(key):
            raise DatasetError(f"{where}: bad prompt id {key!r}")
        if key in out:
            raise DatasetError(f"{where}: prompt id {key!r} appears twice")
        record: dict[str, Any] = {}
        if isinstance(value, str):
            record["instruction"] = _text(value, f"{where} {key!r}")
        elif isinstance(value, dict):
            text = value.get("instruction", value.get("prompt"))
            if text is not None:
                record["instruction"] = _text(text, f"{where} {key!r}")
            for field in ("ideal_description", "category"):
                if value.get(field) is not None:
                    if not isinstance(value[field], str):
                        raise DatasetError(f"{where} {key!r}: {field} must be a string")
                    record[field] = value[field]
        else:
            raise DatasetError(f"{where} {key!r}: expected an instruction string or an object")
        out[key] = record
    return out


def load_tsbench(
    root: Path,
    *,
    instructions: str = INSTRUCTIONS_FILE,
    subset: str = "all",
    hard_file: str | None = None,
    slide_num: str = "remove",
    ids: list[str] | tuple[str, ...] = (),
    check_decks: bool = True,
) -> list[Task]:
    """Read TSBench under ``root`` into tasks (see the module docstring)."""
    root = Path(root).expanduser()
    main_file = root / instructions
    main = _records(read_json_file(main_file, what="TSBench instruction file"), str(main_file))
    if not main:
        raise DatasetError(f"{main_file}: no instructions")
    missing_text = [k for k, r in main.items() if "instruction" not in r]
    if missing_text:
        raise DatasetError(f"{main_file}: records without instruction text: {missing_text[:10]}")
    hard: dict[str, dict[str, Any]] = {}
    if hard_file:
        hard_path = root / hard_file if not Path(hard_file).is_absolute() else Path(hard_file)
        hard = _records(read_json_file(hard_path, what="TSBench Hard subset file"), str(hard_path))
        unknown = [k for k, r in hard.items() if k not in main and "instruction" not in r]
        if unknown:
            raise DatasetError(
                f"{hard_path}: ids {unknown[:10]} are not in {instructions} and carry no instruction"
            )
    elif subset != "all":
        raise DatasetError(
            f"tsbench dataset: subset {subset!r} needs option 'hard_file' (the Hard subset's file)"
        )

    merged = dict(main)
    for key, record in hard.items():
        merged[key] = {**merged.get(key, {}), **record}
    tasks: list[Task] = []
    for key, record in merged.items():
        is_hard = key in hard
        if (subset == "hard" and not is_hard) or (subset == "standard" and is_hard):
            continue
        raw = record["instruction"]
        text = _PLACEHOLDER.sub("", raw).strip() if slide_num == "remove" else raw
        base = key.split("-")[0]
        metadata: dict[str, Any] = {
            "source": "tsbench",
            "raw_instruction": raw,
            "deck": f"slide_{base}",
            "hard": is_hard,
            "category": [record["category"]] if record.get("category") else [],
            "no_target_reason": NO_TARGET,
        }
        notes = root / DECKS_DIR / "notes" / f"slide_{base}"
        if notes.is_dir():
            metadata["notes_dir"] = str(notes)
        if is_hard:
            metadata["difficulty"] = "hard"
        tasks.append(
            Task(
                id=key,
                instruction=text,
                original=root / DECKS_DIR / f"slide_{base}.pptx",
                style_target=record.get("ideal_description"),
                metadata=metadata,
            )
        )
    if not tasks:
        raise DatasetError(f"tsbench dataset {root}: subset {subset!r} selects no task")
    return select_and_check_decks(
        tasks,
        ids,
        source=f"tsbench dataset {main_file}",
        check_decks=check_decks,
        decks_source=str(main_file),
        hint=DOWNLOAD_HINT,
    )


class TsbenchDataset(LoadedDataset):
    """TSBench instructions over its decks (see docs/datasets.md, "tsbench")."""

    class Options(BaseOptions):
        """Options of the ``tsbench`` dataset."""

        root: Path = Field(description="the TSBench folder (expanded_instruction_379.json, benchmark_ppts/)")
        instructions: str = Field(INSTRUCTIONS_FILE, description="the instruction file under root")
        subset: Literal["all", "hard", "standard"] = Field(
            "all", description="all tasks, the Hard subset, or the rest"
        )
        hard_file: str | None = Field(None, description="the Hard subset's file (under root, or absolute)")
        slide_num: Literal["remove", "keep"] = Field(
            "remove", description="what to do with {slide_num} placeholders"
        )
        ids: list[str] = Field(default_factory=list, description="shell-style globs on prompt ids")

        _one_as_list = field_validator("ids", mode="before")(one_as_list)

    def load(self) -> list[Task]:
        """Read and validate every selected task (raises :class:`DatasetError`)."""
        o = self.options
        return load_tsbench(
            o.root,
            instructions=o.instructions,
            subset=o.subset,
            hard_file=o.hard_file,
            slide_num=o.slide_num,
            ids=o.ids,
        )


@pptarena.hookimpl
def register_datasets(register):
    """Register the ``tsbench`` dataset."""
    register("tsbench", TsbenchDataset)
