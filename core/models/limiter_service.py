"""One rate limiter per account for the whole run, whichever process makes the call.

The run's host process holds the limiters (:func:`local_limiter`). Worker processes it starts
reach them through :class:`LimiterService`, a Unix socket in a private folder named by
``$PPTARENA_RATE_LIMITER``: a call's lease is one connection (acquire, wait for the grant, make the
call, release), so a worker that dies mid-call gives its slot back when the host sees the socket
close. Ray nodes reach them through one actor instead (``pptarena.plugins.executors.ray``), which
sets :func:`set_remote` in each node's worker.

:func:`limiter_for` is what :class:`~pptarena.models.ModelClient` asks: the host's limiter, or a
proxy to it when this process is a worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from pptarena.models.ratelimit import LimitSettings, Outcome, RateLimiter
from pptarena.trust.unix_service import UnixSocketService

log = logging.getLogger("pptarena.models")

ENV_VAR = "PPTARENA_RATE_LIMITER"
"""Where a worker process finds the run's limiter service (``unix:/path/to/socket``)."""
MAX_LINE = 256 * 1024
"""Longest message on the limiter socket (rate headers are small)."""


class Limiter(Protocol):
    """What :class:`~pptarena.models.ModelClient` needs of a limiter, local or remote."""

    def acquire(self, tokens: int = 0, *, timeout: float | None = None) -> tuple[Any, float]: ...

    def release(self, lease: Any, outcome: Outcome | None = None) -> None: ...


_local: dict[str, RateLimiter] = {}
_local_lock = threading.Lock()
_remote_factory: Callable[[str, LimitSettings], Limiter] | None = None
_serving: set[str] = set()  # addresses of services running in this process (its own calls stay local)


def local_limiter(account: str, settings: LimitSettings) -> RateLimiter:
    """This process's limiter of ``account`` (made with ``settings`` on first use)."""
    with _local_lock:
        limiter = _local.get(account)
        if limiter is None:
            limiter = _local[account] = RateLimiter(settings)
        return limiter


def local_snapshots() -> dict[str, dict[str, Any]]:
    """Every local limiter's state by account (for progress, benchmarks and the run's record)."""
    with _local_lock:
        items = list(_local.items())
    return {account: limiter.snapshot() for account, limiter in items}


def reset_local() -> None:
    """Forget every local limiter (a new run in the same process starts from nothing)."""
    with _local_lock:
        _local.clear()


def set_remote(factory: Callable[[str, LimitSettings], Limiter] | None) -> None:
    """Make :func:`limiter_for` hand out ``factory(account, settings)`` (a Ray node's actor proxy);
    ``None`` goes back to the environment / local choice."""
    global _remote_factory
    _remote_factory = factory


def limiter_for(account: str, settings: LimitSettings) -> Limiter:
    """The run's limiter of ``account``: through :func:`set_remote`'s factory, else the host's
    service named by ``$PPTARENA_RATE_LIMITER``, else this process's own."""
    if _remote_factory is not None:
        return _remote_factory(account, settings)
    where = os.environ.get(ENV_VAR, "")
    if where.startswith("unix:") and where not in _serving:
        return SocketLimiter(where[5:], account, settings)
    return local_limiter(account, settings)


# --------------------------------------------------------------------------- the host side


class _Handler(socketserver.StreamRequestHandler):
    """One connection = one lease: ``acquire`` → ``granted`` … ``release`` → ``ok``."""

    def handle(self) -> None:
        lease: tuple[Limiter, Any] | None = None
        try:
            msg = self._read()
            if msg is None or msg.get("op") != "acquire":
                return
            settings = LimitSettings.from_dict(msg.get("settings") or {})
            account = str(msg.get("account"))
            # this process's own limiter, or (on a Ray node) its proxy to the run's actor
            remote = _remote_factory
            limiter = remote(account, settings) if remote else local_limiter(account, settings)
            tokens = msg.get("tokens") if isinstance(msg.get("tokens"), int) else 0
            granted, waited = limiter.acquire(tokens)
            lease = (limiter, granted)
            self._write({"op": "granted", "waited": waited})
            msg = self._read()
            released = msg is not None and msg.get("op") == "release"
            outcome = Outcome.from_dict(msg.get("outcome") or {}) if released else None
            limiter.release(granted, outcome or Outcome(status="error"))
            lease = None
            self._write({"op": "ok"})
        except (OSError, ValueError):
            pass
        finally:
            if lease is not None:  # the worker died or hung up mid-call: its slot comes back
                lease[0].release(lease[1], Outcome(status="error"))

    def _read(self) -> dict[str, Any] | None:
        line = self.rfile.readline(MAX_LINE)
        if not line:
            return None
        data = json.loads(line)
        return data if isinstance(data, dict) else None

    def _write(self, data: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(data).encode() + b"\n")
        self.wfile.flush()


class LimiterService(UnixSocketService):
    """The host's limiters served to its worker processes over a Unix socket (see module doc).

    ``start()`` sets ``$PPTARENA_RATE_LIMITER`` in this process's environment, so workers
    started afterwards inherit it; ``stop()`` removes it and the socket.
    """

    def __init__(self) -> None:
        super().__init__(ENV_VAR, "limiter", _Handler)

    def start(self) -> LimiterService:
        """Serve on a socket in a new private folder (this process's own calls stay local)."""
        super().start()
        _serving.add(self.address or "")
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket."""
        _serving.discard(self.address or "")
        super().stop()


# --------------------------------------------------------------------------- the worker side


class SocketLimiter:
    """A worker's proxy to the host's limiter of one account (a lease is the open connection)."""

    def __init__(self, path: str, account: str, settings: LimitSettings):
        self.path, self.account, self.settings = path, account, settings

    def acquire(self, tokens: int = 0, *, timeout: float | None = None) -> tuple[Any, float]:
        """Connect, ask, and wait for the grant; falls back to no limit (with a warning) when the
        host's service is gone, so a call is never lost to the limiter itself."""
        started = time.monotonic()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(self.path)
            stream = sock.makefile("rwb")
            settings = self.settings.as_dict()
            msg = {"op": "acquire", "account": self.account, "settings": settings, "tokens": tokens}
            stream.write(json.dumps(msg).encode() + b"\n")
            stream.flush()
            line = stream.readline(MAX_LINE)
            if not line:
                raise OSError("the limiter service hung up")
            sock.settimeout(None)
            return (sock, stream), time.monotonic() - started
        except OSError as exc:
            sock.close()
            log.warning("rate limiter at %s not reachable (%s); this call goes out unlimited", self.path, exc)
            return None, time.monotonic() - started

    def release(self, lease: Any, outcome: Outcome | None = None) -> None:
        """Send the outcome and close the connection."""
        if lease is None:
            return
        sock, stream = lease
        try:
            msg = {"op": "release", "outcome": (outcome or Outcome()).as_dict()}
            stream.write(json.dumps(msg).encode() + b"\n")
            stream.flush()
            stream.readline(MAX_LINE)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                stream.close()
            sock.close()
