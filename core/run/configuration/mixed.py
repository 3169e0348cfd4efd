"""Several datasets in one run (``[[datasets]]`` tables): labelled task ids and per-dataset tables.

Each task of the dataset labelled ``L`` gets the id ``L/<id>`` and ``metadata["dataset"] = L``;
the summary and the report then group results by dataset (one leaderboard per dataset). A
``[[datasets]]`` table may list ``judges = ["label", ...]``: only those judges score its tasks
(benchmark-specific judges such as ``osworld`` or ``pptx_match`` cannot score other tasks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from pptarena.run.folder.records import ResultRow
from pptarena.types import Task


def label_tasks(
    sources: Iterable[tuple[str, Iterable[Task]]], judges: dict[str, list[str]] | None = None
) -> list[Task]:
    """Prefix every task id with its dataset's label and record the label in the metadata.

    ``judges`` maps a dataset label to the judge labels its tasks get (``metadata["judges"]``;
    the other judges skip those tasks).
    """
    out: list[Task] = []
    for label, tasks in sources:
        extra: dict[str, Any] = {"dataset": label}
        if judges and label in judges:
            extra["judges"] = list(judges[label])
        for task in tasks:
            out.append(
                dataclasses.replace(task, id=f"{label}/{task.id}", metadata={**task.metadata, **extra})
            )
    return out


def rows_by_dataset(rows: list[ResultRow]) -> dict[str, list[ResultRow]]:
    """Result rows grouped by ``metadata["dataset"]`` (empty when the run has one unlabelled dataset)."""
    groups: dict[str, list[ResultRow]] = {}
    for row in rows:
        label = row.metadata.get("dataset")
        if isinstance(label, str):
            groups.setdefault(label, []).append(row)
    return groups
