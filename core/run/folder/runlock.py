"""One run at a time per run folder, and pairs that keep crashing the run are not retried for ever.

:class:`RunLock` holds an exclusive ``fcntl.flock`` on ``<run>/.lock`` for the life of a run;
a second ``arena run`` on the same folder fails at once with a message naming the holder's
process id, host and start time (the lock dies with its process, so a killed run never leaves a
stale lock). :class:`AttemptLedger` counts, per (agent, task), the attempts that started without
a result being recorded: a pair that was running when the run died twice is recorded as failed
on the next resume instead of being run (and crashing the run) again.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pptarena.run.folder.rundir import ATTEMPTS, LOCK
from pptarena.types import PptArenaError

MAX_CRASHES = 2


class RunLockedError(PptArenaError):
    """Another process is running in this run folder."""


class RunLock:
    """An exclusive lock on a run folder (``with RunLock(run_dir): ...``)."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`RunLockedError` naming the holder."""
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(
                self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o644
            )
        except OSError as exc:
            raise PptArenaError(
                f"cannot write the run folder {self.path.parent}: {exc.strerror or exc}. "
                "Choose a writable folder with --out."
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode("utf-8", errors="replace").strip()
            os.close(fd)
            try:
                info = json.loads(holder)
                who = f"process {info.get('pid')} on {info.get('host')} (started {info.get('started')})"
            except ValueError:
                who = "another process"
            raise RunLockedError(
                f"{self.path.parent} is in use by {who}. "
                "Wait for it to finish, stop it, or use another --out."
            ) from None
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.write(fd, json.dumps(info).encode())
        self._fd = fd

    def release(self) -> None:
        """Release the lock (also released when the process dies)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


class AttemptLedger:
    """Started and finished attempts of each (agent, task) of a run folder (``.attempts.jsonl``)."""

    def __init__(self, run_dir: Path, *, enabled: bool = True):
        self.path = Path(run_dir) / ATTEMPTS
        self.enabled = enabled
        """False for a scratch runner on a cluster node: the driver's run folder is the one that counts."""
        self._lock = threading.Lock()

    def crashes(self, recorded: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """How many started attempts of each pair without a recorded result ended with no ``end`` line."""
        counts: dict[tuple[str, str], int] = {}
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return counts
        open_now: dict[tuple[str, str], int] = {}
        for line in lines:
            try:
                e = json.loads(line)
                key = (str(e["agent"]), str(e["task"]))
            except (ValueError, KeyError, TypeError):
                continue
            if e.get("event") == "start":
                open_now[key] = open_now.get(key, 0) + 1
            elif e.get("event") == "end":
                open_now[key] = max(0, open_now.get(key, 0) - 1)
        for key, n in open_now.items():
            if n and key not in recorded:
                counts[key] = n
        return counts

    def _write(self, event: str, agent: str, task: str) -> None:
        if not self.enabled:
            return
        line = json.dumps({"event": event, "agent": agent, "task": task, "t": round(time.time(), 3)}) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def start(self, agent: str, task: str) -> None:
        """Note that an attempt of (agent, task) starts."""
        self._write("start", agent, task)

    def end(self, agent: str, task: str) -> None:
        """Note that the attempt ended normally (a result row was written or the run was interrupted)."""
        self._write("end", agent, task)
