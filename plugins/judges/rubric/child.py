"""The sandboxed side of the ``rubric`` judge: runs PPT-Eval leaf code with PPT-Eval's context.

This module runs inside the sandboxed process, where its file is bound as
``_pptarena_rubric_child`` (the sandbox holds no plugin package; see :mod:`.execute`).
:func:`main` runs a list of function leaves one after another. Each leaf gets what ai-rubric's
``FunctionScorer`` gives it:

* ``exec(code, context, namespace)`` with a fresh ``context`` dict holding exactly the seven
  names ``ppt_diff``, ``original_ppt_screenshots``, ``modified_ppt_screenshots``,
  ``original_ppt_path``, ``modified_ppt_path``, ``llm_call`` and ``vlm_call`` (``__name__``
  unset, so ``if __name__ == "__main__":`` blocks stay inert);
* ``namespace["compute_score"]()`` is called with no arguments and must return
  ``(reason: str, score: int | float)`` with ``0 <= score <= 1``.

A failing leaf's traceback is recorded and it scores 0; unlike ai-rubric, the others still run,
unless ``inputs["stop_on_error"]`` is set (the judge's ``semantics="ppteval"``): then the first
failing leaf ends the batch, as ai-rubric's tree evaluation stops at the first raise. Each leaf
has a wall-clock budget (a :class:`LeafTimeout`, which ``except Exception`` does not swallow)
that pauses while a model call is answered, at most
:data:`MAX_CALLS_PER_LEAF` model calls (counted here to fail early; enforced by the judge's model
bridge, which a leaf cannot reach), and its stdout is captured (capped). ``ppt_diff`` and the
screenshot lists are rebuilt for every leaf, so one leaf mutating them cannot affect another.

``llm_call`` / ``vlm_call`` forward to the judge process over a Unix socket (the sandbox has no
network); image arguments follow ai-rubric: file paths, ``data:image/...`` URLs or raw bytes.
Each leaf runs in a process forked from the driver, which first makes itself non-dumpable
(so a leaf can neither ptrace it nor open its descriptors through ``/proc``) and closes the
result channel in the leaf: only the driver writes records (``start`` then ``done`` per leaf,
JSON lines on descriptor 3, a pipe the judge holds), after checking the leaf's answer has exact
types (``str`` reason, ``float``/``int``/``bool`` finite score in [0, 1]). A leaf that kills its
driver fails alone; the judge runs the leaves after it in a fresh process.

Why it is long: the sandbox gets this one file and no plugin package, so everything the leaf side
needs (the model-call proxy, the per-leaf fork and time budget, stdout capture, the exact-type check
of each answer, the record channel to the judge) must live in it, using the standard library only.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import linecache
import math
import mimetypes
import os
import select
import signal
import socket
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_REASON_CHARS = 10_000
MAX_STDOUT_CHARS = 20_000
MAX_IMAGE_BYTES = 30 * 1024 * 1024
MAX_IMAGES = 32
MAX_PROMPT_CHARS = 1_000_000
MAX_REPLY_BYTES = 16 * 1024 * 1024
MAX_CALLS_PER_LEAF = 20


class ScreenshotsUnavailableError(RuntimeError):
    """Raised by rubric code when a slide image it needs is missing (PPT-Eval's retry signal)."""


class LeafTimeout(BaseException):
    """A leaf ran past its time budget (a BaseException so ``except Exception`` does not hide it)."""


class ModelCallError(Exception):
    """``llm_call`` / ``vlm_call`` failed (no model configured, backend error, bad images)."""


@dataclass
class SlideScreenshot:
    """One slide image, as PPT-Eval's ``SlideScreenshot``."""

    slide_number: int
    image_path: str
    slide_id: str | None = None


# --------------------------------------------------------------------------- model proxy


class _Proxy:
    """Client of the judge's model server: one JSON line out, one JSON line back."""

    def __init__(self, path: str | None):
        self.path = path
        self.leaf_id = ""
        self.calls = 0  # model calls made by the current leaf
        self._sock: socket.socket | None = None
        self._file: Any = None

    def call(self, payload: dict[str, Any]) -> str:
        if not self.path:
            raise ModelCallError("no model is configured for the rubric judge (set its 'model' option)")
        self.calls += 1
        if self.calls > MAX_CALLS_PER_LEAF:
            raise ModelCallError(f"more than {MAX_CALLS_PER_LEAF} model calls in one leaf")
        if self._sock is None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(self.path)
            self._file = self._sock.makefile("rb")
        payload = {**payload, "leaf": self.leaf_id}
        # the leaf's time budget pauses while the judge waits for the model (whose own
        # timeout and retries bound the wait); the process-wide timeout still applies
        remaining = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        try:
            self._sock.sendall(json.dumps(payload).encode("utf-8") + b"\n")
            line = self._file.readline(MAX_REPLY_BYTES)
        finally:
            if remaining > 0:
                signal.setitimer(signal.ITIMER_REAL, remaining)
        if not line:
            raise ModelCallError("the judge's model server closed the connection")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ModelCallError(answer.get("error") or "model call failed")
        return str(answer.get("text", ""))


_proxy = _Proxy(None)


class _Control:
    """The driver's own connection to the judge's model bridge: announces each leaf before it runs.

    The judge charges every model call to the leaf announced last, so the per-leaf cap does not
    depend on anything a leaf can change (the leaf's copy of :data:`_proxy` counts only to fail
    early with a clear message). The connection is opened before any leaf runs (the judge takes
    the first ``hello`` as the driver's) and closed in every leaf's process.
    """

    def __init__(self, path: str):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")
        self._say({"control": "hello"})

    def _say(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode("utf-8") + b"\n")
        answer = json.loads(self.file.readline(MAX_REPLY_BYTES) or b"{}")
        if not answer.get("ok"):
            raise ModelCallError(answer.get("error") or "the judge refused the driver's control message")

    def start(self, leaf_id: str) -> None:
        """Tell the judge ``leaf_id`` runs now (returns once the judge has taken note)."""
        self._say({"control": "start", "leaf": leaf_id})

    def fileno(self) -> int:
        """The socket's descriptor (closed in each leaf's process)."""
        return self.sock.fileno()


def _image_payload(image: Any) -> dict[str, str]:
    if isinstance(image, bytes | bytearray):
        if len(image) > MAX_IMAGE_BYTES:
            raise ModelCallError(f"image of {len(image)} bytes is over the {MAX_IMAGE_BYTES} limit")
        return {
            "media_type": "image/jpeg",
            "b64": base64.b64encode(bytes(image)).decode("ascii"),
            "source": "bytes",
        }
    if not isinstance(image, str):
        raise ModelCallError(
            f"unsupported image type {type(image).__name__} (expected a path, data URL or bytes)"
        )
    if image.startswith("data:image/"):
        head, _, data = image.partition(",")
        return {"media_type": head[5:].split(";")[0], "b64": data, "source": "data-url"}
    if image.startswith("http"):
        raise ModelCallError("image URLs are not supported (no network); pass a file path")
    path = Path(image)
    size = path.stat().st_size
    if size > MAX_IMAGE_BYTES:
        raise ModelCallError(f"image {image} has {size} bytes (limit {MAX_IMAGE_BYTES})")
    ext = path.suffix.lower().lstrip(".")
    media = {
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "png": "image/png",
        "gif": "image/gif",
        "webp": "image/webp",
    }
    return {
        "media_type": media.get(ext, mimetypes.guess_type(path.name)[0] or "image/jpeg"),
        "b64": base64.b64encode(path.read_bytes()).decode("ascii"),
        "source": str(path),
    }


def llm_call(prompt: str, temperature: float = 0.7, max_tokens: int | None = None) -> str:
    """Ask the judge's configured model (text only); returns its reply text."""
    text = str(prompt)
    if len(text) > MAX_PROMPT_CHARS:
        raise ModelCallError(f"prompt of {len(text)} characters is over the {MAX_PROMPT_CHARS} limit")
    return _proxy.call({"kind": "llm", "prompt": text, "temperature": temperature, "max_tokens": max_tokens})


def vlm_call(prompt: str, images: Any, temperature: float = 0.7, max_tokens: int | None = None) -> str:
    """Ask the judge's configured model about ``images`` (paths, data URLs or bytes); returns its reply."""
    text = str(prompt)
    if len(text) > MAX_PROMPT_CHARS:
        raise ModelCallError(f"prompt of {len(text)} characters is over the {MAX_PROMPT_CHARS} limit")
    if isinstance(images, str | bytes | bytearray):
        images = [images]
    items = list(images)
    if len(items) > MAX_IMAGES:
        raise ModelCallError(f"{len(items)} images is over the {MAX_IMAGES} limit")
    payload = [_image_payload(i) for i in items]
    return _proxy.call(
        {
            "kind": "vlm",
            "prompt": text,
            "images": payload,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
    )


# --------------------------------------------------------------------------- running leaves


class _CappedWriter(io.TextIOBase):
    """A text sink that keeps the first ``cap`` characters."""

    def __init__(self, cap: int):
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def write(self, s: str) -> int:  # type: ignore[override]
        room = self.cap - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(room, len(s))
        if len(s) > room:
            self.truncated = True
        return len(s)

    def text(self) -> str:
        return "".join(self.parts) + ("\n[... output truncated ...]" if self.truncated else "")


def _on_alarm(signum: int, frame: Any) -> None:
    raise LeafTimeout("leaf time budget exceeded")


def _build_diff(spec: dict[str, Any] | None) -> Any:
    if spec is None:
        return None
    import importlib

    module = importlib.import_module(spec["module"])
    return getattr(module, spec["factory"])(spec["data"])


def _screens(items: list[dict[str, Any]]) -> list[SlideScreenshot]:
    return [SlideScreenshot(int(i["slide_number"]), str(i["image_path"]), i.get("slide_id")) for i in items]


def check_score(score: Any) -> float:
    """``score`` as a float when it is exactly a ``float``, ``int`` or ``bool``, finite and in [0, 1].

    Subclasses are refused: they can lie in comparisons and serialise as something else.
    """
    if type(score) not in (float, int, bool):
        raise ValueError(f"score must be a float, int or bool, got {type(score).__name__}")
    value = float(score)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"score {value!r} is outside [0, 1]")
    return value


def _check_result(value: Any) -> tuple[str, float]:
    if type(value) not in (tuple, list) or len(value) != 2:
        raise ValueError(f"compute_score must return (reason, score), got {type(value).__name__}")
    reason, score = value
    if type(reason) is not str:
        raise ValueError(f"reason must be a string, got {type(reason).__name__}")
    return str.__str__(reason), check_score(score)


def run_leaf(leaf: dict[str, Any], context: dict[str, Any], budget: float) -> dict[str, Any]:
    """Run one leaf's code with ``context`` as its globals; never raises."""
    filename = f"<leaf {leaf['id']}>"
    code = leaf["code"]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    out = _CappedWriter(MAX_STDOUT_CHARS)
    record: dict[str, Any] = {"event": "done", "leaf": leaf["id"]}
    t0 = time.monotonic()
    _proxy.leaf_id = leaf["id"]
    _proxy.calls = 0
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            signal.setitimer(signal.ITIMER_REAL, budget)
            try:
                namespace: dict[str, Any] = {}
                exec(compile(code, filename, "exec"), context, namespace)  # noqa: S102 - sandboxed rubric code
                func = namespace["compute_score"]
                reason, score = _check_result(func())
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        record.update(score=score, reason=reason[:MAX_REASON_CHARS])
    except BaseException as exc:  # noqa: BLE001 - every leaf failure (sys.exit too) is recorded, not raised
        signal.setitimer(signal.ITIMER_REAL, 0)
        kind = type(exc).__name__
        if isinstance(exc, KeyError) and exc.args == ("compute_score",):
            message = "the code does not define compute_score()"
        else:
            message = f"{kind}: {exc}"
        record.update(
            score=0.0,
            reason=f"Function scoring failed: {message}"[:MAX_REASON_CHARS],
            error=message[:MAX_REASON_CHARS],
            error_type="timeout" if isinstance(exc, LeafTimeout) else kind,
            traceback=traceback.format_exc()[-MAX_STDOUT_CHARS:],
            screenshots_unavailable=isinstance(exc, ScreenshotsUnavailableError),
        )
    record["duration_s"] = round(time.monotonic() - t0, 3)
    record["stdout"] = out.text()
    return record


def _no_dumps() -> None:
    """Make this process non-dumpable: same-user processes can no longer ptrace it or read /proc/<pid>/fd."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _run_forked(
    leaf: dict[str, Any], context: dict[str, Any], budget: float, channels: tuple[int, ...]
) -> dict[str, Any]:
    """Run one leaf in a child process that cannot write the result channel; its record comes back
    on a pipe.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the leaf's process
        code = 0
        try:
            os.close(read_end)
            for fd in channels:
                with contextlib.suppress(OSError):
                    os.close(fd)
            record = run_leaf(leaf, context, budget)
            data = (json.dumps(record, default=str) + "\n").encode("utf-8")
            with contextlib.suppress(OSError):
                while data:
                    data = data[os.write(write_end, data[:65536]) :]
        except BaseException:  # noqa: BLE001 - nothing may escape the forked child
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + budget + 5.0
    chunks: list[bytes] = []
    size = 0
    try:
        while time.monotonic() < deadline and size <= MAX_RECORD_BYTES:
            ready, _, _ = select.select([read_end], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
            if not ready:
                continue
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(read_end)
        status = 0
        with contextlib.suppress(OSError):
            reaped, status = os.waitpid(pid, os.WNOHANG)
            if reaped == 0:
                os.kill(pid, signal.SIGKILL)
                status = os.waitpid(pid, 0)[1]
    how = ""
    if os.WIFEXITED(status) and os.WEXITSTATUS(status):
        how = f" (exit status {os.WEXITSTATUS(status)})"
    elif os.WIFSIGNALED(status):
        how = f" (killed by signal {os.WTERMSIG(status)})"
    return _validated(leaf["id"], b"".join(chunks), size, how)


MAX_RECORD_BYTES = 4 * MAX_STDOUT_CHARS + 2 * MAX_REASON_CHARS + 100_000


def _validated(leaf_id: str, raw: bytes, size: int, how: str = "") -> dict[str, Any]:
    """The leaf's record, re-checked after decoding (exact types), or a failure record."""
    problem = None
    record: dict[str, Any] = {}
    if size > MAX_RECORD_BYTES:
        problem = "the leaf's record was too large"
    else:
        try:
            record = json.loads(raw.decode("utf-8").splitlines()[0]) if raw else {}
        except (ValueError, IndexError, UnicodeDecodeError):
            problem = "the leaf's record could not be decoded"
        if not raw:
            problem = (
                "the leaf's process ended without a record (killed, crashed or over its time budget)" + how
            )
    if problem is None:
        try:
            if (
                type(record) is not dict
                or record.get("leaf") != leaf_id
                or type(record.get("reason")) is not str
            ):
                raise ValueError("malformed record")
            record["score"] = check_score(record.get("score"))
        except ValueError as exc:
            problem = f"the leaf's record is invalid: {exc}"
    if problem is not None:
        return failed_record(leaf_id, problem, "sandbox")
    return {k: record[k] for k in record if k in _RECORD_KEYS}


def failed_record(leaf_id: str, problem: str, kind: str) -> dict[str, Any]:
    """The ``done`` record of a leaf that scored 0 because ``problem`` (of ``error_type`` ``kind``)."""
    return {
        "event": "done",
        "leaf": leaf_id,
        "score": 0.0,
        "reason": f"Function scoring failed: {problem}",
        "error": problem,
        "error_type": kind,
        "traceback": "",
        "duration_s": 0.0,
        "stdout": "",
    }


_RECORD_KEYS = (
    "event",
    "leaf",
    "score",
    "reason",
    "error",
    "error_type",
    "traceback",
    "duration_s",
    "stdout",
    "screenshots_unavailable",
)


def _emit(record: dict[str, Any]) -> None:
    data = (json.dumps(record, default=str) + "\n").encode("utf-8")
    while data:
        data = data[os.write(3, data) :]


def preload(modules: list[str]) -> list[str]:
    """Import ``modules`` in the driver, before any leaf is forked; returns those that imported.

    Every leaf runs in a process forked from the driver, so a module loaded here is loaded once per
    sandboxed process instead of once per leaf, and each leaf still starts from the same pristine
    copy (what one leaf does to a module stays in its own process). A module that fails to import is
    skipped: the leaf that imports it then fails as it would have.
    """
    import importlib

    loaded = []
    for name in modules:
        try:
            importlib.import_module(str(name))
        except Exception:  # noqa: BLE001, S112 - the leaf's own import reports it
            continue
        loaded.append(str(name))
    return loaded


def main(inputs: dict[str, Any]) -> None:
    """Run every leaf in ``inputs["leaves"]`` (each in a forked process), writing records to descriptor 3."""
    _no_dumps()
    preload(inputs.get("preload") or [])
    _emit({"event": "ready", "t": time.monotonic()})  # timing only: start-up ends here
    _proxy.path = inputs.get("socket_path")
    control = None
    if _proxy.path:
        try:
            control = _Control(_proxy.path)
        except (OSError, ValueError, ModelCallError):
            control = None  # the judge then refuses every model call: "no rubric leaf is running"
    shots = inputs.get("screenshots") or {}
    budget = float(inputs.get("leaf_timeout", 60.0))
    for leaf in inputs["leaves"]:
        _emit({"event": "start", "leaf": leaf["id"]})
        if control is not None:
            try:
                control.start(leaf["id"])
            except (OSError, ValueError, ModelCallError):
                control = None  # the judge refuses later calls: the driver's connection is gone
        try:
            context = {
                "ppt_diff": _build_diff(inputs.get("ppt_diff")),
                "original_ppt_screenshots": _screens(shots.get("original") or []),
                "modified_ppt_screenshots": _screens(shots.get("modified") or []),
                "original_ppt_path": inputs["original_ppt_path"],
                "modified_ppt_path": inputs["modified_ppt_path"],
                "llm_call": llm_call,
                "vlm_call": vlm_call,
            }
        except Exception as exc:  # noqa: BLE001 - a context failure is the harness's, reported per leaf
            record = {
                "event": "done",
                "leaf": leaf["id"],
                "score": 0.0,
                "reason": f"context could not be built: {exc}",
                "error": f"context could not be built: {type(exc).__name__}: {exc}",
                "error_type": "context",
                "traceback": traceback.format_exc(),
                "context_error": True,
            }
        else:
            channels = (3, 4) if control is None else (3, 4, control.fileno())
            record = _run_forked(leaf, context, budget, channels)
        _emit(record)
        if inputs.get("stop_on_error") and record.get("error"):
            break  # PPT-Eval semantics: the first raising leaf aborts the tree, later leaves never run
