"""Bounded retries with exponential backoff and full jitter, and a hard per-call deadline.

Used by :class:`pptarena.models.ModelClient` so every backend, built-in or
third-party, gets the same behaviour: a :class:`TransientModelError` (rate
limit, 5xx, timeout, connection error) is retried up to ``max_retries`` times;
any other exception goes straight to the caller.
"""

from __future__ import annotations

import logging
import random
import threading
import time
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


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    describe: str = "model call",
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, TransientModelError, float], None] | None = None,
) -> tuple[T, int]:
    """Call ``fn`` until it succeeds or fails non-transiently; return ``(result, retries_used)``.

    The last :class:`TransientModelError` is re-raised once ``policy.max_retries``
    retries are spent, with the attempt count added to its message.
    """
    retries = 0
    while True:
        try:
            return fn(), retries
        except TransientModelError as exc:
            if retries >= policy.max_retries:
                if retries:
                    raise TransientModelError(
                        f"{exc} (gave up after {retries + 1} attempts)",
                        status=exc.status,
                        retry_after=exc.retry_after,
                    ) from None
                raise
            retries += 1
            wait = policy.delay(retries, exc.retry_after)
            log.warning(
                "%s failed (%s); retry %d/%d in %.2fs", describe, exc, retries, policy.max_retries, wait
            )
            if on_retry is not None:
                on_retry(retries, exc, wait)
            sleep(wait)


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
