"""Entry point of the PPTPilot-style agents: registers ``code``, ``xml`` and ``hybrid`` (:mod:`.agent`)."""

from __future__ import annotations

from typing import Any

import pptarena

from .agent import CodeAgent, HybridAgent, XmlAgent


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register ``code``, ``xml`` and ``hybrid``."""
    register("code", CodeAgent)
    register("xml", XmlAgent)
    register("hybrid", HybridAgent)
