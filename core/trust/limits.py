"""Process-count and total-memory limits per sandbox that hold for root.

``RLIMIT_NPROC`` does not apply to root and ``RLIMIT_AS`` bounds each process, not their sum, so
neither stops a fork bomb or three forks of 1 GB under a 2 GB cap. :class:`SandboxCgroup` puts one
sandbox (and everything it starts) in a control group of its own, created under the harness's own
cgroup, with a process cap (``pids.max``) and a memory cap for the whole group
(``memory.limit_in_bytes`` / ``memory.max``; pages of its tmpfs files count too). The sandbox runs
in its own cgroup namespace without ``/sys``, so it cannot move itself out.

Levels, best first (:attr:`SandboxCgroup.level`, :func:`limits_level` for this machine):

- ``"cgroup2"``: the unified hierarchy with the ``pids`` and ``memory`` controllers;
- ``"cgroup1"``: the v1 ``pids`` and ``memory`` hierarchies (e.g. ``/sys/fs/cgroup/pids``);
- ``"uid"``: no usable cgroup but the harness runs as root: the sandbox runs as an unprivileged
  host uid of its own (one per sandbox, never shared while in use), so ``RLIMIT_NPROC`` caps its
  processes; memory is capped per process only;
- ``"rlimits"``: neither: per-process limits only (a fork bomb is not stopped when the harness
  runs as root). :attr:`SandboxCgroup.notes` says so.

``PPTARENA_CGROUPS=off`` skips cgroups (to exercise the weaker levels).

Usage (the ``command`` agent and the code sandbox do this)::

    with SandboxCgroup(max_processes=256, memory_mb=2048) as group:
        subprocess.run(argv, preexec_fn=group.preexec())     # or argv = group.wrap(argv)
    group.events()   # {"oom_kills": 1, "pids_max_hits": 0, ...}

Why it is long: one object gives a sandbox its process and memory caps at the best of the four levels
this machine allows, through one ``with`` block that every caller uses the same way; finding the cgroup
mounts (v1 and v2), reserving a free sandbox uid with its lock files, and killing and sweeping what a
sandbox leaves behind are the set-up and tear-down of those levels.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import itertools
import os
import resource
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

UID_BASE = 3_100_000  # unprivileged host uids handed to sandboxes in the "uid" level
UID_COUNT = 4096
_counter = itertools.count()
_uid_lock = threading.Lock()


def _mounts() -> list[tuple[str, str, set[str]]]:
    """``(mount point, file system type, super options)`` of every cgroup mount."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            out.append((fields[4], tail[0], set(tail[2].split(","))))
    return out


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per controller (``"0"`` is the unified hierarchy's)."""
    own: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        num, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if num == "0" and not controllers:
            own["0"] = path
        for c in controllers.split(","):
            if c:
                own[c] = path
    return own


def _parents() -> tuple[str, dict[str, Path]] | None:
    """Where this process may create sandbox cgroups: ``(level, {controller: parent folder})``."""
    if os.environ.get("PPTARENA_CGROUPS", "").lower() in ("off", "0", "no"):
        return None
    mounts, own = _mounts(), _own_cgroups()
    for point, kind, _ in mounts:  # the unified hierarchy, when it has both controllers
        if kind == "cgroup2" and "0" in own:
            parent = Path(point + own["0"])
            try:
                available = set((parent / "cgroup.controllers").read_text().split())
                enabled = set((parent / "cgroup.subtree_control").read_text().split())
                if {"pids", "memory"} <= available and not {"pids", "memory"} <= enabled:
                    (parent / "cgroup.subtree_control").write_text("+pids +memory")
                    enabled = set((parent / "cgroup.subtree_control").read_text().split())
            except OSError:
                continue
            if {"pids", "memory"} <= enabled:
                return "cgroup2", {"pids": parent, "memory": parent}
    found: dict[str, Path] = {}
    for point, kind, options in mounts:
        for controller in ("pids", "memory"):
            if kind == "cgroup" and controller in options and controller in own and controller not in found:
                found[controller] = Path(point + own[controller])
    if len(found) == 2:
        return "cgroup1", found
    return None


def _sandbox_uids_mapped() -> bool:
    """Whether this process's user namespace maps the whole sandbox uid range (:data:`UID_BASE`, for
    :data:`UID_COUNT` uids). The host's does; a jail's namespace (a CLI agent's, where the deck
    tools' ``run_python`` starts its own sandbox) maps only its own uid, and handing a file to an
    unmapped uid fails with ``EINVAL``."""
    try:
        lines = Path("/proc/self/uid_map").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            inside, _outside, count = (int(x) for x in line.split())
        except ValueError:
            continue
        if inside <= UID_BASE and inside + count >= UID_BASE + UID_COUNT:
            return True
    return False


def _may_take_uid() -> bool:
    """Whether sandboxes here may run as a uid of their own: root, with the uid range mapped."""
    return os.geteuid() == 0 and _sandbox_uids_mapped()


@functools.cache
def limits_level() -> str:
    """The limit level sandboxes get here: ``cgroup2``, ``cgroup1``, ``uid`` or ``rlimits``
    (probed once by creating and removing a cgroup)."""
    try:
        with SandboxCgroup(max_processes=8, memory_mb=64) as probe:
            return probe.level
    except OSError:
        return "uid" if _may_take_uid() else "rlimits"


class SandboxCgroup:
    """The process and memory caps of one sandbox, for the lifetime of a ``with`` block.

    :param max_processes: most processes (threads count too) alive at once in the sandbox,
        bubblewrap's own included; None leaves the count unbounded.
    :param memory_mb: total memory of every process of the sandbox together (and its tmpfs
        files); None leaves it unbounded. Over it the kernel's OOM killer ends a process of the
        sandbox (never one outside it).

    Give the command :meth:`preexec` (or run :meth:`wrap` of it); the processes join the group
    before ``exec``. On leaving the block every process still in the group is killed and the group
    removed. Raises nothing when no cgroup can be made: :attr:`level` is then ``uid`` or
    ``rlimits`` and :attr:`notes` explains what holds.
    """

    def __init__(self, max_processes: int | None = 256, memory_mb: int | None = None):
        self.max_processes = max_processes
        self.memory_mb = memory_mb
        self.level = "rlimits"
        self.dirs: dict[str, Path] = {}
        self.uid: int | None = None
        self.notes: list[str] = []
        self._uid_lock_fd: int | None = None
        self._join_fds: list[int] = []

    # ------------------------------------------------------------------ set-up and tear-down

    def __enter__(self) -> SandboxCgroup:
        found = _parents()
        if found is not None:
            level, parents = found
            name = f"pptarena-{os.getpid()}-{next(_counter)}"
            try:
                for controller, parent in parents.items():
                    _sweep(parent)
                    folder = parent / name
                    if folder not in self.dirs.values():
                        folder.mkdir()
                    self.dirs[controller] = folder
                self._write_limits(level)
                self._join_fds = [
                    os.open(d / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in set(self.dirs.values())
                ]
                self.level = level
                return self
            except OSError as exc:
                self.notes.append(f"could not set up a cgroup ({exc}); falling back")
                self._remove()
        if _may_take_uid():
            self._take_uid()
            self.level = "uid"
            self.notes.append(
                f"no usable pids/memory cgroup here: the sandbox runs as host uid {self.uid} with "
                f"RLIMIT_NPROC {self.max_processes}; memory is capped per process only"
            )
        else:
            self.notes.append(
                "no usable pids/memory cgroup here: process count and memory are capped per process "
                "only (RLIMIT_NPROC counts all of this user's processes)"
            )
        return self

    def _write_limits(self, level: str) -> None:
        pids, memory = self.dirs["pids"], self.dirs["memory"]
        if self.max_processes is not None:
            (pids / "pids.max").write_text(str(self.max_processes))
        if self.memory_mb is not None:
            limit = str(self.memory_mb * 1024 * 1024)
            if level == "cgroup2":
                (memory / "memory.max").write_text(limit)
                with contextlib.suppress(OSError):
                    (memory / "memory.swap.max").write_text("0")
            else:
                (memory / "memory.limit_in_bytes").write_text(limit)
                with contextlib.suppress(OSError):  # absent without swap accounting
                    (memory / "memory.memsw.limit_in_bytes").write_text(limit)

    def _take_uid(self) -> None:
        """Reserve an unused uid of the sandbox range (an exclusive lock file per uid)."""
        folder = _lock_folder()
        start = (os.getpid() * 7 + next(_counter)) % UID_COUNT
        with _uid_lock:
            for i in range(UID_COUNT):
                uid = UID_BASE + (start + i) % UID_COUNT
                flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
                fd = os.open(folder / f"{uid}.lock", flags, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                if _uid_busy(uid):  # a process of an earlier sandbox still runs as it
                    os.close(fd)
                    continue
                self.uid, self._uid_lock_fd = uid, fd
                return
        raise OSError(errno.EAGAIN, "no free sandbox uid")

    def __exit__(self, *exc: Any) -> None:
        self.kill()
        self._remove()
        if self.uid is not None:
            _kill_uid(self.uid)
        if self._uid_lock_fd is not None:
            os.close(self._uid_lock_fd)
            self._uid_lock_fd = None

    def _remove(self) -> None:
        for fd in self._join_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._join_fds = []
        for folder in set(self.dirs.values()):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.02)

    # ------------------------------------------------------------------ use

    def preexec(self, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """A function to run in the child between ``fork`` and ``exec`` (``preexec_fn``): joins the
        cgroup, calls ``then`` (other limits, descriptor moves: still as the harness's user) and, in the
        ``uid`` level, sets ``RLIMIT_NPROC`` and becomes the sandbox's uid. Fails the spawn if joining
        fails.
        """
        fds, uid, nproc = list(self._join_fds), self.uid, self.max_processes

        def apply() -> None:
            for fd in fds:  # first: ``then`` may move descriptors around
                os.write(fd, b"0")
            if then is not None:
                then()
            if uid is not None:
                if nproc is not None:
                    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)

        return apply

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` behind a shell that joins the cgroup first (for callers that cannot pass
        :meth:`preexec`); in the ``uid`` level use :meth:`preexec` instead (a shell cannot setuid).
        """
        if not self.dirs:
            return list(argv)
        procs = [str(d / "cgroup.procs") for d in set(self.dirs.values())]
        script = " && ".join(f'echo 0 > "${i + 1}"' for i in range(len(procs)))
        shell = f'{script} && shift {len(procs)} && exec "$@"'
        return ["/bin/sh", "-c", shell, "pptarena-cgroup", *procs, *argv]

    def pids(self) -> list[int]:
        """Processes in the group now."""
        out: set[int] = set()
        for folder in set(self.dirs.values()):
            with contextlib.suppress(OSError, ValueError):
                out |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return sorted(out)

    def kill(self) -> None:
        """SIGKILL every process in the group (a ``setsid`` grandchild included)."""
        for folder in set(self.dirs.values()):
            kill_file = folder / "cgroup.kill"  # cgroup v2 (Linux 5.14+): one write kills all
            if kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def events(self) -> dict[str, Any]:
        """What the limits did: ``oom_kills`` (processes the memory cap ended), ``pids_max_hits``
        (forks refused by the process cap), ``memory_peak_mb`` (when the kernel tells), ``level``."""
        out: dict[str, Any] = {"level": self.level, "oom_kills": 0, "pids_max_hits": 0}
        memory, pids = self.dirs.get("memory"), self.dirs.get("pids")
        if memory is not None:
            name = "memory.events" if self.level == "cgroup2" else "memory.oom_control"
            out["oom_kills"] = _counter_in(memory / name, "oom_kill")
            for peak in ("memory.peak", "memory.max_usage_in_bytes"):
                with contextlib.suppress(OSError, ValueError):
                    out["memory_peak_mb"] = round(int((memory / peak).read_text()) / 2**20, 1)
                    break
        if pids is not None:
            out["pids_max_hits"] = _counter_in(pids / "pids.events", "max")
        return out


def _counter_in(path: Path, key: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


def _sweep(parent: Path) -> None:
    """Remove empty sandbox cgroups a killed harness left behind (their creator is gone)."""
    with contextlib.suppress(OSError):
        for folder in parent.glob("pptarena-*-*"):
            pid = folder.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    folder.rmdir()


def _lock_folder() -> Path:
    """``<tmp>/pptarena-uids``, made here or checked to be this user's own private folder.

    :raises OSError: the name is taken by a link, a file, or a folder someone else owns or can
        write (another local user made it first: its lock files could be links, or held by them).
    """
    folder = Path(tempfile.gettempdir()) / "pptarena-uids"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise OSError(
            errno.EPERM,
            f"{folder} is not a private folder of this user (owner uid {info.st_uid}, mode "
            f"{stat.filemode(info.st_mode)}): remove it, it is recreated on the next run",
        )
    return folder


def _uid_busy(uid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    return True
    return False


def _kill_uid(uid: int) -> None:
    """SIGKILL what is left running as the sandbox's uid (a ``setsid`` grandchild)."""
    for _ in range(3):
        left = False
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid:
                        os.kill(int(entry.name), signal.SIGKILL)
                        left = True
        if not left:
            return
        time.sleep(0.05)
