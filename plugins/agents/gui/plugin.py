"""Entry point of the ``gui`` agent: registers :class:`.agent.GuiAgent`."""

from __future__ import annotations

from typing import Any

import pptarena

from .agent import GuiAgent


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register the ``gui`` agent."""
    register("gui", GuiAgent, placement="host")  # Impress runs in a jail of its own
