"""Running untrusted Python (model-written edit code, rubric leaf code) in a limited subprocess.

Where bubblewrap works (:mod:`pptarena.trust.isolation`, ``SandboxResult.isolation == "bwrap"``) the
code runs in its own PID, mount, network and IPC namespaces, sees only the system folders, the
Python installation, its input files and a size-limited tmpfs working directory, and everything
it starts dies with it. Elsewhere the older, weaker mechanism below applies
(``isolation == "unshare"`` or ``"rlimits"``). In every case each run gets:

- its own working directory (also HOME and TMPDIR), removed afterwards;
- a wall-clock timeout that kills the whole process group, a CPU-time limit,
  an address-space (memory) limit per process and a file-size limit;
- a process cap and a memory cap for all its processes together, which hold for root: a cgroup of
  its own, or a host uid of its own where no cgroup can be made (:mod:`pptarena.trust.limits`;
  ``SandboxResult.limits`` records the level);
- no network where the OS allows it (a new user + network namespace through
  ``unshare -rn``; see :func:`network_isolation_available`);
- a read-only view of the whole file system except its working directory (and any
  ``writable`` paths the caller names), where the OS allows it: a new mount
  namespace in which every mount is remounted read-only (see
  :func:`filesystem_isolation_available`);
- a minimal environment (no API keys or other secrets are inherited);
- captured, size-capped stdout and stderr.

Results come back on pipes the parent holds (descriptor 3: JSON values from
``sandbox_result(value)``; descriptor 4: the bytes of a file named by ``export``), never by the
parent re-opening a path the code could have replaced; stdout and stderr are read back through
the descriptors they were written to. Everything is size-capped.

Without bubblewrap it is not a container: the code can read files the user can read and, where
user namespaces are unavailable, write where the user can, and a process that calls ``setsid``
can outlive the run (the result's ``isolation`` and ``notes`` say so). See docs/security.md.

Why it is long: :func:`run_command` gives model-written programs and rubric code everything they run
under in one call: the bubblewrap jail or the weaker fallback, the cgroup or uid caps, the rlimits, the
result and export pipes and the clean-up, each of which must hold on every path through it. The
fallback's probes and command (:func:`network_isolation_available`,
:func:`filesystem_isolation_available`, :func:`fallback_argv`) could move to a module of their own (not
done yet).
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import isolation
from .limits import SandboxCgroup
from .procs import run_in_session

SAFE_ENV_KEYS = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "PYTHONPATH",
    "SYSTEMROOT",
    "FONTCONFIG_PATH",
    "FONTCONFIG_FILE",
)


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one sandboxed run."""

    timeout: float = 60.0  # wall clock, seconds
    cpu_seconds: int | None = None  # default: timeout rounded up
    memory_mb: int = 2048  # address space of each process, and all processes together (memory cgroup)
    file_size_mb: int = 512  # largest file the code may write
    max_processes: int | None = 256  # alive at once in the sandbox (pids cgroup, see pptarena.trust.limits)
    max_output_bytes: int = 200_000  # stdout / stderr kept per stream
    network: bool = False  # allow network access
    write_anywhere: bool = False  # allow writes outside the working directory (and ``writable`` paths)
    disk_mb: int = 1024  # total size of the working directory (a tmpfs under bubblewrap)
    max_result_bytes: int = 20_000_000  # JSON results sent on the result pipe
    max_export_mb: int = 300  # the exported file


@dataclass
class SandboxResult:
    """What happened in a sandboxed run."""

    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    result: Any = None  # JSON the code wrote to PPTARENA_SANDBOX_RESULT, if any
    network_isolated: bool = False
    filesystem_isolated: bool = False
    notes: list[str] = field(default_factory=list)
    isolation: str = "rlimits"  # "bwrap", "unshare" or "rlimits" (see pptarena.trust.isolation)
    limits: str = (
        "rlimits"  # process/memory caps: "cgroup2", "cgroup1", "uid" or "rlimits" (pptarena.trust.limits)
    )
    limit_events: dict[str, Any] = field(default_factory=dict)  # what the caps did (SandboxCgroup.events)
    results: list[Any] = field(default_factory=list)  # every value sent with sandbox_result, in order
    exported: bool = False  # the ``export`` file arrived complete at ``export_to``

    @property
    def ok(self) -> bool:
        """True when the process exited with status 0 in time."""
        return self.returncode == 0 and not self.timed_out

    def error_text(self, limit: int = 4000) -> str:
        """A short description of a failure (for logs and for feedback to a model)."""
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f}s"
        if self.returncode is not None and self.returncode < 0:
            sig = (
                signal.Signals(-self.returncode).name
                if -self.returncode in signal.Signals._value2member_map_
                else self.returncode
            )
            reason = f"killed by {sig}"
            if sig in ("SIGKILL", "SIGXCPU"):
                reason += " (CPU or memory limit?)"
            return reason + ("\n" + self.stderr[-limit:] if self.stderr else "")
        return self.stderr[-limit:] or f"exit status {self.returncode}"


@functools.cache
def network_isolation_available() -> bool:
    """True when ``unshare -rn`` can run a process without network access here."""
    exe = shutil.which("unshare")
    if not exe or not sys.platform.startswith("linux"):
        return False
    try:
        return subprocess.run([exe, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# Runs inside a new user + mount namespace: bind-mounts the writable paths onto themselves, remounts
# every other mount read-only (keeping its other flags, which a user namespace may not clear), then
# runs the command. Usage: sh -c CONFINE sandbox WORKDIR [WRITABLE...] -- ARGV...
_CONFINE = r"""
here=$(pwd)
binds="$1"
mount --bind "$1" "$1" || exit 97
shift
while [ "$1" != "--" ]; do
  mount --bind "$1" "$1" || exit 97
  binds="$binds
$1"
  shift
done
shift
while read -r _ _ _ _ mnt opts _; do
  case "
$binds
" in *"
$mnt
"*) continue ;; esac
  ro=$(printf '%s' "$opts" | sed 's/^rw,/ro,/; s/^rw$/ro/')
  mount -o "remount,bind,$ro" "$mnt" 2>/dev/null
done < /proc/self/mountinfo
cd "$here" || exit 97  # re-enter the working directory through the new writable mount
exec "$@"
"""


@functools.cache
def filesystem_isolation_available() -> bool:
    """True when a command can run here with a read-only file system except chosen folders."""
    exe = shutil.which("unshare")
    if not exe or not shutil.which("mount") or not sys.platform.startswith("linux"):
        return False
    probe = Path(tempfile.mkdtemp(prefix="pptarena-probe-"))
    try:
        check = f'touch "{probe}/ok" && ! touch "{probe.parent}/pptarena-probe-escape-$$" 2>/dev/null'
        out = subprocess.run(
            [exe, "-rm", "sh", "-c", _CONFINE, "sandbox", str(probe), "--", "sh", "-c", check],
            capture_output=True,
            timeout=10,
        )
        return out.returncode == 0 and (probe / "ok").exists()
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def isolation_level() -> str:
    """The isolation of untrusted code on this machine: ``bwrap``, ``unshare`` or ``rlimits``."""
    if isolation.base_flags() is not None:
        return isolation.BWRAP_LEVEL
    if network_isolation_available() and filesystem_isolation_available():
        return "unshare"
    return "rlimits"


def rlimit_values(limits: SandboxLimits) -> list[tuple[int, tuple[int, int]]]:
    """The per-process limits of a sandboxed process: ``[(resource, (soft, hard))]`` for CPU time,
    address space, file size and core dumps (set between fork and exec, or by a launcher before it
    execs the jail: :mod:`pptarena.mcp.jailed_stdio`)."""
    cpu = limits.cpu_seconds or int(limits.timeout) + 1
    mem = limits.memory_mb * 1024 * 1024
    fsize = limits.file_size_mb * 1024 * 1024
    return [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (fsize, fsize)),
        (resource.RLIMIT_CORE, (0, 0)),
    ]


def program_read_only(argv: Sequence[str], env: Mapping[str, str] | None) -> list[Path]:
    """Host folders a jailed program needs to read besides the system: the folders of ``PYTHONPATH``
    in ``env`` and, for a program named by an absolute path, its installation (the folder above the
    program's folder, e.g. a virtual environment's root for ``<venv>/bin/python``)."""
    out: list[Path] = []
    if env and env.get("PYTHONPATH"):
        out += [Path(p) for p in env["PYTHONPATH"].split(os.pathsep) if p and Path(p).is_dir()]
    if argv and Path(argv[0]).is_absolute():
        out.append(Path(argv[0]).resolve().parent.parent)
    return out


def _limit_setter(limits: SandboxLimits, channel_fds: tuple[int, int] | None = None):  # type: ignore[no-untyped-def]
    values = rlimit_values(limits)

    def apply() -> None:  # runs in the child between fork and exec
        for which, pair in values:
            resource.setrlimit(which, pair)
        if channel_fds is not None:  # the result and export pipes become descriptors 3 and 4
            copies = [os.dup(fd) for fd in channel_fds]
            for target, fd in zip((3, 4), copies, strict=True):
                os.dup2(fd, target)
            for fd in {*copies, *channel_fds} - {3, 4}:
                os.close(fd)

    return apply


class _PipeReader(threading.Thread):
    """Drains a pipe the sandbox writes to, keeping at most ``cap`` bytes (in memory or in a file)."""

    def __init__(self, fd: int, cap: int, sink: Path | None = None):
        super().__init__(daemon=True, name="sandbox-pipe")
        self.fd, self.cap, self.sink = fd, cap, sink
        self.data = bytearray()
        self.size = 0
        self.overflow = False

    def run(self) -> None:
        out = open(self.sink, "xb") if self.sink is not None else None  # noqa: SIM115 - closed below
        try:
            while chunk := os.read(self.fd, 1 << 16):
                room = self.cap - self.size
                if room > 0:
                    if out is not None:
                        out.write(chunk[:room])
                    else:
                        self.data += chunk[:room]
                self.size += len(chunk)
                if self.size > self.cap:
                    self.overflow = True
        except OSError:
            pass
        finally:
            if out is not None:
                out.close()
            os.close(self.fd)


def _read_back(reader: _PipeReader) -> str:
    """What the process wrote to a stream (kept by ``reader`` from the pipe it wrote to: never a
    file on the host, so printing without end costs no disk), redacted, with a note when cut."""
    from .redact import redact_text

    text = redact_text(bytes(reader.data).decode("utf-8", errors="replace"))
    return text + ("\n[... output truncated ...]" if reader.overflow else "")


def fallback_argv(
    argv: list[str], work: Path, limits: SandboxLimits, writable: Sequence[Path], notes: list[str]
) -> tuple[list[str], bool, bool]:
    """The weaker mechanism where bubblewrap is unusable: ``unshare -rn`` and a read-only remount of
    everything but ``work`` and ``writable`` where available; returns ``(argv, network isolated,
    file system confined)`` and adds to ``notes`` what is missing."""
    net = fs = False
    flags = ""
    cmd = list(argv)
    if not limits.network:
        if network_isolation_available():
            flags += "n"
            net = True
        else:
            notes.append("network isolation unavailable on this system; code ran with network access")
    if not limits.write_anywhere:
        if filesystem_isolation_available():
            flags += "m"
            fs = True
            paths = [str(Path(p).resolve()) for p in writable]
            cmd = ["sh", "-c", _CONFINE, "sandbox", str(work.resolve()), *paths, "--", *cmd]
        else:
            notes.append(
                "file-system confinement unavailable on this system; code could write outside its folder"
            )
    if flags:
        cmd = ["unshare", "-r" + flags, *cmd]
    return cmd, net, fs


def run_command(
    argv: Sequence[str],
    *,
    limits: SandboxLimits = SandboxLimits(),
    env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    stdin_text: str | None = None,
    writable: Sequence[Path] = (),
    read_only: Sequence[Path] = (),
    files: Mapping[str, Path] | None = None,
    export: str | None = None,
    export_to: Path | None = None,
    python_view: isolation.PythonView | None = None,
) -> SandboxResult:
    """Run ``argv`` under the sandbox in a fresh working directory.

    :param workdir: a host folder whose top-level entries are placed (read-only under bubblewrap)
        into the working directory; in the fallback it *is* the working directory.
    :param writable: host paths the code may write (bound at the same path).
    :param read_only: host paths the code may read (bound at the same path; under bubblewrap
        nothing else outside the system and Python folders is visible).
    :param files: ``{name: host file}`` placed read-only in the working directory.
    :param export: a file name in the working directory whose bytes the code sends back on
        descriptor 4 (``sandbox_export``), written by the parent to ``export_to``.
    :param python_view: what of the Python installation the code sees under bubblewrap (default
        :func:`pptarena.trust.isolation.python_view`: the interpreter, python-pptx, lxml, Pillow,
        XlsxWriter and their requirements; nothing of pptarena, its plugins or other packages).
    The argv may name ``{workdir}``: it is replaced by the working directory's path as the code sees it.
    """
    own_dir = workdir is None
    stage = Path(tempfile.mkdtemp(prefix="pptarena-sandbox-")) if own_dir else Path(workdir)  # type: ignore[arg-type]
    stage.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix="pptarena-capture-"))  # never visible to the code
    notes: list[str] = []
    use_bwrap = isolation.base_flags() is not None and not limits.write_anywhere
    inside = Path("/sandbox") if use_bwrap else stage
    child_env = {
        k: os.environ[k] for k in SAFE_ENV_KEYS if k in os.environ and not (use_bwrap and k == "PYTHONPATH")
    }
    child_env.update(
        {"HOME": str(inside), "TMPDIR": str(inside), "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    )
    child_env.update({"PPTARENA_SANDBOX_RESULT_FD": "3", "PPTARENA_SANDBOX_EXPORT_FD": "4"})
    child_env.update(env or {})
    cmd = [a.replace("{workdir}", str(inside)) for a in argv]
    if use_bwrap:
        placed = {p.name: p for p in stage.iterdir()}
        placed.update(files or {})
        extra_ro = [*read_only, *program_read_only(cmd, env)]
        jail = isolation.Jail(
            workdir=inside,
            tmpfs_mb=limits.disk_mb,
            read_only=extra_ro,
            writable=list(writable),
            files=placed,
            network=limits.network,
            python_view=python_view,
        )
        cmd = isolation.command(jail, cmd)
        net_iso, fs_iso, level = not limits.network, True, isolation.BWRAP_LEVEL
    else:
        for name, host in (files or {}).items():
            shutil.copyfile(host, stage / name)
        cmd, net_iso, fs_iso = fallback_argv(cmd, stage, limits, [*writable], notes)
        level = "unshare" if (net_iso or limits.network) and fs_iso else "rlimits"
        notes.append(f"bubblewrap unavailable: isolation {level!r} (the code can read the user's files)")
    res_r, res_w = os.pipe()
    exp_r, exp_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    streams = [_PipeReader(out_r, limits.max_output_bytes), _PipeReader(err_r, limits.max_output_bytes)]
    readers = [_PipeReader(res_r, limits.max_result_bytes)]
    if export is not None and export_to is not None:
        Path(export_to).unlink(missing_ok=True)
        readers.append(_PipeReader(exp_r, limits.max_export_mb * 1024 * 1024, Path(export_to)))
    else:
        os.close(exp_r)
    t0 = time.monotonic()
    try:
        for r in (*readers, *streams):
            r.start()
        with SandboxCgroup(limits.max_processes, limits.memory_mb) as group:
            try:
                setter = _limit_setter(limits, (res_w, exp_w))
                if group.uid is not None:  # the code runs as an unprivileged uid of its own
                    cmd, mounts = as_sandbox_uid(cmd, stage, private, group.uid, use_bwrap)
                    setter = _then_mount(setter, mounts)
                returncode, timed_out = run_in_session(
                    cmd,
                    cwd=stage if not use_bwrap else private,
                    env=child_env,
                    stdout=out_w,
                    stderr=err_w,
                    timeout=limits.timeout,
                    stdin_bytes=stdin_text.encode() if stdin_text is not None else None,
                    preexec_fn=group.preexec(setter),
                    pass_fds=(3, 4, res_w, exp_w),
                )
            finally:
                for fd in (res_w, exp_w, out_w, err_w):
                    os.close(fd)
            notes += group.notes + _limit_notes(group, limits)
            limit_level, limit_events = group.level, group.events()
            for r in readers:
                r.join(timeout=10)
        for r in streams:  # every process of the sandbox is gone: the pipes are at their end
            r.join(timeout=10)
        stdout_text, stderr_text = _read_back(streams[0]), _read_back(streams[1])
        results = _decode_results(readers[0], notes)
        exported = False
        if len(readers) > 1:
            exported = not readers[1].overflow and readers[1].size > 0 and not readers[1].is_alive()
            if readers[1].overflow:
                notes.append(f"the exported file was over {limits.max_export_mb} MB and was dropped")
            if not exported:
                Path(export_to).unlink(missing_ok=True)  # type: ignore[arg-type]
        return SandboxResult(
            returncode=returncode,
            stdout=stdout_text,
            stderr=stderr_text,
            duration_s=round(time.monotonic() - t0, 3),
            timed_out=timed_out,
            result=results[-1] if results else None,
            network_isolated=net_iso,
            filesystem_isolated=fs_iso,
            notes=notes,
            isolation=level,
            results=results,
            exported=exported,
            limits=limit_level,
            limit_events=limit_events,
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)
        if own_dir:
            shutil.rmtree(stage, ignore_errors=True)


def _then_mount(setter: Any, mounts: list[tuple[str, str]]) -> Any:
    def apply() -> None:
        setter()
        if mounts:
            isolation.mount_staged(mounts)

    return apply


def _limit_notes(group: SandboxCgroup, limits: SandboxLimits) -> list[str]:
    """What the process and memory caps of a finished run did, in words."""
    events = group.events()
    notes = []
    if events["oom_kills"]:
        notes.append(
            f"the sandbox reached its memory cap ({limits.memory_mb} MB for all its processes): "
            f"{events['oom_kills']} process(es) killed"
        )
    if events["pids_max_hits"]:
        notes.append(
            f"the sandbox reached its process cap ({limits.max_processes}): "
            f"{events['pids_max_hits']} fork(s) refused"
        )
    return notes


def as_sandbox_uid(
    cmd: list[str], stage: Path, private: Path, uid: int, use_bwrap: bool
) -> tuple[list[str], list[tuple[str, str]]]:
    """``cmd`` made runnable by the sandbox's own unprivileged uid (the ``uid`` limit level).

    The working folder is handed to the uid; under bubblewrap every bind source is staged under
    ``private/view`` (see :func:`pptarena.trust.isolation.staged_binds`), since the uid may not be able to
    walk the host paths. Returns the command and the mounts the child makes before dropping to the uid.
    """
    for root, dirs, files in os.walk(stage):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
    os.chown(stage, uid, uid)
    if not use_bwrap:
        return cmd, []
    private.chmod(0o711)
    view = private / "view"
    view.mkdir(mode=0o711)
    return isolation.staged_binds(cmd, view)


def _decode_results(reader: _PipeReader, notes: list[str]) -> list[Any]:
    if reader.overflow:
        notes.append(f"the code sent over {reader.cap} bytes of results; they were dropped")
        return []
    out = []
    for line in bytes(reader.data).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            notes.append("a result line was not valid JSON")
    return out


_PRELUDE = textwrap.dedent(
    """
    import json as _json, os as _os, sys as _sys
    SANDBOX_INPUT = _json.load(open(_sys.argv[1], encoding="utf-8"))
    def sandbox_result(value):
        _os.write(3, (_json.dumps(value, default=str) + "\\n").encode("utf-8"))
    def sandbox_export(name):
        with open(name, "rb") as _fh:
            while True:
                _chunk = _fh.read(1 << 20)
                if not _chunk:
                    break
                _os.write(4, _chunk)
        _os.close(4)
    """
)


def run_python(
    source: str,
    *,
    inputs: Any = None,
    limits: SandboxLimits = SandboxLimits(),
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    extra_files: Mapping[str, str] | None = None,
    writable: Sequence[Path] = (),
    read_only: Sequence[Path] = (),
    files: Mapping[str, Path] | None = None,
    export: str | None = None,
    export_to: Path | None = None,
    python_view: isolation.PythonView | None = None,
) -> SandboxResult:
    """Run Python ``source`` in the sandbox.

    The code sees ``SANDBOX_INPUT`` (``inputs``, passed as JSON) and may call
    ``sandbox_result(value)`` to hand a JSON-serialisable value back
    (:attr:`SandboxResult.result` is the last one, :attr:`SandboxResult.results` all) and
    ``sandbox_export(name)`` to send the file ``name`` back to ``export_to``. ``extra_files``
    are written into the working directory first (name → text), e.g. helper modules;
    ``files`` (name → host path) are placed there read-only, ``read_only`` host paths are
    visible at their own path. See :func:`run_command` for the rest.
    """
    stage = Path(tempfile.mkdtemp(prefix="pptarena-sandbox-"))
    try:
        (stage / ".sandbox_main.py").write_text(_PRELUDE + "\n" + source, encoding="utf-8")
        (stage / ".sandbox_input.json").write_text(json.dumps(inputs, default=str), encoding="utf-8")
        for name, text in (extra_files or {}).items():
            target = (stage / name).resolve()
            if stage.resolve() not in target.parents:
                raise ValueError(f"extra file {name!r} escapes the sandbox directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        # -s: no user site; -E unless the caller passes PYTHONPATH. The working directory
        # (the script's folder) stays importable, so extra_files can be helper modules.
        flags = ["-s"] if env and "PYTHONPATH" in env else ["-E", "-s"]
        argv = [
            python or sys.executable,
            *flags,
            "{workdir}/.sandbox_main.py",
            "{workdir}/.sandbox_input.json",
        ]
        return run_command(
            argv,
            limits=limits,
            env=env,
            workdir=stage,
            writable=writable,
            read_only=read_only,
            files=files,
            export=export,
            export_to=export_to,
            python_view=python_view,
        )
    finally:
        shutil.rmtree(stage, ignore_errors=True)
