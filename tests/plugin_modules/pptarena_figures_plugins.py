"""Test-only plugin for tests/report/test_pptarena_figures.py (registered with PPTARENA_PLUGINS).

``ifvq``: a judge giving the IF/VQ scores its options list per task id, with the metrics and
details the ``dual`` judge gives, so a run has dual-shaped verdicts without a model or a renderer.
"""

from __future__ import annotations

from pydantic import Field

import pptarena
from pptarena.types import Component, JudgeError, Verdict
from pptarena.types import Options as BaseOptions


class TableJudge(Component):
    """IF and VQ on 0-5 from ``scores`` (task id -> [IF, VQ]); a task listed in ``fail`` raises."""

    class Options(BaseOptions):
        """The scores per task id."""

        scores: dict[str, list[float]] = Field(default_factory=dict)
        fail: list[str] = Field(default_factory=list)

    def judge(self, task, prediction, evidence):
        """The listed scores, as the dual judge reports them."""
        if task.id in self.options.fail:
            raise JudgeError(f"task {task.id}: the judge model gave no verdict")
        if_score, vq_score = self.options.scores[task.id]
        return Verdict(
            score=(if_score + vq_score) / 10,
            metrics={"if_score": if_score, "vq_score": vq_score, "judge_model": "table/model"},
            explanation=f"IF {if_score}/5 VQ {vq_score}/5",
            details={
                "if": {"reason": f"if of {task.id}"},
                "vq": {"chunks": [{"reason": f"vq of {task.id}"}]},
            },
        )


@pptarena.hookimpl
def register_judges(register):
    """Register ``ifvq``."""
    register("ifvq", TableJudge)
