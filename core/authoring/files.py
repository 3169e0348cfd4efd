"""Task folders for the authoring commands: finding tasks, writing task.toml, setting keys.

The folder format is the ``folder`` dataset's (docs/datasets.md): ``root/<task_id>/task.toml``.
Tasks are loaded through the plugin registry (the core never imports a plugin), so every
validation the dataset does (paths inside the root, rubric schema...) applies here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptarena.authoring.llm import AuthorError
from pptarena.types import ComponentContext, PptArenaError, Task

TASK_FILE = "task.toml"
MAX_TASK_FILE_BYTES = 1024 * 1024


@dataclass
class TaskRef:
    """A loaded task and, when it lives in a task folder, that folder (where drafts are written)."""

    task: Task
    folder: Path | None = None


def _no_models(ref: str) -> Any:
    raise AuthorError(f"model {ref!r} requested while loading tasks; datasets get no models here")


def load_dataset_tasks(registry: Any, use: str, options: dict[str, Any], cache_dir: Path) -> list[Task]:
    """The tasks of dataset ``use`` built through the registry with ``options``."""
    context = ComponentContext(cache_dir=cache_dir, model=_no_models, name=use, label=use)
    try:
        return list(registry.create("datasets", use, options, context).tasks())
    except (PptArenaError, ValueError, LookupError, OSError) as exc:
        raise AuthorError(str(exc)) from exc


def load_task_folder(registry: Any, folder: Path, cache_dir: Path) -> TaskRef:
    """The task in ``folder`` (which holds task.toml), loaded by the ``folder`` dataset rooted at
    its parent.
    """
    folder = Path(folder).expanduser().resolve()
    if not (folder / TASK_FILE).is_file():
        raise AuthorError(f"{folder} is not a task folder (no {TASK_FILE})")
    tasks = load_dataset_tasks(registry, "folder", {"root": folder.parent, "ids": [folder.name]}, cache_dir)
    return TaskRef(tasks[0], folder)


def task_folder_of(task: Task, root: Path | None) -> Path | None:
    """The folder a task was read from: ``root/<id>`` when it has a task.toml, else the target's
    folder when that does.
    """
    for candidate in ([Path(root) / task.id] if root is not None else []) + (
        [task.target.parent] if task.target is not None else []
    ):
        if (candidate / TASK_FILE).is_file() and candidate.name == task.id:
            return candidate
    return None


def dataset_root(config: Any, cache_dir: Path) -> Path | None:
    """The folder a config's dataset reads task folders from (``root`` option), if it has one."""
    root = getattr(config.dataset.options, "root", None)
    return Path(root) if root is not None else None


def load_config_tasks(env: Any, ids: list[str] | None = None) -> list[TaskRef]:
    """The tasks of the run config behind ``env`` (all, or those matching the ``ids`` globs)."""
    import fnmatch

    comp = env.components.config.dataset
    try:
        tasks = list(env.components.build(comp).tasks())
    except (PptArenaError, ValueError, OSError) as exc:
        raise AuthorError(str(exc)) from exc
    if ids:
        missing = [p for p in ids if not any(fnmatch.fnmatchcase(t.id, p) for t in tasks)]
        if missing:
            sample = ", ".join(t.id for t in tasks[:8])
            raise AuthorError(
                f"task id(s) {missing} match no task of the config's dataset (ids look like: {sample})"
            )
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.id, p) for p in ids)]
    root = dataset_root(env.components.config, env.cache_dir)
    return [TaskRef(t, task_folder_of(t, root)) for t in tasks]


# --------------------------------------------------------------------------- writing


def toml_string(value: str) -> str:
    """A TOML basic string for ``value`` (JSON escapes are valid TOML escapes)."""
    return json.dumps(value, ensure_ascii=False)


def toml_value(value: Any) -> str:
    """TOML for a string, number, bool or list of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


_KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
_TABLE_LINE = re.compile(r"^\s*\[")


def set_top_level_keys(path: Path, values: dict[str, str | None], *, done_todo: str | None = None) -> None:
    """Set (or, with None, remove) top-level string keys of a task.toml, keeping everything else.

    ``done_todo`` (e.g. ``"rubric"``) removes the ``# TODO rubric`` comment written by
    ``arena author propose`` and its continuation lines.

    The file is re-parsed afterwards; if the edit did not give exactly the intended values
    (e.g. an existing multi-line string), the original text is restored and
    :class:`AuthorError` says so.
    """
    text = path.read_text(encoding="utf-8")
    before = tomllib.loads(text)
    lines = text.splitlines()
    first_table = next((i for i, line in enumerate(lines) if _TABLE_LINE.match(line)), len(lines))
    kept = []
    in_todo = False
    for i, line in enumerate(lines):
        m = _KEY_LINE.match(line)
        if i < first_table and m and m.group(1) in values:
            continue
        if done_todo is not None and i < first_table:
            if line.startswith(f"# TODO {done_todo}"):
                in_todo = True
                continue
            if in_todo and line.startswith("#  "):
                continue
            in_todo = False
        kept.append(line)
    first_table = next((i for i, line in enumerate(kept) if _TABLE_LINE.match(line)), len(kept))
    head = kept[:first_table]
    while head and not head[-1].strip():
        head.pop()
    new_lines = [f"{key} = {toml_string(value)}" for key, value in values.items() if value is not None]
    tail = kept[first_table:]
    result = "\n".join(head + new_lines + ([""] if tail else []) + tail) + "\n"
    try:
        after = tomllib.loads(result)
    except tomllib.TOMLDecodeError as exc:
        raise AuthorError(f"could not update {path} safely ({exc}); edit it by hand") from None
    expected = {k: v for k, v in before.items() if k not in values}
    expected.update({k: v for k, v in values.items() if v is not None})
    if after != expected:
        raise AuthorError(f"could not update {path} safely (a key spans several lines?); edit it by hand")
    path.write_text(result, encoding="utf-8")


def write_new_task_toml(
    path: Path, top: dict[str, Any], metadata: dict[str, Any], comments: list[str]
) -> None:
    """Write a fresh task.toml: top-level keys, ``comments`` (TODO lines), then ``[metadata]``."""
    lines = [f"{key} = {toml_value(value)}" for key, value in top.items() if value is not None]
    lines += [""] + [f"# {c}" if c else "#" for c in comments]
    lines += ["", "[metadata]"] + [f"{key} = {toml_value(v)}" for key, v in metadata.items() if v is not None]
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # never write a file the dataset cannot read
    path.write_text(text, encoding="utf-8")


def place_deck(src: Path, dest: Path) -> str:
    """Put ``src`` at ``dest`` as a hard link when possible, else a copy; returns ``"linked"`` or
    ``"copied"``.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
        return "linked"
    except OSError:
        shutil.copy2(src, dest)
        return "copied"


def write_json_file(path: Path, data: Any) -> None:
    """Write indented UTF-8 JSON (PPT-Eval's rubric style: indent 2, non-ASCII kept)."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
