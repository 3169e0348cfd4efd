"""The bundled ``demo`` dataset: 12 offline tasks over 3 generated decks.

The set is generated on first use (python-pptx, lxml, Pillow; nothing downloaded) into
``<cache_dir>/demo/v<GENERATOR_VERSION>/`` in the ``folder`` dataset layout::

    _decks/qbr.pptx, birds.pptx, onboarding.pptx      the originals
    <task_id>/task.toml, target.pptx, rubric.json      one folder per task
    MANIFEST.json                                      written last: sha256 of every file

The build happens in a temporary sibling folder that is renamed into place, so two processes
never see a half-built set (the loser of a race discards its copy). Generation is
deterministic: the same version always produces byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from pptarena.plugins.datasets.common import DatasetError, LoadedDataset, one_as_list
from pptarena.plugins.datasets.folder import load_folder_tasks
from pptarena.types import Options as BaseOptions
from pptarena.types import Task

#: Bump whenever decks, tasks or rubrics change: the cache folder is keyed on it.
GENERATOR_VERSION = "2"
MANIFEST = "MANIFEST.json"
DECKS_DIR = "_decks"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON string escapes are valid TOML
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def write_task_toml(path: Path, top: dict[str, Any], metadata: dict[str, Any]) -> None:
    """Write a folder-format task.toml with string / list values."""
    lines = [f"{key} = {_toml_value(value)}" for key, value in top.items() if value is not None]
    lines += ["", "[metadata]"] + [f"{key} = {_toml_value(value)}" for key, value in metadata.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_demo_set(dest: Path) -> None:
    """Generate the whole demo set into the empty or new folder ``dest``."""
    from pptx import Presentation

    from pptarena.plugins.datasets.demo.deck_xml import save_reproducibly
    from pptarena.plugins.datasets.demo.decks import DECK_BUILDERS
    from pptarena.plugins.datasets.demo.tasks import TASKS

    decks = dest / DECKS_DIR
    decks.mkdir(parents=True, exist_ok=True)
    for name, builder in DECK_BUILDERS.items():
        builder(decks / f"{name}.pptx")
    for task in TASKS:
        folder = dest / task.id
        folder.mkdir()
        prs = Presentation(str(decks / f"{task.deck}.pptx"))
        task.edit(prs)
        save_reproducibly(prs, folder / "target.pptx")
        (folder / "rubric.json").write_text(
            json.dumps(task.rubric(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        write_task_toml(
            folder / "task.toml",
            {
                "instruction": task.instruction,
                "original": f"../{DECKS_DIR}/{task.deck}.pptx",
                "target": "target.pptx",
                "style_target": task.style_target,
                "rubric": "rubric.json",
            },
            {
                "category": list(task.category),
                "edit_type": task.edit_type,
                "difficulty": task.difficulty,
                "source": "demo",
                "deck": task.deck,
            },
        )
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "files": {p.relative_to(dest).as_posix(): _sha256(p) for p in files},
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _check_complete(folder: Path) -> None:
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        missing = [name for name in manifest["files"] if not (folder / name).is_file()]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(
            f"demo set cache {folder} is damaged ({exc}); delete that folder to rebuild it"
        ) from None
    if missing:
        raise DatasetError(f"demo set cache {folder} is missing {missing}; delete that folder to rebuild it")


def ensure_demo_set(cache_dir: Path) -> Path:
    """The folder holding the demo set, generating it first if needed (safe across processes)."""
    final = Path(cache_dir) / "demo" / f"v{GENERATOR_VERSION}"
    if final.is_dir():
        _check_complete(final)
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".building-v{GENERATOR_VERSION}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        build_demo_set(staging)
        try:
            os.rename(staging, final)
        except OSError:
            if not final.is_dir():  # not a lost race: a real error
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    _check_complete(final)
    return final


class DemoDataset(LoadedDataset):
    """Twelve generated tasks (content, layout, styling, interactivity, structure) that run offline."""

    class Options(BaseOptions):
        """Options of the ``demo`` dataset."""

        ids: list[str] = Field(
            default_factory=list, description='shell-style globs on task ids, e.g. ["qbr-*"]'
        )

        _one_as_list = field_validator("ids", mode="before")(one_as_list)

    def load(self) -> list[Task]:
        """The demo tasks (generated into ``context.cache_dir`` on first use)."""
        root = ensure_demo_set(Path(self.context.cache_dir))
        return load_folder_tasks(root, self.options.ids)
