"""The HTTP server: :class:`ProviderSim`, routing each request to the provider it speaks to.

Built on the standard library's ``ThreadingHTTPServer`` (one thread per connection): the
simulator must misbehave at the socket level (resets, hangs, short bodies), which a plain
handler allows directly, and it adds no dependency to the package.

Which provider a request is for:

* Gemini: a path under ``/v1beta`` or ``/v1alpha``, a ``:method`` path (``...:generateContent``),
  or Google's credentials or client header (``x-goog-api-key``, ``?key=``, ``x-goog-api-client``);
* Anthropic: a path under ``/v1/messages``, or an ``anthropic-version`` or ``x-api-key`` header;
* OpenAI: everything else.

Every route but ``/sim/*`` needs a key (any key but ``SimConfig.refused_keys``). The
simulator's own routes: ``GET /sim/stats`` (the stats JSON), ``POST /sim/reset`` (zero the
stats and forget recorded requests), ``GET /`` (what this server is).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pptarena.models.sim.anthropic_wire import AnthropicWire
from pptarena.models.sim.config import SimConfig
from pptarena.models.sim.engine import Engine
from pptarena.models.sim.faults import reset_connection, send_truncated
from pptarena.models.sim.gemini_wire import GeminiWire
from pptarena.models.sim.httpio import Incoming, Outgoing, read_incoming, write_outgoing
from pptarena.models.sim.openai_wire import OpenAIWire
from pptarena.models.sim.prompt import WireError
from pptarena.models.sim.stats import SimRequest
from pptarena.models.sim.wire import Wire

LOOPBACK = ("127.0.0.1", "localhost", "::1")
IDLE_SECONDS = 120


def detect_wire(inc: Incoming) -> str:
    """``"gemini"``, ``"anthropic"`` or ``"openai"`` for a request (see the module docstring)."""
    path, headers = inc.path, inc.headers
    if (
        path.startswith(("/v1beta/", "/v1alpha/"))
        or ":" in path.rsplit("/", 1)[-1]
        or "x-goog-api-key" in headers
        or "x-goog-api-client" in headers
        or "key" in inc.query
    ):
        return "gemini"
    if path.startswith("/v1/messages") or "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    return "openai"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "provider-sim"
    timeout = IDLE_SECONDS
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        """Quiet: the simulator keeps its own records."""

    def setup(self) -> None:
        """Track the connection so :meth:`ProviderSim.stop` can close it."""
        super().setup()
        self.server.sim._connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        """Forget the connection."""
        self.server.sim._connections.discard(self.connection)  # type: ignore[attr-defined]
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """Route a GET."""
        self.server.sim._handle(self)  # type: ignore[attr-defined]

    do_POST = do_DELETE = do_HEAD = do_GET  # noqa: N815


class ProviderSim:
    """A simulated OpenAI / Anthropic / Gemini provider on loopback.

    ``ProviderSim(config, port=0)`` binds ``127.0.0.1`` (port 0: a free one); :meth:`start`
    serves in a background thread; use it as a context manager to stop it for sure.
    :attr:`url` is ``http://127.0.0.1:PORT``: the OpenAI SDK's ``base_url`` is
    ``sim.url + "/v1"``, Anthropic's ``sim.url``, google-genai's ``HttpOptions(base_url=sim.url)``.
    """

    def __init__(self, config: SimConfig | None = None, port: int = 0, host: str = "127.0.0.1"):
        if host not in LOOPBACK:
            raise ValueError("the provider simulator only binds loopback addresses")
        self.engine = Engine(config or SimConfig())
        self._wires: dict[str, Wire] = {
            "openai": OpenAIWire(self.engine),
            "anthropic": AnthropicWire(self.engine),
            "gemini": GeminiWire(self.engine),
        }
        self._connections: set[socket.socket] = set()
        family = socket.AF_INET6 if host == "::1" else socket.AF_INET

        class _Server(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True
            allow_reuse_address = True

        self._httpd = _Server((host, port), _Handler)
        self._httpd.sim = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ProviderSim:
        """Serve in a background thread; returns self."""
        if self._thread is None:
            self.engine.stop_event.clear()
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="provider-sim",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Release waiting requests, close open connections and stop serving."""
        self.engine.stop_event.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()

    def __enter__(self) -> ProviderSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ what users read

    @property
    def config(self) -> SimConfig:
        """The settings in force."""
        return self.engine.config

    def reconfigure(self, config: SimConfig) -> None:
        """Use ``config`` from now on (rate buckets start full, the prompt cache and rule counters
        anew; batches, files, stats and recorded requests stay)."""
        self.engine.configure(config)

    @property
    def port(self) -> int:
        """The port served."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        host = self._httpd.server_address[0]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK's ``base_url``: ``url + "/v1"``."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK's ``base_url``: :attr:`url`."""
        return self.url

    @property
    def gemini_base_url(self) -> str:
        """google-genai's ``HttpOptions(base_url=...)``: :attr:`url`."""
        return self.url

    @property
    def requests(self) -> list[SimRequest]:
        """Every recorded request, in the order they were answered (recorded just before the answer)."""
        return self.engine.requests

    def stats(self) -> dict[str, Any]:
        """Counters: requests, by_status, by_path, by_wire, faults (by kind), rate_limited,
        in_flight, max_in_flight, input/output/cached/cache-write tokens, batches submitted and
        ended, batch requests."""
        return self.engine.stats.snapshot()

    def reset_stats(self) -> None:
        """Zero the counters and forget the recorded requests."""
        self.engine.stats.reset()
        with self.engine._lock:
            self.engine.requests.clear()

    # ------------------------------------------------------------------ HTTP

    def _handle(self, handler: _Handler) -> None:
        try:
            inc = read_incoming(handler, self.engine.config.max_body_bytes)
        except WireError as exc:
            out = self._wires["openai"].error(exc.status, exc.message)
            handler.close_connection = True
            write_outgoing(handler, out)
            return
        if inc.path == "/" or inc.path.startswith("/sim/"):
            write_outgoing(handler, self._sim_route(inc))
            return
        wire = self._wires[detect_wire(inc)]
        stats = self.engine.stats
        stats.enter()
        route, out = "(unknown)", None
        try:
            route, out = self._dispatch(inc, wire)
        finally:
            if out is None:
                out = wire.error(500, "the provider simulator failed on this request")
            # counted and recorded before the answer goes out, so a caller that got its answer
            # finds its request in stats() and requests
            status = 0 if out.action in ("reset", "timeout") else out.status
            stats.leave(wire.name, route, status, out.fault)
            self._record(inc, wire, route, status, out)
            self._send(handler, out)

    def _record(self, inc: Incoming, wire: Wire, route: str, status: int, out: Outgoing) -> None:
        body = (
            inc.safe_json()
            if "multipart" not in inc.headers.get("content-type", "")
            else {"upload": len(inc.body)}
        )
        model = out.model or (body.get("model") if isinstance(body, dict) else None)
        self.engine.record(
            SimRequest(
                wire=wire.name,
                method=inc.method,
                path=inc.path,
                route=route,
                model=model if isinstance(model, str) else None,
                api_key=inc.api_key,
                status=status,
                headers=dict(inc.headers),
                body=body,
                response_headers=dict(out.headers),
                fault=out.fault,
            )
        )

    def _dispatch(self, inc: Incoming, wire: Wire) -> tuple[str, Outgoing]:
        found = wire.match(inc.method if inc.method != "HEAD" else "GET", inc.path)
        if found is None:
            if wire.path_known(inc.path):
                return "(unknown)", wire.error(405, f"{inc.method} is not allowed on {inc.path}")
            return "(unknown)", wire.error(404, f"Unknown request URL: {inc.method} {inc.path}")
        handler, params, template = found
        key = inc.api_key
        if not key or key in self.engine.config.refused_keys:
            return template, wire.unauthorized(key)
        try:
            out = handler(inc, **params)
        except WireError as exc:
            out = wire.refused(exc)
        except Exception as exc:  # noqa: BLE001 - a bug must answer 500, not kill the connection
            out = wire.error(500, f"the provider simulator failed: {type(exc).__name__}: {exc}")
        out.headers = {**wire.request_headers(), **out.headers}
        return template, out

    def _send(self, handler: _Handler, out: Outgoing) -> None:
        try:
            if out.action == "reset":
                reset_connection(handler)
            elif out.action == "timeout":
                self.engine.sleep(self.engine.config.hang_seconds)
                handler.close_connection = True
            elif out.action == "truncated":
                send_truncated(
                    handler, out.status, {"Content-Type": out.content_type, **out.headers}, out.body
                )
            else:
                write_outgoing(handler, out)
        except OSError:
            handler.close_connection = True

    def _sim_route(self, inc: Incoming) -> Outgoing:
        if inc.path == "/sim/stats" and inc.method in ("GET", "HEAD"):
            return Outgoing(200, json.dumps(self.stats()).encode("utf-8"))
        if inc.path == "/sim/reset" and inc.method == "POST":
            self.reset_stats()
            return Outgoing.json(200, {"reset": True})
        if inc.path == "/" and inc.method in ("GET", "HEAD"):
            return Outgoing.json(
                200,
                {
                    "name": "pptarena provider simulator",
                    "openai_base_url": self.openai_base_url,
                    "anthropic_base_url": self.anthropic_base_url,
                    "gemini_base_url": self.gemini_base_url,
                },
            )
        return Outgoing.json(404, {"error": {"message": f"no simulator route {inc.method} {inc.path}"}})


__all__ = ["ProviderSim", "detect_wire"]
