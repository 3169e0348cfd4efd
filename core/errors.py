"""pptarena's error types, in a module of their own so light modules (the deck engine) can raise them cheaply.

They are part of the plugin contract and re-exported by :mod:`pptarena` and :mod:`pptarena.types`.
How the runner classifies them: :class:`AgentError` → ``agent_error``; :class:`InfraError` and
:class:`ComponentUnavailable` → ``infra_error``; :class:`JudgeError` (from a judge) → ``judge_error``.
"""

from __future__ import annotations


class PptArenaError(Exception):
    """Base class of pptarena's own errors."""


class ComponentUnavailable(PptArenaError):
    """A component cannot work here (missing SDK, program or platform)."""


class AgentError(PptArenaError):
    """The agent under test failed to produce a usable prediction."""


class JudgeError(PptArenaError):
    """A judge could not produce a verdict (e.g. unparseable model output)."""


class InfraError(PptArenaError):
    """A tool failed (renderer crash, model unreachable): not the agent's fault."""


__all__ = ["AgentError", "ComponentUnavailable", "InfraError", "JudgeError", "PptArenaError"]
