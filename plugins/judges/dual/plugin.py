"""Entry point of the ``dual`` judge: registers :class:`.judge.DualJudge`."""

from __future__ import annotations

from typing import Any

import pptarena

from .judge import DualJudge


@pptarena.hookimpl
def register_judges(register: Any) -> None:
    """Register the ``dual`` judge."""
    register("dual", DualJudge)
