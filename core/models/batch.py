"""What a backend implements to take calls through its provider's batch API (half the price,
answers within hours): OpenAI's Batch API, Anthropic's Message Batches, Google's batch mode.

A backend that can batch has two methods besides ``complete``:

- ``batch_submit(requests: list[BatchRequest]) -> str``: send the requests as one batch job and
  return the provider's batch id;
- ``batch_status(batch_id: str) -> BatchState``: where the job is; once it has ended, the result of
  every request by its ``custom_id``.

The run's :class:`pptarena.run.batches.BatchQueue` collects the calls, submits, polls, and keeps the
batch ids and results in the run folder so a killed run resumes polling instead of submitting
again. Custom ids are digests of the request (:func:`custom_id_of`), so the same call made again
after a restart finds its pending batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pptarena.models.messages import Completion, Message, ModelError

BatchStatus = Literal["in_progress", "ended", "expired", "failed", "canceled"]


@dataclass(frozen=True)
class BatchRequest:
    """One call in a batch: its id in the job, the model, the messages and the call parameters."""

    custom_id: str
    model: str
    messages: list[Message]
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class BatchResult:
    """One request's outcome: a completion, or an error (``kind``: ``errored`` — the provider refused
    or failed it, ``expired`` — the job ended before it ran, ``canceled``)."""

    custom_id: str
    completion: Completion | None = None
    error: str | None = None
    kind: str = "succeeded"
    status: int | None = None

    @property
    def retryable(self) -> bool:
        """Worth one more submission: expired, canceled, or a server-side (5xx, 429) failure."""
        if self.kind in ("expired", "canceled"):
            return True
        return self.kind == "errored" and (self.status is None or self.status == 429 or self.status >= 500)


@dataclass
class BatchState:
    """A batch job as the provider reports it (``results`` once it has ended)."""

    batch_id: str
    status: BatchStatus
    counts: dict[str, int] = field(default_factory=dict)
    results: dict[str, BatchResult] | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        """True once the job will not change any more."""
        return self.status != "in_progress"


@runtime_checkable
class BatchBackend(Protocol):
    """A backend that can take calls through its provider's batch API."""

    def batch_submit(self, requests: list[BatchRequest]) -> str: ...

    def batch_status(self, batch_id: str) -> BatchState: ...


def supports_batch(backend: Any) -> bool:
    """True when ``backend`` implements :class:`BatchBackend`."""
    return callable(getattr(backend, "batch_submit", None)) and callable(
        getattr(backend, "batch_status", None)
    )


def custom_id_of(request_key: str) -> str:
    """A batch custom id from a request's cache key: 40 hex characters (every provider's id rules)."""
    return "r" + hashlib.sha256(request_key.encode()).hexdigest()[:39]


class BatchError(ModelError):
    """A batched call that did not get an answer (expired or failed twice, or refused)."""
