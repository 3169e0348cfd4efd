"""The bridge between a jailed agent worker and the harness: model calls, renders and log events.

A jailed agent has no key, no renderer and no view of the run folder. Its worker
(:mod:`pptarena.run.jail.jail_worker`) hands ``workspace.model(ref).complete(...)``,
``workspace.renderer.render(...)`` and ``workspace.log.write(...)`` to the harness as JSON lines on
its stdout and reads the answers on its stdin. The harness side (:class:`BridgeHost`) makes the
model call with the run's own client (keys, retries, cache, usage book and ``model_call`` log
stay on the host, so the pair's usage and cost are counted where the agent cannot forge them),
renders a copy of the deck bytes it was sent in a private folder of its own (the renderer's
guard applies) and sends the slide images back as bytes; it never opens a path the agent names.
It answers only the models the agent's own config table names, and it notes every infrastructure
failure it answers with (:attr:`BridgeHost.infra_failures`): the harness, not the worker, decides
whether a failed pair is the agent's (:func:`pptarena.run.jail.jail_pool.host_decided`). Renders go
through :class:`AgentRenders`, the run's renderer built again with its render cache in a size-capped
folder of the run's own, never the persistent render cache.

Messages (one JSON object per line):

- worker → host ``{"op": "model", "id", "ref", "messages", "params"}`` → ``{"op": "reply", "id", "ok",
  "completion" | "error", "kind", "status"}``;
- worker → host ``{"op": "render", "id", "name", "deck"}`` (base64) → ``{"op": "reply", "id", "ok",
  "images": [{"number", "sld_id", "width", "height", "hidden", "png"}]}``;
- worker → host ``{"op": "log", "event", "data"}`` (no answer).

Why it is long: it holds both ends of one line protocol with the JSON forms they share, so what the
jail's side sends is what :class:`BridgeHost` parses and answers under its caps. The size-capped render
cache of jailed agents (:class:`AgentRenders`, :func:`evict_oldest`) is a second job and could move to a
module of its own (not done yet).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
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
from pptarena.types import AgentError, AgentLog, ComponentUnavailable, InfraError, SlideImage

MAX_DECK_BYTES = 256 * 1024 * 1024
"""Largest deck a jailed agent may send to be rendered."""
MAX_LOG_EVENT_BYTES = 1_000_000
"""Largest log event (JSON) a jailed agent may write; longer ones are cut to a note."""
MAX_LOG_EVENTS = 20_000
"""Log events kept per pair; later ones are dropped (one note says so)."""
MAX_LOG_BYTES = 64 * 1024 * 1024
"""Log bytes kept per pair; later events are dropped (one note says so)."""
AGENT_RENDER_CACHE_BYTES = 256 * 1024 * 1024
"""Size cap of the render cache of a run's jailed agents (:class:`AgentRenders`): past it, the oldest
renders are removed."""
RENDER_ENTRY_BYTES = 4096
"""What one cached render is counted for beyond its PNGs (its folder and ``meta.json``)."""


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
            **({"cache_prefix": True} if m.cache_prefix else {}),
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
        out.append(Message(m["role"], parts, m.get("cache_prefix") is True))
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
    :param renderer: what renders the agent's decks (:class:`AgentRenders`, built on first render), or
        None.
    :param log: the pair's log (``agent.log.jsonl`` in its task folder).
    :param models: the ``"<backend>/<model>"`` references the agent may call (those its config table
        names, :func:`pptarena.run.jail.jail_pool.table_models`); None: any configured one.
    :param judge_models: the models the run's judges use (a refusal of one says so).
    """

    def __init__(
        self,
        model: Callable[[str], ModelClient],
        renderer: Any | None,
        log: AgentLog,
        models: set[str] | None = None,
        judge_models: frozenset[str] = frozenset(),
    ):
        self.model = model
        self.renderer = renderer
        self.log = log
        self.models = models
        self.judge_models = judge_models
        self.events = 0
        self.log_bytes = 0
        self.infra_failures: list[str] = []
        """The infrastructure failures this host answered requests with (a model backend, the
        renderer): what the harness itself saw fail during the pair."""

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
            answer = self._infra_failure(op, exc, "transient", status=exc.status)
        except ModelError as exc:
            answer = self._infra_failure(op, exc, "model", status=exc.status)
        except (InfraError, ComponentUnavailable) as exc:
            answer = self._infra_failure(op, exc, "infra")
        except Exception as exc:  # noqa: BLE001 - a bad request is the agent's error
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kind": "agent"}
        return {"op": "reply", "id": message.get("id"), **answer}

    def _infra_failure(self, op: Any, exc: Exception, kind: str, **extra: Any) -> dict[str, Any]:
        """The answer to a request the infrastructure failed; noted in :attr:`infra_failures`."""
        self.infra_failures.append(f"{op}: {type(exc).__name__}: {exc}"[:2000])
        return {"ok": False, "error": str(exc), "kind": kind, **extra}

    def _model(self, message: dict[str, Any]) -> dict[str, Any]:
        ref = str(message.get("ref") or "")
        if self.models is not None and ref not in self.models:
            raise AgentError(self._refusal(ref))
        params = message.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError("params must be an object")
        client = self.model(ref)
        completion = client.complete(messages_from_json(message.get("messages")), **params)
        return {"ok": True, "completion": completion_to_json(completion)}

    def _refusal(self, ref: str) -> str:
        """Why the model ``ref`` is not answered (it is not on :attr:`models`)."""
        named = ", ".join(sorted(self.models or ())) or "none"
        why = "; a judge of this run uses it" if ref in self.judge_models else ""
        return (
            f"model {ref!r} is not named in this agent's config table (it names: {named}): a jailed "
            f"agent may call only the models its [[agents]] table names, not a default of its "
            f"plugin{why}"
        )

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
            images = self.renderer.render(deck, work / "out")
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


# --------------------------------------------------------------------------- renders for agents


def renderer_caching_in(factory: Any, options: Any, context: Any) -> Callable[[Path], Any]:
    """A builder of the renderer plugin ``factory`` (with ``options`` and ``context``, as the run built
    it) whose render cache is in a given folder: its ``cache_dir`` option set to the folder; without
    one, its ``cache`` option off, and its context's ``cache_dir`` the folder when it has neither
    (a plugin caching under ``context.cache_dir`` then caches there)."""
    fields = type(options).model_fields

    def build(folder: Path) -> Any:
        if "cache_dir" in fields:
            return factory(options.model_copy(update={"cache_dir": folder}), context)
        if "cache" in fields:
            return factory(options.model_copy(update={"cache": False}), context)
        return factory(options, dataclasses.replace(context, cache_dir=folder))

    return build


def _tree_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (or of ``path`` itself), links not followed."""
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    return sum(
        os.lstat(os.path.join(folder, name)).st_size for folder, _, names in os.walk(path) for name in names
    )


def _cache_entries(root: Path) -> list[tuple[float, Path, int]]:
    """``(mtime, path, bytes)`` of each entry of a render cache folder: the folders two levels down
    (:class:`pptarena.render.RenderCache`'s ``<key[:2]>/<key>/``), or a file one level down."""
    entries = []
    for child in root.iterdir():
        for entry in child.iterdir() if child.is_dir() and not child.is_symlink() else [child]:
            try:
                entries.append((entry.lstat().st_mtime, entry, _tree_bytes(entry)))
            except OSError:  # removed meanwhile (a store that failed)
                continue
    return sorted(entries)


def evict_oldest(root: Path, keep_bytes: int) -> int:
    """Remove the oldest entries of the render cache ``root`` until it holds at most ``keep_bytes``;
    the bytes it holds then."""
    entries = _cache_entries(root)
    held = sum(size for _, _, size in entries)
    for _, path, size in entries:
        if held <= keep_bytes:
            break
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        held -= size
    return held


class AgentRenders:
    """The renderer a run's jailed agents reach through the bridge, with a render cache of the run's own.

    ``build(folder)`` makes the run's renderer plugin with its cache in ``folder``
    (:func:`renderer_caching_in`), a private temporary folder made on the first render: what agents
    render never lands in the persistent render cache. The folder is capped at ``cap_bytes``: each
    render is counted for its PNGs (what a cache entry holds) and :data:`RENDER_ENTRY_BYTES`, and past
    the cap the oldest entries are removed until half of it is left. :meth:`close` (when the run's
    jailed workers close) closes that renderer and removes the folder.
    """

    def __init__(self, build: Callable[[Path], Any], cap_bytes: int = AGENT_RENDER_CACHE_BYTES):
        self.cap_bytes = cap_bytes
        self.folder: Path | None = None
        """The run's render cache folder for agents (None before the first render)."""
        self._build = build
        self._renderer: Any = None
        self._held = 0  # bytes the folder holds, as counted (at least what it holds)
        self._lock = threading.Lock()
        self._closed = False

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """Render ``deck_path`` into ``out_dir`` (see :class:`pptarena.types.Renderer`)."""
        images = self._renderer_made().render(deck_path, out_dir)
        self._count(images)
        return images

    def close(self) -> None:
        """Close the renderer and remove the cache folder (again: nothing to do)."""
        with self._lock:
            self._closed = True
            renderer, self._renderer = self._renderer, None
            folder = self.folder
        close = getattr(renderer, "close", None)
        if callable(close):
            close()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def _renderer_made(self) -> Any:
        """The renderer, built on first use with its cache in :meth:`_folder`."""
        with self._lock:
            if self._closed:
                raise InfraError("the run's renderer for agents is closed")
            if self._renderer is None:
                self._renderer = self._build(self.folder or self._folder())
            return self._renderer

    def _folder(self) -> Path:
        """Make the run's render cache folder for agents (once: a renderer that failed to build is
        built again in the same folder)."""
        self.folder = Path(tempfile.mkdtemp(prefix="pptarena-agent-renders-"))
        return self.folder

    def _count(self, images: list[SlideImage]) -> None:
        """Count a render against the cap; past it, remove the oldest renders."""
        added = RENDER_ENTRY_BYTES
        for img in images:
            try:
                added += Path(img.path).lstat().st_size
            except OSError:
                continue
        with self._lock:
            self._held += added
            if self._held > self.cap_bytes and self.folder is not None and not self._closed:
                self._held = evict_oldest(self.folder, self.cap_bytes // 2)


def agent_renders(components: Any) -> AgentRenders:
    """The renderer agents get (through the bridge for jailed agents, directly for host-placed ones):
    the run's renderer plugin built again with its render cache in a capped private folder
    (:class:`AgentRenders`), never the persistent render cache. ``components``: the run's
    :class:`~pptarena.run.configuration.components.Components`."""
    cfg = components.config.renderer
    return AgentRenders(renderer_caching_in(cfg.spec.factory, cfg.options, components.context(cfg)))
