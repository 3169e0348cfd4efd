"""The ``pptx_match`` judge: PPTC's PPTX-Match check (attributes + position relations).

A prediction passes (score 1.0) when

* its **attributes** read the same as the label deck's (``task.target``): both decks are written
  out as text by PPTC's reader's rules (:mod:`.serialise`: per slide, in order, the background's
  solid RGB, the notes text, and every placeholder, picture, chart, table, text box and auto shape
  in shape-tree order with the features PPTC prints; never positions or sizes) and the texts must
  be equal; and
* every **position restriction** holds on the prediction (:mod:`.positions`):
  ``"<slide>, <A>, <B>, <relation>"`` from the instruction's ``##`` suffixes
  (``task.metadata["pptc"]["restrictions"]``).

Semantics follow PPTC's ``src/evaluate.py calc_acc``, ``src/ppt_reader.py`` and
``src/pptx_check.py`` (``../shared/reference/pptc-format.md`` §5), quirks included; where PPTC's
check raises (a deck its reader cannot read, a malformed restriction) the judge raises a
:class:`JudgeError` naming what could not be read instead of inventing a score.
``tests/judges/test_pptc_differential.py`` compares verdicts with PPTC's own ``calc_acc``.
Option ``semantics = "corrected"`` mends the reader's defects (see :data:`.serialise.SEMANTICS`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pptarena.evidence import Evidence
from pptarena.types import Component, JudgeError, Prediction, Task, Verdict
from pptarena.types import Options as BaseOptions

from .positions import check_positions, find_object, relation_holds, split_restriction
from .serialise import SEMANTICS, PptcUnreadable, Semantics, deck_blocks, deck_text, first_difference

__all__ = [
    "PptxMatchJudge",
    "check_positions",
    "deck_text",
    "find_object",
    "load_deck",
    "relation_holds",
    "split_restriction",
]


def load_deck(path: Any) -> Any:
    """python-pptx's ``Presentation`` of ``path`` (PPTC reads decks with python-pptx as they are)."""
    from pptx import Presentation

    return Presentation(str(path))


class PptxMatchJudge(Component):
    """PPTC's PPTX-Match: label-deck attributes equal and every position restriction holds."""

    class Options(BaseOptions):
        """Options of the ``pptx_match`` judge."""

        semantics: Semantics = Field(
            "pptc",
            description="pptc: " + SEMANTICS["pptc"] + "; corrected: " + SEMANTICS["corrected"],
        )

    def judge(self, task: Task, prediction: Prediction, evidence: Evidence) -> Verdict:
        """1.0 when the prediction matches the label deck and satisfies the restrictions, else 0.0."""
        if task.target is None:
            raise JudgeError(f"task {task.id}: pptx_match needs the label deck as the task's target")
        if prediction.path is None:
            raise JudgeError(f"task {task.id}: the prediction has no deck")
        restrictions = list(((task.metadata or {}).get("pptc") or {}).get("restrictions") or [])
        semantics = self.options.semantics
        which = "prediction"
        try:
            predicted = load_deck(prediction.path)
            failed = check_positions(predicted, restrictions)
            which = "label deck"
            label = deck_blocks(load_deck(task.target), semantics)
            which = "prediction"
            pred = deck_blocks(predicted, semantics)  # the restriction checks change nothing it prints
        except ValueError as exc:  # a malformed restriction, or not a deck
            raise JudgeError(f"task {task.id}: {exc} (PPTC's check raises ValueError)") from exc
        except PptcUnreadable as exc:
            raise JudgeError(f"task {task.id}: PPTC's check cannot read the {which}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - not a deck python-pptx can open
            raise JudgeError(f"task {task.id}: cannot read the {which}: {type(exc).__name__}: {exc}") from exc
        same = "".join(b.text for b in label) == "".join(b.text for b in pred)
        positions_ok = not failed
        passed = same and positions_ok
        reasons = [] if same else [first_difference(label, pred)]
        reasons += [f"position restriction failed: {text}" for text in failed]
        metrics = {
            "attributes_match": int(same),
            "pos_total": int(bool(restrictions)),
            "pos_correct": int(bool(restrictions) and positions_ok),
        }
        return Verdict(
            score=1.0 if passed else 0.0,
            metrics=metrics,
            explanation="; ".join(reasons) or "attributes and positions match",
        )
