"""Entry point of the ``tools`` agent (:mod:`.agent`): a tool-calling loop over the deck tools' MCP server."""

from __future__ import annotations

from typing import Any

import pptarena

from .agent import ToolsAgent


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register ``tools``."""
    # host: the deck server's run_python runs model-written programs in a sandbox of its own
    # (bubblewrap cannot nest), and renders go through the run's renderer
    register("tools", ToolsAgent, placement="host")
