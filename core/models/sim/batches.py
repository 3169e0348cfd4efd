"""Batch jobs, provider-neutral: timing, failures, expiry and cancellation (in memory only).

A batch of ``n`` requests created at ``t0`` finishes request ``i`` (0-based) at
``t0 + batch_delay * (i + 1) / n`` and ends at ``t0 + batch_delay``. At creation it draws,
from its own seeded stream, whether each request fails (probability ``batch_fail``: the
request is *errored*) and whether the whole batch expires (probability ``batch_expire``:
a random number of requests finish, the rest are *expired* when the batch ends). A cancel
ends the batch at the next look: requests not yet finished are *canceled*. A request the
provider would refuse (bad parameters, unknown model) is *errored* with that reason.

State advances lazily, whenever a batch is read, so no thread runs in the background.
Batch requests skip rate limits, faults and latency; their usage counts in the stats.
Everything lives in memory: a restarted simulator knows no batch.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pptarena.models.sim.latency import request_rng
from pptarena.models.sim.prompt import Prompt, WireError

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.completion import Completion
    from pptarena.models.sim.config import SimConfig
    from pptarena.models.sim.stats import SimStats

ITEM_STATES = ("pending", "succeeded", "errored", "expired", "canceled")


@dataclass
class BatchItem:
    """One request of a batch: its id, prompt (None when invalid: ``error`` says why), outcome."""

    custom_id: str
    prompt: Prompt | None
    error: WireError | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    fails: bool = False
    finish_at: float = 0.0
    state: str = "pending"
    completion: Completion | None = None
    failure: str | None = None


@dataclass
class Batch:
    """A batch job. ``end_reason`` is ``"completed"``, ``"expired"`` or ``"canceled"`` once ended;
    ``info`` holds the provider's own fields (endpoint, file ids, model, display name ...)."""

    id: str
    wire: str
    api_key: str
    created_at: float
    delay: float
    items: list[BatchItem]
    expires: bool = False
    expire_cut: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    cancel_requested_at: float | None = None
    ended_at: float | None = None
    end_reason: str | None = None

    @property
    def ended(self) -> bool:
        """True once the batch has ended (completed, expired or canceled)."""
        return self.end_reason is not None

    @property
    def end_at(self) -> float:
        """When the batch ends unless canceled earlier."""
        return self.created_at + self.delay

    def counts(self) -> Counter[str]:
        """How many requests are in each state (every state present, maybe 0)."""
        out: Counter[str] = Counter(dict.fromkeys(ITEM_STATES, 0))
        out.update(item.state for item in self.items)
        return out


class BatchStore:
    """Every batch of every provider, advanced on read."""

    def __init__(
        self,
        config: SimConfig,
        answer: Callable[[Prompt, str], Completion],
        stats: SimStats,
        clock: Callable[[], float] = time.time,
    ):
        self.config = config
        self.answer = answer
        self.stats = stats
        self.clock = clock
        self._lock = threading.RLock()
        self._batches: dict[str, Batch] = {}
        self._sequence = 0

    def create(
        self, wire: str, api_key: str, items: list[BatchItem], info: dict[str, Any], prefix: str
    ) -> Batch:
        """Register a batch of ``items`` (at least one) with an id starting with ``prefix``."""
        if not items:
            raise WireError("a batch needs at least one request")
        c = self.config
        with self._lock:
            self._sequence += 1
            rng = request_rng(c.seed, "batch", self._sequence)
            now = self.clock()
            n = len(items)
            for i, item in enumerate(items):
                item.fails = rng.random() < c.batch_fail
                item.finish_at = now + c.batch_delay * (i + 1) / n
            expires = rng.random() < c.batch_expire
            batch = Batch(
                id=f"{prefix}{uuid.uuid4().hex[:24]}",
                wire=wire,
                api_key=api_key,
                created_at=now,
                delay=c.batch_delay,
                items=items,
                expires=expires,
                expire_cut=rng.randrange(n) if expires else n,
                info=dict(info),
            )
            self._batches[batch.id] = batch
        self.stats.batch(submitted=1)
        return batch

    def get(self, batch_id: str, wire: str) -> Batch | None:
        """The batch ``batch_id`` of provider ``wire``, advanced to now; None when unknown."""
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None or batch.wire != wire:
                return None
            self._advance(batch)
            return batch

    def all(self, wire: str) -> list[Batch]:
        """Every batch of ``wire``, newest first, advanced to now."""
        with self._lock:
            out = [b for b in self._batches.values() if b.wire == wire]
            for batch in out:
                self._advance(batch)
            return sorted(out, key=lambda b: b.created_at, reverse=True)

    def cancel(self, batch_id: str, wire: str) -> Batch | None:
        """Ask to cancel; the batch is still canceling until its next read."""
        with self._lock:
            batch = self.get(batch_id, wire)
            if batch is not None and not batch.ended and batch.cancel_requested_at is None:
                batch.cancel_requested_at = self.clock()
            return batch

    def delete(self, batch_id: str, wire: str) -> bool:
        """Forget a batch; False when unknown."""
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None or batch.wire != wire:
                return False
            del self._batches[batch_id]
            return True

    def clear(self) -> None:
        """Forget every batch."""
        with self._lock:
            self._batches.clear()

    def _advance(self, batch: Batch) -> None:
        if batch.ended:
            return
        now = self.clock()
        for index, item in enumerate(batch.items):
            if item.state != "pending" or index >= batch.expire_cut or item.finish_at > now:
                continue
            self._process(batch, item)
        if batch.cancel_requested_at is not None and batch.cancel_requested_at <= now:
            self._end(batch, "canceled", "canceled", now)
        elif now >= batch.end_at:
            self._end(batch, "expired" if batch.expires else "completed", "expired", batch.end_at)

    def _process(self, batch: Batch, item: BatchItem) -> None:
        if item.error is not None:
            item.state, item.failure = "errored", item.error.message
        elif item.fails or item.prompt is None:
            item.state, item.failure = "errored", "The simulated provider failed this batch request."
        else:
            item.completion = self.answer(item.prompt, batch.api_key)
            item.state = "succeeded"
            u = item.completion
            self.stats.tokens(u.prompt_tokens, u.output_tokens, u.cache.read, u.cache.written)
        self.stats.batch(requests=1)

    def _end(self, batch: Batch, reason: str, leftover: str, when: float) -> None:
        for item in batch.items:
            if item.state == "pending":
                item.state = leftover
        batch.end_reason = reason
        batch.ended_at = when
        self.stats.batch(ended=1)


__all__ = ["Batch", "BatchItem", "BatchStore", "ITEM_STATES"]
