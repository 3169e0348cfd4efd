"""Admission control for one provider account: the provider's rate limit as the only limit.

One :class:`RateLimiter` exists per account (backend base URL + key) for a whole run; every call
through :class:`~pptarena.models.ModelClient` takes a lease from it before it goes out and gives it
back with what the answer said. Three things bound a grant:

- **pacing** at the requests-per-minute and tokens-per-minute rates: the configured ``rpm`` /
  ``tpm``, else the limits the provider announces in its headers (``x-ratelimit-limit-requests``,
  ``anthropic-ratelimit-requests-limit``, ...), learned from the first answer;
- **calls in flight**: a fixed ``concurrency``, or by default an adaptive cap that grows by one
  per round of successes while calls queue, and halves (at most once a second) on a 429;
- **pauses**: a 429 stops every grant until its ``retry-after-ms`` / ``retry-after`` has passed,
  and an answer saying no requests (or tokens) remain stops grants until its reset time.

The limiter is plain, thread-safe state; :mod:`pptarena.models.limiter_service` shares one
across worker processes (a Unix socket on the host) and Ray nodes (one actor).

Why it is long: everything one account's admission depends on lives here: each provider's rate
header and reset-time forms, the token buckets, the adaptive in-flight cap with its 429 pauses, the
pre-send token estimate and the account digest that decides which calls share a limiter.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

BURST_SECONDS = 1.0
"""Pacing allows this many seconds' worth of requests (at least one) to go out at once."""
TOKEN_BURST_SECONDS = 6.0
"""... and this many seconds' worth of tokens (providers enforce per-minute limits in shorter slices)."""
ADAPTIVE_START = 8
"""Calls in flight an adaptive limiter allows before it has learned anything."""
ADAPTIVE_MAX = 1024
"""The most calls in flight an adaptive limiter ever allows."""
DEFAULT_429_PAUSE = 1.0
"""Seconds every grant waits after a 429 that named no retry time."""
MAX_PAUSE = 120.0
"""The longest pause a header can impose (a bad header never stalls a run for longer)."""
IMAGE_TOKENS = 1000
"""Estimated input tokens per image when a request's size is estimated before it goes out."""
DEFAULT_OUTPUT_TOKENS = 1024
"""Estimated output tokens of a call that names no ``max_tokens``."""


@dataclass(frozen=True)
class LimitSettings:
    """What the user configured for one account (``[backends.NAME]`` ``rpm``, ``tpm``, ``concurrency``,
    ``adaptive``); limits left ``None`` are learned from the provider's headers when ``adaptive``."""

    rpm: float | None = None
    tpm: float | None = None
    concurrency: int | None = None
    adaptive: bool = True

    def as_dict(self) -> dict[str, Any]:
        """JSON form (sent to a limiter in another process)."""
        return {"rpm": self.rpm, "tpm": self.tpm, "concurrency": self.concurrency, "adaptive": self.adaptive}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LimitSettings:
        """Inverse of :meth:`as_dict`."""
        conc = data.get("concurrency")
        return cls(
            rpm=_pos(data.get("rpm")),
            tpm=_pos(data.get("tpm")),
            concurrency=int(conc) if conc else None,
            adaptive=bool(data.get("adaptive", True)),
        )


def _pos(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and math.isfinite(v) else None


@dataclass
class Outcome:
    """What one granted call ended with, handed back on release."""

    status: str = "ok"  # "ok" | "throttled" (a 429) | "error" (any other failure)
    rate_headers: dict[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    tokens: int | None = None  # what the provider counted: the prompt's real tokens + the output asked for

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "status": self.status,
            "rate_headers": self.rate_headers,
            "retry_after": self.retry_after,
            "tokens": self.tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        """Inverse of :meth:`as_dict` (unknown values become defaults)."""
        status = data.get("status") if data.get("status") in ("ok", "throttled", "error") else "error"
        headers = data.get("rate_headers")
        return cls(
            status=str(status),
            rate_headers={str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {},
            retry_after=_pos(data.get("retry_after")),
            tokens=int(data["tokens"]) if isinstance(data.get("tokens"), int) else None,
        )


# --------------------------------------------------------------------------- header reading

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_reset(value: str | None, now_wall: float | None = None) -> float | None:
    """Seconds until a rate-limit window resets, from any provider's form: OpenAI's durations
    (``"1s"``, ``"6m0s"``, ``"120ms"``), a plain number of seconds, or an RFC 3339 time (Anthropic)."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if parts and "".join(n + u for n, u in parts) == text:
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(n) * scale[u] for n, u in parts)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now_wall is None else now_wall))


def retry_after_of(headers: Mapping[str, str]) -> float | None:
    """The wait a 429 asks for: ``retry-after-ms`` (milliseconds) before ``retry-after`` (seconds)."""
    ms = _pos(headers.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000.0
    return parse_reset(headers.get("retry-after"))


@dataclass(frozen=True)
class AnnouncedLimits:
    """What one answer's headers say about the account's limits (``None``: not said)."""

    request_limit: float | None = None  # per minute
    requests_remaining: float | None = None
    requests_reset: float | None = None  # seconds
    token_limit: float | None = None  # per minute
    tokens_remaining: float | None = None
    tokens_reset: float | None = None


def announced_limits(headers: Mapping[str, str]) -> AnnouncedLimits:
    """Read OpenAI's ``x-ratelimit-*`` and Anthropic's ``anthropic-ratelimit-*`` headers."""
    h = {k.lower(): v for k, v in headers.items()}

    def first(*names: str) -> str | None:
        return next((h[n] for n in names if n in h), None)

    return AnnouncedLimits(
        request_limit=_pos(first("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit")),
        requests_remaining=_nonneg(
            first("x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining")
        ),
        requests_reset=parse_reset(first("x-ratelimit-reset-requests", "anthropic-ratelimit-requests-reset")),
        token_limit=_pos(first("x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit")),
        tokens_remaining=_nonneg(
            first("x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining")
        ),
        tokens_reset=parse_reset(first("x-ratelimit-reset-tokens", "anthropic-ratelimit-tokens-reset")),
    )


def _nonneg(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v >= 0 and math.isfinite(v) else None


# --------------------------------------------------------------------------- the limiter


class _Bucket:
    """A token bucket: ``rate`` per second, ``capacity`` at most, starting full."""

    def __init__(self, rate: float, capacity: float, now: float):
        self.rate, self.capacity, self.level, self.at = rate, capacity, capacity, now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` is available (amounts above capacity need a full bucket)."""
        self.refill(now)
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate


class RateLimiter:
    """The admission control of one account (see the module docstring). Thread-safe.

    ``acquire(tokens)`` blocks until a call of about ``tokens`` tokens may go out and returns a
    lease id; ``release(lease, outcome)`` hands back what the answer said. ``try_acquire`` is the
    non-blocking form other processes use through :mod:`pptarena.models.limiter_service`.
    """

    def __init__(self, settings: LimitSettings | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.settings = settings or LimitSettings()
        self._clock = clock
        self._cond = threading.Condition()
        now = clock()
        self._requests: _Bucket | None = None
        self._tokens: _Bucket | None = None
        self._set_request_rate(self.settings.rpm, now)
        self._set_token_rate(self.settings.tpm, now)
        fixed = self.settings.concurrency
        self._cap = float(fixed) if fixed else float(ADAPTIVE_START)
        self._inflight: dict[int, tuple[float, int]] = {}  # lease -> (expires at, tokens debited)
        self._next_lease = 1
        self._pause_until = 0.0
        self._last_cut = -math.inf
        self._waiting = 0
        self.stats = {"granted": 0, "throttled": 0, "errors": 0, "waited_s": 0.0, "max_in_flight": 0}

    # ---- configuration learned or given

    def _set_request_rate(self, rpm: float | None, now: float) -> None:
        if rpm:
            rate = rpm / 60.0
            self._requests = _Bucket(rate, max(1.0, rate * BURST_SECONDS), now)

    def _set_token_rate(self, tpm: float | None, now: float) -> None:
        if tpm:
            rate = tpm / 60.0
            self._tokens = _Bucket(rate, max(1.0, rate * TOKEN_BURST_SECONDS), now)

    @property
    def cap(self) -> int:
        """Calls in flight allowed now."""
        return max(1, int(self._cap))

    def snapshot(self) -> dict[str, Any]:
        """The limiter's state and counters (for the progress display and benchmarks)."""
        with self._cond:
            return {
                **self.stats,
                "waited_s": round(self.stats["waited_s"], 3),
                "in_flight": len(self._inflight),
                "cap": self.cap,
                "rpm": None if self._requests is None else round(self._requests.rate * 60, 3),
                "tpm": None if self._tokens is None else round(self._tokens.rate * 60, 3),
                "tokens_available": None if self._tokens is None else round(self._tokens.level, 1),
            }

    # ---- granting

    def try_acquire(self, tokens: int = 0, *, ttl: float | None = None) -> tuple[int | None, float]:
        """A lease id now, or ``(None, seconds)``: try again after at most that long. A lease with a
        ``ttl`` is given back by itself after that many seconds (its holder may have died)."""
        with self._cond:
            return self._try(max(0, int(tokens)), self._clock(), ttl)

    def _try(self, tokens: int, now: float, ttl: float | None = None) -> tuple[int | None, float]:
        expired = [lease for lease, (until, _) in self._inflight.items() if until <= now]
        for lease in expired:
            del self._inflight[lease]
        if now < self._pause_until:
            return None, self._pause_until - now
        if len(self._inflight) >= self.cap:
            return None, 0.25  # a release wakes waiters in this process; others poll
        waits = [0.0]
        if self._requests is not None:
            waits.append(self._requests.wait_for(1, now))
        if self._tokens is not None and tokens:
            waits.append(self._tokens.wait_for(tokens, now))
        wait = max(waits)
        if wait > 0:
            return None, wait
        if self._requests is not None:
            self._requests.level -= 1
        debited = 0
        if self._tokens is not None and tokens:
            debited = int(min(tokens, self._tokens.capacity))
            self._tokens.level -= debited
        lease = self._next_lease
        self._next_lease += 1
        self._inflight[lease] = (math.inf if ttl is None else now + ttl, debited)
        self.stats["granted"] += 1
        self.stats["max_in_flight"] = max(self.stats["max_in_flight"], len(self._inflight))
        return lease, 0.0

    def acquire(self, tokens: int = 0, *, timeout: float | None = None) -> tuple[int, float]:
        """Block until granted; returns ``(lease, seconds waited)``. Raises :class:`TimeoutError`."""
        started = self._clock()
        with self._cond:
            self._waiting += 1
            try:
                while True:
                    now = self._clock()
                    lease, wait = self._try(max(0, int(tokens)), now)
                    if lease is not None:
                        waited = now - started
                        self.stats["waited_s"] += waited
                        return lease, waited
                    if timeout is not None and now - started + wait > timeout:
                        raise TimeoutError(f"no rate-limit slot within {timeout:g}s")
                    self._cond.wait(min(max(wait, 0.001), 1.0))
            finally:
                self._waiting -= 1

    def release(self, lease: int, outcome: Outcome | None = None) -> None:
        """Hand a lease back with what its call ended with (unknown leases are ignored)."""
        outcome = outcome or Outcome()
        with self._cond:
            now = self._clock()
            held = self._inflight.pop(lease, None)
            if held is None:
                return
            _, debited = held
            if self._tokens is not None and outcome.tokens is not None and debited:
                # correct the estimate with what the call really used
                self._tokens.refill(now)
                self._tokens.level = max(
                    -self._tokens.capacity, self._tokens.level + debited - min(outcome.tokens, debited * 4)
                )
            if self.settings.adaptive:
                self._learn(outcome, now)
            if outcome.status == "throttled":
                self.stats["throttled"] += 1
                pause = outcome.retry_after if outcome.retry_after is not None else DEFAULT_429_PAUSE
                self._pause_until = max(self._pause_until, now + min(pause, MAX_PAUSE))
                if self._requests is not None:
                    self._requests.refill(now)
                    self._requests.level = min(self._requests.level, 0.0)
            elif outcome.status == "error":
                self.stats["errors"] += 1
            self._cond.notify_all()

    def _learn(self, outcome: Outcome, now: float) -> None:
        limits = announced_limits(outcome.rate_headers)
        if self.settings.rpm is None and limits.request_limit:
            current = None if self._requests is None else self._requests.rate * 60
            if current is None or abs(current - limits.request_limit) > 1e-6:
                self._set_request_rate(limits.request_limit, now)
        if self.settings.tpm is None and limits.token_limit:
            current = None if self._tokens is None else self._tokens.rate * 60
            if current is None or abs(current - limits.token_limit) > 1e-6:
                self._set_token_rate(limits.token_limit, now)
        # the provider's count is the truth: never believe more remains than it says
        if self._requests is not None and limits.requests_remaining is not None:
            self._requests.refill(now)
            self._requests.level = min(self._requests.level, limits.requests_remaining)
        if self._tokens is not None and limits.tokens_remaining is not None:
            self._tokens.refill(now)
            self._tokens.level = min(self._tokens.level, limits.tokens_remaining)
        for remaining, reset in (
            (limits.requests_remaining, limits.requests_reset),
            (limits.tokens_remaining, limits.tokens_reset),
        ):
            if remaining is not None and remaining < 1 and reset:
                self._pause_until = max(self._pause_until, now + min(reset, MAX_PAUSE))
        if self.settings.concurrency is None:
            if outcome.status == "throttled":
                if now - self._last_cut >= 1.0:
                    self._cap = max(1.0, self._cap / 2)
                    self._last_cut = now
            elif outcome.status == "ok" and (self._waiting or len(self._inflight) + 1 >= self.cap):
                self._cap = min(float(ADAPTIVE_MAX), self._cap + 1.0 / max(1.0, self._cap))


# --------------------------------------------------------------------------- estimates and accounts


def estimate_tokens(messages: Any, params: Mapping[str, Any]) -> int:
    """A request's tokens before it is sent, as providers count them against a tokens-per-minute
    limit: about four characters per text token, :data:`IMAGE_TOKENS` per image, plus the output
    tokens asked for (``max_tokens``, else :data:`DEFAULT_OUTPUT_TOKENS`)."""
    from pptarena.models.messages import ImagePart, Message, ToolCall, ToolResult

    chars, images = 0, 0

    def part(p: Any) -> None:
        nonlocal chars, images
        if isinstance(p, str):
            chars += len(p)
        elif isinstance(p, ImagePart):
            images += 1
        elif isinstance(p, ToolCall):
            chars += len(json.dumps(dict(p.input), default=str))
        elif isinstance(p, ToolResult):
            for c in p.content:
                part(c)

    for m in messages or ():
        if isinstance(m, Message):
            for p in m.parts():
                part(p)
    return math.ceil(chars / 4) + images * IMAGE_TOKENS + asked_output_tokens(params)


def asked_output_tokens(params: Mapping[str, Any]) -> int:
    """The output tokens a call asks for (``max_tokens``, else :data:`DEFAULT_OUTPUT_TOKENS`): what
    providers count against a tokens-per-minute limit at admission, whatever the answer's length."""
    out = params.get("max_tokens")
    return out if isinstance(out, int) and out > 0 else DEFAULT_OUTPUT_TOKENS


def account_of(backend: Any, backend_name: str) -> str:
    """The account a backend's calls count against: a digest of its kind, its server (its
    ``cache_identity()``) and its key. Two backend tables with the same server and key share one
    limiter; the key itself never leaves this function."""
    from pydantic import SecretStr

    identity_fn = getattr(backend, "cache_identity", None)
    try:
        identity = identity_fn() if callable(identity_fn) else {}
    except Exception:
        identity = {}
    options = getattr(backend, "options", None)
    secrets = []
    if options is not None:
        for name in sorted(getattr(type(options), "model_fields", {})):
            value = getattr(options, name, None)
            if isinstance(value, SecretStr):
                secrets.append(value.get_secret_value())
    key_fn = getattr(backend, "rate_account_key", None)
    if callable(key_fn):  # a backend that reads its key elsewhere (the environment) names it itself
        secrets.append(str(key_fn() or ""))
    blob = json.dumps(
        {"kind": f"{type(backend).__module__}.{type(backend).__qualname__}", "id": identity, "s": secrets},
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return f"{backend_name}:{digest}"
