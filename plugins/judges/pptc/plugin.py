"""Entry point of the ``pptx_match`` judge: registers :class:`.judge.PptxMatchJudge`."""

from __future__ import annotations

from typing import Any

import pptarena

from .judge import PptxMatchJudge


@pptarena.hookimpl
def register_judges(register: Any) -> None:
    """Register the ``pptx_match`` judge."""
    register("pptx_match", PptxMatchJudge)
