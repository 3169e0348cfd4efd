"""Injected faults: which generation request fails and how, and the socket-level misbehaviours.

A request fails with probability ``SimConfig.faults``; its kind is drawn from
``SimConfig.fault_mix`` by weight. Both draws use the request's own random stream (seed and
sequence number), so sequential requests fail the same way on every run. The kinds:

* ``500``, ``502``, ``503`` — that HTTP status in the provider's error form (``502`` is an
  HTML page, as a gateway sends it);
* ``529`` — Anthropic's ``overloaded_error``; OpenAI and Gemini never send 529, so there it is
  their own "overloaded" answer: 503;
* ``reset`` — the connection is closed at once, with no answer (a TCP reset);
* ``timeout`` — no answer for ``SimConfig.hang_seconds``, then the connection is closed;
* ``truncated`` — a 200 whose ``Content-Length`` promises more than is sent before the close;
* ``malformed`` — a 200 whose body is not valid JSON;
* ``bad_tool_args`` — a tool call whose arguments are not valid JSON (only drawn when the
  request offers tools).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from typing import Any

from pptarena.models.sim.latency import request_rng

STATUS_FAULTS = {"500": 500, "502": 502, "503": 503, "529": 529}
SOCKET_FAULTS = ("reset", "timeout", "truncated")


def pick_fault(
    seed: int, sequence: int, rate: float, mix: Mapping[str, float], has_tools: bool
) -> str | None:
    """The fault kind of request ``sequence``, or None when it goes through."""
    if rate <= 0:
        return None
    rng = request_rng(seed, "fault", sequence)
    if rng.random() >= rate:
        return None
    kinds = [(k, w) for k, w in mix.items() if w > 0 and (has_tools or k != "bad_tool_args")]
    total = sum(w for _, w in kinds)
    if total <= 0:
        return None
    point = rng.random() * total
    for kind, weight in kinds:
        point -= weight
        if point < 0:
            return kind
    return kinds[-1][0]


def corrupt_json(body: bytes) -> bytes:
    """``body`` cut in the middle and left unclosed: not parseable as JSON."""
    cut = max(1, len(body) // 2)
    return body[:cut] + b'\x00,"'


def reset_connection(handler: Any) -> None:
    """Make the handler's connection end with a TCP reset and no answer."""
    try:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    handler.close_connection = True


def send_truncated(handler: Any, status: int, headers: Mapping[str, str], body: bytes) -> None:
    """Send the status and headers with a ``Content-Length`` longer than the half body that follows,
    then close."""
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body) + max(16, len(body) // 2)))
    handler.end_headers()
    try:
        handler.wfile.write(body[: max(1, len(body) // 2)])
        handler.wfile.flush()
    except OSError:
        pass
    handler.close_connection = True


__all__ = [
    "SOCKET_FAULTS",
    "STATUS_FAULTS",
    "corrupt_json",
    "pick_fault",
    "reset_connection",
    "send_truncated",
]
