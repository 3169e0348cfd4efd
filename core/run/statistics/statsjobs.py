"""The jobs the summary's statistics helper process runs (:mod:`.statsworker`): bootstrap
intervals and sign-flip p-values, by the very functions the summary's own process would call.

Kept apart from the worker so the worker's module imports no statistics code (the statistics code
imports the worker to start it: no import cycle).
"""

from __future__ import annotations

from typing import Any

from pptarena.run.statistics.resample import intervals_of
from pptarena.run.statistics.stats import paired_p_values


def run_job(kind: str, args: Any) -> Any:
    """One job: ``"intervals"`` (:func:`~pptarena.run.statistics.resample.intervals_of`) or ``"p_values"``
    (``(diffs, n_perm, seed)``: :func:`~pptarena.run.statistics.stats.paired_p_values`)."""
    if kind == "intervals":
        return intervals_of(args)
    if kind == "p_values":
        diffs, n_perm, seed = args
        return paired_p_values(diffs, n_perm=n_perm, seed=seed)
    raise ValueError(f"unknown job {kind!r}")
