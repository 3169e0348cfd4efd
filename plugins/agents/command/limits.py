"""Process-count and total-memory limits for one CLI jail: a cgroup of its own (v1 or v2).

RLIMIT_NPROC does not bind root, and RLIMIT_AS is per process; a cgroup bounds the whole tree:
``pids.max`` (every process and thread the jail starts) and the memory limit (every page its
processes use, the tmpfs workspace included). The jail's first process joins the cgroup before it
execs bubblewrap (``/bin/sh -c 'echo $$ > …/cgroup.procs; exec "$@"'``), so nothing it starts is
ever outside it.

Where cgroups cannot be created (not Linux, no write access to the hierarchy, no pids/memory
controller), :func:`create` returns None and says why: the caller records it.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass
class CgroupLimits:
    """The cgroup folders of one jail (one per v1 controller, or one v2 folder)."""

    folders: list[Path] = field(default_factory=list)
    max_processes: int = 0
    memory_mb: int = 0

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` behind a shell that moves itself into every folder first, then execs it."""
        joins = "; ".join(f"echo $$ > '{f / 'cgroup.procs'}'" for f in self.folders)
        return ["/bin/sh", "-c", f'{joins} || exit 126; exec "$@"', "pptarena-limits", *argv]

    def peak_processes(self) -> int | None:
        """The most processes the jail had at once, where the kernel reports it."""
        for f in self.folders:
            for name in ("pids.peak",):
                with contextlib.suppress(OSError, ValueError):
                    return int((f / name).read_text())
        return None

    def remove(self) -> None:
        """Remove the folders (after every process of the jail ended; retried for a second)."""
        for f in self.folders:
            for _ in range(50):
                try:
                    f.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for a v1 ``controller`` (or ``""`` for the v2 hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller == "" and names == "") or controller in names.split(","):
            return path
    return None


def _v1(max_processes: int, memory_mb: int, name: str) -> CgroupLimits | None:
    folders = []
    settings = {
        "pids": {"pids.max": str(max_processes)},
        "memory": {"memory.limit_in_bytes": str(memory_mb * 1024 * 1024)},
    }
    try:
        for controller, values in settings.items():
            own = _own_path(controller)
            base = ROOT / controller
            if own is None or not (base / "cgroup.procs").exists():
                raise OSError(f"no {controller} controller mounted at {base}")
            folder = base / own.lstrip("/") / name
            folder.mkdir()
            folders.append(folder)
            for key, value in values.items():
                (folder / key).write_text(value)
            swap = folder / "memory.memsw.limit_in_bytes"
            if controller == "memory" and swap.exists():
                with contextlib.suppress(OSError):
                    swap.write_text(str(memory_mb * 1024 * 1024))
    except OSError:
        CgroupLimits(folders).remove()
        raise
    return CgroupLimits(folders, max_processes, memory_mb)


def _v2(max_processes: int, memory_mb: int, name: str) -> CgroupLimits | None:
    own = _own_path("")
    base = ROOT if (ROOT / "cgroup.controllers").exists() else ROOT / "unified"
    if own is None or not (base / "cgroup.controllers").exists():
        raise OSError("no cgroup v2 hierarchy")
    parent = base / own.lstrip("/")
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    if not {"pids", "memory"} <= set(enabled):
        raise OSError(f"cgroup v2 at {parent} does not delegate pids and memory (has {enabled})")
    folder = parent / name
    folder.mkdir()
    try:
        (folder / "pids.max").write_text(str(max_processes))
        (folder / "memory.max").write_text(str(memory_mb * 1024 * 1024))
        with contextlib.suppress(OSError):
            (folder / "memory.swap.max").write_text("0")
    except OSError:
        CgroupLimits([folder]).remove()
        raise
    return CgroupLimits([folder], max_processes, memory_mb)


def create(max_processes: int, memory_mb: int) -> tuple[CgroupLimits | None, str]:
    """A fresh cgroup limiting processes and memory, and a note (why there is none, when None)."""
    if not os.path.isdir(ROOT):
        return None, "no cgroup file system at /sys/fs/cgroup"
    name = f"pptarena-cli-{uuid.uuid4().hex[:12]}"
    problems = []
    for make in (_v1, _v2):
        try:
            made = make(max_processes, memory_mb, name)
        except OSError as exc:
            problems.append(str(exc))
            continue
        if made is not None:
            return made, f"cgroup: pids.max {max_processes}, memory {memory_mb} MB"
    return None, "no process/memory limit: " + "; ".join(problems)
