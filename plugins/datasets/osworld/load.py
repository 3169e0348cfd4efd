"""Reading OSWorld task files (``evaluation_examples``) into pptarena tasks.

Layout read: ``<root>/test_all.json`` (``{domain: [task id, ...]}``) and
``<root>/examples/<domain>/<id>.json``. The files a task downloads (``config`` → ``download``
steps) and the expected files of its evaluator (``cloud_file`` getters) are looked up in
``files_dir`` (``files_dir/<task id>/<name>`` or ``files_dir/<name>``) by the file name of their
``dest``/``path`` and, failing that, of their URL. The ``ids`` globs select tasks first; only the
selected tasks are read and only their files are looked up. With ``check_files`` one error names
every missing file with its URL; without, a task whose files are missing carries them in
``metadata["missing_files"]`` and the runner refuses it only if it is selected
(:func:`pptarena.run.configuration.tasks.select_tasks`).

Each task keeps its ``evaluator`` (normalised to lists) in ``metadata["osworld"]`` for the
``osworld`` judge, with ``files`` (getter ``dest`` → local path). ``metadata["requires"]`` lists
what the agent must hand back besides the deck (``libreoffice_settings``,
``accessibility_tree``, ``exported_files``); the runner only pairs such tasks with agents that
declare them in ``provides``.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from pptarena.plugins.judges.osworld.evaluator import (
    CHECKERS,
    DECK_SUFFIXES,
    inert_option,
    normalise,
    spec_problems,
)
from pptarena.plugins.judges.osworld.pptx_compare import EXAMINE_DEFAULTS, OPTION_KEYS
from pptarena.types import Task

from ..common import DatasetError, matches_any, read_json_file

#: compare_pptx_files options that check a move relative to the expected deck: that deck is a
#: position reference (the unedited original, or a gold the result must be strictly beyond), not
#: an answer, so such tasks get no target.
POSITION_PROBES = {
    "examine_title_bottom_position",
    "examine_table_bottom_position",
    "examine_right_position",
    "examine_top_position",
}
MAX_TASK_BYTES = 1024 * 1024
#: Checkers we do not re-implement, with the reason the task is skipped.
UNSUPPORTED = {
    "compare_audios": (
        "compare_audios (MFCC + dynamic time warping with librosa/fastdtw) is not re-implemented"
    ),
    "contains_mp4_video": "contains_mp4_video is not re-implemented (and the task is not in test_all.json)",
}
DOWNLOAD_HINT = (
    "OSWorld's task files do not contain the decks: `arena dataset fetch osworld --dir DIR [--task GLOB]` "
    "downloads the task files and each task's files (current OSWorld serves them from the Hugging Face "
    "dataset xlangai/ubuntu_osworld_file_cache; older snapshots from the Google Drive URLs shown) into "
    "DIR/files/<task id>/<name>, the layout files_dir expects ({files_dir}/<task id>/<name>, or a flat "
    "{files_dir}/<name>)."
)


class OsworldWarning(UserWarning):
    """Something in OSWorld's published data that the loader handled in OSWorld's way."""


@dataclass
class Loaded:
    """Tasks, skipped task ids with reasons, warnings and missing files."""

    tasks: list[Task] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _url_name(url: str) -> str:
    return PurePosixPath(urlparse(url).path).name


def _lookup(files_dir: Path, task_id: str, names: list[str]) -> Path | None:
    """``files_dir/<task id>/<name>`` (the Hugging Face mirror's layout) or ``files_dir/<name>``."""
    for folder in (files_dir / task_id, files_dir):
        for name in names:
            if name and "/" not in name and "\\" not in name and name not in (".", ".."):
                candidate = folder / name
                if candidate.is_file():
                    return candidate
    return None


def _requires(getter: Any) -> str | None:
    if not isinstance(getter, dict):
        return None
    if getter.get("type") == "accessibility_tree":
        return "accessibility_tree"
    if getter.get("type") == "vm_file":
        name = PurePosixPath(str(getter.get("path", ""))).name
        if name.endswith(".xcu"):
            return "libreoffice_settings"
        if not name.lower().endswith(DECK_SUFFIXES):
            return "exported_files"
    return None


def _clean_options(task_id: str, spec: dict[str, Any], out: Loaded, strict: bool) -> dict[str, Any]:
    """Drop unknown ``compare_pptx_files`` options (OSWorld never reads them) with a warning."""
    norm = normalise(spec)
    cleaned = []
    for func, options in zip(norm["func"], norm["options"], strict=False):
        if func == "compare_pptx_files" and isinstance(options, dict):
            unknown = sorted(k for k in options if k not in OPTION_KEYS and not inert_option(k))
            if unknown and strict:
                raise DatasetError(f"OSWorld task {task_id}: unknown compare_pptx_files option(s) {unknown}")
            for key in unknown:
                near = difflib.get_close_matches(key, sorted(OPTION_KEYS), n=1)
                meant = ""
                if near and near[0].startswith("examine_"):
                    default = EXAMINE_DEFAULTS[near[0].removeprefix("examine_")]
                    what = near[0].removeprefix("examine_").replace("_", " ")
                    meant = (
                        f" (a misspelling of {near[0]!r}? then {what} is still "
                        f"{'examined' if default else 'not examined'}: {near[0]} keeps its default, "
                        f"{str(default).lower()})"
                    )
                out.warnings.append(
                    f"task {task_id}: compare_pptx_files has no option {key!r}{meant}. "
                    "OSWorld passes it in **options and never reads it, so it has no effect; "
                    "the loader drops it to score like OSWorld."
                )
            options = {k: v for k, v in options.items() if k not in unknown}
        cleaned.append(options)
    norm["options"] = cleaned
    return norm


def load_osworld(
    root: Path,
    files_dir: Path,
    *,
    domain: str = "libreoffice_impress",
    index: str = "test_all.json",
    ids: list[str] | tuple[str, ...] = (),
    strict_options: bool = False,
    blank_deck: Path | None = None,
    check_files: bool = True,
) -> Loaded:
    """Read the tasks of ``domain`` listed in ``root/index`` that ``ids`` selects; see the module
    docstring.
    """
    root, files_dir = Path(root).expanduser(), Path(files_dir).expanduser()
    index_file = root / index
    listing = read_json_file(index_file, what="OSWorld task index")
    if not isinstance(listing, dict) or not isinstance(listing.get(domain), list):
        raise DatasetError(f"{index_file}: no list of task ids for domain {domain!r}")
    if check_files and not files_dir.is_dir():
        raise DatasetError(f"osworld dataset: files_dir {files_dir} " + _no_folder(files_dir))
    out = Loaded()
    problems: list[str] = []
    listed = [t for t in listing[domain] if isinstance(t, str)]
    problems += [
        f"{index_file}: bad task id {t!r}"
        for t in listing[domain]
        if not isinstance(t, str) or not _good_id(t)
    ]
    chosen = [t for t in listed if _good_id(t)]
    if ids:
        unused = [p for p in ids if not matches_any_id(chosen, p)]
        if unused:
            near = difflib.get_close_matches(str(unused[0]).rstrip("*"), chosen, n=1, cutoff=0.3)
            raise DatasetError(
                f"osworld dataset {index_file}: option 'ids' pattern(s) {unused} match no task id of "
                f"{domain!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
            )
        chosen = [t for t in chosen if matches_any(t, list(ids))]
    for task_id in chosen:
        path = root / "examples" / domain / f"{task_id}.json"
        try:
            data = read_json_file(path, what=f"OSWorld task {task_id}", limit=MAX_TASK_BYTES)
            _load_one(task_id, data, path, files_dir, out, strict_options, blank_deck)
        except DatasetError as exc:
            problems.append(str(exc))
    if problems:
        raise DatasetError(f"osworld dataset {root}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    if out.missing and check_files:
        raise DatasetError(
            f"{len(out.missing)} file(s) missing from files_dir {files_dir} for the osworld dataset:\n"
            + "\n".join(out.missing)
            + "\n"
            + DOWNLOAD_HINT.format(files_dir=files_dir)
        )
    for message in out.warnings:  # only about the selected tasks
        warnings.warn(message, OsworldWarning, stacklevel=2)
    return out


def _good_id(task_id: str) -> bool:
    return bool(task_id) and "/" not in task_id and "\\" not in task_id and not task_id.startswith(".")


def matches_any_id(task_ids: list[str], pattern: str) -> bool:
    """Whether the glob ``pattern`` selects one of ``task_ids``."""
    return any(matches_any(t, [pattern]) for t in task_ids)


def _no_folder(folder: Path) -> str:
    """Why ``folder`` is not usable as files_dir, with the command that fills it."""
    what = "is not a folder" if folder.exists() else "does not exist"
    return f"{what}; `arena dataset fetch osworld --dir DIR` downloads the files into DIR/files"


def _load_one(
    task_id: str, data: Any, path: Path, files_dir: Path, out: Loaded, strict: bool, blank_deck: Path | None
) -> None:
    if not isinstance(data, dict) or not isinstance(data.get("instruction"), str) or "evaluator" not in data:
        raise DatasetError(f"{path}: expected an object with 'instruction' and 'evaluator'")
    if data.get("id", task_id) != task_id:
        raise DatasetError(f"{path}: id {data.get('id')!r} does not match the file name")
    spec = data["evaluator"]
    funcs = spec.get("func") if isinstance(spec, dict) else None
    funcs = funcs if isinstance(funcs, list) else [funcs]
    unsupported = [UNSUPPORTED[f] for f in funcs if f in UNSUPPORTED]
    if unsupported:
        out.skipped[task_id] = "; ".join(unsupported)
        return
    spec = _clean_options(task_id, spec, out, strict)
    problems = spec_problems(spec)
    if problems:
        raise DatasetError(f"{path}: evaluator: " + "; ".join(problems))

    missing_before = len(out.missing)
    downloads: dict[str, Path] = {}  # VM path -> local file
    opened: str | None = None
    for step in data.get("config") or []:
        kind, params = step.get("type"), step.get("parameters") or {}
        if kind == "download":
            for entry in params.get("files") or []:
                vm_path, url = str(entry.get("path", "")), str(entry.get("url", ""))
                name = PurePosixPath(vm_path).name
                local = _lookup(files_dir, task_id, [name, _url_name(url)])
                if local is None:
                    out.missing.append(f"  {name}  (download of task {task_id}; {url})")
                else:
                    downloads[vm_path] = local
        elif kind == "open" and opened is None:
            opened = str(params.get("path", ""))

    files: dict[str, str] = {}
    requires: set[str] = set()
    target: Path | None = None
    for func, result, expected, options in zip(
        spec["func"], spec["result"], spec["expected"], spec["options"], strict=False
    ):
        need = _requires(result)
        if need:
            requires.add(need)
        if not isinstance(expected, dict):
            continue
        dest = str(expected.get("dest") or PurePosixPath(str(expected.get("path", ""))).name)
        if expected.get("type") == "cloud_file":
            local = _lookup(files_dir, task_id, [dest, _url_name(str(expected.get("path", "")))])
            if local is None:
                out.missing.append(f"  {dest}  (expected file of task {task_id}; {expected.get('path')})")
                continue
        elif expected.get("type") == "vm_file":
            local = downloads.get(str(expected.get("path", "")))
            if local is None:
                raise DatasetError(
                    f"{path}: expected vm_file {expected.get('path')!r} is not a downloaded file"
                )
        else:
            continue
        files[dest] = str(local)
        probes = sorted({k for k, v in options.items() if v} & POSITION_PROBES)
        if (
            func == "compare_pptx_files"
            and target is None
            and dest.lower().endswith(DECK_SUFFIXES)
            and not probes
        ):
            target = local
        elif func == "compare_pptx_files" and probes and "_Gold" in dest:
            out.warnings.append(
                f"task {task_id}: {probes} compares the result's position "
                f"*strictly* with the gold deck {dest}, so the gold deck itself scores 0 in OSWorld; "
                "the task has no target (the oracle agent cannot answer it)"
            )
    missing = out.missing[missing_before:]

    if missing:
        original = blank_deck or files_dir / task_id / "missing.pptx"  # never used: the task is refused
    elif opened is not None and opened in downloads and opened.lower().endswith(DECK_SUFFIXES):
        original = downloads[opened]
    elif blank_deck is not None:
        original = blank_deck  # the task starts from a fresh Impress window, not from a deck
    else:
        raise DatasetError(f"{path}: the task opens no downloaded deck")
    metadata: dict[str, Any] = {
        "source": "osworld",
        "category": sorted(set(spec["func"])),
        "requires": sorted(requires),
        "osworld": {
            "evaluator": spec,
            "files": files,
            "domain": data.get("snapshot"),
            "source": data.get("source"),
            "opened": opened,
        },
    }
    if isinstance(data.get("hint"), str):
        metadata["hint"] = data["hint"]
    if missing:
        metadata["missing_files"] = [line.strip() for line in missing]
        absent = "" if files_dir.is_dir() else f"files_dir {files_dir} {_no_folder(files_dir)}. "
        metadata["missing_files_hint"] = absent + DOWNLOAD_HINT.format(files_dir=files_dir)
    out.tasks.append(
        Task(id=task_id, instruction=data["instruction"], original=original, target=target, metadata=metadata)
    )


__all__ = ["CHECKERS", "Loaded", "OsworldWarning", "load_osworld"]
