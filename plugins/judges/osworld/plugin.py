"""Entry point of the ``osworld`` judge: registers :class:`.judge.OsworldJudge`."""

from __future__ import annotations

from typing import Any

import pptarena

from .judge import OsworldJudge


@pptarena.hookimpl
def register_judges(register: Any) -> None:
    """Register the ``osworld`` judge."""
    register("osworld", OsworldJudge)
