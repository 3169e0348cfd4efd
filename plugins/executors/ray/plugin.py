"""Entry point of the ``ray`` executor: registers :class:`.executor.RayExecutor`."""

from __future__ import annotations

from typing import Any

import pptarena

from .executor import RayExecutor


@pptarena.hookimpl
def register_executors(register: Any) -> None:
    """Register the ``ray`` executor."""
    register("ray", RayExecutor)
