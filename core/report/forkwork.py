"""Share independent pieces of report work with one forked child process.

Writing a large report's task pages is pure Python string work between small file reads: threads
only contend for the GIL, but a forked child (which sees the run's data without copying or
pickling it) halves the wall time on two cores, and on a busy machine two runnable processes get
more of the CPU than one. Used only where the caller knows the process has no other threads
(the ``arena report`` command): forking a process with running threads can deadlock the child.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any


class WorkerFailed(RuntimeError):
    """The forked child could not finish its share; the message is its error."""


def can_fork() -> bool:
    """True when forking is possible and safe here: POSIX ``fork``, two or more cores, one thread."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) > 1 and threading.active_count() == 1


def run_shared(items: Sequence[Any], work: Callable[[Any], Any], workers: int) -> list[Any]:
    """Call ``work(item)`` for every item and return the results in the items' order; with
    ``workers`` >= 2 (and :func:`can_fork`) a forked child takes every other item and sends its
    results back pickled (plain data: the child is this process's own copy). An error in the child
    is raised here as :class:`WorkerFailed`.
    """
    if workers < 2 or len(items) < 2 or not can_fork():
        return [work(item) for item in items]
    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # buffered output must not be written twice
        stream.flush()
    pid = os.fork()
    if pid == 0:  # the child: every other item, then leave without running the parent's exit handlers
        os.close(read_end)
        status = 0
        try:
            payload = b"R" + pickle.dumps([work(item) for item in items[1::2]])
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = b"E" + f"{type(exc).__name__}: {exc}".encode(errors="replace")[:4000]
            status = 1
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        mine = [work(item) for item in items[0::2]]
    finally:
        message = b""
        with os.fdopen(read_end, "rb") as fh:
            message = fh.read()
        _, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    if code != 0 or not message.startswith(b"R"):
        text = message[1:].decode(errors="replace")
        raise WorkerFailed(text or f"the worker process ended with status {code}")
    theirs = pickle.loads(message[1:])  # noqa: S301 - written by our own forked child, never by another
    out: list[Any] = []
    for k in range(len(items)):
        out.append(mine[k // 2] if k % 2 == 0 else theirs[k // 2])
    return out
