"""The ``structural`` judge: deterministic, no model, compares what was done with what was asked.

It diffs original → prediction and original → target with the deck engine and pairs the edits
(:mod:`pptarena.plugins.judges.structural.edit_match`):

* **recall** — mean, over the objects the target changed (units), of how much of each object's
  target edits the prediction reproduced (with tolerances; text on the requested change,
  :mod:`~pptarena.plugins.judges.structural.text_change`);
* **damage** — objects the target left alone that the prediction changed or added, none of whose
  edits serves a requested edit; **over-editing** — requested objects that also got unrequested
  edits (:mod:`~pptarena.plugins.judges.structural.score`);
* **misses** — each requested object not reproduced is named ``wrong_value``, ``wrong_object``,
  ``overlay`` or ``missed`` (:mod:`~pptarena.plugins.judges.structural.misses`).

``score = recall − damage_weight · damaged / N − overedit_weight · over_edited / N`` (N = number of
requested objects, at least 1), clamped to [0, 1]. A prediction that did nothing scores 0 whenever
the target differs from the original; the target itself scores 1.0. ``if_like`` (metrics) is
``round(5 × score)``, on the scale of PPTArena's instruction-following score.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pptarena.evidence import Evidence
from pptarena.plugins.judges.structural.edit_match import MatchResult, Tolerances, describe_unit, match_edits
from pptarena.plugins.judges.structural.misses import MISS_CLASSES, classify
from pptarena.plugins.judges.structural.score import DEFAULT_DAMAGE_WEIGHT, DEFAULT_OVEREDIT_WEIGHT, assess
from pptarena.types import Component, JudgeError, PptArenaError, Prediction, Task, Verdict
from pptarena.types import Options as OptionsBase

MAX_LISTED = 2000  # edits/units kept in the evidence file


class StructuralJudge(Component):
    """Scores a prediction by how many of the target's edits it reproduces, minus collateral damage."""

    class Options(OptionsBase):
        """Tolerances and the weight of damage (see docs/judges.md)."""

        position_tolerance: float = Field(
            0.02, ge=0, le=1, description="moves/resizes: fraction of the slide size"
        )
        color_tolerance: float = Field(10.0, ge=0, le=200, description="colours: CIE76 delta E")
        number_tolerance: float = Field(0.05, ge=0, le=1, description="numbers: relative difference")
        text_tolerance: float = Field(
            0.95,
            ge=0,
            le=1,
            description="text: share of the requested change (words removed and inserted) "
            "counted as reproduced",
        )
        damage_weight: float = Field(
            DEFAULT_DAMAGE_WEIGHT,
            ge=0,
            le=5,
            description="cost of one damaged unrelated object (changed or added, not requested), in missed "
            "requested edits: 1 = as much as one missed edit, 0 ignores damage",
        )
        overedit_weight: float = Field(
            DEFAULT_OVEREDIT_WEIGHT,
            ge=0,
            le=5,
            description="cost of one requested object that also got unrequested edits (bolded, moved...), in "
            "missed requested edits",
        )

    def judge(self, task: Task, prediction: Prediction, evidence: Evidence) -> Verdict:
        """Compare original→prediction with original→target; see the module docstring for the score."""
        opts = self.options
        if task.target is None:
            why = (task.metadata or {}).get("no_target_reason")
            raise JudgeError(
                f"task {task.id}: the structural judge needs a target deck (task.target) to compare with, "
                f"and this task has none{f' ({why})' if why else ''}; use a rubric or model judge for it"
            )
        if prediction.path is None:
            raise JudgeError(f"task {task.id}: the prediction has no deck to compare")
        try:
            target_diff = evidence.diff("original", "target")
            pred_diff = evidence.diff("original", "prediction")
        except PptArenaError as exc:
            raise JudgeError(f"task {task.id}: cannot diff the decks: {exc}") from exc
        label = getattr(self.context, "label", "") or "structural"
        if target_diff.edit_count == 0:
            parts = self._part_fallback(task, prediction, evidence, label, pred_diff.edit_count)
            if parts is not None:
                return parts
        tol = Tolerances(
            opts.position_tolerance, opts.color_tolerance, opts.number_tolerance, opts.text_tolerance
        )
        result = match_edits(target_diff, pred_diff, tol)
        recall, precision = result.recall, result.precision
        graded = assess(result, opts.damage_weight, opts.overedit_weight)
        score = graded.score
        misses = classify(result, graded.damaged, target_diff, pred_diff, tol)
        metrics = {
            "recall": round(recall, 4),
            "precision": round(precision, 4),
            "if_like": int(round(5 * score)),
            "target_edits": target_diff.edit_count,
            "prediction_edits": pred_diff.edit_count,
            "target_units": len(result.unit_recall),
            "prediction_units": len(result.unit_precision),
            "units_reproduced": sum(1 for v in result.unit_recall.values() if v >= 0.999),
            "collateral_units": len(result.collateral_units),
            "damaged_units": len(graded.damaged),
            "over_edited_units": len(graded.over_edited),
            **{f"miss_{c}": sum(1 for m in misses if m["class"] == c) for c in MISS_CLASSES},
        }
        explanation = _explain(result, score, target_diff.edit_count, pred_diff.edit_count, misses, graded)
        details = {
            "units": _unit_rows(result, graded),
            "misses": misses[:MAX_LISTED],
            "collateral": [describe_unit(u) for u in result.collateral_units][:50],
        }
        evidence.write_json(
            label,
            "structural.json",
            {
                "score": score,
                "metrics": metrics,
                "options": opts.model_dump(),
                "units": _unit_rows(result, graded),
                "misses": misses[:MAX_LISTED],
                "matches": [
                    {
                        "target": m.target.edit,
                        "prediction": m.prediction.edit if m.prediction else None,
                        "credit": round(m.credit, 4),
                    }
                    for m in result.matches[:MAX_LISTED]
                ],
                "collateral_edits": [
                    p.edit for p in result.prediction_items if p.unit in set(result.collateral_units)
                ][:MAX_LISTED],
                "target_diff": target_diff.to_text()[:200_000],
                "prediction_diff": pred_diff.to_text()[:200_000],
            },
        )
        return Verdict(score=score, metrics=metrics, explanation=explanation, details=details)

    def _part_fallback(
        self, task: Task, prediction: Prediction, evidence: Evidence, label: str, pred_edits: int
    ) -> Verdict | None:
        """Score on XML parts when the diff sees no target edit but the target's content parts differ.

        Returns None when the target's content parts equal the original's (the target really is unchanged).
        """
        from pptarena.plugins.judges.structural.part_compare import compare_parts

        try:
            parts = compare_parts(task.original, task.target, prediction.path)
        except PptArenaError as exc:
            raise JudgeError(f"task {task.id}: cannot compare the decks' parts: {exc}") from exc
        recall_of: dict[str, float] = parts["recall"]  # type: ignore[assignment]
        if not recall_of:
            return None
        changed: list[str] = parts["prediction_changed"]  # type: ignore[assignment]
        collateral: list[str] = parts["collateral"]  # type: ignore[assignment]
        recall = sum(recall_of.values()) / len(recall_of)
        precision = sum(recall_of.get(n, 0.0) for n in changed) / len(changed) if changed else 1.0
        # the same rule as on the diff: one collateral part costs damage_weight of one requested part
        score = max(0.0, min(1.0, recall - self.options.damage_weight * len(collateral) / len(recall_of)))
        metrics = {
            "recall": round(recall, 4),
            "precision": round(precision, 4),
            "if_like": int(round(5 * score)),
            "target_edits": 0,
            "prediction_edits": pred_edits,
            "target_units": len(recall_of),
            "prediction_units": len(changed),
            "units_reproduced": sum(1 for v in recall_of.values() if v >= 0.999),
            "collateral_units": len(collateral),
            "part_fallback": 1,
        }
        rows = [{"unit": f"part {n}", "role": "target", "recall": round(v, 4)} for n, v in recall_of.items()]
        rows += [{"unit": f"part {n}", "role": "collateral", "recall": None} for n in collateral]
        explanation = (
            "The structural diff sees no change from original to target, but the target's XML differs in "
            f"{len(recall_of)} part(s); compared part by part: recall {recall:.2f}, precision {precision:.2f}"
            + (f", collateral changes in {', '.join(collateral[:5])}" if collateral else "")
            + f". Score {score:.3f}."
        )
        evidence.write_json(
            label,
            "structural.json",
            {
                "score": score,
                "metrics": metrics,
                "units": rows,
                "options": self.options.model_dump(),
                "mode": "parts",
            },
        )
        return Verdict(
            score=score, metrics=metrics, explanation=explanation, details={"units": rows[:MAX_LISTED]}
        )


def _unit_rows(result: MatchResult, graded: Any) -> list[dict[str, Any]]:
    rows = []
    over, damaged = set(graded.over_edited), set(graded.damaged)
    for unit, credit in result.unit_recall.items():
        rows.append(
            {
                "unit": describe_unit(unit),
                "role": "target",
                "recall": round(credit, 4),
                "precision": round(result.unit_precision[unit], 4) if unit in result.unit_precision else None,
                "over_edited": unit in over,
            }
        )
    collateral = set(result.collateral_units)
    for unit, prec in result.unit_precision.items():
        if unit not in result.unit_recall:
            rows.append(
                {
                    "unit": describe_unit(unit),
                    "role": "collateral" if unit in collateral else "prediction",
                    "recall": None,
                    "precision": round(prec, 4),
                    "damaged": unit in damaged,
                    "over_edited": unit in over,
                }
            )
    return rows[:MAX_LISTED]


def _explain(
    result: MatchResult, score: float, n_target: int, n_pred: int, misses: list[dict[str, Any]], graded: Any
) -> str:
    if not result.unit_recall:
        head = "The target changes nothing; "
        head += (
            "the prediction changes nothing either."
            if not n_pred
            else f"the prediction makes {n_pred} edit(s)."
        )
    else:
        done = sum(1 for v in result.unit_recall.values() if v >= 0.999)
        head = (
            f"Reproduced {done} of {len(result.unit_recall)} changed object(s) in full "
            f"(recall {result.recall:.2f} over {n_target} target edit(s)); precision {result.precision:.2f} "
            f"over {n_pred} prediction edit(s)."
        )
    if misses:
        head += " Missed or partial: " + "; ".join(f"{m['unit']} ({m['class']})" for m in misses[:5]) + "."
    if graded.damaged:
        head += (
            f" Damage on {len(graded.damaged)} object(s) the target left alone: "
            + "; ".join(describe_unit(u) for u in graded.damaged[:5])
            + "."
        )
    if graded.over_edited:
        head += (
            f" Unrequested extra edits on {len(graded.over_edited)} requested object(s): "
            + "; ".join(describe_unit(u) for u in graded.over_edited[:5])
            + "."
        )
    return head + f" Score {score:.3f}."
