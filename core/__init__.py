"""pptarena: an open harness for evaluating agents that edit PowerPoint decks.

Plugin authors import from here::

    import pptarena

    @pptarena.hookimpl
    def register_agents(register):
        register("mine", MyAgent)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public names and the module defining each: imported on first use (PEP 562), so that
# ``import pptarena`` (and with it every ``arena`` command) does not pay for pluggy, pydantic and
# the model layer until something needs them (``@pptarena.hookimpl`` imports pluggy then).
_LAZY = {
    "Evidence": "evidence",
    "RegisterFn": "hookspecs",
    "hookimpl": "hookspecs",
    **{name: "models" for name in ("Completion", "ImagePart", "Message", "ModelClient", "ModelRef", "Usage")},
    **{
        name: "types"
        for name in (
            "Agent",
            "AgentError",
            "AgentTask",
            "AgentLog",
            "Component",
            "ComponentContext",
            "ComponentUnavailable",
            "Dataset",
            "InfraError",
            "Judge",
            "JudgeError",
            "Options",
            "PptArenaError",
            "Prediction",
            "Renderer",
            "SlideImage",
            "Status",
            "Task",
            "Verdict",
            "Workspace",
        )
    },
}

if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from .evidence import Evidence
    from .hookspecs import RegisterFn, hookimpl
    from .models import Completion, ImagePart, Message, ModelClient, ModelRef, Usage
    from .types import (
        Agent,
        AgentError,
        AgentLog,
        AgentTask,
        Component,
        ComponentContext,
        ComponentUnavailable,
        Dataset,
        InfraError,
        Judge,
        JudgeError,
        Options,
        PptArenaError,
        Prediction,
        Renderer,
        SlideImage,
        Status,
        Task,
        Verdict,
        Workspace,
    )

    __version__: str


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from ._version import __version__ as version

        value: Any = version
    elif name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


__all__ = [
    "Agent",
    "AgentError",
    "AgentLog",
    "AgentTask",
    "Completion",
    "Component",
    "ComponentContext",
    "ComponentUnavailable",
    "Dataset",
    "Evidence",
    "ImagePart",
    "InfraError",
    "Judge",
    "JudgeError",
    "Message",
    "ModelClient",
    "ModelRef",
    "Options",
    "PptArenaError",
    "Prediction",
    "RegisterFn",
    "Renderer",
    "SlideImage",
    "Status",
    "Task",
    "Usage",
    "Verdict",
    "Workspace",
    "__version__",
    "hookimpl",
]
