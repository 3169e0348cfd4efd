"""The model-backend protocol shared by agents and judges.

A backend plugin implements ``complete(messages, *, model, **params) -> Completion``.
Components never call a backend directly: they get a :class:`ModelClient` from
``context.model("<backend>/<model>")``. The client adds what every backend
shares, built-in or third-party: bounded retries with backoff and jitter on
:class:`TransientModelError`, a per-call deadline, the on-disk response cache,
the run's rate limiter of the backend's account (:mod:`pptarena.models.ratelimit`: one per base URL
and key for the whole run, whichever process calls), and usage accounting.

Backends that subclass :class:`BackendBase` (options: :class:`BackendOptions`)
get their retry/timeout/cache/concurrency settings from their config table;
any other backend object gets the defaults of :class:`BackendOptions`.

Why it is long: :class:`ModelClient` wraps every call in the response cache, a limiter lease, the
deadline, retries and usage/cost accounting in a fixed order, and the options, :class:`CallPolicy`
and :class:`BackendBase` that configure that order are read only by it; :class:`ModelHub` hands out
those clients.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from pptarena.models.messages import (
    Completion,
    Message,
    TransientModelError,
    Usage,
    UsageBook,
    split_model_ref,
)
from pptarena.models.pricing import ModelPrice, call_cost
from pptarena.types import AgentLog, Component, ComponentContext, Options

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.cache import ResponseCache
    from pptarena.models.limiter_service import Limiter
    from pptarena.models.ratelimit import LimitSettings
    from pptarena.models.retry import RetryPolicy

log = logging.getLogger("pptarena.models")


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
    concurrency: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="most calls in flight for the whole run (every process); default: adaptive, "
        "learned from the provider's rate-limit headers and 429s",
    )
    rpm: float | None = Field(
        None, gt=0, description="requests per minute the account allows (default: learned from headers)"
    )
    tpm: float | None = Field(
        None, gt=0, description="tokens per minute the account allows (default: learned from headers)"
    )
    adaptive: bool = Field(
        True,
        description="learn limits from the rate-limit headers and pause every call on a 429 "
        "(false: only rpm/tpm/concurrency as given, a 429 is an ordinary retry)",
    )
    rate_limit_patience: float = Field(
        600.0,
        ge=0,
        description="seconds a call keeps retrying 429 answers (adaptive) before it gives up",
    )
    cache: bool | Path = Field(
        False, description="true: <cache_dir>/model-cache.sqlite; a path: that sqlite file; false: off"
    )
    temperature: float | None = Field(None, description="default temperature when a call gives none")
    max_tokens: int | None = Field(
        None, gt=0, description="default output-token limit when a call gives none"
    )
    pricing: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description=(
            "USD per million tokens by model name, {input, output, cached_input}; overrides the bundled table"
        ),
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
        concurrency: int | None = None,
        cache: ResponseCache | None = None,
        defaults: Mapping[str, Any] | None = None,
        limits: LimitSettings | None = None,
        rate_limit_patience: float = 600.0,
    ):
        from pptarena.models.ratelimit import LimitSettings
        from pptarena.models.retry import RetryPolicy

        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.limits = limits or LimitSettings(concurrency=concurrency)
        self.concurrency = self.limits.concurrency
        self.rate_limit_patience = rate_limit_patience
        self.cache = cache
        self.defaults = dict(defaults or {})
        self._accounts: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def limiter(self, backend: Any, backend_name: str) -> Limiter:
        """The run's limiter of ``backend``'s account (see :mod:`pptarena.models.limiter_service`)."""
        from pptarena.models.limiter_service import limiter_for
        from pptarena.models.ratelimit import account_of

        try:
            account = self._accounts.get(backend)
            if account is None:
                account = self._accounts[backend] = account_of(backend, backend_name)
        except TypeError:  # not weak-referenceable
            account = account_of(backend, backend_name)
        return limiter_for(account, self.limits)

    @property
    def deadline(self) -> float | None:
        """The hard limit per attempt: ``timeout * 1.25 + 1`` s (the backend's own timeout fires first)."""
        return None if self.timeout is None else self.timeout * 1.25 + 1.0

    @classmethod
    def from_options(cls, options: BackendOptions, cache_dir: Path | None = None) -> CallPolicy:
        """The policy a backend's options ask for (``cache=true`` needs ``cache_dir``)."""
        from pptarena.models.cache import CACHE_FILE_NAME, shared_cache
        from pptarena.models.retry import RetryPolicy

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
        from pptarena.models.ratelimit import LimitSettings

        return cls(
            retry=RetryPolicy(options.max_retries, options.retry_base_delay, options.retry_max_delay),
            timeout=options.timeout,
            cache=cache,
            defaults=defaults,
            limits=LimitSettings(options.rpm, options.tpm, options.concurrency, options.adaptive),
            rate_limit_patience=options.rate_limit_patience,
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
        self.cost_usd = 0.0  # priced calls only
        self.cache_saved_usd = 0.0  # what the provider's prompt caching saved on this client's calls
        self.unpriced_calls = 0  # calls with tokens whose model has no price
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
        from pptarena.models.cache import backend_request_key

        return backend_request_key(self.backend, self.backend_name, self.model, messages, params)

    def complete(self, messages: list[Message], **params: Any) -> Completion:
        """Send messages and return the completion.

        Raises :class:`TransientModelError` when retries are exhausted and
        :class:`ModelError` for non-retryable failures (bad key, bad request).
        """
        from pptarena.models.messages import redact_messages

        messages = redact_messages(list(messages))  # no secret is ever sent to a model provider
        params = {**self.policy.defaults, **params}
        cache = self.policy.cache
        key = self.cache_key(messages, params) if cache is not None else None
        started = time.monotonic()
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                hit.usage.calls, hit.usage.cached_calls = 1, 1
                hit.usage.retries = hit.usage.errors = hit.usage.throttled = hit.usage.wait_ms = 0
                self._account(hit.usage, messages, hit, started)
                return hit

        try:
            completion, counts = self._call_through_limiter(messages, params, started)
        except Exception as exc:
            counts = getattr(exc, "call_counts", None) or Usage()
            failed = Usage(
                retries=counts.retries, errors=1, throttled=counts.throttled, wait_ms=counts.wait_ms
            )
            self._account(failed, messages, None, started, error=exc)
            raise
        completion.usage = Usage.from_dict(completion.usage.as_dict())
        completion.usage.calls = 1
        completion.usage.retries = counts.retries
        completion.usage.throttled = counts.throttled
        completion.usage.wait_ms = counts.wait_ms
        if cache is not None and key is not None:
            cache.put(key, self.backend_name, completion)
        self._account(completion.usage, messages, completion, started)
        return completion

    def _call_through_limiter(
        self, messages: list[Message], params: dict[str, Any], started: float
    ) -> tuple[Completion, Usage]:
        """Attempts until one answers: each takes a lease from the run's limiter and hands it back
        with the answer's rate-limit headers. 429s under an adaptive limiter are retried for
        ``rate_limit_patience`` seconds (the limiter pauses every caller); other transient failures
        ``max_retries`` times with backoff. Returns the completion and the retry/wait counts."""
        from pptarena.models.ratelimit import Outcome, asked_output_tokens, estimate_tokens
        from pptarena.models.retry import call_with_deadline

        policy = self.policy
        limiter = policy.limiter(self.backend, self.backend_name)
        tokens = estimate_tokens(messages, params)
        counts = Usage()
        waited = 0.0
        other_retries = 0
        while True:
            lease, wait = limiter.acquire(tokens)
            waited += wait
            outcome = Outcome(status="error")
            try:
                completion = call_with_deadline(
                    lambda: self.backend.complete(messages, model=self.model, **params),
                    policy.deadline,
                    describe=f"{self.ref} call",
                )
                # providers count the output asked for at admission, not the output given: only
                # the prompt's estimate is corrected with its real size
                prompt = completion.usage.input_tokens
                counted = prompt + asked_output_tokens(params) if prompt else None
                outcome = Outcome("ok", dict(completion.rate_headers), None, counted)
                counts.wait_ms = int(waited * 1000)
                return completion, counts
            except BaseException as exc:
                if not isinstance(exc, TransientModelError):
                    counts.wait_ms = int(waited * 1000)
                    with contextlib.suppress(Exception):
                        exc.call_counts = counts  # type: ignore[attr-defined]
                    raise
                throttled = exc.status == 429
                outcome = Outcome(
                    "throttled" if throttled else "error", dict(exc.rate_headers), exc.retry_after
                )
                counts.throttled += int(throttled)
                patient = throttled and policy.limits.adaptive
                if patient:
                    give_up = time.monotonic() - started >= policy.rate_limit_patience
                else:
                    give_up = other_retries >= policy.retry.max_retries
                if give_up:
                    counts.wait_ms = int(waited * 1000)
                    attempts = counts.retries + 1
                    rated = f", {counts.throttled} rate-limited" if counts.throttled else ""
                    final = TransientModelError(
                        f"{exc} (gave up after {attempts} attempts{rated})" if attempts > 1 else str(exc),
                        status=exc.status,
                        retry_after=exc.retry_after,
                        rate_headers=exc.rate_headers,
                    )
                    final.call_counts = counts  # type: ignore[attr-defined]
                    raise final from None
                counts.retries += 1
                if not patient:
                    other_retries += 1
                # an adaptive limiter pauses every caller after a 429; other failures back off here
                pause = 0.0 if patient else policy.retry.delay(other_retries, exc.retry_after)
                log.warning(
                    "%s failed (%s); retry %d in %.2fs", f"{self.ref} call", exc, counts.retries, pause
                )
                if self.log is not None:
                    self.log.write(
                        "model_retry",
                        model=self.ref,
                        attempt=counts.retries,
                        status=exc.status,
                        error=str(exc)[:500],
                        wait_s=round(pause, 3),
                        retry_after=exc.retry_after,
                    )
            finally:
                limiter.release(lease, outcome)
            time.sleep(pause)
            waited += pause

    def _account(
        self,
        usage: Usage,
        messages: list[Message],
        completion: Completion | None,
        started: float,
        error: BaseException | None = None,
    ) -> None:
        cost = call_cost(
            self.backend,
            self.model,
            usage,
            cached=bool(completion and completion.cached),
            batch=bool(completion and completion.batch_id),
        )
        from pptarena.models.pricing import call_cache_savings, is_local_free, price_for

        saved = call_cache_savings(
            self.backend,
            self.model,
            usage,
            cached=bool(completion and completion.cached),
            batch=bool(completion and completion.batch_id),
        )
        local = usage.total_tokens > 0 and is_local_free(price_for(self.backend, self.model))
        with self._lock:
            self.usage.add(usage)
            self.cache_saved_usd += saved
            if cost is None:
                self.unpriced_calls += 1
            else:
                self.cost_usd += cost
        if self.book is not None:
            self.book.record(self.ref, usage, cost, saved=saved, local=local)
        if self.log is not None:
            from pptarena.models.cache import message_fingerprint

            event: dict[str, Any] = {
                "model": self.ref,
                "duration_s": round(time.monotonic() - started, 3),
                "usage": usage.as_dict(),
                "cost_usd": None if cost is None else round(cost, 8),
                "cached": bool(completion and completion.cached),
                "messages": [message_fingerprint(m) for m in messages],
            }
            if completion is not None:
                event["reply"] = completion.text
                if completion.batch_id:
                    event["batch_id"] = completion.batch_id
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
