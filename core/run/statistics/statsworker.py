"""A helper process for a large summary's statistics (bootstrap intervals, sign-flip tests).

The summary walks its lines in Python, holding the GIL; its statistics are numpy work that releases
the GIL during each call but must take it back between calls, and a thread that comes back from numpy
while the lines are walked waits for the interpreter's switch interval every time: on two cores the
statistics then crawl until the walk ends. A separate process has an interpreter of its own, so they
use the second core while the lines are walked, and both cores once the caller waits
(:meth:`StatsWorker.widen`).

The process runs the very functions the caller would (:func:`pptarena.run.statistics.resample.intervals_of`,
:func:`.stats.paired_p_values`), so every number is the same; the caller computes in its
own process when the helper cannot start or fails (``PPTARENA_STATS_WORKER=0`` never starts one).

Protocol: pickles on the child's stdin, ``("job", id, kind, args)`` or ``("widen",)``; answers
``(id, ok, result or error text)`` on its stdout, in any order. The child ends at end of input.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, BinaryIO

from pptarena.trust.procs import close_pipes

ENV = "PPTARENA_STATS_WORKER"


def serve(inp: BinaryIO, out: BinaryIO, run: Callable[[str, Any], Any], threads: int = 2) -> None:
    """The child's loop: each job is ``run(kind, args)`` (:func:`.statsjobs.run_job`), one
    at a time until :meth:`StatsWorker.widen`, then ``threads`` at a time (the caller's thread has
    stopped using its core)."""
    cond = threading.Condition()
    queue: list[tuple[int, str, Any]] = []
    state = {"width": 1, "running": 0, "closed": False}
    write = threading.Lock()

    def worker() -> None:
        while True:
            with cond:
                cond.wait_for(lambda: state["closed"] or (queue and state["running"] < state["width"]))
                if not queue:
                    return
                job, kind, args = queue.pop(0)
                state["running"] += 1
            try:
                answer = (job, True, run(kind, args))
            except Exception as exc:  # noqa: BLE001 - reported to the caller, which computes it itself
                answer = (job, False, f"{type(exc).__name__}: {exc}")
            with write:
                pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
            with cond:
                state["running"] -= 1
                cond.notify_all()

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, threads))]
    for t in pool:
        t.start()
    try:
        while True:
            try:
                message = pickle.load(inp)
            except EOFError:
                break
            with cond:
                if message[0] == "widen":
                    state["width"] = len(pool)
                else:
                    queue.append(tuple(message[1:]))
                cond.notify_all()
    finally:
        with cond:
            state["closed"] = True
            queue.clear()  # nobody waits for them any more
            cond.notify_all()
        for t in pool:
            t.join()


class StatsWorker:
    """The helper process of one summary: :meth:`submit` jobs, :meth:`widen` when the caller waits,
    :meth:`close` at the end. Raises OSError when it cannot start."""

    def __init__(self) -> None:
        import pptarena

        # the child imports pptarena exactly as this process did (same sys.path), checks it, and keeps
        # its two pipes to itself (procs.take_protocol_pipes: anything else on fd 0/1 is /dev/null)
        boot = (
            "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); import pptarena; "
            "pptarena.__file__ == sys.argv[2] or sys.exit('another pptarena'); "
            "from pptarena.trust.procs import take_protocol_pipes; "
            "from pptarena.run.statistics.statsjobs import run_job; "
            "from pptarena.run.statistics.statsworker import serve; serve(*take_protocol_pipes(), run_job)"
        )
        self._proc = subprocess.Popen(
            [sys.executable, "-c", boot, json.dumps(sys.path), str(pptarena.__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, ENV: "0"},  # its own work never starts another
        )
        self._futures: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        try:
            while True:
                job, ok, result = pickle.load(self._proc.stdout)
                with self._lock:
                    future = self._futures.pop(job)
                if ok:
                    future.set_result(result)
                else:
                    future.set_exception(RuntimeError(f"statistics helper: {result}"))
        except Exception as exc:  # noqa: BLE001 - end of output (the child ended) or a broken pipe
            with self._lock:
                pending, self._futures = self._futures, {}
            for future in pending.values():
                future.set_exception(RuntimeError(f"statistics helper ended: {exc!r}"))

    def _send(self, message: tuple[Any, ...]) -> None:
        assert self._proc.stdin is not None
        pickle.dump(message, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self._proc.stdin.flush()

    def submit(self, kind: str, args: Any) -> Future[Any]:
        """Run ``kind`` (``"intervals"``, ``"p_values"``) on ``args`` in the child; the future fails
        when the child cannot compute it (the caller then computes it itself)."""
        future: Future[Any] = Future()
        with self._lock:
            job, self._next = self._next, self._next + 1
            self._futures[job] = future
        try:
            self._send(("job", job, kind, args))
        except OSError as exc:
            with self._lock:
                self._futures.pop(job, None)
            future.set_exception(RuntimeError(f"statistics helper: {exc!r}"))
        return future

    def widen(self) -> None:
        """Let the child use all its threads (the caller now only waits for it)."""
        try:
            self._send(("widen",))
        except OSError:
            pass  # the jobs' futures report it

    def close(self) -> None:
        """End the child and wait for it (killed when jobs are still unanswered: the caller gave up)."""
        with self._lock:
            abandoned = bool(self._futures)
        if abandoned:
            self._proc.kill()
        close_pipes(self._proc.stdin)
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=5)


def enabled() -> bool:
    """False when ``PPTARENA_STATS_WORKER=0`` (or on a machine with one core)."""
    return os.environ.get(ENV, "1") != "0" and (os.cpu_count() or 1) > 1
