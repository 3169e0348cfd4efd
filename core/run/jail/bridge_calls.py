"""A jailed pair's model calls and renders, answered on the harness's side under the pair's deadline.

:func:`asked` runs one bridge request (:meth:`~pptarena.run.jail.bridge.BridgeHost.handle`) off the
pair's thread: on a shared pool of threads, or, for a pair in batch mode, on a thread of its own
(its call may wait hours for a batch job, and more pairs wait at once than the pool has threads).
:func:`answer_by` waits for the answer until the pair's deadline, which may move later while the
pair waits on a batch; past it the pair has timed out and the call goes on in the background.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any

_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="agent-bridge")
"""Runs the bridge's model calls and renders, so a pair's deadline holds while one is in flight."""

LATE = object()
"""What :func:`answer_by` returns once the deadline has passed."""


def asked(
    handle: Callable[[Any], Any], message: Any, *, batch: bool = False
) -> concurrent.futures.Future[Any]:
    """``handle(message)`` started off this thread: on the shared pool, or with ``batch`` on a
    thread of its own."""
    if not batch:
        return _POOL.submit(handle, message)
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(handle(message))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting pair
            future.set_exception(exc)

    threading.Thread(target=run, name="agent-bridge-batch", daemon=True).start()
    return future


def answer_by(future: concurrent.futures.Future[Any], deadline: Callable[[], float]) -> Any:
    """The future's result, or :data:`LATE` once ``deadline()`` (which may move later) has passed."""
    while True:
        left = deadline() - time.monotonic()
        if left <= 0:
            return LATE
        try:
            return future.result(min(left, 1.0))
        except concurrent.futures.TimeoutError:
            continue
