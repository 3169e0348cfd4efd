"""Judge calls through the providers' batch APIs, surviving a killed run (``arena run --batch``).

:class:`BatchQueue` is the run's one queue. A judge's call (:class:`BatchingModelClient`) is queued
under its backend and its thread waits. The queue submits a backend's waiting calls as one batch
job once no new call came for ``quiet`` seconds (or the oldest waited ``max_wait``), polls every
``poll`` seconds, and hands each answer to its caller by custom id (a digest of the request).

Everything needed to resume is appended to the run folder's ``batches.jsonl`` before it matters:
``submitted`` (batch id, backend, custom ids, attempt), ``result`` (one answer or final error per
custom id) and ``ended``. A run killed while waiting and started again reads it, polls the same
jobs (submitting nothing again), and a call whose answer is already stored returns at once. An
expired, canceled or server-failed request is submitted once more, then fails with a clear status.

Why it is long: the ``batches.jsonl`` book, the queue thread and the batching client are one resume
protocol: a killed run resumes because of the order in which the queue writes the book (``submitted`` as
soon as a job exists, each ``result`` before its caller is answered, ``ended`` after the last result),
and only the book reads those entries back, so the three are kept where that order can be checked in one
reading.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.models.batch import (
    BatchError,
    BatchRequest,
    BatchResult,
    BatchState,
    custom_id_of,
)
from pptarena.models.client import ModelClient
from pptarena.models.messages import Completion, Message, ModelError, TransientModelError, Usage
from pptarena.run.folder.rundir import BATCHES

log = logging.getLogger("pptarena.run")

MAX_ATTEMPTS = 2
"""Submissions of one request at most (the first, and one more after an expiry or a server failure)."""
MAX_BATCH_REQUESTS = 10_000
"""Requests per batch job at most (OpenAI allows 50,000, Anthropic 100,000)."""


@dataclass
class BatchSettings:
    """When the queue submits and how often it polls (seconds)."""

    quiet: float = 2.0
    max_wait: float = 60.0
    poll: float = 30.0
    max_requests: int = MAX_BATCH_REQUESTS


# --------------------------------------------------------------------------- a pair's waiting


class BatchWait:
    """The time one pair's agent spends waiting on batch jobs, which its task timeout does not count,
    the agent slot it gives back meanwhile, and what tells its batch requests from other pairs'.

    The attempt holds an agent slot while its agent runs. The queue calls :meth:`begin` when a call
    of the pair starts waiting and :meth:`end` when it is answered or fails (calls made at the same
    time count once): at the first begin the slot is given back (``release``) so that another agent
    can run, and before the agent goes on it takes one again (``acquire``, which may block; the wait
    lasts until it returns, and a call that begins meanwhile keeps it going). :meth:`close` ends the
    pair: it says whether the pair still holds a slot (the attempt then gives it back), and a call
    that ends after it (the pair timed out while its call waited) gives back at once the slot it had
    to take. ``salt`` names the attempt (:meth:`salted`).
    """

    def __init__(
        self,
        release: Callable[[], None] | None = None,
        acquire: Callable[[], None] | None = None,
        salt: str = "",
    ):
        self._lock = threading.Lock()
        self._open = 0
        self._acquiring = False
        self._since = 0.0
        self._total = 0.0
        self._holding = True
        self._closed = False
        self._release = release or (lambda: None)
        self._acquire = acquire or (lambda: None)
        self.salt = salt
        self._seen: dict[str, int] = {}

    def salted(self, key: str) -> str:
        """A request's key made the pair's own: the attempt's ``salt`` and how many calls of the pair
        asked the same before, so two epochs (or two agents) asking the same get answers of their own
        while a resumed attempt asking again finds its stored answer."""
        with self._lock:
            n = self._seen.get(key, 0)
            self._seen[key] = n + 1
        return f"{key}|{self.salt}|{n}"

    def begin(self) -> None:
        """A call of the pair starts waiting on a batch."""
        with self._lock:
            self._open += 1
            if self._open != 1 or self._acquiring:  # the pair is waiting already
                return
            self._since = time.monotonic()
            give_back = self._holding and not self._closed
            if give_back:
                self._holding = False
        if give_back:
            self._release()

    def end(self) -> None:
        """A waiting call of the pair was answered (or failed)."""
        with self._lock:
            self._open = max(0, self._open - 1)
            if self._open or self._acquiring:
                return
            if self._closed or self._holding:
                self._total += time.monotonic() - self._since
                return
            self._acquiring = True
        self._acquire()  # the agent goes on only with a slot
        with self._lock:
            self._acquiring = False
            if self._open and not self._closed:
                give_back = True  # a call began meanwhile: the pair still waits
            else:
                self._total += time.monotonic() - self._since
                self._holding = not self._closed
                give_back = self._closed
        if give_back:
            self._release()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """:meth:`begin` ... :meth:`end` around a ``with`` block (the pair waits for something else
        than its agent: a free worker)."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def close(self) -> bool:
        """The pair ended: True when it holds a slot (the caller gives it back), False when a waiting
        call had given it back."""
        with self._lock:
            self._closed = True
            holding, self._holding = self._holding, False
            return holding

    def seconds(self) -> float:
        """Seconds waited so far, the wait in progress (and the slot being taken after it) included."""
        with self._lock:
            live = self._open or self._acquiring
            return self._total + (time.monotonic() - self._since if live else 0.0)


def pair_custom_id(key: str, wait: BatchWait | None) -> str:
    """The custom id of a request with cache key ``key``: an agent pair's call (``wait``) gets one of
    its own (:meth:`BatchWait.salted`: not another epoch's or agent's answer), a judge's call the
    key's digest."""
    return custom_id_of(wait.salted(key) if wait is not None else key)


current_wait: ContextVar[BatchWait | None] = ContextVar("pptarena_batch_wait", default=None)
"""The :class:`BatchWait` of the pair this thread launches (set by the attempt for a batched agent;
read where the agent's model clients are made)."""


# --------------------------------------------------------------------------- the run folder's record


class BatchBook:
    """``batches.jsonl``: what was submitted, what ended, and every stored answer (append-only, fsynced)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self.submitted: dict[str, dict[str, Any]] = {}  # batch id -> {"backend", "custom_ids", "attempt"}
        self.ended: set[str] = set()
        self.results: dict[str, dict[str, Any]] = {}  # custom id -> {"completion"} | {"error", "kind"}
        self.attempts: dict[str, int] = {}  # custom id -> submissions so far
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash: the calls it concerned are simply asked again
                if isinstance(entry, dict):
                    self._apply(entry)

    def _apply(self, entry: dict[str, Any]) -> None:
        """Update the in-memory view with one entry (read back or just written)."""
        op = entry.get("op")
        if op == "submitted" and isinstance(entry.get("custom_ids"), list):
            self.submitted[str(entry["batch_id"])] = entry
            for cid in entry["custom_ids"]:
                self.attempts[cid] = max(self.attempts.get(cid, 0), int(entry.get("attempt") or 1))
        elif op == "ended":
            self.ended.add(str(entry.get("batch_id")))
        elif op == "result" and isinstance(entry.get("custom_id"), str):
            self.results[entry["custom_id"]] = entry

    def pending(self) -> dict[str, dict[str, Any]]:
        """Batches submitted and not ended."""
        return {bid: e for bid, e in self.submitted.items() if bid not in self.ended}

    def pending_batch_of(self, custom_id: str) -> str | None:
        """The pending batch holding ``custom_id``, if any."""
        for bid, entry in self.pending().items():
            if custom_id in entry["custom_ids"]:
                return bid
        return None

    def write(self, entry: dict[str, Any]) -> None:
        """Append one entry and fsync it, then update the in-memory view."""
        data = (json.dumps(entry, sort_keys=True) + "\n").encode()
        with self._lock:
            with self.path.open("ab") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            self._apply(entry)


def completion_entry(result: BatchResult, batch_id: str) -> dict[str, Any]:
    """The ``result`` entry of one answer."""
    from pptarena.run.jail.bridge import completion_to_json

    if result.completion is not None:
        return {
            "op": "result",
            "custom_id": result.custom_id,
            "batch_id": batch_id,
            "completion": completion_to_json(result.completion),
        }
    return {
        "op": "result",
        "custom_id": result.custom_id,
        "batch_id": batch_id,
        "error": result.error or result.kind,
        "kind": result.kind,
        "status": result.status,
    }


def answer_of(entry: dict[str, Any]) -> Completion:
    """The completion a stored ``result`` entry holds; raises :class:`BatchError` for a stored failure."""
    from pptarena.run.jail.bridge import completion_from_json

    if isinstance(entry.get("completion"), dict):
        completion = completion_from_json(entry["completion"])
        completion.batch_id = str(entry.get("batch_id") or "") or None
        return completion
    raise BatchError(
        f"batch request {entry.get('custom_id')} {entry.get('kind', 'failed')}: {entry.get('error')}",
        status=entry.get("status") if isinstance(entry.get("status"), int) else None,
    )


# --------------------------------------------------------------------------- the queue


@dataclass
class _Waiting:
    backend_name: str
    backend: Any
    request: BatchRequest
    futures: list[Future[Completion]] = field(default_factory=list)


class BatchQueue:
    """The run's batch queue (see the module docstring). ``say`` gets one line per batch event."""

    def __init__(
        self, run_dir: Path, settings: BatchSettings | None = None, say: Callable[[str], None] | None = None
    ):
        self.settings = settings or BatchSettings()
        self.book = BatchBook(Path(run_dir) / BATCHES)
        self.say = say or (lambda line: log.info("%s", line))
        self._lock = threading.Lock()
        self._calls: dict[str, _Waiting] = {}  # custom id -> its waiting callers (queued or in a batch)
        # (backend name, model) -> custom ids not yet submitted (a Gemini job serves one model)
        self._queued: dict[tuple[str, str], list[str]] = {}
        self._first: dict[tuple[str, str], float] = {}
        self._last: dict[tuple[str, str], float] = {}
        self._backends: dict[str, Any] = {}  # backend name -> instance (for polling resumed batches)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.counts = {"submitted": 0, "pending": 0, "done": 0, "resumed": 0}

    # ---- life

    def start(self, backends: Callable[[str], Any]) -> BatchQueue:
        """Start the submit/poll thread; batches the run folder says are pending are polled again."""
        pending = self.book.pending()
        for entry in pending.values():
            try:
                self._backends[entry["backend"]] = backends(entry["backend"])
            except Exception as exc:  # noqa: BLE001 - the backend is gone from the config
                self.say(
                    f"batch {entry['batch_id']}: its backend {entry['backend']!r} is not configured ({exc})"
                )
        self.counts["resumed"] = self.counts["pending"] = len(pending)
        if pending:
            self.say(f"Resuming {len(pending)} pending batch job(s); nothing is submitted again.")
        self._thread = threading.Thread(target=self._loop, name="batch-queue", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop the thread; callers still waiting get an error (the batches stay pending in the folder)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            waiting = list(self._calls.values())
            self._calls.clear()
        for w in waiting:
            for fut in w.futures:
                if not fut.done():
                    fut.set_exception(ModelError("the run stopped while this call waited for its batch"))

    def status_line(self) -> str:
        """``batches: N submitted, P pending, D done``."""
        c = self.counts
        return f"batches: {c['submitted']} submitted, {c['pending']} pending, {c['done']} done"

    # ---- calls

    def call(
        self, backend_name: str, backend: Any, request: BatchRequest, wait: BatchWait | None = None
    ) -> Completion:
        """Queue ``request`` (or join the same request already queued or in a pending batch) and wait;
        ``wait`` (an agent's pair) is told when the waiting starts and ends."""
        with self._lock:
            stored = self.book.results.get(request.custom_id)
        if stored is not None:
            return answer_of(stored)
        if wait is None:
            return self._call(backend_name, backend, request)
        wait.begin()
        try:
            return self._call(backend_name, backend, request)
        finally:
            wait.end()

    def _call(self, backend_name: str, backend: Any, request: BatchRequest) -> Completion:
        fut: Future[Completion] = Future()
        with self._lock:
            stored = self.book.results.get(request.custom_id)
            if stored is not None:
                return answer_of(stored)
            self._backends.setdefault(backend_name, backend)
            waiting = self._calls.get(request.custom_id)
            if waiting is None:
                waiting = self._calls[request.custom_id] = _Waiting(backend_name, backend, request)
                if self.book.pending_batch_of(request.custom_id) is None:
                    self._enqueue(backend_name, request.custom_id)
            waiting.futures.append(fut)
        while True:
            try:
                return fut.result(timeout=1.0)
            except TimeoutError:
                if self._stop.is_set() and not fut.done():
                    raise ModelError("the run stopped while this call waited for its batch") from None

    def _enqueue(self, backend_name: str, custom_id: str) -> None:
        now = time.monotonic()
        key = (backend_name, self._calls[custom_id].request.model)
        queue = self._queued.setdefault(key, [])
        if not queue:
            self._first[key] = now
        queue.append(custom_id)
        self._last[key] = now

    # ---- the thread

    def _loop(self) -> None:
        next_poll = time.monotonic() + self.settings.poll
        while not self._stop.is_set():
            self._submit_due()
            if time.monotonic() >= next_poll:
                self._poll_all()
                next_poll = time.monotonic() + self.settings.poll
            self._stop.wait(min(0.2, self.settings.poll))

    def _submit_due(self) -> None:
        s = self.settings
        now = time.monotonic()
        due: list[tuple[str, list[str]]] = []
        with self._lock:
            for key, ids in list(self._queued.items()):
                if not ids:
                    continue
                if (
                    now - self._last[key] >= s.quiet
                    or now - self._first[key] >= s.max_wait
                    or len(ids) >= s.max_requests
                ):
                    take, rest = ids[: s.max_requests], ids[s.max_requests :]
                    self._queued[key] = rest
                    if rest:
                        self._first[key] = now
                    due.append((key[0], take))
        for name, ids in due:
            self._submit(name, ids)

    def _submit(self, name: str, ids: list[str]) -> None:
        with self._lock:
            calls = [self._calls[cid] for cid in ids if cid in self._calls]
        if not calls:
            return
        backend = calls[0].backend
        attempt = {c.request.custom_id: self.book.attempts.get(c.request.custom_id, 0) + 1 for c in calls}
        try:
            batch_id = backend.batch_submit([c.request for c in calls])
        except TransientModelError as exc:
            self.say(f"batch submission to {name} failed ({exc}); trying again")
            with self._lock:
                for c in calls:
                    self._enqueue(name, c.request.custom_id)
            self._stop.wait(min(30.0, max(1.0, self.settings.quiet)))
            return
        except Exception as exc:  # noqa: BLE001 - every waiting caller gets the reason
            self._fail(
                [c.request.custom_id for c in calls], ModelError(f"batch submission to {name} failed: {exc}")
            )
            return
        self.book.write(
            {
                "op": "submitted",
                "batch_id": batch_id,
                "backend": name,
                "custom_ids": [c.request.custom_id for c in calls],
                "attempt": max(attempt.values()),
                "at": time.time(),
            }
        )
        self.counts["submitted"] += 1
        self.counts["pending"] += 1
        self.say(f"batch {batch_id}: {len(calls)} request(s) submitted to {name} ({self.status_line()})")

    def _poll_all(self) -> None:
        for batch_id, entry in list(self.book.pending().items()):
            backend = self._backends.get(entry["backend"])
            if backend is None:
                continue
            try:
                state: BatchState = backend.batch_status(batch_id)
            except Exception as exc:  # noqa: BLE001 - polled again next round
                log.warning("polling batch %s failed: %s", batch_id, exc)
                continue
            if state.finished:
                self._finish(batch_id, entry, state)

    def _finish(self, batch_id: str, entry: dict[str, Any], state: BatchState) -> None:
        results = state.results or {}
        counts: dict[str, int] = {}
        again: list[tuple[str, str]] = []
        for cid in entry["custom_ids"]:
            result = results.get(cid) or BatchResult(
                cid,
                kind="expired" if state.status == "expired" else "errored",
                error=state.error or f"batch {state.status}",
            )
            counts[result.kind] = counts.get(result.kind, 0) + 1
            if result.completion is not None:
                result.completion.batch_id = batch_id
                self.book.write(completion_entry(result, batch_id))
                self._resolve(cid, result.completion)
            elif result.retryable and self.book.attempts.get(cid, 1) < MAX_ATTEMPTS:
                again.append((entry["backend"], cid))
            else:
                self.book.write(completion_entry(result, batch_id))
                self._fail([cid], answer_error(result, self.book.attempts.get(cid, 1)))
        self.book.write(
            {"op": "ended", "batch_id": batch_id, "status": state.status, "counts": counts, "at": time.time()}
        )
        self.counts["pending"] = max(0, self.counts["pending"] - 1)
        self.counts["done"] += 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        self.say(
            f"batch {batch_id} {state.status}: {summary}"
            + (f"; {len(again)} submitted again" if again else "")
        )
        with self._lock:
            for name, cid in again:
                if cid in self._calls:
                    self._enqueue(name, cid)
                # a request nobody waits for (the run restarted) is queued when its caller asks again

    def _resolve(self, custom_id: str, completion: Completion) -> None:
        with self._lock:
            waiting = self._calls.pop(custom_id, None)
        for fut in waiting.futures if waiting else []:
            if not fut.done():
                fut.set_result(completion)

    def _fail(self, ids: list[str], error: BaseException) -> None:
        with self._lock:
            waiting = [self._calls.pop(cid, None) for cid in ids]
        for w in waiting:
            for fut in w.futures if w else []:
                if not fut.done():
                    fut.set_exception(error)


def answer_error(result: BatchResult, attempts: int) -> BatchError:
    """The error a caller gets for a request that got no answer."""
    tries = f" (after {attempts} submissions)" if attempts > 1 else ""
    return BatchError(
        f"batch request {result.kind}{tries}: {result.error or 'no answer'}", status=result.status
    )


# --------------------------------------------------------------------------- the client


class BatchingModelClient(ModelClient):
    """A :class:`ModelClient` whose calls go through the run's :class:`BatchQueue` (the response
    cache, usage book and log work as for any client; cost is at the batch rates). ``wait``: the
    agent pair whose calls these are (its task timeout does not count the waiting)."""

    def __init__(self, queue: Any, *args: Any, wait: BatchWait | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.queue = queue
        self.wait = wait

    def bound(self, **kwargs: Any) -> ModelClient:
        """A new client of the same backend and model on the same queue."""
        return BatchingModelClient(
            self.queue,
            self.backend,
            self.backend_name,
            self.model,
            policy=self.policy,
            wait=self.wait,
            **kwargs,
        )

    def _call_through_limiter(
        self, messages: list[Message], params: dict[str, Any], started: float
    ) -> tuple[Completion, Usage]:
        custom_id = pair_custom_id(self.cache_key(messages, params), self.wait)
        request = BatchRequest(custom_id, self.model, list(messages), dict(params))
        unsupported = getattr(self.backend, "batch_unsupported", None)
        if callable(unsupported) and unsupported(request):
            # a call the provider's batch API cannot carry (computer use, beta flags): sent alone
            return super()._call_through_limiter(messages, params, started)
        # the hours a batch may take are the call's duration in the log, not rate-limit waiting
        return self.queue.call(self.backend_name, self.backend, request, self.wait), Usage()
