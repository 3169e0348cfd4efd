"""Entry point of the PPTPilot-style agents: registers ``code``, ``xml`` and ``hybrid`` (:mod:`.agent`)."""

from __future__ import annotations

from typing import Any

import pptarena

from .agent import CodeAgent, HybridAgent, XmlAgent


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register ``code``, ``xml`` and ``hybrid``."""
    # host: their model-written programs run in sandboxes of their own (bubblewrap cannot nest)
    register("code", CodeAgent, placement="host")
    register("xml", XmlAgent, placement="host")
    register("hybrid", HybridAgent, placement="host")
