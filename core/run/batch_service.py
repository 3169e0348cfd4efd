"""The run's batch queue served to its host agent workers (``arena run --batch``, batched agents).

A batched agent placed on the host (``placement = "host"``) runs in a worker process (the ``local``
executor's warm pool, or one fresh interpreter per pair), which has no
:class:`~pptarena.run.batches.BatchQueue` of its own. The host process serves its queue to them
through :class:`BatchService`: a Unix socket in a private (0700) folder whose address the workers find
in ``$PPTARENA_BATCH_SERVICE``. One call is one connection carrying one line of JSON each way
(``{"op": "call", "backend", "model", "custom_id", "messages", "params"}`` and ``{"ok": true,
"completion", "batch_id"}`` or ``{"ok": false, "error", "kind", "status"}``), so a worker that dies
mid-call only drops its own caller; the answer still lands in ``batches.jsonl``, where the pair's next
attempt finds it.

Whose call it is comes from the kernel, never from the message: the host reads the caller's process id
with ``SO_PEERCRED`` (Linux) and uses the :class:`~pptarena.run.batches.BatchWait` the launcher
registered for that worker (:meth:`BatchService.waiting`), so the pair's task timeout stops counting
while its call waits and no worker can move another pair's clock. A process with no registered pair is
refused. Which request it is comes from its content too: the host files it under the custom id it
derives from backend, model, messages and params (:meth:`BatchService.own_id`), so a worker can neither
take nor spoil another request's answer in ``batches.jsonl``.

:class:`RemoteBatchQueue` is the worker's side, with the queue's ``call`` signature, so
:class:`~pptarena.run.batches.BatchingModelClient` works over it unchanged. It has no read timeout (a
batch may take hours): the host kills the worker on its (extended) deadline.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import socketserver
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

from pptarena.models.batch import BatchError, BatchRequest
from pptarena.models.messages import Completion, ModelError, TransientModelError
from pptarena.trust.unix_service import UnixSocketService
from pptarena.types import InfraError

log = logging.getLogger("pptarena.run")

ENV_VAR = "PPTARENA_BATCH_SERVICE"
"""Where a worker process finds the run's batch service (``unix:/path/to/socket``)."""
MAX_REQUEST = 32 * 1024 * 1024
"""Longest request line (a call's messages, renders as base64 included)."""
MAX_REPLY = 32 * 1024 * 1024
"""Longest reply line (one completion)."""
READ_TIMEOUT = 60.0
"""Seconds a connected worker has to send its request line (it sends it at once)."""
MAX_NAME = 256
"""Longest backend or model name."""
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a custom id may be (:func:`pptarena.models.batch.custom_id_of` makes 40 hex characters)."""
_FIELDS = {"op", "backend", "model", "custom_id", "messages", "params"}

_services: set[BatchService] = set()
_services_lock = threading.Lock()


def serving() -> BatchService | None:
    """The batch service this process runs, if any (what a launcher registers its worker's wait with)."""
    with _services_lock:
        return next(iter(_services), None)


def peer_pid(sock: socket.socket) -> int:
    """The process id of the other end of a Unix socket, as the kernel knows it."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[0])


class RequestRefused(ValueError):
    """A request the service does not carry out (malformed, too long, from a process with no pair)."""


def parse_request(line: bytes) -> tuple[str, BatchRequest]:
    """The backend name and the request a line asks for; raises :class:`RequestRefused`."""
    from pptarena.run.jail.bridge import messages_from_json

    if len(line) > MAX_REQUEST or not line.endswith(b"\n"):
        raise RequestRefused(f"a batch call request must be one line of at most {MAX_REQUEST} bytes")
    try:
        msg = json.loads(line)
    except ValueError as exc:
        raise RequestRefused(f"a batch call request must be JSON: {exc}") from None
    if not isinstance(msg, dict) or msg.get("op") != "call":
        raise RequestRefused('a batch call request must be an object with "op": "call"')
    unknown = sorted(set(msg) - _FIELDS)
    if unknown:
        raise RequestRefused(f"unknown field(s) in a batch call request: {', '.join(unknown)}")
    for key in ("backend", "model"):
        value = msg.get(key)
        if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME:
            raise RequestRefused(f"{key} must be a name of 1 to {MAX_NAME} characters")
    custom_id = msg.get("custom_id")
    if not isinstance(custom_id, str) or not CUSTOM_ID.fullmatch(custom_id):
        raise RequestRefused("custom_id must be 1 to 64 letters, digits, '-' or '_'")
    params = msg.get("params")
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise RequestRefused("params must be an object")
    try:
        messages = messages_from_json(msg.get("messages"))
    except (ValueError, TypeError, KeyError) as exc:
        raise RequestRefused(f"malformed messages: {exc}") from None
    return msg["backend"], BatchRequest(custom_id, msg["model"], messages, params)


def error_reply(exc: BaseException) -> dict[str, Any]:
    """The reply that makes the worker raise the same kind of error (:func:`raise_reply`)."""
    status = getattr(exc, "status", None)
    status = status if isinstance(status, int) else None
    if isinstance(exc, BatchError):
        kind = "batch"
    elif isinstance(exc, TransientModelError):
        kind = "transient"
    elif isinstance(exc, ModelError):
        kind = "model"
    elif isinstance(exc, RequestRefused):
        kind = "refused"
    else:
        kind = "infra"
    return {"ok": False, "error": str(exc) or type(exc).__name__, "kind": kind, "status": status}


def raise_reply(reply: dict[str, Any]) -> None:
    """Raise the error a failed reply carries, as the class the host's call raised."""
    error = str(reply.get("error") or "batch call failed")
    status = reply.get("status") if isinstance(reply.get("status"), int) else None
    kind = reply.get("kind")
    if kind == "batch":
        raise BatchError(error, status=status)
    if kind == "transient":
        raise TransientModelError(error, status=status)
    if kind == "model":
        raise ModelError(error, status=status)
    raise InfraError(f"the run's batch service refused the call: {error}" if kind == "refused" else error)


# --------------------------------------------------------------------------- the host side


class _Handler(socketserver.StreamRequestHandler):
    """One connection = one call."""

    server: Any

    def handle(self) -> None:
        service = self.server.service
        try:
            pid = peer_pid(self.connection)
            wait = service.wait_of(pid)
            if wait is None:  # refused before a byte of its request is read
                raise RequestRefused(f"process {pid} runs no batched pair of this run")
            self.connection.settimeout(READ_TIMEOUT)  # a request is sent at once; a silent peer is dropped
            line = self.rfile.readline(MAX_REQUEST + 1)
            self.connection.settimeout(None)
            if not line:
                return
            name, request = parse_request(line)
            backend = service.backend(name)
            request = service.own_id(name, backend, request, wait)
            completion = service.queue.call(name, backend, request, wait=wait)
            reply = service.completion_reply(completion)
        except Exception as exc:  # noqa: BLE001 - every failure is the caller's answer
            reply = error_reply(exc)
        data = json.dumps(reply, default=str).encode() + b"\n"
        if len(data) > MAX_REPLY:
            data = (
                json.dumps(error_reply(ModelError(f"the answer is over {MAX_REPLY} bytes"))).encode() + b"\n"
            )
        with contextlib.suppress(OSError):  # the worker is gone: its answer stays in batches.jsonl
            self.wfile.write(data)
            self.wfile.flush()


class BatchService(UnixSocketService):
    """The host's :class:`~pptarena.run.batches.BatchQueue` served to its worker processes (see the
    module doc). ``backends(name)`` gives the host's backend instance of a configured name.

    ``start()`` sets ``$PPTARENA_BATCH_SERVICE`` in this process's environment, so workers started
    afterwards inherit it; ``stop()`` restores it and removes the socket and its folder.
    """

    def __init__(self, queue: Any, backends: Callable[[str], Any]):
        super().__init__(ENV_VAR, "batches", _Handler)
        self.queue = queue
        self._backends = backends
        self._waits: dict[int, Any] = {}
        self._lock = threading.Lock()

    def start(self) -> BatchService:
        """Serve on a socket in a new private folder and name it in the environment."""
        super().start()
        with _services_lock:
            _services.add(self)
        return self

    def stop(self) -> None:
        """Stop serving, restore the environment and remove the socket and its folder."""
        with _services_lock:
            _services.discard(self)
        super().stop()

    # ---- whose calls these are

    def register(self, pid: int, wait: Any) -> None:
        """Calls from process ``pid`` are its pair's: ``wait`` (a BatchWait) is told of their waiting."""
        with self._lock:
            self._waits[int(pid)] = wait

    def unregister(self, pid: int) -> None:
        """Process ``pid`` runs no batched pair any more (its later calls are refused)."""
        with self._lock:
            self._waits.pop(int(pid), None)

    @contextlib.contextmanager
    def waiting(self, pid: int, wait: Any) -> Iterator[None]:
        """:meth:`register` for the duration of a ``with`` block."""
        self.register(pid, wait)
        try:
            yield
        finally:
            self.unregister(pid)

    def wait_of(self, pid: int) -> Any:
        """The wait registered for ``pid``, or None."""
        with self._lock:
            return self._waits.get(pid)

    # ---- a call

    def backend(self, name: str) -> Any:
        """The host's backend ``name``; raises :class:`RequestRefused` when it is not configured or
        cannot batch."""
        from pptarena.models.batch import supports_batch

        try:
            backend = self._backends(name)
        except Exception as exc:  # noqa: BLE001 - the name came from a worker
            raise RequestRefused(f"backend {name!r} is not configured in this run ({exc})") from None
        if not supports_batch(backend):
            raise RequestRefused(f"backend {name!r} has no batch API")
        return backend

    @staticmethod
    def own_id(name: str, backend: Any, request: BatchRequest, wait: Any = None) -> BatchRequest:
        """``request`` under the custom id the host derives from its content and the calling pair
        (``wait``: its :class:`~pptarena.run.batches.BatchWait`, :meth:`~.BatchWait.salted`), as a
        :class:`~pptarena.run.batches.BatchingModelClient` on the host does; never the one the worker
        claims: a worker cannot file its answer under another request's id, nor get another
        request's answer."""
        from pptarena.models.batch import custom_id_of
        from pptarena.models.cache import backend_request_key
        from pptarena.run.batches import pair_custom_id

        key = backend_request_key(backend, name, request.model, request.messages, request.params)
        if custom_id_of(key) != request.custom_id:
            log.warning("batch call %s from a worker does not match its content", request.custom_id)
        return BatchRequest(pair_custom_id(key, wait), request.model, request.messages, request.params)

    @staticmethod
    def completion_reply(completion: Completion) -> dict[str, Any]:
        """The reply carrying one answer."""
        from pptarena.run.jail.bridge import completion_to_json

        return {"ok": True, "completion": completion_to_json(completion), "batch_id": completion.batch_id}


# --------------------------------------------------------------------------- the worker side


class RemoteBatchQueue:
    """A worker's proxy to the host's batch queue, with :meth:`BatchQueue.call
    <pptarena.run.batches.BatchQueue.call>`'s signature (one connection per call, no read timeout)."""

    def __init__(self, address: str):
        if not address.startswith("unix:"):
            raise ValueError(f"${ENV_VAR} must be unix:/path, not {address!r}")
        self.path = address[5:]

    def call(self, backend_name: str, backend: Any, request: BatchRequest, wait: Any = None) -> Completion:
        """Send the call to the host and wait for its answer. ``backend`` and ``wait`` are not sent:
        the host uses its own backend of that name and the wait it registered for this process."""
        from pptarena.run.jail.bridge import completion_from_json, messages_to_json

        line = (
            json.dumps(
                {
                    "op": "call",
                    "backend": backend_name,
                    "model": request.model,
                    "custom_id": request.custom_id,
                    "messages": messages_to_json(list(request.messages)),
                    "params": request.params,
                },
                default=str,
            ).encode()
            + b"\n"
        )
        if len(line) > MAX_REQUEST:
            raise ModelError(f"this call's request is over {MAX_REQUEST} bytes; the batch service refuses it")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(None)  # whatever the process's default: a batch may take hours
        try:
            try:
                sock.connect(self.path)
                sock.sendall(line)
                with sock.makefile("rb") as stream:
                    data = stream.readline(MAX_REPLY + 1)
            except OSError as exc:
                raise InfraError(f"the run's batch service at {self.path} is not reachable: {exc}") from exc
        finally:
            sock.close()
        if not data.endswith(b"\n"):
            raise InfraError("the run's batch service hung up without an answer")
        try:
            reply = json.loads(data)
        except ValueError as exc:
            raise InfraError(f"the run's batch service sent a malformed answer: {exc}") from None
        if not isinstance(reply, dict):
            raise InfraError("the run's batch service sent a malformed answer")
        if not reply.get("ok"):
            raise_reply(reply)
        completion = completion_from_json(reply.get("completion") or {})
        completion.batch_id = str(reply.get("batch_id") or "") or None
        return completion

    def say(self, line: str) -> None:
        """A batch-mode notice from this worker (it goes to the pair's stderr file)."""
        log.warning("%s", line)

    def close(self) -> None:
        """Nothing to release (each call's connection closes with the call)."""


def remote_queue() -> RemoteBatchQueue | None:
    """The run's batch queue for this worker process: a proxy to the host's service named by
    ``$PPTARENA_BATCH_SERVICE``, or None when there is none (or this process serves it itself)."""
    address = os.environ.get(ENV_VAR, "")
    if not address.startswith("unix:"):
        return None
    with _services_lock:
        if any(s.address == address for s in _services):
            return None
    return RemoteBatchQueue(address)
