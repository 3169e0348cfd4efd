"""pptarena: an open harness for evaluating agents that edit PowerPoint decks.

Plugin authors import from here::

    import pptarena

    @pptarena.hookimpl
    def register_agents(register):
        register("mine", MyAgent)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._imports import install_moved_module_aliases, lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, {**_LAZY, "__version__": "_version"}, ["__version__"])
install_moved_module_aliases()


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
