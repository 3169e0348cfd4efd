"""Helpers shared by the built-in datasets.

Everything here is about turning untrusted files on disk into :class:`pptarena.types.Task`
objects: bounded JSON/TOML reading, task-id slugs, id filters, the "missing decks" error and
validation of rubrics in the PPT-Eval JSON format (see docs/datasets.md).
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pptarena.rubric_code import strip_code_fence
from pptarena.types import Component, PptArenaError, Task

#: Largest index / registry / task file we read (bytes).
MAX_INDEX_BYTES = 32 * 1024 * 1024
#: Largest rubric JSON file we read (bytes). Published PPT-Eval rubrics are < 30 kB.
MAX_RUBRIC_BYTES = 2 * 1024 * 1024
#: Largest ``function_code`` of one rubric leaf (characters).
MAX_LEAF_CODE_CHARS = 200_000
#: Most nodes and deepest nesting a rubric tree may have (the rubric judge refuses more than 500 nodes).
MAX_RUBRIC_NODES = 500
MAX_RUBRIC_DEPTH = 16
#: Scorer types a rubric leaf may use (ai-rubric's registry).
SCORER_TYPES = ("function", "llm")

DIFFICULTIES = ("easy", "medium", "hard")


class DatasetError(PptArenaError, ValueError):
    """A dataset cannot be loaded: the message names the file and the problem."""


# --------------------------------------------------------------------------- reading files


def read_json_file(path: Path, *, what: str, limit: int = MAX_INDEX_BYTES) -> Any:
    """Parse a JSON file no larger than ``limit`` bytes, or raise :class:`DatasetError`."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DatasetError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise DatasetError(f"cannot read {what} {path}: {exc}") from None
    if size > limit:
        raise DatasetError(f"{what} {path} is {size} bytes, more than the {limit}-byte limit")
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{what} {path} is not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{what} {path} is not valid JSON: {exc}") from None


def resolve_inside(base: Path, relative: str, *, root: Path, what: str, where: str) -> Path:
    """``base / relative`` (exactly as written, no trimming), refusing paths that leave ``root``.

    ``where`` names the file the path came from, for the error message.
    """
    if not isinstance(relative, str) or not relative:
        raise DatasetError(f"{where}: {what} must be a non-empty string, got {relative!r}")
    if "\x00" in relative:
        raise DatasetError(f"{where}: {what} {relative!r} contains a NUL character")
    candidate = Path(relative)
    if candidate.is_absolute():
        raise DatasetError(f"{where}: {what} {relative!r} must be relative, not absolute")
    path = Path(os.path.normpath(base / candidate))  # drop "x/../" but keep names exactly as written
    resolved_root = root.resolve()
    resolved = path.resolve()
    if resolved != resolved_root and resolved_root not in resolved.parents:
        raise DatasetError(f"{where}: {what} {relative!r} points outside {root}")
    return path


def entry_task(
    task_id: str,
    instruction: str,
    original: Path,
    fields: Mapping[str, Any],
    *,
    target_key: str,
    base: Path,
    where: str,
    metadata: dict[str, Any],
    rubric: dict[str, Any] | None = None,
    what: str | None = None,
) -> Task:
    """The task of one index entry that carries PPTArena's fields.

    ``fields[target_key]`` is the optional target deck, a path inside ``base`` (``what`` names it in
    errors; default ``target_key``); ``fields["style_target"]`` the style target;
    ``fields["edit_type"]``, when set, is added last to ``metadata``. Raises :class:`DatasetError`
    when the target path leaves ``base``.
    """
    target = None
    if fields.get(target_key):
        target = resolve_inside(base, fields[target_key], root=base, what=what or target_key, where=where)
    if fields.get("edit_type"):
        metadata["edit_type"] = fields["edit_type"]
    return Task(
        id=task_id,
        instruction=instruction,
        original=original,
        target=target,
        style_target=fields.get("style_target"),
        rubric=rubric,
        metadata=metadata,
    )


# --------------------------------------------------------------------------- ids and filters

_SLUG_DROP = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """A stable, lower-case ASCII slug: runs of other characters become one ``-``.

    >>> slugify("  Fix Image&Text Overflow (B) ")
    'fix-image-text-overflow-b'
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _SLUG_DROP.sub("-", ascii_text.lower()).strip("-")


def matches_any(value: str, patterns: Sequence[str]) -> bool:
    """True when ``value`` matches one of the shell-style ``patterns`` (case-sensitive)."""
    return any(fnmatch.fnmatchcase(value, pattern) for pattern in patterns)


def select_ids(tasks: list[Task], patterns: Sequence[str], *, source: str) -> list[Task]:
    """Keep tasks whose id matches a glob in ``patterns`` (all when empty).

    A pattern that selects nothing is an error (it is almost always a typo).
    """
    if not patterns:
        return tasks
    unused = [p for p in patterns if not any(fnmatch.fnmatchcase(t.id, p) for t in tasks)]
    if unused:
        sample = ", ".join(t.id for t in tasks[:8])
        raise DatasetError(
            f"{source}: option 'ids' pattern(s) {unused} match no task id (ids look like: {sample})"
        )
    return [t for t in tasks if matches_any(t.id, patterns)]


def one_as_list(value: Any) -> Any:
    """Option validator helper: a single string stands for a one-element list."""
    return [value] if isinstance(value, str) else value


def normalise_difficulty(value: Any, *, where: str) -> str:
    """``"Easy"`` / ``"easy"`` → ``"easy"``; anything outside easy/medium/hard is an error."""
    text = str(value).strip().lower()
    if text not in DIFFICULTIES:
        raise DatasetError(f"{where}: difficulty {value!r} is not one of {', '.join(DIFFICULTIES)}")
    return text


def check_unique_ids(tasks: Iterable[Task], *, source: str) -> None:
    """Raise one error naming every task id that occurs more than once."""
    seen: dict[str, int] = {}
    for task in tasks:
        seen[task.id] = seen.get(task.id, 0) + 1
    duplicates = sorted(i for i, n in seen.items() if n > 1)
    if duplicates:
        raise DatasetError(f"{source}: duplicate task ids {duplicates}")


# --------------------------------------------------------------------------- decks


def check_decks_exist(tasks: Iterable[Task], *, source: str, hint: str = "") -> None:
    """Raise ONE error listing every missing original/target deck of ``tasks``.

    ``source`` says where the dataset comes from (e.g. the index file); ``hint`` is appended
    (e.g. how to download the decks).
    """
    missing: list[str] = []
    seen: set[Path] = set()
    for task in tasks:
        for role, path in (("original", task.original), ("target", task.target)):
            if path is None or path in seen:
                continue
            seen.add(path)
            if not path.is_file():
                missing.append(f"  {path}  ({role} of {task.id})")
    if missing:
        message = f"{len(missing)} deck(s) missing for the dataset from {source}:\n" + "\n".join(missing)
        if hint:
            message += "\n" + hint
        raise DatasetError(message)


# --------------------------------------------------------------------------- rubrics


def rubric_problems(data: Any, *, max_nodes: int = MAX_RUBRIC_NODES) -> list[str]:
    """Every schema problem of a PPT-Eval rubric (``{"root": node, "metadata": {...}}``).

    Mirrors ai-rubric's loader: a node with ``scorer`` is a leaf (any ``children`` ignored),
    otherwise it needs a non-empty ``children`` list; node names are unique; function leaves
    carry ``function_code`` that parses as Python and defines ``compute_score``. Returns an
    empty list for a valid rubric.
    """
    problems: list[str] = []
    if not isinstance(data, dict):
        return [f"top level must be an object with 'root', got {type(data).__name__}"]
    if "root" not in data:
        return ["top level has no 'root' node"]
    if "metadata" in data and not isinstance(data["metadata"], dict):
        problems.append("'metadata' must be an object")
    names: dict[str, int] = {}
    count = 0

    def visit(node: Any, path: str, depth: int) -> None:
        nonlocal count
        count += 1
        if count > max_nodes:
            if count == max_nodes + 1:
                problems.append(f"more than {max_nodes} nodes")
            return
        if depth > MAX_RUBRIC_DEPTH:
            problems.append(f"{path}: nested deeper than {MAX_RUBRIC_DEPTH} levels")
            return
        if not isinstance(node, dict):
            problems.append(f"{path}: node must be an object, got {type(node).__name__}")
            return
        name = node.get("name")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{path}: 'name' must be a non-empty string")
            label = path
        else:
            names[name] = names.get(name, 0) + 1
            label = f"{path} ({name!r})"
        if "description" in node and not isinstance(node["description"], str):
            problems.append(f"{label}: 'description' must be a string")
        if "is_critical" in node and not isinstance(node["is_critical"], bool):
            problems.append(f"{label}: 'is_critical' must be true or false")
        if "metadata" in node and not isinstance(node["metadata"], dict):
            problems.append(f"{label}: 'metadata' must be an object")
        if "scorer" in node:
            problems.extend(_scorer_problems(node["scorer"], label))
        elif "children" in node:
            children = node["children"]
            if not isinstance(children, list) or not children:
                problems.append(f"{label}: 'children' must be a non-empty list")
                return
            for i, child in enumerate(children):
                visit(child, f"{path}.children[{i}]", depth + 1)
        else:
            problems.append(f"{label}: node must have either 'children' or 'scorer'")

    visit(data["root"], "root", 0)
    for name, n in names.items():
        if n > 1:
            problems.append(f"node name {name!r} is used {n} times (names must be unique)")
    return problems


def _scorer_problems(scorer: Any, label: str) -> list[str]:
    if not isinstance(scorer, dict):
        return [f"{label}: 'scorer' must be an object"]
    kind = scorer.get("type")
    if kind not in SCORER_TYPES:
        return [f"{label}: unsupported scorer type {kind!r} (expected one of {list(SCORER_TYPES)})"]
    if kind == "llm":
        return [
            f"{label}: llm scorer needs a string {key!r}"
            for key in ("system_prompt", "user_prompt")
            if not isinstance(scorer.get(key), str)
        ]
    code = scorer.get("function_code")
    if not isinstance(code, str) or not code.strip():
        return [f"{label}: function scorer needs a non-empty 'function_code' string"]
    if len(code) > MAX_LEAF_CODE_CHARS:
        return [f"{label}: function_code is {len(code)} characters, over {MAX_LEAF_CODE_CHARS}"]
    try:
        module = ast.parse(strip_code_fence(code))
    except SyntaxError as exc:
        return [f"{label}: function_code is not valid Python (line {exc.lineno}: {exc.msg})"]
    defines = any(
        isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == "compute_score"
        for stmt in module.body
    )
    if not defines:
        return [f"{label}: function_code does not define a top-level compute_score()"]
    return []


def load_rubric(path: Path, *, where: str) -> dict[str, Any]:
    """Read and validate one PPT-Eval rubric file; the dict is returned unmodified."""
    data = read_json_file(path, what=f"rubric of {where}", limit=MAX_RUBRIC_BYTES)
    problems = rubric_problems(data)
    if problems:
        raise DatasetError(f"rubric {path} ({where}) is invalid:\n  " + "\n  ".join(problems))
    return data


class LoadedDataset(Component):
    """A dataset whose tasks are loaded and validated once, on first use, by :meth:`load`."""

    def __init__(self, options: Any, context: Any):
        super().__init__(options, context)
        self._tasks: list[Task] | None = None

    def load(self) -> list[Task]:
        """Read and validate every selected task (raises :class:`DatasetError`)."""
        raise NotImplementedError

    def tasks(self) -> Iterable[Task]:
        """All selected tasks, validated eagerly on the first call (raises :class:`DatasetError`)."""
        if self._tasks is None:
            self._tasks = self.load()
        return list(self._tasks)
