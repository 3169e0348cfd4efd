"""The backoff of retries (exponential with full jitter) and a hard per-call deadline.

:class:`pptarena.models.ModelClient`'s attempt loop uses both, so every backend, built-in or
third-party, gets the same behaviour: a :class:`TransientModelError` (5xx, timeout, connection
error; a 429 when the limiter is not adaptive) is retried up to ``max_retries`` times after
:meth:`RetryPolicy.delay`; any other exception goes straight to the caller.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pptarena.models.messages import TransientModelError

log = logging.getLogger("pptarena.models")

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait between attempts.

    The wait before retry ``n`` (1-based) is uniform in ``[0, min(max_delay,
    base_delay * 2**(n-1))]`` ("full jitter"), but never less than a
    server-sent ``Retry-After`` (capped at ``max_delay``).
    """

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        cap = min(self.max_delay, self.base_delay * (2 ** (retry - 1)))
        wait = (rng or random).uniform(0.0, cap)
        if retry_after is not None and retry_after > 0:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


def call_with_deadline(fn: Callable[[], T], seconds: float | None, *, describe: str = "model call") -> T:
    """Run ``fn`` in a helper thread and give up after ``seconds`` with a TransientModelError.

    A backstop for backends that ignore their own timeout: the abandoned call
    keeps running in its daemon thread until it returns by itself, but the
    caller moves on. ``seconds=None`` calls ``fn`` directly.
    """
    if seconds is None:
        return fn()
    box: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=run, name="pptarena-model-call", daemon=True)
    worker.start()
    if not done.wait(seconds):
        raise TransientModelError(f"{describe} did not return within {seconds:g}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
