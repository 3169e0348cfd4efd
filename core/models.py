"""The model-backend protocol shared by agents and judges.

A backend plugin implements ``complete(messages, *, model, **params) -> Completion``.
Components never call a backend directly: they get a :class:`ModelClient` from
``context.model("<backend>/<model>")``, which adds usage accounting (and, in
the shared layer, retries, caching and a concurrency limit).
"""

from __future__ import annotations

import base64
import mimetypes
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import AfterValidator

from .types import InfraError

Role = Literal["system", "user", "assistant"]


def _check_model_ref(value: str) -> str:
    backend, sep, model = value.partition("/")
    if not sep or not backend or not model:
        raise ValueError(f"model reference {value!r} must look like '<backend>/<model>', e.g. 'openai/gpt-4o'")
    return value


ModelRef = Annotated[str, AfterValidator(_check_model_ref)]
"""An option type for ``"<backend>/<model>"`` references; the core checks the backend exists."""


def split_model_ref(ref: str) -> tuple[str, str]:
    """``"openai/gpt-4o"`` → ``("openai", "gpt-4o")`` (the model part may contain '/')."""
    _check_model_ref(ref)
    backend, _, model = ref.partition("/")
    return backend, model


@dataclass(frozen=True)
class ImagePart:
    """An image in a message (PNG or JPEG bytes)."""

    data: bytes
    media_type: str = "image/png"

    @classmethod
    def from_path(cls, path: str | Path) -> ImagePart:
        """Read an image file."""
        p = Path(path)
        media = mimetypes.guess_type(p.name)[0] or "image/png"
        return cls(p.read_bytes(), media)

    def b64(self) -> str:
        """Base64 text of the bytes."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """A ``data:`` URL (the OpenAI image_url form)."""
        return f"data:{self.media_type};base64,{self.b64()}"


@dataclass(frozen=True)
class Message:
    """A chat message: ``content`` is text or a list of text and images."""

    role: Role
    content: str | tuple[str | ImagePart, ...]

    def parts(self) -> tuple[str | ImagePart, ...]:
        """Content as a tuple of parts."""
        return (self.content,) if isinstance(self.content, str) else tuple(self.content)

    @classmethod
    def user(cls, *parts: str | ImagePart) -> Message:
        """Shorthand for a user message."""
        return cls("user", parts[0] if len(parts) == 1 and isinstance(parts[0], str) else tuple(parts))

    @classmethod
    def system(cls, text: str) -> Message:
        """Shorthand for a system message."""
        return cls("system", text)

    @classmethod
    def assistant(cls, text: str) -> Message:
        """Shorthand for an assistant message."""
        return cls("assistant", text)


@dataclass
class Usage:
    """Token counts of one or more calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    def add(self, other: Usage) -> None:
        """Accumulate another usage into this one."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls

    def as_dict(self) -> dict[str, int]:
        """JSON-ready form."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "calls": self.calls}


@dataclass
class Completion:
    """A backend's answer."""

    text: str
    model: str
    usage: Usage = field(default_factory=lambda: Usage(calls=1))
    cached: bool = False
    raw: dict[str, Any] | None = None


class ModelError(InfraError):
    """A model call failed for a reason that is not the caller's fault (unreachable, 5xx...)."""


class TransientModelError(ModelError):
    """A retryable failure: rate limit, 5xx, timeout."""


class Backend(Protocol):
    """What a backend plugin implements."""

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion: ...


class ModelClient:
    """A backend bound to one model, with usage accounting.

    ``complete(messages, temperature=..., max_tokens=...)`` returns a
    :class:`Completion`; ``usage`` sums every call made through this client.
    """

    def __init__(self, backend: Backend, backend_name: str, model: str):
        self.backend = backend
        self.backend_name = backend_name
        self.model = model
        self.usage = Usage()
        self._lock = threading.Lock()

    @property
    def ref(self) -> str:
        """The ``"<backend>/<model>"`` reference."""
        return f"{self.backend_name}/{self.model}"

    def complete(self, messages: list[Message], **params: Any) -> Completion:
        """Send messages and return the completion."""
        completion = self.backend.complete(list(messages), model=self.model, **params)
        with self._lock:
            self.usage.add(completion.usage)
        return completion
