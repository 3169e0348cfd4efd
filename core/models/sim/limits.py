"""Rate limits: continuously refilled request and token buckets per API key, and each provider's
rate-limit headers.

A bucket holds at most its capacity and refills at ``per_minute / 60`` per second. A request
takes 1 from the request bucket and its cost from the token bucket, both or neither; when
either lacks, the answer is a 429 whose retry delay is the time until both could pay.
A request costing more than the token bucket can ever hold is refused as too large (429,
no retry delay).

Header values: ``limit`` is the per-minute figure, ``remaining`` what the bucket holds after
this request (rounded down; at most the capacity), ``reset`` the time until the bucket is
full again (OpenAI: a duration like ``"1s"``, ``"6m0s"``, ``"120ms"``; Anthropic: an RFC 3339
time).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.config import SimConfig


class TokenBucket:
    """A bucket of ``capacity`` units refilled at ``rate`` units per second (starts full)."""

    def __init__(self, capacity: float, rate: float, now: float):
        self.capacity = capacity
        self.rate = rate
        self.level = capacity
        self.updated = now

    def refill(self, now: float) -> None:
        """Add what flowed in since the last update."""
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until the bucket holds ``amount`` (0 when it does already)."""
        missing = amount - self.level
        return 0.0 if missing <= 1e-9 else missing / self.rate

    def until_full(self) -> float:
        """Seconds until the bucket is full again."""
        return max(0.0, (self.capacity - self.level) / self.rate)


@dataclass(frozen=True)
class BucketView:
    """One bucket as the headers report it."""

    limit: int  # the per-minute figure
    remaining: int
    reset_seconds: float


@dataclass(frozen=True)
class LimitDecision:
    """The limiter's answer for one request.

    ``reason`` is None when allowed, else ``"requests"``, ``"tokens"`` or ``"too_large"``;
    ``retry_after`` the seconds to wait (None for too-large requests); ``requests`` /
    ``tokens`` the buckets after the decision (None when that limit is off); ``cost`` the
    tokens the request asked for; ``now`` the wall-clock time of the decision.
    """

    reason: str | None
    retry_after: float | None
    requests: BucketView | None
    tokens: BucketView | None
    cost: int
    now: float

    @property
    def ok(self) -> bool:
        """True when the request may go ahead."""
        return self.reason is None


class RateLimiter:
    """The request and token buckets of every API key (and model, with ``limit_by_model``)."""

    def __init__(self, config: SimConfig, clock=time.monotonic):
        self.config = config
        self.clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], tuple[TokenBucket | None, TokenBucket | None]] = {}

    def _pair(self, key: tuple[str, str], now: float) -> tuple[TokenBucket | None, TokenBucket | None]:
        pair = self._buckets.get(key)
        if pair is None:
            c = self.config
            req = TokenBucket(c.request_capacity, c.rpm / 60.0, now) if c.rpm and c.request_capacity else None
            tok = TokenBucket(c.token_capacity, c.tpm / 60.0, now) if c.tpm and c.token_capacity else None
            pair = self._buckets[key] = (req, tok)
        return pair

    def check(self, api_key: str, model: str, cost: int) -> LimitDecision:
        """Take one request and ``cost`` tokens for ``api_key`` if both are there."""
        c = self.config
        key = (api_key, model if c.limit_by_model else "")
        with self._lock:
            now = self.clock()
            req, tok = self._pair(key, now)
            for bucket in (req, tok):
                if bucket is not None:
                    bucket.refill(now)
            reason: str | None = None
            retry: float | None = None
            if tok is not None and cost > tok.capacity:
                reason = "too_large"
            else:
                waits = {
                    "requests": req.wait_for(1) if req is not None else 0.0,
                    "tokens": tok.wait_for(cost) if tok is not None else 0.0,
                }
                longest = max(waits, key=lambda k: waits[k])
                if waits[longest] > 0:
                    reason, retry = longest, waits[longest]
            if reason is None:
                if req is not None:
                    req.level -= 1
                if tok is not None:
                    tok.level -= cost
            return LimitDecision(
                reason=reason,
                retry_after=retry,
                requests=_view(req, c.rpm),
                tokens=_view(tok, c.tpm),
                cost=cost,
                now=time.time(),
            )

    def reset(self) -> None:
        """Forget every bucket (all full again)."""
        with self._lock:
            self._buckets.clear()


def _view(bucket: TokenBucket | None, per_minute: float | None) -> BucketView | None:
    if bucket is None or per_minute is None:
        return None
    return BucketView(int(per_minute), max(0, math.floor(bucket.level + 1e-9)), bucket.until_full())


# --------------------------------------------------------------------------- header forms


def go_duration(seconds: float) -> str:
    """A duration in OpenAI's header form: ``"120ms"``, ``"1s"``, ``"8.64s"``, ``"6m0s"``, ``"1h2m3s"``."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    out = f"{hours}h" if hours else ""
    if hours or minutes:
        out += f"{minutes}m"
    return out + f"{secs}s"


def rfc3339(epoch: float) -> str:
    """``epoch`` as an RFC 3339 UTC time with seconds (``2025-01-02T03:04:05Z``)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def retry_headers(decision: LimitDecision) -> dict[str, str]:
    """``retry-after`` (whole seconds, rounded up) and ``retry-after-ms`` of a refused request."""
    if decision.retry_after is None:
        return {}
    return {
        "retry-after": str(max(1, math.ceil(decision.retry_after))),
        "retry-after-ms": str(max(1, math.ceil(decision.retry_after * 1000))),
    }


def openai_headers(decision: LimitDecision) -> dict[str, str]:
    """OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` headers."""
    out: dict[str, str] = {}
    for name, view in (("requests", decision.requests), ("tokens", decision.tokens)):
        if view is not None:
            out[f"x-ratelimit-limit-{name}"] = str(view.limit)
            out[f"x-ratelimit-remaining-{name}"] = str(view.remaining)
            out[f"x-ratelimit-reset-{name}"] = go_duration(view.reset_seconds)
    return out


def anthropic_headers(decision: LimitDecision) -> dict[str, str]:
    """Anthropic's ``anthropic-ratelimit-*`` headers (the one token bucket reported as ``tokens``,
    ``input-tokens`` and ``output-tokens``)."""
    out: dict[str, str] = {}
    views = [("requests", decision.requests)]
    views += [(name, decision.tokens) for name in ("tokens", "input-tokens", "output-tokens")]
    for name, view in views:
        if view is not None:
            out[f"anthropic-ratelimit-{name}-limit"] = str(view.limit)
            out[f"anthropic-ratelimit-{name}-remaining"] = str(view.remaining)
            out[f"anthropic-ratelimit-{name}-reset"] = rfc3339(math.ceil(decision.now + view.reset_seconds))
    return out


__all__ = [
    "BucketView",
    "LimitDecision",
    "RateLimiter",
    "TokenBucket",
    "anthropic_headers",
    "go_duration",
    "openai_headers",
    "retry_headers",
    "rfc3339",
]
