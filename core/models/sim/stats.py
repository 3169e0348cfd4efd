"""What the simulator saw: counters (:class:`SimStats`) and recorded requests (:class:`SimRequest`)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SimRequest:
    """One request as received and answered.

    ``route`` is the matched route's template (``/v1/batches/{id}``); ``status`` the HTTP
    status sent (0 when no answer was sent: a reset or timeout fault); ``headers`` the
    request headers (names lower-cased); ``body`` the parsed JSON body (None when there was
    none or it was not JSON; for file uploads a summary); ``fault`` the injected fault kind.
    """

    wire: str
    method: str
    path: str
    route: str
    model: str | None
    api_key: str | None
    status: int
    headers: dict[str, str]
    body: Any
    response_headers: dict[str, str] = field(default_factory=dict)
    fault: str | None = None
    time: float = field(default_factory=time.time)


class SimStats:
    """Thread-safe counters; :meth:`snapshot` gives the dict ``ProviderSim.stats()`` returns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        """Zero every counter (in-flight requests stay counted as in flight)."""
        with self._lock:
            self.requests = 0
            self.by_status: Counter[int] = Counter()
            self.by_path: Counter[str] = Counter()
            self.by_wire: Counter[str] = Counter()
            self.faults: Counter[str] = Counter()
            self.rate_limited = 0
            self.max_in_flight = self.in_flight
            self.input_tokens = 0
            self.output_tokens = 0
            self.cached_tokens = 0
            self.cache_write_tokens = 0
            self.batches_submitted = 0
            self.batches_ended = 0
            self.batch_requests = 0

    def enter(self) -> None:
        """A request started."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self, wire: str, route: str, status: int, fault: str | None) -> None:
        """A request ended with ``status`` (0: no answer)."""
        with self._lock:
            self.in_flight -= 1
            self.requests += 1
            self.by_status[status] += 1
            self.by_path[route] += 1
            self.by_wire[wire] += 1
            if fault:
                self.faults[fault] += 1
            if status == 429:
                self.rate_limited += 1

    def tokens(self, prompt: int, output: int, cached: int, written: int) -> None:
        """Add one completion's usage."""
        with self._lock:
            self.input_tokens += prompt
            self.output_tokens += output
            self.cached_tokens += cached
            self.cache_write_tokens += written

    def batch(self, *, submitted: int = 0, ended: int = 0, requests: int = 0) -> None:
        """Count batches submitted or ended and batch requests processed."""
        with self._lock:
            self.batches_submitted += submitted
            self.batches_ended += ended
            self.batch_requests += requests

    def snapshot(self) -> dict[str, Any]:
        """Every counter as plain data (``by_status`` keys are ints)."""
        with self._lock:
            return {
                "requests": self.requests,
                "by_status": dict(sorted(self.by_status.items())),
                "by_path": dict(sorted(self.by_path.items())),
                "by_wire": dict(sorted(self.by_wire.items())),
                "faults": dict(sorted(self.faults.items())),
                "rate_limited": self.rate_limited,
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens,
                "batches_submitted": self.batches_submitted,
                "batches_ended": self.batches_ended,
                "batch_requests": self.batch_requests,
            }


def summary_line(stats: dict[str, Any]) -> str:
    """A one-line summary of a stats snapshot (what ``arena provider-sim`` prints on exit)."""
    statuses = ", ".join(f"{k}: {v}" for k, v in stats["by_status"].items()) or "none"
    faults = sum(stats["faults"].values())
    return (
        f"{stats['requests']} requests (status {statuses}); {stats['rate_limited']} rate-limited, "
        f"{faults} faults; tokens in {stats['input_tokens']} (cached {stats['cached_tokens']}), "
        f"out {stats['output_tokens']}; batches {stats['batches_submitted']} submitted, "
        f"{stats['batches_ended']} ended; max in flight {stats['max_in_flight']}"
    )


__all__ = ["SimRequest", "SimStats", "summary_line"]
