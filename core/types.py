"""Data types shared by the core and every plugin.

Components never talk to each other directly: a dataset yields :class:`Task`,
an agent turns its answer-free view (:class:`AgentTask`) into a :class:`Prediction`, a renderer yields
:class:`SlideImage` lists and a judge returns a :class:`Verdict`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .errors import AgentError as AgentError  # re-exported: part of the plugin contract
from .errors import ComponentUnavailable as ComponentUnavailable
from .errors import InfraError as InfraError
from .errors import JudgeError as JudgeError
from .errors import PptArenaError as PptArenaError

if TYPE_CHECKING:  # pragma: no cover
    from .evidence import Evidence
    from .models import ModelClient

KINDS = ("datasets", "agents", "renderers", "judges", "backends", "executors", "reporters")


class Status(StrEnum):
    """How an (agent, task) pair ended. Only ``scored`` pairs count towards an agent's scores.

    A broken tool is never a bad agent: ``infra_error`` is the harness's or a tool's fault
    (renderer, unreachable model, unreadable dataset deck), ``agent_error`` and ``timeout`` the
    agent's, ``judge_error`` a judge's that could not reach a verdict.
    """

    SCORED = "scored"
    AGENT_ERROR = "agent_error"
    TIMEOUT = "timeout"
    JUDGE_ERROR = "judge_error"
    INFRA_ERROR = "infra_error"


STATUSES = tuple(s.value for s in Status)


class Options(BaseModel):
    """Base for component options: unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- errors


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """One editing task.

    ``metadata`` carries dataset facts such as ``category`` (list of str),
    ``edit_type``, ``difficulty`` and ``source``.
    """

    id: str
    instruction: str
    original: Path
    target: Path | None = None
    style_target: str | None = None
    rubric: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (paths as strings)."""
        return {
            "id": self.id,
            "instruction": self.instruction,
            "original": str(self.original),
            "target": str(self.target) if self.target else None,
            "style_target": self.style_target,
            "rubric": self.rubric,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        """Inverse of :meth:`to_json`."""
        return cls(
            id=data["id"],
            instruction=data["instruction"],
            original=Path(data["original"]),
            target=Path(data["target"]) if data.get("target") else None,
            style_target=data.get("style_target"),
            rubric=data.get("rubric"),
            metadata=dict(data.get("metadata") or {}),
        )


PUBLIC_METADATA_KEYS = (
    "category",
    "edit_type",
    "difficulty",
    "tags",
    "source",
    "dataset",
    "subset",
    "requires",
    "hint",
    "turn",
    "session_id",
)
"""Task metadata keys every agent may see (:class:`AgentTask`). A dataset makes more keys public by
listing their names in ``metadata["public"]``; every other key stays on the judges' side."""

HIDDEN_KEYS = frozenset({"target", "style_target", "rubric", "reference", "references", "label"})
"""Keys never copied into an agent's view, wherever they appear (a turn-history entry, a public value)."""


@dataclass(frozen=True, slots=True)
class AgentTask:
    """What an agent is given of a task: the task without its answer.

    ``original`` is the agent's private copy of the input deck (the same file as
    ``workspace.input_deck``), ``metadata`` holds only the keys the dataset marks as public
    (:data:`PUBLIC_METADATA_KEYS` plus any listed in the task's ``metadata["public"]``), and
    ``turn_history`` lists the earlier turns of a multi-turn session (``{"turn", "instruction", ...}``,
    oldest first; also at ``metadata["turn_history"]``). The target deck, style target, rubric
    and reference paths are not part of this type: they never cross to the agent side.
    """

    id: str
    instruction: str
    original: Path
    metadata: dict[str, Any] = field(default_factory=dict)
    turn_history: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what a worker process is sent)."""
        return {
            "id": self.id,
            "instruction": self.instruction,
            "original": str(self.original),
            "metadata": self.metadata,
            "turn_history": list(self.turn_history),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentTask:
        """Inverse of :meth:`to_json` (unknown keys are ignored)."""
        return cls(
            id=str(data["id"]),
            instruction=str(data["instruction"]),
            original=Path(data["original"]),
            metadata=dict(data.get("metadata") or {}),
            turn_history=tuple(dict(h) for h in data.get("turn_history") or ()),
        )


@dataclass
class Prediction:
    """What an agent hands in: the edited deck (or None when it produced none)."""

    path: Path | None
    notes: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SlideImage:
    """One rendered slide."""

    number: int  # 1-based position in the deck
    sld_id: int | None  # the p:sldId id value
    path: Path
    width: int
    height: int
    hidden: bool = False


@dataclass
class Verdict:
    """A judge's result. ``score`` is in [0, 1]."""

    score: float
    metrics: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.score) <= 1.0:
            raise ValueError(f"Verdict score {self.score!r} is outside [0, 1]")
        self.score = float(self.score)


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class Dataset(Protocol):
    """A source of tasks."""

    def tasks(self) -> Iterable[Task]: ...


@runtime_checkable
class Renderer(Protocol):
    """Deck → one PNG per slide (hidden slides included, deck order)."""

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]: ...


@runtime_checkable
class Agent(Protocol):
    """The system under test: it gets the task without its answer (:class:`AgentTask`)."""

    def edit(self, task: AgentTask, workspace: Workspace) -> Prediction: ...


@runtime_checkable
class Judge(Protocol):
    """Scores a prediction."""

    def judge(self, task: Task, prediction: Prediction, evidence: Evidence) -> Verdict: ...


# --------------------------------------------------------------------------- context


class AgentLog:
    """Append-only JSON-lines log of what an agent did (model calls, code runs, patches).

    Thread-safe; every line is flushed as it is written so nothing is lost on a crash.
    """

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []

    def write(self, event: str, **data: Any) -> None:
        """Record one event, e.g. ``log.write("model_call", model=..., usage=...)``."""
        from .trust.redact import redact_obj

        record = redact_obj({"t": round(time.time(), 3), "event": event, **data})
        with self._lock:
            self.events.append(record)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")


@dataclass
class ComponentContext:
    """What the core hands every component at construction.

    ``model(ref)`` returns a :class:`pptarena.models.ModelClient` for a
    ``"<backend>/<model>"`` reference; ``renderer`` is the run's renderer
    (None when constructing the renderer itself); ``cache_dir`` is a folder
    the component may use across runs.
    """

    cache_dir: Path
    model: Callable[[str], ModelClient]
    renderer: Renderer | None = None
    name: str = ""
    label: str = ""


@dataclass
class Workspace:
    """The private working area of one (agent, task) pair.

    ``input_deck`` is a private copy of the task's original deck; the agent
    writes its result to ``output_deck``. ``dir`` is the task's folder in the
    run directory (``tasks/<agent>/<task_id>``), where the agent may keep files.
    """

    dir: Path
    input_deck: Path
    output_deck: Path
    renderer: Renderer | None
    model: Callable[[str], ModelClient]
    log: AgentLog
    timeout: float | None = None


class Component:
    """Optional convenience base class for components.

    Stores ``options`` and ``context``; subclasses set ``Options``.
    """

    Options: ClassVar[type[BaseModel]] = Options

    def __init__(self, options: BaseModel, context: ComponentContext):
        self.options = options
        self.context = context
