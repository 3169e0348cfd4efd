"""HTTP plumbing: the request as received (:class:`Incoming`), the answer to send
(:class:`Outgoing`), reading bodies and multipart uploads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pptarena.models.sim.prompt import WireError


@dataclass
class Incoming:
    """A request: method, path, query (last value of each name), headers (lower-cased), raw body."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    base_url: str = ""

    _json: Any = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)

    @property
    def api_key(self) -> str | None:
        """The credential sent: Bearer token, ``x-api-key``, ``x-goog-api-key`` or ``?key=``."""
        auth = self.headers.get("authorization", "")
        if auth[:7].lower() == "bearer " and auth[7:].strip():
            return auth[7:].strip()
        for name in ("x-api-key", "x-goog-api-key", "api-key"):
            if self.headers.get(name):
                return self.headers[name]
        return self.query.get("key") or None

    def json(self) -> Any:
        """The body as JSON (None when empty); :class:`WireError` when it is not JSON."""
        if not self._parsed:
            self._parsed = True
            if self.body.strip():
                try:
                    self._json = json.loads(self.body)
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                    raise WireError("the request body is not valid JSON") from None
        return self._json

    def json_object(self) -> dict[str, Any]:
        """The body as a JSON object; :class:`WireError` otherwise."""
        data = self.json()
        if not isinstance(data, dict):
            raise WireError("the request body must be a JSON object")
        return data

    def safe_json(self) -> Any:
        """The body as JSON, or None when it is not JSON (for the request record)."""
        try:
            return self.json()
        except WireError:
            return None


@dataclass
class Outgoing:
    """An answer: status, body bytes, headers; ``action`` asks for a socket-level fault instead
    (``"reset"``, ``"timeout"``, ``"truncated"``)."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    action: str | None = None
    fault: str | None = None
    model: str | None = None

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Outgoing:
        """A JSON answer."""
        return cls(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), dict(headers or {}))


def read_incoming(handler: Any, max_body: int) -> Incoming:
    """Read the request line's parts, headers and body from an ``http.server`` handler.

    :raises WireError: 411 for a body without ``Content-Length``, 413 for one over ``max_body``.
    """
    split = urlsplit(handler.path)
    headers = {k.lower(): v for k, v in handler.headers.items()}
    body = b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise WireError("chunked request bodies are not supported; send Content-Length", 411)
    length = headers.get("content-length")
    if length:
        try:
            n = int(length)
        except ValueError:
            raise WireError("Content-Length is not a number") from None
        if n > max_body:
            raise WireError(f"the request body is over {max_body} bytes", 413)
        body = handler.rfile.read(n)
    host = headers.get("host") or "{}:{}".format(*handler.server.server_address[:2])
    return Incoming(
        method=handler.command.upper(),
        path=split.path.rstrip("/") or "/",
        query={k: v[-1] for k, v in parse_qs(split.query).items()},
        headers=headers,
        body=body,
        base_url=f"http://{host}",
    )


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Form field name → ``(filename, bytes)`` of a ``multipart/form-data`` body."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise WireError("expected a multipart/form-data upload")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise WireError("the multipart body could not be read")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True) or b""
        fields[str(name)] = (part.get_filename(), payload)
    return fields


def write_outgoing(handler: Any, out: Outgoing) -> None:
    """Send ``out`` (status, headers with ``Content-Length``, body)."""
    handler.send_response(out.status)
    handler.send_header("Content-Type", out.content_type)
    for name, value in out.headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(out.body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(out.body)


__all__ = ["Incoming", "Outgoing", "parse_multipart", "read_incoming", "write_outgoing"]
