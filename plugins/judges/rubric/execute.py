"""Running a rubric's function leaves in the sandbox, with model calls proxied to the judge.

:func:`run_function_leaves` runs all function leaves of one rubric in one sandboxed Python
process (:mod:`pptarena.trust.sandbox`: time, CPU, memory and file-size limits, own temp dir, no
network where the OS allows). Inside, :mod:`.child` runs the leaves one by one with a
per-leaf time budget and per-leaf exception isolation. If the process itself dies (memory
limit, a C-level crash, the overall timeout), the leaf that was running is recorded as failed
and the leaves after it run in a fresh process. The driver first imports the modules the leaves
name (:data:`PRELOAD_MODULES`, python-pptx above all), so each forked leaf finds them loaded.

The sandbox gets importable shims written into its working directory:
``ppteval.verify.ppt.verifier`` (``ScreenshotsUnavailableError``, ``vlm_call``, ``llm_call``,
``SlideScreenshot``), ``rubric.utils.llm_tools`` (``llm_call``, ``vlm_call``) and a no-op
``dotenv`` (so a leaf's ``load_dotenv()`` cannot pull secrets from a stray ``.env``).

``llm_call`` / ``vlm_call`` reach the judge through :class:`ModelBridge`, a Unix-socket server
(socket files work across the sandbox's network namespace) that calls the configured
:class:`pptarena.models.ModelClient` and records every call.

Why it is long: it holds both the host side of a leaf batch (shims, preloads, sandbox limits, a
fresh process after a dead one, re-checked records) and the model bridge the leaves call
(:class:`ModelBridge` with its per-leaf caps, and its Unix-socket server); the bridge could move to
its own module (not done yet).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import shutil
import socketserver
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.plugins.judges.rubric import child
from pptarena.trust.sandbox import SandboxLimits, SandboxResult, run_python
from pptarena.types import InfraError

MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: Connections the bridge serves at once: the driver's and the running leaf's (one each), and spares.
#: Each may hold a request of up to MAX_REQUEST_BYTES in the judge's memory while it is read, so a
#: leaf opening a thousand connections would otherwise make the judge hold 64 GB.
MAX_BRIDGE_CONNECTIONS = 4
MAX_CALLS_PER_LEAF = 20  # model calls one leaf may make (enforced by ModelBridge, in the judge)
MAX_TOKENS_PER_CALL = 4096  # a leaf's max_tokens is clamped to this (PPT-Eval's leaves ask for <= 300)
STARTUP_SECONDS = 20.0  # interpreter start, imports and context building, per process

_VERIFIER_SHIM = (
    '''"""pptarena shim of PPT-Eval's ppteval.verify.ppt.verifier '''
    '''(only what rubric code imports)."""
from _pptarena_rubric_child import (  # noqa: F401
    ScreenshotsUnavailableError, SlideScreenshot, llm_call, vlm_call,
)


class PPTVerifier:
    """Not available inside a rubric leaf (PPT-Eval's leaves only name it in inert __main__ blocks)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("PPTVerifier is not available inside a pptarena rubric leaf")
'''
)

_LLM_TOOLS_SHIM = '''"""pptarena shim of ai-rubric's rubric.utils.llm_tools."""
from _pptarena_rubric_child import llm_call, vlm_call  # noqa: F401
'''

_DOTENV_SHIM = '''"""pptarena's no-op python-dotenv: rubric leaves never read .env files."""


def load_dotenv(*args, **kwargs):
    return False


def find_dotenv(*args, **kwargs):
    return ""


def dotenv_values(*args, **kwargs):
    return {}
'''

SHIM_FILES: dict[str, str] = {
    "ppteval/__init__.py": "",
    "ppteval/verify/__init__.py": "",
    "ppteval/verify/ppt/__init__.py": "",
    "ppteval/verify/ppt/verifier.py": _VERIFIER_SHIM,
    "rubric/__init__.py": "",
    "rubric/utils/__init__.py": "",
    "rubric/utils/llm_tools.py": _LLM_TOOLS_SHIM,
    "dotenv.py": _DOTENV_SHIM,
}

#: Modules the sandboxed driver imports before forking a process per leaf (:func:`child.preload`),
#: each only when some leaf's code names its top-level package: what PPT-Eval's published leaves
#: import that costs time to load (python-pptx above all: 265 of the 481 published leaves import it).
PRELOAD_MODULES: tuple[str, ...] = (
    "pptx",
    "pptx.util",
    "pptx.enum.shapes",
    "pptx.enum.text",
    "pptx.dml.color",
    "pptx.oxml.ns",
    "difflib",
    "zipfile",
    "xml.etree.ElementTree",
)


def preload_for(leaves: Sequence[dict[str, str]], modules: Sequence[str] | None = None) -> list[str]:
    """The modules of ``modules`` (default :data:`PRELOAD_MODULES`) whose top-level package some
    leaf's code names (as a word).
    """
    import re

    wanted = PRELOAD_MODULES if modules is None else modules
    tops = {m.split(".")[0] for m in wanted}
    named = {t for t in tops if any(re.search(rf"\b{re.escape(t)}\b", leaf["code"]) for leaf in leaves)}
    return [m for m in wanted if m.split(".")[0] in named]


#: The name :mod:`.child` has inside the sandbox: its source file is bound into the working directory,
#: so the sandbox needs nothing of ``pptarena.plugins`` (which it never sees).
CHILD_MODULE = "_pptarena_rubric_child"


def rubric_view() -> Any:
    """What of the Python installation rubric leaves see:
    :data:`pptarena.trust.isolation.RUBRIC_DISTRIBUTIONS`
    (python-pptx, lxml, Pillow, XlsxWriter, numpy and their requirements) and the core parts that
    rebuild ``ppt_diff`` (:data:`pptarena.trust.isolation.RUBRIC_CORE_PARTS`); no plugin, no dataset.
    """
    from pptarena.trust import isolation

    return isolation.python_view(isolation.RUBRIC_DISTRIBUTIONS, isolation.RUBRIC_CORE_PARTS)


# After main() every record is on descriptor 3: the driver ends at once (os._exit) instead of
# finalising an interpreter full of preloaded modules; an exception in main() still exits with 1.
_DRIVER = (
    "from _pptarena_rubric_child import main\n"
    "main(SANDBOX_INPUT)\n"
    "import os as _os, sys as _sys\n"
    "_sys.stdout.flush()\n"
    "_sys.stderr.flush()\n"
    "_os._exit(0)\n"
)


# --------------------------------------------------------------------------- model bridge


@dataclass
class ModelCallRecord:
    """One ``llm_call`` / ``vlm_call`` made by a leaf."""

    leaf: str
    kind: str
    prompt: str
    images: list[dict[str, Any]]
    params: dict[str, Any]
    reply: str | None = None
    error: str | None = None
    infra: bool = False  # the failure was the backend's (unreachable, 5xx...), not the leaf's
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (images as source, media type, size and SHA-256)."""
        return {
            "leaf": self.leaf,
            "kind": self.kind,
            "prompt": self.prompt,
            "images": self.images,
            "params": self.params,
            "reply": self.reply,
            "error": self.error,
            "infra": self.infra,
            "duration_s": self.duration_s,
        }


class ModelBridge:
    """Answers the sandbox's model requests with a :class:`~pptarena.models.ModelClient`.

    With ``client=None`` every request is refused with a clear error (the leaf then fails or
    uses its own fallback). :attr:`calls` records every request in arrival order.

    The limits are enforced here, in the judge's process, which no leaf can reach: each leaf may
    make at most ``max_calls_per_leaf`` calls (counted per leaf id the *driver* announced on its
    control connection, never per id a request claims), and a requested ``max_tokens`` is
    clamped to ``max_tokens`` (``temperature`` to [0, 2]). Calls over the cap are refused and
    counted in :attr:`refused` (``{leaf id: count}``) without being recorded one by one. A prompt
    over :data:`child.MAX_PROMPT_CHARS` characters, or over :data:`child.MAX_IMAGES` images, or an
    image over :data:`child.MAX_IMAGE_BYTES` is refused here too (it counts as one of the leaf's calls).
    """

    def __init__(
        self,
        client: Any | None,
        ref: str | None = None,
        *,
        max_calls_per_leaf: int = MAX_CALLS_PER_LEAF,
        max_tokens: int = MAX_TOKENS_PER_CALL,
    ):
        self.client = client
        self.ref = ref
        self.max_calls_per_leaf = max_calls_per_leaf
        self.max_tokens = max_tokens
        self.calls: list[ModelCallRecord] = []
        self.refused: dict[str, int] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def _params(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request's sampling parameters, clamped to what the judge allows."""
        params: dict[str, Any] = {}
        temperature = request.get("temperature")
        if type(temperature) in (int, float) and math.isfinite(temperature):
            params["temperature"] = min(2.0, max(0.0, float(temperature)))
        tokens = request.get("max_tokens")
        if type(tokens) is int:
            params["max_tokens"] = min(self.max_tokens, max(1, tokens))
        return params

    def _admit(self, leaf: str) -> bool:
        """Count one call of ``leaf``; False (and counted as refused) once it is over the cap."""
        with self._lock:
            used = self._counts.get(leaf, 0)
            if used >= self.max_calls_per_leaf:
                self.refused[leaf] = self.refused.get(leaf, 0) + 1
                return False
            self._counts[leaf] = used + 1
            return True

    def answer(self, request: dict[str, Any], leaf: str | None = None) -> dict[str, Any]:
        """Handle one decoded request; returns ``{"ok": True, "text": ...}`` or
        ``{"ok": False, "error": ...}``.

        :param leaf: the leaf the call is charged to (the bridge server passes the leaf the driver
            announced); None charges the leaf the request names (direct use, tests).
        """
        from pptarena.models import ImagePart, Message

        kind = "vlm" if request.get("kind") == "vlm" else "llm"
        charged = str(request.get("leaf", "")) if leaf is None else leaf
        if not self._admit(charged):
            cap = self.max_calls_per_leaf
            return {"ok": False, "error": f"more than {cap} model calls in one leaf (refused by the judge)"}
        refusal = _oversized(request)
        if refusal:  # counted as one of the leaf's calls, never sent
            return {"ok": False, "error": f"{refusal} (refused by the judge)"}
        params = self._params(request)
        images: list[ImagePart] = []
        meta: list[dict[str, Any]] = []
        record = ModelCallRecord(charged, kind, str(request.get("prompt", "")), meta, params)
        t0 = time.monotonic()
        try:
            for item in request.get("images") or []:
                data = base64.b64decode(item.get("b64", ""), validate=False)
                media = str(item.get("media_type") or "image/jpeg")
                images.append(ImagePart(data, media))
                meta.append(
                    {
                        "source": item.get("source"),
                        "media_type": media,
                        "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest(),
                    }
                )
            if self.client is None:
                raise RuntimeError(
                    f"{kind}_call: no model is configured for the rubric judge (set its 'model' option)"
                )
            message = Message.user(record.prompt, *images) if images else Message.user(record.prompt)
            completion = self.client.complete([message], **params)
            record.reply = completion.text
            return {"ok": True, "text": completion.text}
        except Exception as exc:  # noqa: BLE001 - reported back to the leaf as its call's failure
            record.error = f"{type(exc).__name__}: {exc}"
            record.infra = isinstance(exc, InfraError)
            prefix = "Vision completion failed" if kind == "vlm" else "LLM API call failed"
            return {"ok": False, "error": f"{prefix}: {exc}"}
        finally:
            record.duration_s = round(time.monotonic() - t0, 3)
            with self._lock:
                self.calls.append(record)


def _oversized(request: dict[str, Any]) -> str | None:
    """Why a leaf's request is over the caps the leaf side also applies (:data:`child.MAX_PROMPT_CHARS`
    characters of prompt, :data:`child.MAX_IMAGES` images of :data:`child.MAX_IMAGE_BYTES` each), or
    None. Checked here too: a leaf may talk to the socket without the leaf side's checks."""
    prompt, images = request.get("prompt", ""), request.get("images") or []
    if not isinstance(prompt, str) or len(prompt) > child.MAX_PROMPT_CHARS:
        return f"a prompt must be text of at most {child.MAX_PROMPT_CHARS} characters"
    if not isinstance(images, list) or len(images) > child.MAX_IMAGES:
        return f"at most {child.MAX_IMAGES} images per call"
    for item in images:
        b64 = item.get("b64") if isinstance(item, dict) else None
        if not isinstance(b64, str) or len(b64) * 3 // 4 > child.MAX_IMAGE_BYTES:
            return f"each image must be base64 of at most {child.MAX_IMAGE_BYTES} bytes"
    return None


class _Handler(socketserver.StreamRequestHandler):
    """One connection: the driver's control connection (the first to say ``hello``) or a leaf's."""

    def handle(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        if not server.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                self._send({"ok": False, "error": "too many connections to the judge's model bridge"})
            return
        try:
            self._serve(server)
        except OSError:
            pass  # the other side hung up (or its process was killed)
        finally:
            server.slots.release()
            if server.is_driver(self):
                server.driver_gone()

    def _serve(self, server: _Server) -> None:
        control = False
        while True:
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_REQUEST_BYTES:
                self._send({"ok": False, "error": f"request over {MAX_REQUEST_BYTES} bytes"})
                return
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("request must be a JSON object")
            except ValueError as exc:
                self._send({"ok": False, "error": f"bad request: {exc}"})
                continue
            if "control" in request:
                control = server.control(request, self, control)
                continue
            leaf = server.current_leaf
            if leaf is None:
                self._send({"ok": False, "error": "no rubric leaf is running (refused by the judge)"})
                continue
            self._send(server.bridge.answer(request, leaf))

    def _send(self, answer: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(answer).encode("utf-8") + b"\n")
        self.wfile.flush()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The bridge's socket server; knows which leaf the driver said is running."""

    daemon_threads = True
    bridge: ModelBridge

    def __init__(self, path: str, bridge: ModelBridge):
        super().__init__(path, _Handler)
        self.bridge = bridge
        self.current_leaf: str | None = None
        self._driver: Any = None
        self._ended = False
        self._lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(MAX_BRIDGE_CONNECTIONS)

    def is_driver(self, handler: _Handler) -> bool:
        """True when ``handler`` serves the driver's control connection."""
        with self._lock:
            return self._driver is handler

    def control(self, request: dict[str, Any], handler: _Handler, is_control: bool) -> bool:
        """Apply a control message; returns whether ``handler``'s connection is the driver's.

        The first connection to say ``hello`` is the driver's (it connects before any leaf runs);
        every other connection's control message is refused, so a leaf cannot announce a leaf.
        """
        with self._lock:
            if request.get("control") == "hello" and self._driver is None and not self._ended:
                self._driver = handler
                handler._send({"ok": True})
                return True
            if is_control and self._driver is handler and request.get("control") == "start":
                self.current_leaf = str(request.get("leaf", ""))
                handler._send({"ok": True})
                return True
        handler._send({"ok": False, "error": "control messages are the driver's (refused by the judge)"})
        return is_control

    def driver_gone(self) -> None:
        """The driver's connection closed: no leaf is announced any more, later calls are refused."""
        with self._lock:
            self._ended = True
            self.current_leaf = None


class _BridgeServer:
    """Serves a :class:`ModelBridge` on a Unix socket for the lifetime of a ``with`` block."""

    def __init__(self, bridge: ModelBridge, path: Path):
        self.path = path
        self.server = _Server(str(path), bridge)
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="rubric-model-bridge",
            daemon=True,
        )

    def __enter__(self) -> _BridgeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


# --------------------------------------------------------------------------- running leaves


@dataclass
class LeafRun:
    """Settings of one batch of leaf runs."""

    leaf_timeout: float = 60.0  # per leaf, not counting time spent waiting for model replies
    model_wait: float = 0.0  # extra seconds the process may run per leaf that names llm_call / vlm_call
    memory_mb: int = 2048
    disk_mb: int = 256  # size of the tmpfs the leaves may write to (under bubblewrap)
    python: str | None = None
    processes: list[dict[str, Any]] = field(default_factory=list)  # what each sandbox process did


def _input_paths(inputs: dict[str, Any]) -> list[Path]:
    """The host files a rubric's leaves may read: the two decks and the screenshots."""
    paths = [Path(inputs[k]) for k in ("original_ppt_path", "modified_ppt_path") if inputs.get(k)]
    for side in (inputs.get("screenshots") or {}).values():
        paths += [Path(item["image_path"]) for item in side or [] if item.get("image_path")]
    return [p for p in paths if p.exists()]


def _checked_events(
    events: list[Any], expected: Sequence[str]
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Started leaf ids and exactly one done record per expected leaf, re-checked after decoding."""
    from .child import check_score

    wanted = set(expected)
    started: list[str] = []
    done: dict[str, dict[str, Any]] = {}
    for e in events:
        if type(e) is not dict or e.get("leaf") not in wanted:
            continue
        lid = e["leaf"]
        if e.get("event") == "start" and lid not in started:
            started.append(lid)
        elif e.get("event") == "done" and lid in started and lid not in done:
            try:
                if type(e.get("reason")) is not str:
                    raise ValueError("reason is not a string")
                e["score"] = check_score(e.get("score"))
            except ValueError as exc:
                e = child.failed_record(lid, f"invalid leaf record: {exc}", "sandbox")
            done[lid] = e
    return started, done


def run_function_leaves(
    leaves: Sequence[dict[str, str]],
    inputs: dict[str, Any],
    bridge: ModelBridge,
    run: LeafRun,
    *,
    on_process: Callable[[SandboxResult], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run ``leaves`` (``{"id", "code"}`` dicts) in the sandbox; returns a record per leaf id.

    ``inputs`` holds the context: ``original_ppt_path``, ``modified_ppt_path``, ``ppt_diff``
    (``{"module", "factory", "data"}`` rebuilt in the sandbox, or None) and ``screenshots``
    (``{"original": [...], "modified": [...]}`` of ``{slide_number, image_path, slide_id}``).
    Under bubblewrap the leaves see only those files. A record has ``score``, ``reason``,
    ``duration_s``, ``stdout`` and, for a failed leaf, ``error``, ``error_type`` and ``traceback``.
    With ``inputs["stop_on_error"]`` the run stops at the first failing leaf and the leaves after
    it get no record.
    """
    records: dict[str, dict[str, Any]] = {}
    remaining = list(leaves)
    visible = _input_paths(inputs)
    while remaining:
        private = Path(tempfile.mkdtemp(prefix="pptarena-rubric-"))
        try:
            socket_path = private / "model.sock"
            payload = {
                **inputs,
                "leaves": remaining,
                "socket_path": str(socket_path),
                "leaf_timeout": run.leaf_timeout,
                "preload": preload_for(remaining),
            }
            asks_model = sum(
                1 for leaf in remaining if "llm_call" in leaf["code"] or "vlm_call" in leaf["code"]
            )
            limits = SandboxLimits(
                timeout=STARTUP_SECONDS
                + (run.leaf_timeout + 2.0) * len(remaining)
                + run.model_wait * asks_model,
                cpu_seconds=int(STARTUP_SECONDS + (run.leaf_timeout + 2.0) * len(remaining)) + 1,
                memory_mb=run.memory_mb,
                disk_mb=run.disk_mb,
            )
            with _BridgeServer(bridge, socket_path):
                socket_path.chmod(0o666)  # its folder is private; the sandbox may run as a uid of its own
                spawned = time.monotonic()
                result = run_python(
                    _DRIVER,
                    inputs=payload,
                    limits=limits,
                    extra_files=SHIM_FILES,
                    files={f"{CHILD_MODULE}.py": Path(child.__file__)},
                    python=run.python,
                    read_only=[*visible, socket_path],
                    python_view=rubric_view(),
                )
        finally:
            shutil.rmtree(private, ignore_errors=True)
        if on_process is not None:
            on_process(result)
        run.processes.append(
            {
                "leaves": len(remaining),
                "duration_s": result.duration_s,
                "startup_s": _startup_s(result.results, spawned),
                "ok": result.ok,
                "isolation": result.isolation,
                "limits": result.limits,
                "network_isolated": result.network_isolated,
                "notes": result.notes,
            }
        )
        started, done = _checked_events(result.results, [leaf["id"] for leaf in remaining])
        records.update(done)
        crashed = [lid for lid in started if lid not in records]
        if inputs.get("stop_on_error") and (crashed or any(record.get("error") for record in done.values())):
            for lid in crashed:
                problem = "the sandboxed process ended while this leaf ran: " + result.error_text()
                records[lid] = child.failed_record(lid, problem, "timeout" if result.timed_out else "sandbox")
            break  # the tree is aborted: the leaves after the failing one are not run

        if not started:
            # the process failed before running any leaf: nothing will improve by retrying
            problem = "the sandboxed process failed before running any leaf: " + result.error_text()
            for leaf in remaining:
                records[leaf["id"]] = child.failed_record(leaf["id"], problem, "sandbox")
            break
        for lid in crashed:
            problem = "the sandboxed process ended while this leaf ran: " + result.error_text()
            records[lid] = child.failed_record(lid, problem, "timeout" if result.timed_out else "sandbox")
        remaining = [leaf for leaf in remaining if leaf["id"] not in records]
        if result.ok and remaining:
            for leaf in remaining:
                records[leaf["id"]] = child.failed_record(
                    leaf["id"], "the sandboxed process exited without running this leaf", "sandbox"
                )
            remaining = []
    return records


def _startup_s(events: list[Any], spawned: float) -> float | None:
    """Seconds from starting the sandboxed process to its driver running (bubblewrap, interpreter,
    imports), from the driver's ``ready`` event (a timing record only; None when absent or odd).
    """
    for e in events:
        if type(e) is dict and e.get("event") == "ready" and type(e.get("t")) is float:
            value = e["t"] - spawned
            return round(value, 4) if 0.0 <= value < 3600.0 else None
    return None
