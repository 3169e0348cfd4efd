"""Model messages and their accounting: what agents and judges send to a backend and get back.

Plain data shared by every backend: model references (``"<backend>/<model>"``), message
parts (text, images, tool calls and results), :class:`Completion`, :class:`Usage` and its
sum, and the model error types. No backend machinery lives here, so the response cache and
the retry policy can import these types without importing the client.

Why it is long: it is the leaf module of model types that the client, the cache, the retry
policy and every backend import, so message parts, :class:`Completion`, :class:`Usage` with
its :class:`UsageBook`, the error types, rate-header filtering and the redaction that keeps
secrets out of what is sent to a provider stay together with no import cycle.
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator

from pptarena.types import InfraError

if TYPE_CHECKING:  # pragma: no cover
    pass

log = logging.getLogger("pptarena.models")

Role = Literal["system", "user", "assistant"]


def check_model_ref(value: str) -> str:
    backend, sep, model = value.partition("/")
    if not sep or not backend or not model:
        raise ValueError(
            f"model reference {value!r} must look like '<backend>/<model>', e.g. 'openai/gpt-4o'"
        )
    return value


ModelRef = Annotated[str, AfterValidator(check_model_ref)]
"""An option type for ``"<backend>/<model>"`` references; the core checks the backend exists."""


def split_model_ref(ref: str) -> tuple[str, str]:
    """``"openai/gpt-4o"`` → ``("openai", "gpt-4o")`` (the model part may contain '/')."""
    check_model_ref(ref)
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


@dataclass(frozen=True, eq=False)
class ToolCall:
    """A tool call the model made, sent back in an ``assistant`` message when the conversation goes on.

    ``id`` is what the tool result answers (Anthropic's ``tool_use`` id,
    OpenAI's ``call_id``), ``name`` the tool, ``input`` its arguments.
    ``native`` is the provider's own output item, kept so a backend can replay
    it verbatim (the OpenAI Responses path does); backends that know the
    documented form (Anthropic ``tool_use``) rebuild it from the fields.
    """

    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    native: Mapping[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class ToolResult:
    """The result of a :class:`ToolCall`, in a ``user`` message: text and images (e.g. a screenshot).

    ``native`` holds provider-specific fields merged into the wire item, e.g.
    ``{"acknowledged_safety_checks": [...]}`` for an OpenAI ``computer_call_output``.
    """

    call_id: str
    content: tuple[str | ImagePart, ...] = ()
    is_error: bool = False
    native: Mapping[str, Any] | None = None

    def images(self) -> list[ImagePart]:
        """The images of the result, in order."""
        return [p for p in self.content if isinstance(p, ImagePart)]


Part = str | ImagePart | ToolCall | ToolResult
"""One part of a message's content."""


@dataclass(frozen=True)
class Message:
    """A chat message: ``content`` is text or a tuple of parts.

    Parts are text, images and, for tool-using conversations, :class:`ToolCall`
    (assistant messages) and :class:`ToolResult` (user messages). Backends that
    do not support tools reject messages holding them with ``TypeError``.
    """

    role: Role
    content: str | tuple[Part, ...]
    cache_prefix: bool = False
    """This message ends the request's stable prefix: the part a task's calls share (system prompt,
    instruction, original and target slides). Backends with explicit prompt caching (Anthropic's
    ``cache_control``) mark it; providers with automatic caching (OpenAI, Gemini) gain from the order
    alone. It never changes the answer, so it is not part of the response-cache key."""

    def parts(self) -> tuple[Part, ...]:
        """Content as a tuple of parts."""
        return (self.content,) if isinstance(self.content, str) else tuple(self.content)

    @classmethod
    def user(cls, *parts: Part, cache_prefix: bool = False) -> Message:
        """Shorthand for a user message (``cache_prefix``: see the field)."""
        content = parts[0] if len(parts) == 1 and isinstance(parts[0], str) else tuple(parts)
        return cls("user", content, cache_prefix)

    @classmethod
    def system(cls, text: str, *, cache_prefix: bool = False) -> Message:
        """Shorthand for a system message (``cache_prefix``: see the field)."""
        return cls("system", text, cache_prefix)

    @classmethod
    def assistant(cls, text: str, *calls: ToolCall) -> Message:
        """Shorthand for an assistant message (text, then any tool calls it made)."""
        if not calls:
            return cls("assistant", text)
        return cls("assistant", ((text,) if text else ()) + tuple(calls))

    def has_images(self) -> bool:
        """Whether an image is among the parts (tool results' images included)."""
        return any(
            isinstance(p, ImagePart) or (isinstance(p, ToolResult) and p.images()) for p in self.parts()
        )

    def without_images(self, note: str) -> Message:
        """The same message with every image (tool results' too) replaced by the text ``note``: how
        an agent keeps a long conversation's older renders or screenshots out of its next request."""
        parts: list[Part] = []
        for p in self.parts():
            if isinstance(p, ImagePart):
                parts.append(note)
            elif isinstance(p, ToolResult) and p.images():
                content = tuple(note if isinstance(c, ImagePart) else c for c in p.content)
                parts.append(ToolResult(p.call_id, content, p.is_error, p.native))
            else:
                parts.append(p)
        return Message(self.role, tuple(parts), self.cache_prefix)


def prune_images(messages: list[Message], keep: int, note: str) -> list[Message]:
    """``messages`` with images only in the last ``keep`` user messages that hold any; the older
    ones get ``note`` in place of each image (:meth:`Message.without_images`), so a long agent loop
    does not resend every render or screenshot it has seen."""
    with_images = [i for i, m in enumerate(messages) if m.role == "user" and m.has_images()]
    drop = set(with_images[: max(0, len(with_images) - max(0, keep))])
    return [m.without_images(note) if i in drop else m for i, m in enumerate(messages)]


# --------------------------------------------------------------------------- usage


@dataclass
class Usage:
    """Token counts of one or more calls.

    ``calls`` counts completions returned (cache hits included), ``cached_calls``
    those served from the response cache, ``retries`` the extra attempts after
    transient failures and ``errors`` the calls that finally failed. Token counts
    are those the answers cost when they were made, also for cache hits, so a
    re-run from the cache reports the same usage as the original run.
    ``cached_input_tokens`` is the part of ``input_tokens`` the provider served
    from its prompt cache (priced at the ``cached_input`` rate);
    ``cache_write_input_tokens`` the part it wrote to its prompt cache (Anthropic
    bills writes above the input rate), ``cache_write_1h_input_tokens`` of which
    with a one-hour lifetime. ``throttled`` counts the provider's 429 answers and ``wait_ms`` the
    milliseconds the calls waited for the run's rate limiter and for retry backoff.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    errors: int = 0
    cached_input_tokens: int = 0  # new fields go last, so positional construction keeps its meaning
    cache_write_input_tokens: int = 0
    cache_write_1h_input_tokens: int = 0
    throttled: int = 0  # answers that were a rate-limit refusal (429), retried or not
    wait_ms: int = 0  # milliseconds spent waiting on the run's rate limiter and on retry backoff

    def add(self, other: Usage) -> None:
        """Accumulate another usage into this one."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def __add__(self, other: Usage) -> Usage:
        total = Usage()
        total.add(self)
        total.add(other)
        return total

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, int]:
        """JSON-ready form (every field, integers)."""
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """Inverse of :meth:`as_dict`; unknown keys are ignored, missing ones are 0."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: int(v) for k, v in data.items() if k in names})


def sum_usage(items: Iterable[Usage | Mapping[str, Any]]) -> Usage:
    """Sum usages given as :class:`Usage` objects or their ``as_dict()`` forms."""
    total = Usage()
    for item in items:
        total.add(item if isinstance(item, Usage) else Usage.from_dict(item))
    return total


def add_counts(into: dict[str, int], counts: Mapping[str, Any], prefix: str = "") -> dict[str, int]:
    """Add integer ``counts`` (usage fields) into ``into`` under ``prefix + key``; returns ``into``.

    The one place where usage dictionaries of results (agent, prediction and judge usage)
    are summed; non-integer values are ignored.
    """
    for key, value in counts.items():
        if isinstance(value, int) and not isinstance(value, bool):
            into[prefix + key] = into.get(prefix + key, 0) + value
    return into


class UsageBook:
    """Thread-safe usage totals per ``"<backend>/<model>"`` reference.

    Hand one to every :class:`ModelClient` of a task (``ModelClient(..., book=b)``)
    and read ``b.total()`` or ``b.as_dict()`` afterwards; books add up with
    :meth:`merge` for run totals.
    """

    def __init__(self) -> None:
        self._by_ref: dict[str, Usage] = {}
        self._cost = 0.0
        self._unpriced: set[str] = set()
        self._local: set[str] = set()
        self._saved = 0.0
        self._lock = threading.Lock()

    def record(
        self, ref: str, usage: Usage, cost: float | None = 0.0, *, saved: float = 0.0, local: bool = False
    ) -> None:
        """Add one call's usage (and its cost in USD; None when its model has no price) under ``ref``;
        ``saved``: what the provider's prompt caching saved on it; ``local``: priced 0 as a model on a
        local server."""
        with self._lock:
            self._by_ref.setdefault(ref, Usage()).add(usage)
            if cost is None:
                self._unpriced.add(ref)
            else:
                self._cost += cost
            self._saved += saved
            if local:
                self._local.add(ref)

    def merge(self, other: UsageBook | Mapping[str, Mapping[str, Any]]) -> None:
        """Add another book (or its ``by_model`` dict) into this one."""
        items = other.by_model() if isinstance(other, UsageBook) else other
        for ref, usage in items.items():
            self.record(ref, usage if isinstance(usage, Usage) else Usage.from_dict(usage))
        if isinstance(other, UsageBook):
            cost = other.cost()
            with self._lock:
                self._cost += cost["known_usd"]
                self._unpriced.update(cost["unpriced_models"])
                self._local.update(cost.get("local_models") or [])
                self._saved += float(cost.get("cache_saved_usd") or 0.0)

    def cost(self) -> dict[str, Any]:
        """``{"usd": total or None when a call was unpriced, "known_usd": priced part,
        "unpriced_models": [...]}``, plus ``local_models`` and ``cache_saved_usd`` when not empty
        (:func:`pptarena.models.pricing.cost_record`).
        """
        from pptarena.models.pricing import cost_record

        with self._lock:
            known, unpriced, local, saved = self._cost, set(self._unpriced), set(self._local), self._saved
        return cost_record(known, unpriced, local_models=local, cache_saved_usd=saved)

    def by_model(self) -> dict[str, Usage]:
        """A copy of the per-reference totals."""
        with self._lock:
            return {ref: Usage.from_dict(u.as_dict()) for ref, u in self._by_ref.items()}

    def total(self) -> Usage:
        """The sum over every reference."""
        return sum_usage(self.by_model().values())

    def as_dict(self) -> dict[str, Any]:
        """``{"total": {...}, "by_model": {ref: {...}}}``."""
        by_model = self.by_model()
        return {
            "total": sum_usage(by_model.values()).as_dict(),
            "by_model": {r: u.as_dict() for r, u in by_model.items()},
        }


# --------------------------------------------------------------------------- completions and errors


@dataclass
class Completion:
    """A backend's answer.

    ``text`` is the reply text; ``raw`` is the provider's whole response as
    JSON (where tool calls live: Anthropic ``content`` blocks of type
    ``tool_use``, OpenAI Responses ``output`` items of type ``computer_call``).
    """

    text: str
    model: str
    usage: Usage = field(default_factory=lambda: Usage(calls=1))
    cached: bool = False
    raw: dict[str, Any] | None = None
    finish_reason: str | None = None
    rate_headers: dict[str, str] = field(default_factory=dict)
    """The response's rate-limit headers, names lower-cased (``x-ratelimit-*``,
    ``anthropic-ratelimit-*``, ``retry-after``, ``retry-after-ms``): what the run's rate limiter
    learns the provider's limits from (:mod:`pptarena.models.ratelimit`). Empty when the backend
    cannot see headers."""
    batch_id: str | None = None
    """The provider's batch job this answer came from (priced at the batch rates), None for a
    direct call."""


class ModelError(InfraError):
    """A model call failed for a reason that is not the caller's fault (unreachable, 5xx, bad key...).

    ``status`` is the HTTP status when there was one. Messages never contain
    credentials (backends pass them through :func:`redact_secrets`).
    """

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class TransientModelError(ModelError):
    """A retryable failure: rate limit, 5xx, timeout, connection error.

    ``retry_after`` is the server's ``Retry-After`` in seconds when it sent one (``retry-after-ms``
    preferred); ``rate_headers`` the answer's rate-limit headers as in :attr:`Completion.rate_headers`.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        rate_headers: Mapping[str, str] | None = None,
    ):
        super().__init__(message, status=status)
        self.retry_after = retry_after
        self.rate_headers = dict(rate_headers or {})


RATE_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "retry-after", "x-goog-quota")
"""Response headers the rate limiter reads (names lower-cased)."""


def rate_headers_of(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> dict[str, str]:
    """The rate-limit headers among ``headers`` (a mapping or ``(name, value)`` pairs), names
    lower-cased: what a backend puts in :attr:`Completion.rate_headers` and
    :attr:`TransientModelError.rate_headers`."""
    if headers is None:
        return {}
    items = headers.items() if isinstance(headers, Mapping) else headers
    try:
        pairs = list(items)
    except Exception:  # an SDK's odd header object: no headers rather than a failed call
        return {}
    return {str(k).lower(): str(v) for k, v in pairs if str(k).lower().startswith(RATE_HEADER_PREFIXES)}


def redact_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (and its 8+ character head or tail) replaced by ``***``: the
    run's one redactor (:func:`pptarena.trust.redact.redact_text`) in its mode for provider messages."""
    from pptarena.trust.redact import redact_text

    return redact_text(text, list(secrets), fragments=True)


def redact_messages(messages: list[Any]) -> list[Any]:
    """Chat messages (:class:`Message`) with secrets (:func:`pptarena.trust.redact.secrets`) masked in
    their text parts, tool results included; other parts (images) and other objects pass unchanged."""
    from pptarena.trust.redact import redact_text, secrets

    known = secrets()
    if not known:
        return messages

    def part(p: Any) -> Any:
        if isinstance(p, str):
            return redact_text(p, known)
        if isinstance(p, ToolResult):
            return replace(p, content=tuple(part(c) for c in p.content))
        return p

    out = []
    for m in messages:
        if isinstance(m, Message):
            content = (
                redact_text(m.content, known)
                if isinstance(m.content, str)
                else tuple(part(p) for p in m.content)
            )
            out.append(replace(m, content=content) if content != m.content else m)
        else:
            out.append(m)
    return out
