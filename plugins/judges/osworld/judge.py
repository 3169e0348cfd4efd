"""The ``osworld`` judge: runs an OSWorld task's own evaluator spec on the prediction.

Tasks of the ``osworld`` dataset carry their ``evaluator`` in ``task.metadata["osworld"]``; this
judge evaluates it with our re-implementation of OSWorld's checkers (:mod:`.checks`,
:mod:`.pptx_compare`), combined by ``and``/``or`` as OSWorld does, and returns the score (0/1 or
fractional) with the first mismatch as the explanation. An unknown checker or option is a judge
error, never silently ignored. See docs/judges.md and docs/datasets.md ("osworld").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pptarena.types import Component, JudgeError, Verdict
from pptarena.types import Options as BaseOptions

from .evaluator import Sides, SpecError, evaluate
from .pptx_compare import CheckerOptionError


def prediction_files(prediction: Any) -> dict[str, Path]:
    """``prediction.metadata["files"]`` as ``{name: Path}`` (extra files an agent hands back)."""
    files = (getattr(prediction, "metadata", None) or {}).get("files") or {}
    if not isinstance(files, dict):
        return {}
    return {str(k): Path(v) for k, v in files.items() if isinstance(v, str | Path)}


class OsworldJudge(Component):
    """Scores a prediction with the task's OSWorld checkers (needs tasks of the ``osworld`` dataset)."""

    class Options(BaseOptions):
        """No options: the task's evaluator spec says everything."""

    def judge(self, task: Any, prediction: Any, evidence: Any) -> Verdict:
        """Evaluate ``task.metadata["osworld"]["evaluator"]`` on the prediction."""
        meta = (task.metadata or {}).get("osworld")
        if not isinstance(meta, dict) or "evaluator" not in meta:
            raise JudgeError(
                f"task {task.id}: the osworld judge needs a task of the osworld dataset (no evaluator)"
            )
        sides = Sides(
            prediction=Path(prediction.path) if prediction.path else None,
            prediction_files=prediction_files(prediction),
            task_files={k: Path(v) for k, v in (meta.get("files") or {}).items()},
        )
        try:
            outcome, rows = evaluate(meta["evaluator"], sides)
        except (SpecError, CheckerOptionError) as exc:
            raise JudgeError(f"task {task.id}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - OSWorld's checker would crash on this input too
            raise JudgeError(
                f"task {task.id}: the checker failed on this input: {type(exc).__name__}: {exc}"
            ) from exc
        metrics = {"checks": len(rows), "passed": sum(1 for r in rows if r["score"] >= 1)}
        return Verdict(
            score=outcome.score,
            metrics=metrics,
            explanation=outcome.reason or "every check passed",
            details={"checks": rows},
        )
