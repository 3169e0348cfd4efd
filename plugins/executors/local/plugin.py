"""Entry point of the ``local`` executor: registers :class:`.executor.LocalExecutor`."""

from __future__ import annotations

from typing import Any

import pptarena

from .executor import LocalExecutor


@pptarena.hookimpl
def register_executors(register: Any) -> None:
    """Register the ``local`` executor."""
    register("local", LocalExecutor)
