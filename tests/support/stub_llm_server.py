"""A scriptable HTTP server on loopback that speaks the OpenAI and Anthropic wire formats.

Tests drive the real provider SDKs against it, so request encoding, headers,
status handling and timeouts are exercised for real. It understands:

* ``POST /v1/chat/completions`` — OpenAI chat completions (also vLLM, Ollama, LM Studio);
* ``POST /openai/deployments/<deployment>/chat/completions?api-version=...`` — Azure OpenAI;
* ``POST /v1/responses`` — the OpenAI Responses API (computer use: ``computer_call`` output items);
* ``POST /v1/messages`` — Anthropic messages (also the beta endpoint's ``?beta=true``);
* ``GET /v1/models`` and ``GET /v1/models/<id>`` (Azure: ``/openai/models``) — the model list and one
  model, in the OpenAI or (with an ``anthropic-version`` header) the Anthropic format, from
  ``server.models``; when that is None (the default) every model exists (the list holds those
  asked for so far), so a run's preflight passes. ``server.models_action`` (a :class:`Fail` or
  :class:`Hang`; ``Fail(404)`` for a server without these paths) answers them instead. They are
  recorded in ``server.model_requests``, not ``server.requests`` (a run's preflight makes them
  before its first call), and consume nothing from the queue.

A :class:`Reply` is answered in the request's own format (a chat completion,
a Response with one output message, or a message with one text block); a
:class:`Native` sends a recorded provider body (e.g. a Response whose
``output`` holds ``computer_call`` items, or a message with ``tool_use``
blocks), with ``id``, ``model`` and ``usage`` filled in when missing.

Usage::

    from tests.support.stub_llm_server import StubLLMServer, Reply, Fail, Hang

    with StubLLMServer() as server:
        server.enqueue(Fail(429), Reply("hello"))   # consumed in order, by any request
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
        ...
        server.requests[-1].texts()                  # what the SDK sent

When the queue is empty every request gets ``server.default`` (``Reply("ok")``),
or whatever ``server.responder(request)`` returns when a responder is set.
Hangs are bounded (``Hang.seconds``) and released by :meth:`StubLLMServer.stop`,
so a test can never wedge the process. The server only binds 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

Wire = Literal["openai", "anthropic"]

TEST_API_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"
"""A fake key for tests; they assert it never shows up in errors or logs."""

_AZURE_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class Reply:
    """A successful completion. Token counts default to word counts of prompt and reply."""

    text: str = "ok"
    input_tokens: int | None = None
    output_tokens: int | None = None
    delay: float = 0.0  # seconds to wait before answering (for concurrency tests)
    finish_reason: str = "stop"
    cached_input_tokens: int = 0  # of input_tokens, served from the provider's prompt cache
    cache_write_5m_tokens: int = 0  # of input_tokens, written to Anthropic's prompt cache for 5 minutes
    cache_write_1h_tokens: int = 0  # ... and for one hour
    headers: dict[str, str] = field(default_factory=dict, hash=False)  # extra response headers (rate limits)


@dataclass(frozen=True)
class Fail:
    """An HTTP error in the provider's error format.

    ``message`` may contain ``{api_key}``, replaced by the key the client sent
    (real providers echo partial keys in 401 messages; tests check we redact).
    """

    status: int
    message: str = "stub failure"
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict, hash=False)  # extra response headers (rate limits)


@dataclass(frozen=True)
class Native:
    """A provider-format response body sent as given (``id``/``model``/``usage`` and such filled in if
    missing).

    For ``/v1/responses`` give at least ``{"output": [...]}``; for ``/v1/messages``
    ``{"content": [...], "stop_reason": "tool_use"}``.
    """

    body: dict[str, Any]


@dataclass(frozen=True)
class Hang:
    """Read the request, then answer nothing for up to ``seconds`` and drop the connection."""

    seconds: float = 10.0


Action = Reply | Fail | Hang | Native


@dataclass
class RecordedRequest:
    """One request the server received."""

    wire: Wire
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    deployment: str | None = None  # Azure deployment name, from the path
    time: float = field(default_factory=time.time)

    @property
    def model(self) -> str | None:
        """The ``model`` field of the body (None for Azure deployment paths without it)."""
        return self.body.get("model")

    @property
    def api_key(self) -> str | None:
        """The credential the client sent (Bearer token, ``x-api-key`` or Azure ``api-key``)."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key") or self.headers.get("api-key")

    @property
    def responses_api(self) -> bool:
        """True for OpenAI Responses API requests (``/v1/responses``)."""
        return self.path.endswith("/responses")

    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` list of the body (Responses API: the message items of ``input``)."""
        if self.responses_api:
            items = self.body.get("input")
            if isinstance(items, str):
                return [{"role": "user", "content": items}]
            return [i for i in items or [] if isinstance(i, dict) and "role" in i]
        return list(self.body.get("messages") or [])

    def tools(self) -> list[dict[str, Any]]:
        """The ``tools`` list of the body."""
        return list(self.body.get("tools") or [])

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool result sent: ``{"call_id", "is_error", "images": [(media, bytes)], "texts", "item"}``.

        Anthropic ``tool_result`` blocks and OpenAI ``computer_call_output`` items, in order.
        """
        out: list[dict[str, Any]] = []
        if self.responses_api:
            items = self.body.get("input")
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and item.get("type") == "computer_call_output":
                    shot = item.get("output") or {}
                    out.append(
                        {
                            "call_id": item.get("call_id"),
                            "is_error": False,
                            "texts": [],
                            "images": [_decode_data_url(shot.get("image_url", ""))],
                            "item": item,
                        }
                    )
            return out
        for m in self.messages():
            content = m.get("content")
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "tool_result":
                    inner = part.get("content")
                    blocks = inner if isinstance(inner, list) else [{"type": "text", "text": inner or ""}]
                    out.append(
                        {
                            "call_id": part.get("tool_use_id"),
                            "is_error": bool(part.get("is_error")),
                            "texts": [b.get("text", "") for b in blocks if b.get("type") == "text"],
                            "images": [_decode_image_block(b) for b in blocks if b.get("type") == "image"],
                            "item": part,
                        }
                    )
        return out

    def system(self) -> str | None:
        """The system prompt: Anthropic's ``system``, Responses ``instructions`` or OpenAI system messages."""
        if self.responses_api:
            return self.body.get("instructions")
        if self.wire == "anthropic":
            system = self.body.get("system")
            if isinstance(system, list):
                return "\n".join(b.get("text", "") for b in system)
            return system
        texts = [_content_texts(m.get("content")) for m in self.messages() if m.get("role") == "system"]
        return "\n".join(t for group in texts for t in group) if texts else None

    def texts(self) -> list[str]:
        """Every text part of every non-system message, in order."""
        out: list[str] = []
        for m in self.messages():
            if m.get("role") != "system":
                out.extend(_content_texts(m.get("content")))
        return out

    def images(self) -> list[tuple[str, bytes]]:
        """Every image as ``(media_type, bytes)``, decoded from the wire form, in order."""
        out: list[tuple[str, bytes]] = []
        for m in self.messages():
            content = m.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                if part.get("type") == "image_url":  # OpenAI: data URL
                    out.append(_decode_data_url(part["image_url"]["url"]))
                elif part.get("type") == "input_image":  # Responses API: data URL
                    out.append(_decode_data_url(part["image_url"]))
                elif part.get("type") == "image":  # Anthropic: base64 source
                    out.append(_decode_image_block(part))
        return out


def _decode_data_url(url: str) -> tuple[str, bytes]:
    head, _, data = url.partition(",")
    return head.removeprefix("data:").split(";")[0], base64.b64decode(data)


def _decode_image_block(block: dict[str, Any]) -> tuple[str, bytes]:
    src = block["source"]
    return src["media_type"], base64.b64decode(src["data"])


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p.get("text", "") for p in content if p.get("type") in ("text", "input_text")]
    return []


def _words(texts: list[str]) -> int:
    return sum(len(t.split()) for t in texts)


class StubLLMServer:
    """A threaded HTTP server on 127.0.0.1 with a queue of scripted actions.

    Attributes:
        requests: every POST request received, in arrival order.
        model_requests: every ``GET /v1/models...`` request, in arrival order.
        models: the model ids ``GET /v1/models`` lists (None: every model exists).
        models_action: a :class:`Fail` or :class:`Hang` answering the model paths instead.
        default: the action used when the queue is empty and no responder is set.
        responder: optional ``callable(RecordedRequest) -> Action`` used when the queue is empty.
        max_in_flight: the largest number of requests handled at the same time.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("StubLLMServer only binds loopback addresses")
        self.requests: list[RecordedRequest] = []
        self.default: Action = Reply("ok")
        self.responder: Callable[[RecordedRequest], Action] | None = None
        self.max_in_flight = 0
        self.models: list[str] | None = None
        self.models_action: Fail | Hang | None = None
        self.model_requests: list[RecordedRequest] = []
        self._queue: deque[Action] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._released = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> StubLLMServer:
        """Start serving in a background thread; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="stub-llm", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging requests and shut the server down."""
        self._released.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> StubLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ addresses

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` for the OpenAI SDK (``<url>/v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The ``base_url`` for the Anthropic SDK (it appends ``/v1/messages`` itself)."""
        return self.url

    @property
    def azure_endpoint(self) -> str:
        """The ``azure_endpoint`` for the AzureOpenAI client."""
        return self.url

    # ------------------------------------------------------------------ scripting

    def enqueue(self, *actions: Action) -> None:
        """Append actions; each request consumes the next one."""
        with self._lock:
            self._queue.extend(actions)

    def reset(self) -> None:
        """Forget queued actions, recorded requests and the in-flight high-water mark."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = 0
            self.responder = None
            self.default = Reply("ok")
            self.models = None
            self.models_action = None
            self.model_requests.clear()

    @property
    def pending(self) -> int:
        """How many queued actions are left."""
        with self._lock:
            return len(self._queue)

    def _next_action(self, request: RecordedRequest) -> Action:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        return self.default

    # ------------------------------------------------------------------ HTTP

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                server._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                server._handle_get(self)

            def _send_json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _handle(self, h: Any) -> None:
        split = urlsplit(h.path)
        path = split.path
        azure = _AZURE_PATH.match(path)
        if path in ("/v1/chat/completions", "/v1/responses") or azure:
            wire: Wire = "openai"
        elif path == "/v1/messages":
            wire = "anthropic"
        else:
            length = int(h.headers.get("Content-Length") or 0)
            h.rfile.read(min(length, _MAX_BODY))
            h._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(min(length, _MAX_BODY))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            h._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        request = RecordedRequest(
            wire=wire,
            method="POST",
            path=path,
            query={k: v[-1] for k, v in parse_qs(split.query).items()},
            headers={k.lower(): v for k, v in h.headers.items()},
            body=body,
            deployment=azure.group("deployment") if azure else None,
        )
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            action = self._next_action(request)
            self._respond(h, request, action)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _handle_get(self, h: Any) -> None:
        """``GET /v1/models[/<id>]`` (Azure ``/openai/models``): ``server.models`` in the wire's format."""
        split = urlsplit(h.path)
        path = split.path
        wire: Wire = "anthropic" if h.headers.get("anthropic-version") else "openai"
        request = RecordedRequest(
            wire=wire,
            method="GET",
            path=path,
            query={k: v[-1] for k, v in parse_qs(split.query).items()},
            headers={k.lower(): v for k, v in h.headers.items()},
            body={},
        )
        with self._lock:
            self.model_requests.append(request)
        listing = path in ("/v1/models", "/openai/models")
        one = path.startswith("/v1/models/") and path[len("/v1/models/") :]
        if self.models_action is not None and (listing or one):
            self._respond(h, request, self.models_action)
            return
        if not (listing or one):
            h._send_json(404, _error_body(wire, 404, f"no route {path}"))
            return
        known = self.models
        if known is None:  # every model exists: those asked for so far make the list
            asked = (r.path[len("/v1/models/") :] for r in self.model_requests)
            known = list(dict.fromkeys(m for m in asked if m))
        if listing:
            data = [_model_object(wire, m) for m in known]
            page: dict[str, Any] = {"data": data, "object": "list"}
            if wire == "anthropic":
                page = {"data": data, "has_more": False, "first_id": None, "last_id": None}
            h._send_json(200, page)
        elif one in known:
            h._send_json(200, _model_object(wire, str(one)))
        else:
            h._send_json(404, _error_body(wire, 404, f"The model `{one}` does not exist"))

    def _respond(self, h: Any, request: RecordedRequest, action: Action) -> None:
        if isinstance(action, Hang):
            self._released.wait(action.seconds)
            h.close_connection = True
            return
        if isinstance(action, Fail):
            message = action.message.replace("{api_key}", request.api_key or "")
            headers = {"retry-after": f"{action.retry_after:g}"} if action.retry_after is not None else {}
            headers.update(action.headers)
            h._send_json(action.status, _error_body(request.wire, action.status, message), headers)
            return
        prompt_words = _words(([request.system()] if request.system() else []) + request.texts())
        n = len(self.requests)
        model = request.model or request.deployment or "stub-model"
        headers = {"x-request-id": f"req_stub{n}", "request-id": f"req_stub{n}"}
        if isinstance(action, Reply):
            headers.update(action.headers)
        if isinstance(action, Native):
            h._send_json(200, _native_body(request, action.body, n, model, prompt_words), headers)
            return
        if action.delay:
            self._released.wait(action.delay)
        usage_in = action.input_tokens if action.input_tokens is not None else prompt_words
        usage_out = action.output_tokens if action.output_tokens is not None else len(action.text.split())
        if request.responses_api:
            payload = _native_body(
                request,
                {
                    "output": [
                        {
                            "type": "message",
                            "id": f"msg_stub{n}",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": action.text, "annotations": []}],
                        }
                    ],
                    "usage": _responses_usage(usage_in, usage_out, action.cached_input_tokens),
                },
                n,
                model,
                prompt_words,
            )
        elif request.wire == "openai":
            payload = {
                "id": f"chatcmpl-stub{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": action.text},
                        "finish_reason": action.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": usage_in,
                    "completion_tokens": usage_out,
                    "total_tokens": usage_in + usage_out,
                    "prompt_tokens_details": {"cached_tokens": action.cached_input_tokens},
                },
            }
        else:
            written = action.cache_write_5m_tokens + action.cache_write_1h_tokens
            payload = {
                "id": f"msg_stub{n}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": action.text}],
                "stop_reason": "end_turn" if action.finish_reason == "stop" else action.finish_reason,
                "stop_sequence": None,
                # Anthropic reports prompt-cache reads and writes apart from input_tokens, the writes
                # also split by lifetime
                "usage": {
                    "input_tokens": usage_in - action.cached_input_tokens - written,
                    "output_tokens": usage_out,
                    "cache_read_input_tokens": action.cached_input_tokens,
                    "cache_creation_input_tokens": written,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": action.cache_write_5m_tokens,
                        "ephemeral_1h_input_tokens": action.cache_write_1h_tokens,
                    },
                },
            }
        h._send_json(200, payload, headers)


def _model_object(wire: Wire, model: str) -> dict[str, Any]:
    """One model as ``GET /v1/models/<id>`` answers it (OpenAI or Anthropic format)."""
    if wire == "anthropic":
        return {"type": "model", "id": model, "display_name": model, "created_at": "2025-01-01T00:00:00Z"}
    return {"id": model, "object": "model", "created": 1700000000, "owned_by": "stub"}


def _responses_usage(usage_in: int, usage_out: int, cached: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": usage_in,
        "output_tokens": usage_out,
        "total_tokens": usage_in + usage_out,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def _native_body(
    request: RecordedRequest, body: dict[str, Any], n: int, model: str, words: int
) -> dict[str, Any]:
    """A recorded body with the fields a real server always sends filled in."""
    out = dict(body)
    if request.responses_api:
        out.setdefault("id", f"resp_stub{n}")
        out.setdefault("object", "response")
        out.setdefault("created_at", int(time.time()))
        out.setdefault("status", "completed")
        out.setdefault("model", model)
        out.setdefault("output", [])
        out.setdefault("parallel_tool_calls", True)
        out.setdefault("tool_choice", "auto")
        out.setdefault("tools", request.tools())
        out.setdefault("usage", _responses_usage(words, 10))
    elif request.wire == "anthropic":
        out.setdefault("id", f"msg_stub{n}")
        out.setdefault("type", "message")
        out.setdefault("role", "assistant")
        out.setdefault("model", model)
        out.setdefault("content", [])
        out.setdefault("stop_reason", "end_turn")
        out.setdefault("stop_sequence", None)
        out.setdefault("usage", {"input_tokens": words, "output_tokens": 10})
    return out


def _error_body(wire: Wire, status: int, message: str) -> dict[str, Any]:
    if wire == "anthropic":
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = {400: "invalid_request_error", 401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(
        status, "server_error"
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
