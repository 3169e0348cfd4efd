"""Renders across a jail's wall: a host render service on a unix socket, and the renderer that uses it.

A deck tool server running inside a CLI agent's jail (``arena mcp --renderer host --render-socket
PATH``) has no office of its own. :class:`SocketRenderer` (the in-jail side, a
:class:`pptarena.types.Renderer`) sends the deck's bytes to :class:`RenderService` (the host side)
over a unix socket bound into the jail, and gets one PNG per slide back. The service renders a
private copy of the bytes it was sent with the pair's renderer; it never opens a path the jail
names (the protocol has no field for one), and it works within per-pair caps
(:class:`RenderCaps`): deck bytes, renders, image bytes per render and in all. Each render it does
or refuses is a ``render`` event of the pair's log, written by the host (a count the jail cannot
forge).

The protocol, one request per connection:

- request: one JSON line ``{"op": "render", "size": N}`` (at most :data:`MAX_HEADER` bytes), then
  exactly N bytes of deck;
- answer: one JSON line, ``{"ok": false, "error": "..."}`` or ``{"ok": true, "images": [{"number",
  "sld_id", "width", "height", "hidden", "size"}]}``, then the PNGs' bytes one after the other.

Why it is long: it holds both ends of one small protocol (the host :class:`RenderService` with its
caps, refusals and render events, and the in-jail :class:`SocketRenderer`) plus the bounded line and
body readers both ends use, so the wire format is defined and read in one place.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptarena.errors import PptArenaError
from pptarena.types import AgentLog, Renderer, SlideImage

MAX_HEADER = 4096
"""Longest request line the service reads (the request is tiny: an op and a size)."""
MAX_ANSWER_HEADER = 1 << 20
"""Longest answer line the client reads (one small object per slide)."""
REQUEST_TIMEOUT_S = 120.0
"""How long the service waits for a whole request (line and deck bytes) before it hangs up."""
MAX_LOGGED_REFUSALS = 200
"""Refusals logged one by one per pair; later ones are only counted (in the closing summary)."""
SOCKET_NAME = "render.sock"


class RenderServiceError(PptArenaError):
    """The render service refused or failed a render; the message says why."""


@dataclass(frozen=True)
class RenderCaps:
    """What one pair's render service takes and gives (past a cap: a refusal naming it)."""

    max_deck_bytes: int = 100 << 20  # one deck sent to be rendered
    max_renders: int = 200  # decks taken to render per pair (one refused by the deck check too)
    max_render_bytes: int = 128 << 20  # the PNGs of one render
    max_total_bytes: int = 1 << 30  # the PNGs of every render of the pair
    max_connections: int = 4  # requests read at once (host memory: at most this many decks held)


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise ValueError(f"the request took over {REQUEST_TIMEOUT_S:.0f} s to arrive")


def _read_line_and_rest(sock: socket.socket, cap: int, deadline: float | None = None) -> tuple[bytes, bytes]:
    """(the first line without its newline, the bytes read past it); ``ValueError`` past ``cap``,
    past ``deadline`` (a ``time.monotonic`` value) or at the end of the stream."""
    data = b""
    while b"\n" not in data:
        _check_deadline(deadline)
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("the connection ended before a full line")
        data += chunk
        if len(data) > cap and b"\n" not in data[: cap + 1]:
            raise ValueError(f"a line longer than {cap} bytes")
    line, rest = data.split(b"\n", 1)
    return line, rest


def _read_exact(sock: socket.socket, size: int, head: bytes = b"", deadline: float | None = None) -> bytes:
    """Exactly ``size`` bytes (``head`` first); ``ValueError`` when the stream ends before, or past
    ``deadline``."""
    parts = [head[:size]]
    got = len(parts[0])
    while got < size:
        _check_deadline(deadline)
        chunk = sock.recv(min(1 << 20, size - got))
        if not chunk:
            raise ValueError(f"the connection ended after {got} of {size} bytes")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# --------------------------------------------------------------------------- host side


class RenderService:
    """One pair's host render service on ``folder/render.sock`` (module doc).

    Use as a context manager. ``renders`` counts the renders done for the pair (the trusted count),
    ``refused`` the requests refused.

    :param renderer: the pair's renderer (``workspace.renderer``); it is never closed here.
    :param folder: a private folder of the harness's (the socket is made in it).
    :param log: the pair's log: one ``render`` event per render done or refused.
    """

    class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True
        service: RenderService

        def process_request(self, request: Any, client_address: Any) -> None:
            """Refuse in the accepting thread past ``max_connections`` (a flood of connections
            never becomes a flood of host threads); else serve in a thread of its own."""
            service = self.service
            if not service._slots.acquire(blocking=False):
                service._refuse(
                    request,
                    f"too many render requests at once (at most {service.caps.max_connections})",
                    0.0,
                )
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                service._slots.release()
                raise

    def __init__(
        self, renderer: Renderer, folder: Path, log: AgentLog | None = None, caps: RenderCaps | None = None
    ):
        self.renderer = renderer
        self.caps = caps or RenderCaps()
        self.log = log
        self.socket_path = Path(folder) / SOCKET_NAME
        self.renders = 0
        self.refused = 0
        self.bytes_sent = 0
        self._render_lock = threading.Lock()  # one render at a time (an office is one process)
        self._count_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.caps.max_connections)
        self._server: RenderService._Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RenderService:
        server = RenderService._Server(str(self.socket_path), _Handler)
        server.service = self
        os.chmod(self.socket_path, 0o666)  # a jail may run under another uid
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="mcp-render-service",
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            if self.log is not None:
                self.log.write(
                    "render_service",
                    renders=self.renders,
                    refused=self.refused,
                    refusals_not_logged=max(0, self.refused - MAX_LOGGED_REFUSALS),
                    png_bytes_sent=self.bytes_sent,
                )
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    # ------------------------------------------------------------------ one request

    def serve(self, conn: socket.socket) -> None:
        """Answer one connection (called by the socket server's handler thread)."""
        try:
            conn.settimeout(REQUEST_TIMEOUT_S)
            started = time.monotonic()
            try:
                images, pngs = self._handle(conn, started + REQUEST_TIMEOUT_S)
            except RenderServiceError as exc:
                self._refuse(conn, str(exc), time.monotonic() - started)
                return
            except (OSError, ValueError) as exc:
                self._refuse(conn, f"bad render request: {exc}", time.monotonic() - started)
                return
            except Exception as exc:  # noqa: BLE001 - a renderer's own failure is the answer
                self._refuse(
                    conn, f"the renderer failed: {type(exc).__name__}: {exc}", time.monotonic() - started
                )
                return
            header = json.dumps({"ok": True, "images": images}).encode() + b"\n"
            with contextlib.suppress(OSError):
                conn.sendall(header + b"".join(pngs))
        finally:
            self._slots.release()

    def _handle(self, conn: socket.socket, deadline: float) -> tuple[list[dict[str, Any]], list[bytes]]:
        line, rest = _read_line_and_rest(conn, MAX_HEADER, deadline)
        try:
            request = json.loads(line)
        except ValueError:
            raise RenderServiceError("the request line is not JSON") from None
        if not isinstance(request, dict) or request.get("op") != "render":
            raise RenderServiceError('the render service knows one request: {"op": "render", "size": N}')
        extra = sorted(set(request) - {"op", "size"})
        if extra:
            raise RenderServiceError(
                f"unknown request fields {extra}: the render service takes deck bytes only and opens no path"
            )
        size = request.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise RenderServiceError("size must be the deck's byte count (a positive integer)")
        if size > self.caps.max_deck_bytes:
            raise RenderServiceError(
                f"the deck is {size} bytes, over the service's limit of {self.caps.max_deck_bytes} bytes"
            )
        with self._count_lock:
            if self.renders >= self.caps.max_renders:
                raise RenderServiceError(
                    f"render limit reached: {self.caps.max_renders} renders per pair; no further renders"
                )
            if self.bytes_sent >= self.caps.max_total_bytes:
                raise RenderServiceError(
                    f"render image limit reached: {self.caps.max_total_bytes} bytes of slide images per pair"
                )
        data = _read_exact(conn, size, rest, deadline)
        with self._render_lock:
            with self._count_lock:  # counted again: another request may have rendered meanwhile
                if self.renders >= self.caps.max_renders:
                    raise RenderServiceError(
                        f"render limit reached: {self.caps.max_renders} renders per pair; no further renders"
                    )
                self.renders += 1
            started = time.monotonic()
            images, pngs = self._render(data)
        total = sum(len(p) for p in pngs)
        with self._count_lock:
            self.bytes_sent += total
        if self.log is not None:
            self.log.write(
                "render",
                source="host render service",
                ok=True,
                deck_bytes=size,
                slides=len(images),
                png_bytes=total,
                seconds=round(time.monotonic() - started, 3),
                renders=self.renders,
            )
        return images, pngs

    def _render(self, data: bytes) -> tuple[list[dict[str, Any]], list[bytes]]:
        """Render the bytes as a deck in a private folder; the images' JSON and their PNG bytes."""
        from pptarena.deck import DeckError
        from pptarena.trust.render_guard import check_deck

        work = Path(tempfile.mkdtemp(prefix="pptarena-render-service-"))
        try:
            deck = work / "deck.pptx"
            deck.write_bytes(data)
            try:
                check_deck(deck)  # the deck engine's size, entry and ratio limits; bomb-deep nesting
                slides = self.renderer.render(deck, work / "out")
            except DeckError as exc:
                raise RenderServiceError(f"the deck cannot be rendered: {exc}") from None
            except PptArenaError as exc:
                raise RenderServiceError(f"the renderer failed: {exc}") from None
            images, pngs, total = [], [], 0
            for img in slides:
                png = Path(img.path).read_bytes()
                total += len(png)
                if total > self.caps.max_render_bytes:
                    raise RenderServiceError(
                        f"the slide images of this deck are over {self.caps.max_render_bytes} bytes; not sent"
                    )
                images.append(
                    {
                        "number": img.number,
                        "sld_id": img.sld_id,
                        "width": img.width,
                        "height": img.height,
                        "hidden": img.hidden,
                        "size": len(png),
                    }
                )
                pngs.append(png)
            return images, pngs
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _refuse(self, conn: socket.socket, error: str, seconds: float) -> None:
        with self._count_lock:
            self.refused += 1
            logged = self.refused <= MAX_LOGGED_REFUSALS
        if self.log is not None and logged:
            self.log.write(
                "render",
                source="host render service",
                ok=False,
                error=error[:2000],
                seconds=round(seconds, 3),
            )
        self._answer_error(conn, error)

    @staticmethod
    def _answer_error(conn: socket.socket, error: str) -> None:
        """Send the refusal, then drop what the client sent and was not read (without blocking, at
        most 1 MB: closing a unix socket with unread bytes resets it before the client reads)."""
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"ok": False, "error": error[:2000]}).encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
            for _ in range(16):
                if not conn.recv(65536, socket.MSG_DONTWAIT):
                    break


class _Handler(socketserver.BaseRequestHandler):
    server: RenderService._Server

    def handle(self) -> None:
        self.server.service.serve(self.request)


# --------------------------------------------------------------------------- jail side


class SocketRenderer:
    """A :class:`pptarena.types.Renderer` that renders through a :class:`RenderService` socket.

    :param socket_path: the service's unix socket (bound into the jail by the harness).
    :param max_deck_bytes: largest deck sent (the service has its own cap too).
    :param max_answer_bytes: largest answer read (all PNGs of one render).
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        max_deck_bytes: int = 100 << 20,
        max_answer_bytes: int = 128 << 20,
    ):
        self.socket_path = Path(socket_path)
        self.max_deck_bytes = max_deck_bytes
        self.max_answer_bytes = max_answer_bytes

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """Send ``deck_path``'s bytes to the service; write its PNGs into ``out_dir``."""
        data = Path(deck_path).read_bytes()
        if len(data) > self.max_deck_bytes:
            raise RenderServiceError(
                f"the deck is {len(data)} bytes, over {self.max_deck_bytes}: not rendered"
            )
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            try:
                sock.connect(str(self.socket_path))
                sock.sendall(json.dumps({"op": "render", "size": len(data)}).encode() + b"\n")
                sock.sendall(data)
                line, rest = _read_line_and_rest(sock, MAX_ANSWER_HEADER)
                answer = json.loads(line)
                if not isinstance(answer, dict):
                    raise ValueError("the answer is not an object")
                if not answer.get("ok"):
                    raise RenderServiceError(
                        str(answer.get("error") or "the render service refused the render")
                    )
                entries = answer.get("images") or []
                sizes = [int(e["size"]) for e in entries]
                if any(s < 0 for s in sizes) or sum(sizes) > self.max_answer_bytes:
                    raise RenderServiceError(f"the slide images are over {self.max_answer_bytes} bytes")
                blob = _read_exact(sock, sum(sizes), rest)
            except OSError as exc:
                raise RenderServiceError(
                    f"the render service at {self.socket_path} is unreachable: {exc}"
                ) from None
            except (ValueError, KeyError, TypeError) as exc:
                raise RenderServiceError(f"the render service answered garbage: {exc}") from None
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        images, at = [], 0
        for entry, size in zip(entries, sizes, strict=True):
            number = int(entry["number"])
            path = out / f"slide-{number:03d}.png"
            path.write_bytes(blob[at : at + size])
            at += size
            images.append(
                SlideImage(
                    number=number,
                    sld_id=entry.get("sld_id"),
                    path=path,
                    width=int(entry["width"]),
                    height=int(entry["height"]),
                    hidden=bool(entry.get("hidden")),
                )
            )
        return images
