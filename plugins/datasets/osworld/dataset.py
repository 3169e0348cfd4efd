"""The ``osworld`` dataset: OSWorld's LibreOffice Impress tasks with their own checkers.

``root`` is OSWorld's ``evaluation_examples`` folder (``test_all.json`` and
``examples/<domain>/<id>.json``); ``files_dir`` holds the downloaded decks and expected files,
looked up by file name (see :mod:`.load` and docs/datasets.md). Judge these tasks with the
``osworld`` judge. Tasks whose checkers read live application state (LibreOffice's settings file,
the accessibility tree) or an exported file carry ``metadata["requires"]``: the runner gives them
only to agents whose class declares those names in ``provides`` and reports the others as skipped.
Tasks using checkers we do not re-implement are skipped with the reason printed as a warning.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from pptarena.types import Options as BaseOptions
from pptarena.types import Task

from ..common import LoadedDataset, one_as_list
from .load import OsworldWarning, load_osworld


def blank_deck(folder: Path) -> Path:
    """An empty 16:9 deck (python-pptx's default template) for tasks that start without one."""
    from pptx import Presentation

    path = folder / "osworld-blank.pptx"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[6])
        tmp = path.with_suffix(".tmp")
        prs.save(str(tmp))
        tmp.replace(path)
    return path


class OsworldDataset(LoadedDataset):
    """OSWorld Impress tasks (see docs/datasets.md, "osworld")."""

    class Options(BaseOptions):
        """Options of the ``osworld`` dataset."""

        root: Path = Field(description="OSWorld's evaluation_examples folder (test_all.json, examples/)")
        files_dir: Path = Field(description="folder with the downloaded task files, looked up by file name")
        domain: str = Field(
            "libreoffice_impress", description="the examples/<domain> folder and test_all.json key"
        )
        index: str = Field(
            "test_all.json", description="the task index file under root ({domain: [task id, ...]})"
        )
        ids: list[str] = Field(default_factory=list, description="shell-style globs on task ids")
        strict_options: bool = Field(
            False, description="unknown checker options are an error instead of a warning"
        )

        _one_as_list = field_validator("ids", mode="before")(one_as_list)

    def __init__(self, options: Options, context: Any):
        super().__init__(options, context)
        self.skipped: dict[str, str] = {}

    @classmethod
    def fetch_description(cls) -> Any:
        """Source and licence of ``arena dataset fetch osworld``."""
        from .fetch import description

        return description()

    @classmethod
    def fetch(cls, fetcher: Any, dest: Path, task_globs: list[str], source: str | None) -> str:
        """Download the task files and the selected tasks' files (see :mod:`.fetch`)."""
        from .fetch import fetch

        return fetch(fetcher, dest, task_globs, source)

    def load(self) -> list[Task]:
        """The loaded tasks; skipped ones are announced as warnings and kept in ``self.skipped``."""
        o = self.options
        loaded = load_osworld(
            o.root,
            o.files_dir,
            domain=o.domain,
            index=o.index,
            ids=o.ids,
            strict_options=o.strict_options,
            blank_deck=blank_deck(Path(self.context.cache_dir)),
            check_files=False,  # the runner refuses a task with missing files only if it is selected
        )
        for task_id, reason in loaded.skipped.items():
            warnings.warn(f"osworld task {task_id} skipped: {reason}", OsworldWarning, stacklevel=3)
        self.skipped = loaded.skipped
        return loaded.tasks
