"""Entry point of the ``rubric`` judge: registers :class:`.judge.RubricJudge`."""

from __future__ import annotations

from typing import Any

import pptarena

from .judge import RubricJudge


@pptarena.hookimpl
def register_judges(register: Any) -> None:
    """Register the ``rubric`` judge."""
    register("rubric", RubricJudge)
