"""Entry point of the ``command`` agent: registers :class:`.agent.CommandAgent`."""

from __future__ import annotations

from typing import Any

import pptarena

from .agent import CommandAgent


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register the ``command`` agent."""
    register("command", CommandAgent, placement="host")  # the CLI runs in a jail of its own
