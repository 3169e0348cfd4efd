"""The tasks of a run: the configured dataset's tasks, checked and selected by id globs and a limit."""

from __future__ import annotations

import fnmatch

from pptarena.run.configuration.components import Components
from pptarena.run.configuration.mixed import label_tasks
from pptarena.types import PptArenaError, Task

MISSING_FILES = "missing_files"


class NothingSelectedError(PptArenaError):
    """The selection holds no task: the id globs match none, or the dataset has none."""


def select_tasks(
    tasks: list[Task], globs: list[str], limit: int | None, *, check_files: bool = True
) -> list[Task]:
    """Filter tasks by id globs, then keep the first ``limit``.

    A dataset may load a task whose files are not there yet, listing them in
    ``metadata["missing_files"]`` (with ``metadata["missing_files_hint"]``: how to get them); such a
    task is refused here, once selected (``check_files``), so the files of unselected tasks never
    matter. One error names every missing file of the selection.

    :raises NothingSelectedError: no task is left (naming the globs and how many tasks there are).
    """
    available = len(tasks)
    if globs:
        tasks = [t for t in tasks if any(fnmatch.fnmatchcase(t.id, g) for g in globs)]
    tasks = tasks[:limit] if limit else tasks
    if not tasks:
        raise NothingSelectedError(_why_nothing(globs, limit, available))
    if check_files:
        missing = [(t, line) for t in tasks for line in t.metadata.get(MISSING_FILES) or []]
        if missing:
            hints = dict.fromkeys(str(t.metadata.get("missing_files_hint") or "") for t, _ in missing)
            raise PptArenaError(
                f"{len(missing)} file(s) missing for {len({t.id for t, _ in missing})} selected task(s):\n  "
                + "\n  ".join(line for _, line in missing)
                + "".join(f"\n{h}" for h in hints if h)
            )
    return tasks


def _why_nothing(globs: list[str], limit: int | None, available: int) -> str:
    if not available:
        return "the dataset has no tasks"
    if globs:
        return f"no task matches {' '.join(repr(g) for g in globs)} (the dataset has {available} tasks)"
    return f"a limit of {limit} selects none of the dataset's {available} tasks"


def load_tasks(components: Components) -> list[Task]:
    """Build the dataset(s) and list the tasks (ids must be unique);
    see :func:`pptarena.run.configuration.mixed.label_tasks`.
    """
    config = components.config
    if config.datasets:  # [[datasets]]: several benchmarks, ids prefixed by the dataset label
        tasks = label_tasks(
            ((d.label, components.build(d).tasks()) for d in config.datasets), config.dataset_judges
        )
    else:
        tasks = list(components.build(config.dataset).tasks())
    seen: set[str] = set()
    dups = sorted({t.id for t in tasks if t.id in seen or seen.add(t.id)})  # type: ignore[func-returns-value]
    if dups:
        raise PptArenaError(
            f"dataset {components.config.dataset.use!r} has duplicate task ids: {', '.join(dups[:10])}"
        )
    return tasks
