"""The end every index-reading dataset loader shares: select tasks by id globs, then check their decks.

A loader reads its index into :class:`~pptarena.types.Task` objects its own way, then hands them to
:func:`select_and_check_decks`, which keeps the tasks the ``ids`` option selects (a glob that selects
nothing is an error) and raises one error naming every missing deck of the kept tasks, so a user
learns every problem of a download at once. The ``pptarena``, ``ppteval`` and ``pptc`` datasets end
this way; another dataset plugin of this package can too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pptarena.types import Task

from .common import DatasetError, check_decks_exist, select_ids


def select_and_check_decks(
    tasks: list[Task],
    ids: Sequence[str],
    *,
    source: str,
    check_decks: bool = True,
    decks_source: str,
    hint: str = "",
    empty_error: str | None = None,
    extra_decks: Mapping[str, Sequence[Path]] | None = None,
    extra_what: str = "",
) -> list[Task]:
    """The tasks whose id matches a glob of ``ids`` (all when empty), once their decks are there.

    :param source: where the tasks come from, in the error of a glob that selects nothing.
    :param check_decks: False: the decks are not looked at (e.g. listing tasks before a download).
    :param decks_source: where the decks come from, in the one error listing every missing deck;
        ``hint`` follows it (how to get the decks).
    :param empty_error: when given, the error raised if nothing is left after the selection.
    :param extra_decks: decks beyond a kept task's original and target that must exist too, by task
        id (e.g. a session's earlier turns' labels); a missing one is named as the original of
        ``"<task id> (<extra_what>)"``.
    :raises DatasetError: a glob selecting nothing, nothing left (with ``empty_error``), missing decks.
    """
    tasks = select_ids(tasks, list(ids), source=source)
    if empty_error is not None and not tasks:
        raise DatasetError(empty_error)
    if check_decks:
        probe = list(tasks)
        if extra_decks:
            probe += [
                Task(id=f"{t.id} ({extra_what})", instruction="", original=p)
                for t in tasks
                for p in extra_decks.get(t.id, [])
            ]
        check_decks_exist(probe, source=decks_source, hint=hint)
    return tasks
