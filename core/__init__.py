"""pptarena: an open harness for evaluating agents that edit PowerPoint decks.

Plugin authors import from here::

    import pptarena

    @pptarena.hookimpl
    def register_agents(register):
        register("mine", MyAgent)
"""

from importlib.metadata import PackageNotFoundError, version

from .hookspecs import hookimpl
from .models import Completion, ImagePart, Message, ModelClient, ModelRef, Usage
from .types import (
    AgentError,
    AgentLog,
    Component,
    ComponentContext,
    ComponentUnavailable,
    InfraError,
    JudgeError,
    Options,
    Prediction,
    SlideImage,
    Task,
    Verdict,
    Workspace,
)

try:
    __version__ = version("pptarena")
except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
    __version__ = "0.0.0"

__all__ = [
    "AgentError",
    "AgentLog",
    "Completion",
    "Component",
    "ComponentContext",
    "ComponentUnavailable",
    "ImagePart",
    "InfraError",
    "JudgeError",
    "Message",
    "ModelClient",
    "ModelRef",
    "Options",
    "Prediction",
    "SlideImage",
    "Task",
    "Usage",
    "Verdict",
    "Workspace",
    "__version__",
    "hookimpl",
]
