"""pptarena: an open harness for evaluating agents that edit PowerPoint decks.

Plugin authors import from here::

    import pptarena

    @pptarena.hookimpl
    def register_agents(register):
        register("mine", MyAgent)
"""

from importlib.metadata import PackageNotFoundError, version

from .evidence import Evidence
from .hookspecs import RegisterFn, hookimpl
from .models import Completion, ImagePart, Message, ModelClient, ModelRef, Usage
from .types import (
    Agent,
    AgentError,
    AgentLog,
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

try:
    __version__ = version("pptarena")
except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
    __version__ = "0.0.0"

__all__ = [
    "Agent",
    "AgentError",
    "AgentLog",
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
