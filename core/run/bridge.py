"""The bridge between a jailed agent worker and the harness: model calls, renders and log events.

A jailed agent has no key, no renderer and no view of the run folder. Its worker
(:mod:`pptarena.run.jail_worker`) hands ``workspace.model(ref).complete(...)``,
``workspace.renderer.render(...)`` and ``workspace.log.write(...)`` to the harness as JSON lines on
its stdout and reads the answers on its stdin. The harness side (:class:`BridgeHost`) makes the
model call with the run's own client (keys, retries, cache, usage book and ``model_call`` log
stay on the host, so the pair's usage and cost are counted where the agent cannot forge them),
renders a copy of the deck bytes it was sent in a private folder of its own (the renderer's
guard applies) and sends the slide images back as bytes; it never opens a path the agent names.

Messages (one JSON object per line):

- worker → host ``{"op": "model", "id", "ref", "messages", "params"}`` → ``{"op": "reply", "id", "ok",
  "completion" | "error", "kind", "status"}``;
- worker → host ``{"op": "render", "id", "name", "deck"}`` (base64) → ``{"op": "reply", "id", "ok",
  "images": [{"number", "sld_id", "width", "height", "hidden", "png"}]}``;
- worker → host ``{"op": "log", "event", "data"}`` (no answer).
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from pptarena.models.client import CallPolicy, ModelClient
from pptarena.models.messages import (
    Completion,
    ImagePart,
    Message,
    ModelError,
    ToolCall,
    ToolResult,
    TransientModelError,
    Usage,
)
from pptarena.types import AgentError, AgentLog, InfraError, SlideImage

MAX_DECK_BYTES = 256 * 1024 * 1024
"""Largest deck a jailed agent may send to be rendered."""
MAX_LOG_EVENT_BYTES = 1_000_000
"""Largest log event (JSON) a jailed agent may write; longer ones are cut to a note."""
MAX_LOG_EVENTS = 20_000
"""Log events kept per pair; later ones are dropped (one note says so)."""
MAX_LOG_BYTES = 64 * 1024 * 1024
"""Log bytes kept per pair; later events are dropped (one note says so)."""


# --------------------------------------------------------------------------- JSON forms


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def part_to_json(part: Any) -> dict[str, Any]:
    """One message part as JSON."""
    if isinstance(part, str):
        return {"text": part}
    if isinstance(part, ImagePart):
        return {"image": _b64(part.data), "media_type": part.media_type}
    if isinstance(part, ToolCall):
        return {
            "tool_call": {"id": part.id, "name": part.name, "input": dict(part.input), "native": part.native}
        }
    if isinstance(part, ToolResult):
        return {
            "tool_result": {
                "call_id": part.call_id,
                "content": [part_to_json(p) for p in part.content],
                "is_error": part.is_error,
                "native": part.native,
            }
        }
    raise TypeError(
        f"a message part must be text, an image, a tool call or a tool result, not {type(part).__name__}"
    )


def part_from_json(data: Any) -> Any:
    """Inverse of :func:`part_to_json`."""
    if not isinstance(data, dict):
        raise ValueError("a message part must be an object")
    if "text" in data:
        return str(data["text"])
    if "image" in data:
        return ImagePart(base64.b64decode(data["image"]), str(data.get("media_type") or "image/png"))
    if "tool_call" in data:
        c = data["tool_call"]
        return ToolCall(str(c["id"]), str(c["name"]), dict(c.get("input") or {}), c.get("native"))
    if "tool_result" in data:
        r = data["tool_result"]
        content = tuple(part_from_json(p) for p in r.get("content") or [])
        return ToolResult(str(r["call_id"]), content, bool(r.get("is_error")), r.get("native"))
    raise ValueError(f"unknown message part {sorted(data)}")


def messages_to_json(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as JSON (text content stays a string)."""
    return [
        {
            "role": m.role,
            "content": m.content if isinstance(m.content, str) else [part_to_json(p) for p in m.content],
        }
        for m in messages
    ]


def messages_from_json(data: Any) -> list[Message]:
    """Inverse of :func:`messages_to_json`; raises :class:`ValueError` on a malformed list."""
    if not isinstance(data, list):
        raise ValueError("messages must be a list")
    out = []
    for m in data:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
            raise ValueError("each message needs a role: system, user or assistant")
        content = m.get("content")
        parts = content if isinstance(content, str) else tuple(part_from_json(p) for p in content or [])
        out.append(Message(m["role"], parts))
    return out


def completion_to_json(c: Completion) -> dict[str, Any]:
    """A completion as JSON."""
    return {
        "text": c.text,
        "model": c.model,
        "usage": c.usage.as_dict(),
        "cached": c.cached,
        "raw": c.raw,
        "finish_reason": c.finish_reason,
    }


def completion_from_json(data: dict[str, Any]) -> Completion:
    """Inverse of :func:`completion_to_json`."""
    return Completion(
        text=str(data.get("text") or ""),
        model=str(data.get("model") or ""),
        usage=Usage.from_dict(data.get("usage") or {}),
        cached=bool(data.get("cached")),
        raw=data.get("raw"),
        finish_reason=data.get("finish_reason"),
    )


# --------------------------------------------------------------------------- the jail's side


class Channel:
    """The worker's end of the bridge: one request at a time, answered in order."""

    def __init__(self, requests: BinaryIO, replies: BinaryIO):
        self._in = requests
        self._out = replies
        self._lock = threading.Lock()
        self._next = 0

    def send(self, message: dict[str, Any]) -> None:
        """Send one message that needs no answer."""
        line = json.dumps(message, default=str).encode() + b"\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its answer."""
        with self._lock:
            self._next += 1
            message = {**message, "id": self._next}
            self._out.write(json.dumps(message, default=str).encode() + b"\n")
            self._out.flush()
            line = self._in.readline()
        if not line:
            raise InfraError("the harness closed the bridge")
        reply = json.loads(line)
        if reply.get("id") != message["id"]:
            raise InfraError("the bridge answered out of order")
        return reply


def _raise_reply(reply: dict[str, Any]) -> None:
    error = str(reply.get("error") or "bridge call failed")
    kind = reply.get("kind")
    if kind == "transient":
        raise TransientModelError(error, status=reply.get("status"))
    if kind == "model":
        raise ModelError(error, status=reply.get("status"))
    if kind == "infra":
        raise InfraError(error)
    raise AgentError(error)


class BridgedModelClient(ModelClient):
    """A :class:`~pptarena.models.ModelClient` whose calls the harness makes (no key in the jail)."""

    def __init__(self, channel: Channel, ref: str):
        backend, _, model = ref.partition("/")
        super().__init__(None, backend, model, policy=CallPolicy(timeout=None, concurrency=1))
        self._channel = channel

    def complete(self, messages: list[Message], **params: Any) -> Completion:
        """Ask the harness to make the call; usage is counted there (and mirrored in :attr:`usage`)."""
        reply = self._channel.call(
            {"op": "model", "ref": self.ref, "messages": messages_to_json(list(messages)), "params": params}
        )
        if not reply.get("ok"):
            _raise_reply(reply)
        completion = completion_from_json(reply["completion"])
        with self._lock:
            self.usage.add(completion.usage)
        return completion


class BridgedRenderer:
    """The run's renderer, reached through the harness: the deck's bytes go out, PNGs come back."""

    def __init__(self, channel: Channel):
        self._channel = channel

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """Render ``deck_path`` into ``out_dir`` (see :class:`pptarena.types.Renderer`)."""
        data = Path(deck_path).read_bytes()
        if len(data) > MAX_DECK_BYTES:
            raise AgentError(f"deck {deck_path} is larger than {MAX_DECK_BYTES} bytes: not rendered")
        reply = self._channel.call({"op": "render", "name": Path(deck_path).name, "deck": _b64(data)})
        if not reply.get("ok"):
            _raise_reply(reply)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        images = []
        for img in reply["images"]:
            path = out / f"slide-{int(img['number']):03d}.png"
            path.write_bytes(base64.b64decode(img["png"]))
            images.append(
                SlideImage(
                    number=int(img["number"]),
                    sld_id=img.get("sld_id"),
                    path=path,
                    width=int(img["width"]),
                    height=int(img["height"]),
                    hidden=bool(img.get("hidden")),
                )
            )
        return images


class BridgedLog(AgentLog):
    """The agent's log: events are kept here (``events``) and written by the harness."""

    def __init__(self, channel: Channel):
        super().__init__(None)
        self._channel = channel

    def write(self, event: str, **data: Any) -> None:
        """Record one event (see :meth:`pptarena.types.AgentLog.write`)."""
        super().write(event, **data)
        self._channel.send(
            {"op": "log", "event": str(event), "data": json.loads(json.dumps(data, default=str))}
        )


# --------------------------------------------------------------------------- the harness's side


class BridgeHost:
    """Answers one pair's bridge requests on the harness's side.

    :param model: the run's ``ref -> ModelClient`` factory bound to this pair's usage book and log.
    :param renderer: a callable returning the run's renderer (built on first render), or None.
    :param log: the pair's log (``agent.log.jsonl`` in its task folder).
    :param models: the ``"<backend>/<model>"`` references the agent may call (those its options
        name); None: any configured one.
    """

    def __init__(
        self,
        model: Callable[[str], ModelClient],
        renderer: Callable[[], Any] | None,
        log: AgentLog,
        models: set[str] | None = None,
    ):
        self.model = model
        self.renderer = renderer
        self.log = log
        self.models = models
        self.events = 0
        self.log_bytes = 0

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to one request (None for a log event)."""
        op = message.get("op")
        if op == "log":
            self._log(message)
            return None
        answer: dict[str, Any]
        try:
            if op == "model":
                answer = self._model(message)
            elif op == "render":
                answer = self._render(message)
            else:
                answer = {"ok": False, "error": f"unknown bridge request {op!r}", "kind": "agent"}
        except TransientModelError as exc:
            answer = {"ok": False, "error": str(exc), "kind": "transient", "status": exc.status}
        except ModelError as exc:
            answer = {"ok": False, "error": str(exc), "kind": "model", "status": exc.status}
        except InfraError as exc:
            answer = {"ok": False, "error": str(exc), "kind": "infra"}
        except Exception as exc:  # noqa: BLE001 - a bad request is the agent's error
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kind": "agent"}
        return {"op": "reply", "id": message.get("id"), **answer}

    def _model(self, message: dict[str, Any]) -> dict[str, Any]:
        ref = str(message.get("ref") or "")
        if self.models is not None and ref not in self.models:
            named = ", ".join(sorted(self.models)) or "none"
            raise AgentError(f"model {ref!r} is not named in this agent's options ({named})")
        params = message.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError("params must be an object")
        client = self.model(ref)
        completion = client.complete(messages_from_json(message.get("messages")), **params)
        return {"ok": True, "completion": completion_to_json(completion)}

    def _render(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.renderer is None:
            raise AgentError("this run has no renderer")
        data = base64.b64decode(str(message.get("deck") or ""), validate=True)
        if len(data) > MAX_DECK_BYTES:
            raise AgentError(f"the deck is larger than {MAX_DECK_BYTES} bytes")
        suffix = Path(str(message.get("name") or "deck.pptx")).suffix or ".pptx"
        work = Path(tempfile.mkdtemp(prefix="pptarena-bridge-render-"))
        try:
            deck = work / f"deck{suffix if suffix.isascii() and len(suffix) <= 8 else '.pptx'}"
            deck.write_bytes(data)
            images = self.renderer().render(deck, work / "out")
            return {
                "ok": True,
                "images": [
                    {
                        "number": img.number,
                        "sld_id": img.sld_id,
                        "width": img.width,
                        "height": img.height,
                        "hidden": img.hidden,
                        "png": _b64(Path(img.path).read_bytes()),
                    }
                    for img in images
                ],
            }
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _log(self, message: dict[str, Any]) -> None:
        self.events += 1
        if self.events > MAX_LOG_EVENTS:
            if self.events == MAX_LOG_EVENTS + 1:
                self.log.write("log_truncated", note=f"more than {MAX_LOG_EVENTS} events; the rest dropped")
            return
        data = message.get("data")
        data = (
            {str(k): v for k, v in data.items() if k not in ("t", "event")} if isinstance(data, dict) else {}
        )
        text = json.dumps(data, default=str)
        if len(text) > MAX_LOG_EVENT_BYTES:
            data = {"note": f"event of {len(text)} bytes cut", "head": text[:2000]}
        self.log_bytes += min(len(text), MAX_LOG_EVENT_BYTES)
        if self.log_bytes > MAX_LOG_BYTES:
            self.events = MAX_LOG_EVENTS  # the next event writes the one note about the cut
            return
        self.log.write(str(message.get("event") or "event")[:200], **data)
