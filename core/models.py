"""The model-backend protocol shared by agents and judges.

A backend plugin implements ``complete(messages, *, model, **params) -> Completion``.
Components never call a backend directly: they get a :class:`ModelClient` from
``context.model("<backend>/<model>")``. The client adds what every backend
shares, built-in or third-party: bounded retries with backoff and jitter on
:class:`TransientModelError`, a per-call deadline, the on-disk response cache,
a concurrency limit per backend instance, and usage accounting.

Backends that subclass :class:`BackendBase` (options: :class:`BackendOptions`)
get their retry/timeout/cache/concurrency settings from their config table;
any other backend object gets the defaults of :class:`BackendOptions`.
"""

from __future__ import annotations

import base64
import logging
import mimetypes
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import AfterValidator, Field

from .types import AgentLog, Component, ComponentContext, InfraError, Options

if TYPE_CHECKING:  # pragma: no cover
    from .model_cache import ResponseCache
    from .model_retry import RetryPolicy

log = logging.getLogger("pptarena.models")

Role = Literal["system", "user", "assistant"]


def _check_model_ref(value: str) -> str:
    backend, sep, model = value.partition("/")
    if not sep or not backend or not model:
        raise ValueError(
            f"model reference {value!r} must look like '<backend>/<model>', e.g. 'openai/gpt-4o'"
        )
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

    def parts(self) -> tuple[Part, ...]:
        """Content as a tuple of parts."""
        return (self.content,) if isinstance(self.content, str) else tuple(self.content)

    @classmethod
    def user(cls, *parts: Part) -> Message:
        """Shorthand for a user message."""
        return cls("user", parts[0] if len(parts) == 1 and isinstance(parts[0], str) else tuple(parts))

    @classmethod
    def system(cls, text: str) -> Message:
        """Shorthand for a system message."""
        return cls("system", text)

    @classmethod
    def assistant(cls, text: str, *calls: ToolCall) -> Message:
        """Shorthand for an assistant message (text, then any tool calls it made)."""
        if not calls:
            return cls("assistant", text)
        return cls("assistant", ((text,) if text else ()) + tuple(calls))


# --------------------------------------------------------------------------- usage


@dataclass
class Usage:
    """Token counts of one or more calls.

    ``calls`` counts completions returned (cache hits included), ``cached_calls``
    those served from the response cache, ``retries`` the extra attempts after
    transient failures and ``errors`` the calls that finally failed. Token counts
    are those the answers cost when they were made, also for cache hits, so a
    re-run from the cache reports the same usage as the original run.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    errors: int = 0

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


class UsageBook:
    """Thread-safe usage totals per ``"<backend>/<model>"`` reference.

    Hand one to every :class:`ModelClient` of a task (``ModelClient(..., book=b)``)
    and read ``b.total()`` or ``b.as_dict()`` afterwards; books add up with
    :meth:`merge` for run totals.
    """

    def __init__(self) -> None:
        self._by_ref: dict[str, Usage] = {}
        self._lock = threading.Lock()

    def record(self, ref: str, usage: Usage) -> None:
        """Add one call's usage under ``ref``."""
        with self._lock:
            self._by_ref.setdefault(ref, Usage()).add(usage)

    def merge(self, other: UsageBook | Mapping[str, Mapping[str, Any]]) -> None:
        """Add another book (or its ``by_model`` dict) into this one."""
        items = other.by_model() if isinstance(other, UsageBook) else other
        for ref, usage in items.items():
            self.record(ref, usage if isinstance(usage, Usage) else Usage.from_dict(usage))

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

    ``retry_after`` is the server's ``Retry-After`` in seconds when it sent one.
    """

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message, status=status)
        self.retry_after = retry_after


def redact_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (and its 8+ character head or tail) replaced by ``***``."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, "***")
        if len(secret) >= 16:  # providers echo masked keys such as "sk-abc...wxyz"
            text = text.replace(secret[:8], "***").replace(secret[-8:], "***")
    return text


class Backend(Protocol):
    """What a backend plugin implements."""

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion: ...


# --------------------------------------------------------------------------- backend options and base


class BackendOptions(Options):
    """Options every backend shares (its ``[backends.NAME]`` table).

    Backends subclass this for their own options; :class:`ModelClient` applies
    these to every call.
    """

    timeout: float = Field(120.0, gt=0, description="seconds per call (one attempt)")
    max_retries: int = Field(4, ge=0, le=20, description="retries after a transient failure")
    retry_base_delay: float = Field(
        1.0, ge=0, description="first backoff ceiling in seconds; doubles per retry"
    )
    retry_max_delay: float = Field(30.0, ge=0, description="backoff ceiling in seconds")
    concurrency: int = Field(
        8, ge=1, le=1024, description="calls in flight per backend instance (per process)"
    )
    cache: bool | Path = Field(
        False, description="true: <cache_dir>/model-cache.sqlite; a path: that sqlite file; false: off"
    )
    temperature: float | None = Field(None, description="default temperature when a call gives none")
    max_tokens: int | None = Field(
        None, gt=0, description="default output-token limit when a call gives none"
    )


class CallPolicy:
    """What :class:`ModelClient` applies around a backend's calls.

    One per backend instance (the semaphore must be shared by every client of
    that instance). Build it with :meth:`from_options`.
    """

    def __init__(
        self,
        retry: RetryPolicy | None = None,
        timeout: float | None = 120.0,
        concurrency: int = 8,
        cache: ResponseCache | None = None,
        defaults: Mapping[str, Any] | None = None,
    ):
        from .model_retry import RetryPolicy

        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.concurrency = concurrency
        self.semaphore = threading.BoundedSemaphore(concurrency)
        self.cache = cache
        self.defaults = dict(defaults or {})

    @property
    def deadline(self) -> float | None:
        """The hard limit per attempt: ``timeout * 1.25 + 1`` s (the backend's own timeout fires first)."""
        return None if self.timeout is None else self.timeout * 1.25 + 1.0

    @classmethod
    def from_options(cls, options: BackendOptions, cache_dir: Path | None = None) -> CallPolicy:
        """The policy a backend's options ask for (``cache=true`` needs ``cache_dir``)."""
        from .model_cache import CACHE_FILE_NAME, shared_cache
        from .model_retry import RetryPolicy

        cache = None
        if isinstance(options.cache, Path):
            cache = shared_cache(options.cache)
        elif options.cache:
            if cache_dir is None:
                raise ValueError("cache = true needs a cache directory; give cache a file path instead")
            cache = shared_cache(Path(cache_dir) / CACHE_FILE_NAME)
        defaults = {
            k: v
            for k, v in (("temperature", options.temperature), ("max_tokens", options.max_tokens))
            if v is not None
        }
        return cls(
            retry=RetryPolicy(options.max_retries, options.retry_base_delay, options.retry_max_delay),
            timeout=options.timeout,
            concurrency=options.concurrency,
            cache=cache,
            defaults=defaults,
        )


class BackendBase(Component):
    """Convenience base class for backends: builds :attr:`call_policy` from :class:`BackendOptions`.

    Subclasses set ``Options`` (a :class:`BackendOptions` subclass) and
    implement :meth:`complete`; they may override :meth:`cache_identity` to add
    facts that change answers (e.g. the server URL, never a secret).
    """

    Options = BackendOptions

    def __init__(self, options: BackendOptions, context: ComponentContext):
        super().__init__(options, context)
        self.call_policy = CallPolicy.from_options(options, context.cache_dir)

    def cache_identity(self) -> dict[str, Any]:
        """Facts besides model, messages and params that change the answer (part of the cache key)."""
        return {}

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """Send ``messages`` to ``model``; raise :class:`TransientModelError` for retryable failures."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (subclasses override)."""


_default_policies: weakref.WeakKeyDictionary[Any, CallPolicy] = weakref.WeakKeyDictionary()
_default_policies_lock = threading.Lock()


def policy_for(backend: Any) -> CallPolicy:
    """The backend's ``call_policy``, or one default policy per backend object."""
    policy = getattr(backend, "call_policy", None)
    if isinstance(policy, CallPolicy):
        return policy
    with _default_policies_lock:
        try:
            policy = _default_policies.get(backend)
            if policy is None:
                policy = _default_policies[backend] = CallPolicy.from_options(
                    BackendOptions.model_validate({})
                )
            return policy
        except TypeError:  # not weak-referenceable: a fresh policy each time
            return CallPolicy.from_options(BackendOptions.model_validate({}))


# --------------------------------------------------------------------------- the client


class ModelClient:
    """A backend bound to one model, with retries, deadline, cache, concurrency limit and usage.

    ``complete(messages, temperature=..., max_tokens=...)`` returns a
    :class:`Completion`; :attr:`usage` sums every call made through this client.
    Optional ``book`` (a :class:`UsageBook`) also receives each call's usage,
    and ``log`` (an :class:`AgentLog`) gets one ``model_call`` event per call.
    """

    def __init__(
        self,
        backend: Backend,
        backend_name: str,
        model: str,
        *,
        policy: CallPolicy | None = None,
        book: UsageBook | None = None,
        log: AgentLog | None = None,
    ):
        self.backend = backend
        self.backend_name = backend_name
        self.model = model
        self.policy = policy or policy_for(backend)
        self.book = book
        self.log = log
        self.usage = Usage()
        self._lock = threading.Lock()

    @property
    def ref(self) -> str:
        """The ``"<backend>/<model>"`` reference."""
        return f"{self.backend_name}/{self.model}"

    def bound(self, *, book: UsageBook | None = None, log: AgentLog | None = None) -> ModelClient:
        """A new client for the same backend and model with its own usage, reporting to ``book``/``log``."""
        return ModelClient(
            self.backend, self.backend_name, self.model, policy=self.policy, book=book, log=log
        )

    def cache_key(self, messages: list[Message], params: Mapping[str, Any]) -> str:
        """The response-cache key of a request through this client."""
        from .model_cache import request_key

        identity_fn = getattr(self.backend, "cache_identity", None)
        identity = identity_fn() if callable(identity_fn) else {}
        return request_key(self.backend_name, self.model, messages, params, identity)

    def complete(self, messages: list[Message], **params: Any) -> Completion:
        """Send messages and return the completion.

        Raises :class:`TransientModelError` when retries are exhausted and
        :class:`ModelError` for non-retryable failures (bad key, bad request).
        """
        from .model_retry import call_with_deadline, call_with_retries
        from .redact import redact_messages

        messages = redact_messages(list(messages))  # no secret is ever sent to a model provider
        params = {**self.policy.defaults, **params}
        cache = self.policy.cache
        key = self.cache_key(messages, params) if cache is not None else None
        started = time.monotonic()
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                hit.usage.calls, hit.usage.cached_calls = 1, 1
                hit.usage.retries = hit.usage.errors = 0
                self._account(hit.usage, messages, hit, started)
                return hit

        retries_seen = 0

        def attempt() -> Completion:
            with self.policy.semaphore:
                return call_with_deadline(
                    lambda: self.backend.complete(messages, model=self.model, **params),
                    self.policy.deadline,
                    describe=f"{self.ref} call",
                )

        def on_retry(n: int, exc: TransientModelError, wait: float) -> None:
            nonlocal retries_seen
            retries_seen = n

        try:
            completion, retries = call_with_retries(
                attempt, self.policy.retry, describe=f"{self.ref} call", on_retry=on_retry
            )
        except Exception as exc:
            self._account(Usage(retries=retries_seen, errors=1), messages, None, started, error=exc)
            raise
        completion.usage = Usage.from_dict(completion.usage.as_dict())
        completion.usage.calls = 1
        completion.usage.retries = retries
        if cache is not None and key is not None:
            cache.put(key, self.backend_name, completion)
        self._account(completion.usage, messages, completion, started)
        return completion

    def _account(
        self,
        usage: Usage,
        messages: list[Message],
        completion: Completion | None,
        started: float,
        error: BaseException | None = None,
    ) -> None:
        with self._lock:
            self.usage.add(usage)
        if self.book is not None:
            self.book.record(self.ref, usage)
        if self.log is not None:
            from .model_cache import message_fingerprint

            event: dict[str, Any] = {
                "model": self.ref,
                "duration_s": round(time.monotonic() - started, 3),
                "usage": usage.as_dict(),
                "cached": bool(completion and completion.cached),
                "messages": [message_fingerprint(m) for m in messages],
            }
            if completion is not None:
                event["reply"] = completion.text
            if error is not None:
                event["error"] = f"{type(error).__name__}: {error}"
            self.log.write("model_call", **event)


class ModelHub:
    """The backend instances of a run in one process, handing out :class:`ModelClient` objects.

    ``hub.factory(book=..., log=...)`` is what a component's ``context.model``
    or a workspace's ``model`` should be: every client it makes reports usage
    to ``book`` and calls to ``log``.
    """

    def __init__(self, backends: Mapping[str, Backend] | Callable[[str], Backend]):
        self._backends = backends

    def backend(self, name: str) -> Backend:
        """The backend instance called ``name``."""
        if callable(self._backends) and not isinstance(self._backends, Mapping):
            return self._backends(name)
        try:
            return self._backends[name]
        except KeyError:
            known = ", ".join(sorted(self._backends)) or "none"
            raise ValueError(f"no model backend named {name!r} (configured: {known})") from None

    def client(self, ref: str, *, book: UsageBook | None = None, log: AgentLog | None = None) -> ModelClient:
        """A new client for ``"<backend>/<model>"``."""
        name, model = split_model_ref(ref)
        return ModelClient(self.backend(name), name, model, book=book, log=log)

    def factory(
        self, *, book: UsageBook | None = None, log: AgentLog | None = None
    ) -> Callable[[str], ModelClient]:
        """``ref -> ModelClient`` bound to ``book`` and ``log``."""
        return lambda ref: self.client(ref, book=book, log=log)
