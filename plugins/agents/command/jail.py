"""Running a CLI agent in its jail: bubblewrap, its own network, a tmpfs workspace, cgroup limits.

The order of one run (:func:`run`):

1. a private host folder (``0711``) holds the staged workspace (``spec.prepare`` lays it out:
   TASK.md, inputs/, output/, the customization) and, with ``network = "allowlist"``, the egress
   proxy's unix socket (:mod:`.proxy`), both bound read-only into the jail;
2. bubblewrap starts :mod:`.launcher` with every namespace of its own, network included, the
   workspace a size-capped tmpfs at the workspace's path (``workspace_mb``; so is ``/tmp``), inside a
   fresh cgroup (:class:`pptarena.trust.limits.SandboxCgroup`: ``max_processes``, ``memory_mb``) it joins
   before bubblewrap runs (where no cgroup can be made: an unprivileged host uid of its own);
3. the harness learns the jail's first process from ``--info-fd``, attaches slirp4netns for
   ``network = "open"`` (:mod:`.network`), then lets the launcher start the CLI;
4. the launcher reports the CLI's exit after killing every other process of the jail; the harness
   copies the workspace out of the jail's mount namespace (the launcher's ``/proc/<pid>/cwd``) into the
   pair folder, regular files only and capped (:mod:`.copyback`), then ends the jail.

Nothing the CLI wrote is followed or edited in place: the pair folder gets copies of its regular
files, made by the harness.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pptarena.trust.safeio import UnsafeFileError

from .copyback import CopyReport, copy_workspace
from .network import PROXY_PORT, SLIRP_RESOLV, Slirp, attach_slirp, fence, proxy_environment
from .proxy import AllowEntry, EgressLog, EgressProxy

LAUNCHER = Path(__file__).with_name("launcher.py")
GRACE_S = 20.0  # beyond the CLI's timeout: launching, killing the tree, reporting
START_TIMEOUT_S = 30.0


@dataclass
class JailSpec:
    """One jailed CLI run: the command, its workspace (a path inside and the copy-out destination
    outside), what it may read, its network and its limits."""

    argv: list[str]
    workspace: Path
    prepare: Callable[[Path], None]  # lays the workspace out in the folder given (the stage)
    cwd: Path
    env: dict[str, str]
    read_only: list[Path] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # path inside -> target: the program's links
    timeout: float | None = None
    network: str = "allowlist"
    allow: list[AllowEntry] = field(default_factory=list)
    workspace_mb: int = 1024
    max_processes: int = 512
    memory_mb: int = 4096
    output_mb: int = 300  # copied out of output/
    keep_mb: int = 64  # copied out of the rest of the workspace
    log_mb: int = 32  # of the jail's stdout and of its stderr, kept in the pair folder (each)


@dataclass
class JailOutcome:
    """How a jailed run ended."""

    returncode: int | None = None
    timed_out: bool = False
    start_error: str | None = None  # the launcher could not start the CLI (e.g. not found)
    error: str | None = None  # the jail itself failed (the workspace may be lost)
    started: bool = False  # the CLI was started (an error before is the harness's or machine's)
    copy: CopyReport | None = None
    egress: EgressLog | None = None
    limits: str = ""


def launcher_command(
    spec: JailSpec, stage: Path | None, fds: dict[str, int], socket: Path | None
) -> list[str]:
    """``python -I -S -c <launcher> <spec JSON>`` for the jail."""
    payload = {
        "argv": spec.argv,
        "cwd": str(spec.cwd),
        "workspace": str(spec.workspace),
        "stage": str(stage) if stage else None,
        "timeout": spec.timeout,
        "proxy": {"port": PROXY_PORT, "socket": str(socket)} if socket else None,
        **fds,
    }
    return [sys.executable, "-I", "-S", "-c", LAUNCHER.read_text(encoding="utf-8"), json.dumps(payload)]


def _insert(command: list[str], extra: list[str]) -> list[str]:
    """bwrap options added before the final remount (mounts after it would fail)."""
    at = command.index("--remount-ro") if "--remount-ro" in command else command.index("--chdir")
    return command[:at] + extra + command[at:]


def link_flags(links: dict[str, str]) -> list[str]:
    """bwrap flags making each link (path inside -> target) again in the jail, after every bind (a
    link's folder may be made in a tmpfs, e.g. the jail's own /tmp, never in a read-only bind)."""
    flags: list[str] = []
    for path, target in sorted(links.items()):
        flags += ["--symlink", target, path]
    return flags


def _read_info(fd: int, deadline: float) -> dict[str, int]:
    data = b""
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        try:
            return json.loads(data)
        except ValueError:
            continue
    raise RuntimeError("bubblewrap did not report its sandbox's process")


class _Lines:
    """JSON lines from the launcher's status pipe, each read by a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.data = b""

    def next(self, deadline: float | None) -> dict[str, object] | None:
        """The next line as a dict; None at the deadline, at the end of the pipe or on garbage."""
        while b"\n" not in self.data:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.fd], [], [], wait)[0]:
                return None  # deadline
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return None  # the jail ended without reporting
            self.data += chunk
            if len(self.data) > 65536:
                return None
        line, self.data = self.data.split(b"\n", 1)
        try:
            status = json.loads(line)
        except ValueError:
            return None
        return status if isinstance(status, dict) else None


class _CappedSink(threading.Thread):
    """Copies a pipe the jail writes to (its stdout or stderr) into a host file, at most ``cap``
    bytes; the rest is read and dropped (the jail never blocks on it) and a note ends the file.

    The jail's output never reaches a host file directly: a CLI printing without end would fill
    the pair folder's disk outside every quota of the jail.
    """

    def __init__(self, fd: int, sink: IO[bytes], cap: int):
        super().__init__(daemon=True, name="cli-jail-output")
        self.fd, self.sink, self.cap = fd, sink, cap
        self.size = 0

    def run(self) -> None:
        writing = True  # a failing write (disk full) stops the copy, never the draining
        try:
            while chunk := os.read(self.fd, 1 << 16):
                room = self.cap - self.size
                if room > 0 and writing:
                    try:
                        self.sink.write(chunk[:room])
                    except OSError:
                        writing = False
                self.size += len(chunk)
        except OSError:
            pass
        finally:
            os.close(self.fd)
            with contextlib.suppress(OSError, ValueError):
                if self.size > self.cap and writing:
                    dropped = self.size - self.cap
                    note = f"\n[... output truncated: {dropped} bytes over {self.cap} dropped ...]\n"
                    self.sink.write(note.encode())
                self.sink.flush()


def _sweep_leftovers() -> None:
    """Remove the private folders of jails whose harness process was killed (``kill -9``)."""
    for folder in Path(tempfile.gettempdir()).glob("pptarena-cli-*-*"):
        pid = folder.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def run(spec: JailSpec, stdout: IO[bytes], stderr: IO[bytes]) -> JailOutcome:
    """Run ``spec`` jailed; copy its workspace out to ``spec.workspace`` (which must not exist)."""
    from pptarena.trust.limits import SandboxCgroup

    outcome = JailOutcome()
    _sweep_leftovers()
    private = Path(tempfile.mkdtemp(prefix=f"pptarena-cli-{os.getpid()}-"))
    os.chmod(private, 0o711)
    proxy: EgressProxy | None = None
    try:
        stage = private / "stage"
        stage.mkdir(mode=0o755)
        spec.prepare(stage)
        env = dict(spec.env)
        if spec.network == "allowlist":
            net = private / "net"
            net.mkdir(mode=0o711)
            proxy = EgressProxy(spec.allow, net).__enter__()
            outcome.egress = proxy.log
            env.update(proxy_environment())
        with SandboxCgroup(spec.max_processes, spec.memory_mb) as group:
            try:
                _supervise(spec, env, private, proxy, group, stdout, stderr, outcome)
            finally:
                events = group.events()
                notes = "; ".join(group.notes)
                outcome.limits = (
                    f"{group.level}: {spec.max_processes} processes, {spec.memory_mb} MB"
                    + (f" ({notes})" if notes else "")
                    + f"; forks refused {events['pids_max_hits']}, OOM kills {events['oom_kills']}"
                )
    except (OSError, RuntimeError, UnsafeFileError) as exc:
        outcome.error = outcome.error or f"{type(exc).__name__}: {exc}"
    finally:
        if proxy is not None:
            proxy.__exit__(None, None, None)
        shutil.rmtree(private, ignore_errors=True)
    return outcome


def _supervise(
    spec: JailSpec,
    env: dict[str, str],
    private: Path,
    proxy: EgressProxy | None,
    group: Any,
    stdout: IO[bytes],
    stderr: IO[bytes],
    outcome: JailOutcome,
) -> None:
    """Start the jail in ``group`` (a :class:`pptarena.trust.limits.SandboxCgroup`), let the CLI run, copy
    the workspace out, end the jail; fills ``outcome``."""
    from pptarena.trust import isolation
    from pptarena.trust.procs import kill_group

    extra = link_flags(spec.links)
    if spec.network == "open":
        (private / "resolv.conf").write_text(SLIRP_RESOLV)
        extra += ["--ro-bind", str(private / "resolv.conf"), "/etc/resolv.conf"]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sinks = [_CappedSink(out_r, stdout, spec.log_mb * 1024 * 1024)]
    sinks.append(_CappedSink(err_r, stderr, spec.log_mb * 1024 * 1024))
    for sink in sinks:
        sink.start()
    status_r, status_w = os.pipe()
    release_r, release_w = os.pipe()
    info_r, info_w = os.pipe()
    start_r, start_w = os.pipe()
    child_fds = (status_w, release_r, info_w, start_r)
    proc: subprocess.Popen[bytes] | None = None
    slirp: Slirp | None = None
    try:
        stage = private / "stage"
        shown = [*spec.read_only, stage] + ([proxy.socket_path.parent] if proxy else [])
        jail = isolation.Jail(workdir=spec.workspace, tmpfs_mb=spec.workspace_mb, read_only=shown)
        fds = {"status_fd": status_w, "release_fd": release_r, "start_fd": start_r}
        argv = launcher_command(spec, stage, fds, proxy.socket_path if proxy else None)
        command = _insert(isolation.command(jail, argv), ["--info-fd", str(info_w), *extra])
        then = None
        if group.uid is not None:  # no cgroup here: the jail runs as an unprivileged uid of its own
            view = private / "view"
            view.mkdir(mode=0o711)
            command, mounts = isolation.staged_binds(command, view)

            def then() -> None:
                if mounts:
                    isolation.mount_staged(mounts)

        try:
            proc = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
                pass_fds=child_fds,
                preexec_fn=group.preexec(then),
            )
        finally:
            for fd in (*child_fds, out_w, err_w):
                os.close(fd)
            out_w = err_w = -1
        pid = int(_read_info(info_r, time.monotonic() + START_TIMEOUT_S)["child-pid"])
        lines = _Lines(status_r)
        if lines.next(time.monotonic() + START_TIMEOUT_S) != {"ready": True}:
            outcome.error = "the jail did not start (see cli.stderr.txt)"
            return
        if spec.network == "open":  # only now: bubblewrap has finished setting up the namespace
            slirp = attach_slirp(pid)
            fence(pid)  # before the CLI starts: this machine, its LAN and link-local unreachable
        os.write(start_w, b"1")
        outcome.started = True
        deadline = None if spec.timeout is None else time.monotonic() + spec.timeout + GRACE_S
        status = lines.next(deadline)
        if status is None:
            outcome.timed_out = deadline is not None and time.monotonic() >= deadline
            outcome.error = (
                "the jail did not report the CLI's end in time"
                if outcome.timed_out
                else "the jail ended before its workspace could be copied out"
            )
            return
        outcome.returncode = status.get("returncode")  # type: ignore[assignment]
        outcome.timed_out = bool(status.get("timed_out"))
        outcome.start_error = status.get("error")  # type: ignore[assignment]
        outcome.copy = copy_workspace(pid, spec.workspace, spec.output_mb, spec.keep_mb)
    finally:
        for fd in (status_r, info_r, start_w, release_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        for fd in (out_w, err_w):  # still here only when the jail was never started
            if fd >= 0:
                os.close(fd)
        if proc is not None:
            kill_group(proc)
        if slirp is not None:
            slirp.stop()
        for sink in sinks:  # the jail is gone: every write end is closed
            sink.join(timeout=10)
