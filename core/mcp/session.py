"""One deck being edited over MCP: the input deck, its working copy, the renderer, the log and the counters.

The input deck is copied once into the session's private scratch folder (the baseline every
``deck_diff`` compares with) and never written. The working copy is the file edit tools change:
an edit is built in the scratch folder, checked (the deck engine must open and summarise it),
then written beside the working copy under a fresh name and renamed over it, so a failed edit
leaves the working copy as it was and a killed server leaves a whole deck. ``out`` (``arena mcp
--out``) gets the same atomic copy after every successful edit.

The working copy may live in a folder another party can write (a pair's workspace, shared with a
jailed agent): it is read and replaced only through :mod:`pptarena.trust.safeio` below that folder
(no link followed, no FIFO or device opened, sizes capped), and the folder itself must stay the
folder the session was started with (same device and inode; a folder swapped for a link is
refused). Tools read a private snapshot taken that way, never the working copy's path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.errors import PptArenaError
from pptarena.mcp.limits import ToolLimits
from pptarena.types import AgentLog, Renderer

MAX_LOGGED_ARG_CHARS = 300


class ToolFailure(PptArenaError):
    """A tool call that could not be done; the message tells the client what and why."""


@dataclass
class Reply:
    """What a tool hands back: text, and PNG images (bytes) for ``render_slides``."""

    text: str
    images: list[bytes] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Bytes returned to the client (UTF-8 text plus image bytes)."""
        return len(self.text.encode("utf-8")) + sum(len(i) for i in self.images)


@dataclass
class SessionCounters:
    """What a session's client did: calls per tool, failures, edits, renders and bytes returned."""

    calls: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    edits: int = 0
    renders: int = 0
    bytes_returned: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready counters (for a results row or a log line)."""
        return {
            "calls": dict(self.calls),
            "failures": dict(self.failures),
            "edits": self.edits,
            "renders": self.renders,
            "bytes_returned": self.bytes_returned,
            "seconds": round(self.seconds, 3),
        }


def bounded_args(args: dict[str, Any]) -> dict[str, Any]:
    """Tool arguments cut for the log: long strings keep their start and their length."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(value, str) and len(value) > MAX_LOGGED_ARG_CHARS:
            value = f"{value[:MAX_LOGGED_ARG_CHARS]}… ({len(value)} chars)"
        elif isinstance(value, list) and len(value) > 50:
            value = [*value[:50], f"… ({len(value)} items)"]
        out[key] = value
    return out


def _folder_identity(path: Path) -> tuple[int, int]:
    """(device, inode) of a real folder; a link or anything else is refused."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise ToolFailure(f"the working folder {path} is not a folder (a link or a file)")
    return info.st_dev, info.st_ino


class DeckSession:
    """One deck being edited through the MCP tools (see the module docstring).

    :param input_deck: the deck to serve (read once, never modified).
    :param work_deck: where the working copy lives (default: inside the private scratch folder).
        When the file exists it is the starting point (a pair's workspace deck), else the input
        deck is copied there.
    :param out: a file that gets an atomic copy of the working copy after every successful edit.
    :param renderer: slides → PNGs for ``render_slides`` and ``validate`` (None: no renders).
    :param renderer_note: why there is no renderer (said in the error a render tool returns).
    :param log: every tool call is written to it as a ``tool_call`` event.
    :param limits: the caps (:class:`~pptarena.mcp.limits.ToolLimits`).
    """

    def __init__(
        self,
        input_deck: str | os.PathLike[str],
        *,
        work_deck: str | os.PathLike[str] | None = None,
        out: str | os.PathLike[str] | None = None,
        renderer: Renderer | None = None,
        renderer_note: str = "",
        log: AgentLog | None = None,
        limits: ToolLimits | None = None,
    ):
        from pptarena.deck import summarize
        from pptarena.trust import safeio

        self.input_deck = Path(input_deck).absolute()
        self.limits = limits or ToolLimits()
        self.renderer = renderer
        self.renderer_note = renderer_note
        self.log = log
        self.out = Path(out).absolute() if out is not None else None
        self.counters = SessionCounters()
        self.render_cache: dict[str, list[Any]] = {}  # deck SHA-256 → its SlideImages (one version kept)
        self.png_cache: dict[tuple[str, int], tuple[bytes, int, int]] = {}  # (SHA-256, slide) → fitted PNG
        self._lock = threading.RLock()
        self.scratch = Path(tempfile.mkdtemp(prefix="pptarena-mcp-"))
        try:
            data = safeio.read_regular(self.input_deck, self.limits.max_deck_bytes, follow_links=True)
            self.baseline = self.scratch / "input.pptx"
            self.baseline.write_bytes(data)
            summarize(self.baseline)  # DeckError now, not at the first tool call
            if work_deck is None:
                (self.scratch / "work").mkdir(mode=0o700)
                work_deck = self.scratch / "work" / (self.input_deck.name or "deck.pptx")
            self.work_deck = Path(work_deck).absolute()
            self._work_identity = _folder_identity(self.work_deck.parent)
            if not os.path.lexists(self.work_deck):
                self._replace_work(self.baseline)
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Remove the scratch folder (a working copy elsewhere stays). The renderer is the caller's:
        it is not closed here (a pair's renderer outlives the session)."""
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> DeckSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ calls

    def call(self, tool: str, args: dict[str, Any], run: Callable[[], Reply]) -> Reply:
        """Run one tool call: one at a time, under the call cap, timed, counted and logged.

        :raises ToolFailure: the call failed; the message is for the client.
        """
        with self._lock:
            started = time.monotonic()
            error: str | None = None
            reply: Reply | None = None
            try:
                if sum(self.counters.calls.values()) >= self.limits.max_calls:
                    raise ToolFailure(
                        f"tool call limit reached: {self.limits.max_calls} calls per session; "
                        "no further tool calls are served"
                    )
                reply = run()
                return reply
            except ToolFailure as exc:
                error = str(exc)
                raise
            except PptArenaError as exc:  # DeckError, PartError, UnsafeFileError: anticipated
                error = str(exc)
                raise ToolFailure(error) from None
            except ValueError as exc:
                error = str(exc)
                raise ToolFailure(error) from None
            except Exception as exc:
                error = f"{tool} failed: {type(exc).__name__}: {exc}"
                raise ToolFailure(error) from exc
            finally:
                seconds = time.monotonic() - started
                self.counters.calls[tool] += 1
                self.counters.seconds += seconds
                if error is not None:
                    self.counters.failures[tool] += 1
                if reply is not None:
                    self.counters.bytes_returned += reply.size
                if self.log is not None:
                    self.log.write(
                        "tool_call",
                        tool=tool,
                        args=bounded_args(args),
                        ok=error is None,
                        seconds=round(seconds, 3),
                        error=error[:2000] if error else None,
                        bytes_returned=reply.size if reply is not None else 0,
                    )

    # ------------------------------------------------------------------ the working copy

    def _open_work_folder(self) -> int:
        """A descriptor of the working folder, checked to be the folder the session started with."""
        from pptarena.trust import safeio

        folder = self.work_deck.parent
        try:
            fd = os.open(folder, safeio.DIR_FLAGS | safeio.NOFOLLOW)
        except OSError as exc:
            raise ToolFailure(
                f"the working folder cannot be opened ({exc.strerror or exc}): was it replaced by a link?"
            ) from None
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != self._work_identity:
            os.close(fd)
            raise ToolFailure("the working folder was replaced since the session started; refusing to use it")
        return fd

    def snapshot(self) -> tuple[Path, str]:
        """A private copy of the working copy, and its SHA-256 (what every tool reads).

        :raises ToolFailure: the working copy is a link, not a regular file, missing or too big.
        """
        from pptarena.trust import safeio

        fd = self._open_work_folder()
        try:
            try:
                data_fd = safeio.open_at(fd, self.work_deck.name, self.limits.max_deck_bytes)
            except FileNotFoundError:
                raise ToolFailure("the working copy is missing") from None
            except safeio.UnsafeFileError as exc:
                raise ToolFailure(f"the working copy is unusable: {exc}") from None
            with os.fdopen(data_fd, "rb") as fh:
                data = fh.read(self.limits.max_deck_bytes + 1)
        finally:
            os.close(fd)
        if len(data) > self.limits.max_deck_bytes:
            raise ToolFailure(f"the working copy grew over the {self.limits.max_deck_bytes}-byte limit")
        snap = self.scratch / "snapshot.pptx"
        snap.write_bytes(data)
        return snap, hashlib.sha256(data).hexdigest()

    def commit(self, candidate: Path) -> dict[str, Any]:
        """Make ``candidate`` (a deck in the scratch folder) the working copy, and copy it to ``out``.

        The candidate must open and summarise in the deck engine; otherwise nothing changes.
        Returns the candidate's summary.

        :raises ToolFailure: the candidate is unreadable or too big (the working copy is unchanged).
        """
        from pptarena.deck import DeckError, summarize

        size = candidate.stat().st_size
        if size > self.limits.max_deck_bytes:
            raise ToolFailure(
                f"the edited deck is {size} bytes, over the {self.limits.max_deck_bytes}-byte limit; "
                "the working copy is unchanged"
            )
        try:
            summary = summarize(candidate)
        except DeckError as exc:
            raise ToolFailure(
                f"the edited deck does not open ({exc}); the working copy is unchanged"
            ) from None
        self._replace_work(candidate)
        self.counters.edits += 1
        if self.out is not None:
            self.publish()
        return summary

    def _replace_work(self, source: Path) -> None:
        """Write ``source`` beside the working copy under a fresh name and rename it over it."""
        from pptarena.trust import safeio

        fd = self._open_work_folder()
        try:
            with open(source, "rb") as fh:
                safeio.write_at(fd, self.work_deck.name, fh.fileno(), 0o644, self.limits.max_deck_bytes)
        finally:
            os.close(fd)

    def publish(self) -> None:
        """Copy the working copy to ``out`` atomically (new file + rename in ``out``'s folder); no-op
        without ``out``. Done after every successful edit, and by ``arena mcp`` at start."""
        from pptarena.trust import safeio

        if self.out is None:
            return
        snap, _digest = self.snapshot()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fd = safeio.open_dir(self.out.parent)
        try:
            with open(snap, "rb") as fh:
                safeio.write_at(fd, self.out.name, fh.fileno(), 0o644, self.limits.max_deck_bytes)
        finally:
            os.close(fd)

    def new_scratch_dir(self, name: str) -> Path:
        """A fresh empty folder in the scratch folder (for one tool call's files)."""
        path = self.scratch / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True, mode=0o700)
        return path
