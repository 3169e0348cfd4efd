"""Entry point of the ``structural`` judge: registers :class:`.judge.StructuralJudge`."""

from __future__ import annotations

from typing import Any

import pptarena

from .judge import StructuralJudge


@pptarena.hookimpl
def register_judges(register: Any) -> None:
    """Register the ``structural`` judge."""
    register("structural", StructuralJudge)
