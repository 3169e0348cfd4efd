"""Joining an existing Ray cluster from the driver, with one-line errors that name the fix.

Ray 2.52+ can require a token on every connection (``RAY_AUTH_MODE=token``; Ray 2.59+ turns it on
by default for clusters started by ``ray.init``, and ``ray start --head`` turns it on when a token
file exists). Ray itself uses a token found on this host only when ``address`` is ``"auto"``; with
an explicit ``HOST:PORT`` it connects without one and retries for about 20 s, printing a warning
a second, before failing with "Failed to connect to Ray cluster". :func:`join_cluster` instead:

1. checks that something listens at ``HOST:PORT`` (a clean error at once when not);
2. asks the head (one GCS call, under a second) whether it accepts this driver; when it wants a
   token, ``RAY_AUTH_MODE`` is unset and this host has one (``RAY_AUTH_TOKEN``,
   ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), it turns token mode on and asks again; a
   cluster without authentication is joined without (a token-mode driver would refuse the
   unauthenticated workers' calls for its objects); a refusal is one error at once;
3. pins the driver's node address to the cluster's when that is a loopback address (Ray rewrites
   ``127.0.0.1`` and ``localhost`` to the machine's network address), or to ``node_ip_address``;
4. keeps Ray's retry chatter off the terminal and turns a failure into one :class:`ExecutorError`.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pptarena.run import ExecutorError

TOKEN_HELP = (
    "set RAY_AUTH_MODE=token and give this host the head's token (`ray get-auth-token` on the head "
    "prints it) as ~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH; see docs/distributed.md"
)


def host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``HOST:PORT`` address; None for ``auto``, ``ray://`` and other forms."""
    if address == "auto" or "://" in address or ":" not in address:
        return None
    host, _, port = address.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an IP address of the loopback interface (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_source() -> str | None:
    """Where Ray would read a token from on this host (None when there is none)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return f"RAY_AUTH_TOKEN_PATH ({path})"
    default = Path.home() / ".ray" / "auth_token"
    if default.is_file() and default.stat().st_size > 0:
        return str(default)
    return None


def refused(address: str) -> bool:
    """Whether the head at ``address`` refuses this process's credentials (missing or wrong token).

    One GCS client call with Ray's current authentication mode; anything else than an
    authentication error (including a Ray without these internals) counts as accepted, and
    ``ray.init`` reports it.
    """
    try:
        from ray._raylet import GcsClient
    except ImportError:  # pragma: no cover - older Ray
        return False
    with _quiet_stderr() as log:  # Ray's C++ client logs the refusal as a warning too
        try:
            GcsClient(address=address, cluster_id=None)
            answer = False
        except Exception as exc:  # noqa: BLE001 - only an authentication failure matters here
            answer = type(exc).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(exc)
    log.unlink(missing_ok=True)
    return answer


def _enable_token_mode() -> None:
    os.environ["RAY_AUTH_MODE"] = "token"
    try:  # Ray caches its config; refresh it so this process sees token mode (what ray.init does for "auto")
        from ray._raylet import Config

        Config.initialize("")
    except (ImportError, AttributeError):  # pragma: no cover - a Ray without token authentication
        pass


@contextmanager
def _quiet_stderr() -> Iterator[Path]:
    """Send this process's stderr (Python's and Ray's C++ logging alike) to a file meanwhile."""
    with tempfile.NamedTemporaryFile(prefix="pptarena-ray-connect-", suffix=".log", delete=False) as fh:
        log = Path(fh.name)
    saved = os.dup(2)
    try:
        with open(log, "wb") as out:
            os.dup2(out.fileno(), 2)
        yield log
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _reason(log_text: str, exc: BaseException) -> str:
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    errors = [line for line in lines if " W " in line or " E " in line or "Error" in line]
    last = (errors or lines or [str(exc)])[-1]
    return last.split("] ", 1)[-1][:300]


def join_cluster(
    ray: Any, address: str, node_ip_address: str | None, timeout_s: int, init_kwargs: dict[str, Any]
) -> None:
    """``ray.init(address=...)`` with the checks above; raises :class:`ExecutorError` with the fix."""
    target = host_port(address)
    if target is not None:
        try:
            socket.create_connection(target, timeout=min(5, timeout_s)).close()
        except OSError as exc:
            raise ExecutorError(
                f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start its head with "
                f"`ray start --head --node-ip-address={target[0]} --port={target[1]}` or fix [executor] "
                "address"
            ) from None
    token = token_source()
    if target is not None:
        if "RAY_AUTH_MODE" not in os.environ and token is not None and refused(address):
            _enable_token_mode()  # the cluster wants a token and this host has one
        if refused(address):
            mode = os.environ.get("RAY_AUTH_MODE", "disabled")
            used = f"the token from {token}" if token and mode == "token" else "no token"
            raise ExecutorError(
                f"the Ray cluster at {address} refused this driver ({used}): it requires token "
                f"authentication; {TOKEN_HELP}"
            )
    kwargs = dict(init_kwargs)
    pin = node_ip_address or (target[0] if target is not None and is_loopback(target[0]) else None)
    if pin:
        kwargs["_node_ip_address"] = pin
    saved_wait = os.environ.get("RAY_gcs_server_port_wait_time_s")
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(timeout_s))  # Ray's connect attempts
    quiet_loggers = [logging.getLogger(n) for n in ("ray", "ray._private.worker")]
    levels = [lg.level for lg in quiet_loggers]
    for lg in quiet_loggers:
        lg.setLevel(logging.ERROR)
    try:
        with _quiet_stderr() as log:
            try:
                ray.init(address=address, **kwargs)
                failure: BaseException | None = None
            except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, AuthenticationError
                failure = exc
        text = log.read_text(errors="replace")
        log.unlink(missing_ok=True)
    finally:
        for lg, level in zip(quiet_loggers, levels, strict=True):
            lg.setLevel(level)
        if saved_wait is None:
            os.environ.pop("RAY_gcs_server_port_wait_time_s", None)
    if failure is None:
        return
    mode = os.environ.get("RAY_AUTH_MODE", "disabled")
    if "InvalidAuthToken" in text or "Unauthenticated" in text or "InvalidAuthToken" in str(failure):
        used = f"the token from {token}" if token and mode == "token" else "no token"
        raise ExecutorError(
            f"the Ray cluster at {address} refused this driver ({used}): it requires token "
            f"authentication; {TOKEN_HELP}"
        ) from None
    if type(failure).__name__ == "AuthenticationError":
        raise ExecutorError(f"RAY_AUTH_MODE=token but this host has no Ray token: {TOKEN_HELP}") from None
    raise ExecutorError(
        f"cannot join the Ray cluster at {address}: {_reason(text, failure)} (the driver and the nodes "
        "must run the same Python and Ray versions; docs/distributed.md)"
    ) from None
