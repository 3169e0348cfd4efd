"""Running untrusted Python (model-written edit code, rubric leaf code) in a limited subprocess.

Each run gets:

- its own temporary working directory (also HOME and TMPDIR), removed afterwards;
- a wall-clock timeout that kills the whole process group, a CPU-time limit,
  an address-space (memory) limit, a file-size limit and a process-count limit;
- no network where the OS allows it (a new user + network namespace through
  ``unshare -rn``; see :func:`network_isolation_available`);
- a read-only view of the whole file system except its working directory (and any
  ``writable`` paths the caller names), where the OS allows it: a new mount
  namespace in which every mount is remounted read-only (see
  :func:`filesystem_isolation_available`);
- a minimal environment (no API keys or other secrets are inherited);
- captured, size-capped stdout and stderr.

A script reports a structured result by writing JSON to the path in the
environment variable ``PPTARENA_SANDBOX_RESULT`` (:func:`run_python` wraps this).

What it does not do: it is not a container. The code can read files the user
can read, and where user namespaces are unavailable it can also write where the
user can (the result says so in ``notes``); run untrusted code under a dedicated
account or container when that matters.
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
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .procs import run_in_session

SAFE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "SYSTEMROOT", "FONTCONFIG_PATH", "FONTCONFIG_FILE")


@dataclass(frozen=True)
class SandboxLimits:
    """Limits for one sandboxed run."""

    timeout: float = 60.0  # wall clock, seconds
    cpu_seconds: int | None = None  # default: timeout rounded up
    memory_mb: int = 2048  # address space
    file_size_mb: int = 512  # largest file the code may write
    max_processes: int | None = None  # RLIMIT_NPROC (per user; None = unchanged)
    max_output_bytes: int = 200_000  # stdout / stderr kept per stream
    network: bool = False  # allow network access
    write_anywhere: bool = False  # allow writes outside the working directory (and ``writable`` paths)


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

    @property
    def ok(self) -> bool:
        """True when the process exited with status 0 in time."""
        return self.returncode == 0 and not self.timed_out

    def error_text(self, limit: int = 4000) -> str:
        """A short description of a failure (for logs and for feedback to a model)."""
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f}s"
        if self.returncode is not None and self.returncode < 0:
            sig = signal.Signals(-self.returncode).name if -self.returncode in signal.Signals._value2member_map_ else self.returncode
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


def _limit_setter(limits: SandboxLimits):  # type: ignore[no-untyped-def]
    cpu = limits.cpu_seconds or int(limits.timeout) + 1
    mem = limits.memory_mb * 1024 * 1024
    fsize = limits.file_size_mb * 1024 * 1024

    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if limits.max_processes is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))

    return apply


def _read_capped(path: Path, cap: int) -> str:
    with path.open("rb") as fh:
        data = fh.read(cap + 1)
    text = data[:cap].decode("utf-8", errors="replace")
    return text + ("\n[... output truncated ...]" if len(data) > cap else "")


def run_command(
    argv: Sequence[str],
    *,
    limits: SandboxLimits = SandboxLimits(),
    env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    stdin_text: str | None = None,
    writable: Sequence[Path] = (),
) -> SandboxResult:
    """Run ``argv`` under the sandbox's limits in a fresh (or given) working directory.

    Only the working directory and ``writable`` paths (existing files or folders) can be written,
    where the OS allows it (``limits.write_anywhere`` turns that off).
    """
    own_dir = workdir is None
    work = Path(tempfile.mkdtemp(prefix="pptarena-sandbox-")) if own_dir else Path(workdir)  # type: ignore[arg-type]
    work.mkdir(parents=True, exist_ok=True)
    result_path = work / ".sandbox-result.json"
    child_env = {k: os.environ[k] for k in SAFE_ENV_KEYS if k in os.environ}
    child_env.update({"HOME": str(work), "TMPDIR": str(work), "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"})
    child_env["PPTARENA_SANDBOX_RESULT"] = str(result_path)
    child_env.update(env or {})
    isolated = fs_isolated = False
    cmd = list(argv)
    notes: list[str] = []
    flags = ""
    if not limits.network:
        if network_isolation_available():
            flags += "n"
            isolated = True
        else:
            notes.append("network isolation unavailable on this system; code ran with network access")
    if not limits.write_anywhere:
        if filesystem_isolation_available():
            flags += "m"
            fs_isolated = True
            paths = [str(Path(p).resolve()) for p in writable]
            cmd = ["sh", "-c", _CONFINE, "sandbox", str(work.resolve()), *paths, "--", *cmd]
        else:
            notes.append("file-system confinement unavailable on this system; code could write outside its folder")
    if flags:
        cmd = ["unshare", "-r" + flags, *cmd]
    out_path, err_path = work / ".stdout", work / ".stderr"
    t0 = time.monotonic()
    try:
        with out_path.open("wb") as out, err_path.open("wb") as err:
            returncode, timed_out = run_in_session(
                cmd,
                cwd=work,
                env=child_env,
                stdout=out,
                stderr=err,
                timeout=limits.timeout,
                stdin_bytes=stdin_text.encode() if stdin_text is not None else None,
                preexec_fn=_limit_setter(limits),
            )
        payload = None
        if result_path.exists():
            try:
                payload = json.loads(_read_capped(result_path, 20_000_000))
            except ValueError:
                notes.append("the result file was not valid JSON")
        return SandboxResult(
            returncode=returncode,
            stdout=_read_capped(out_path, limits.max_output_bytes),
            stderr=_read_capped(err_path, limits.max_output_bytes),
            duration_s=round(time.monotonic() - t0, 3),
            timed_out=timed_out,
            result=payload,
            network_isolated=isolated,
            filesystem_isolated=fs_isolated,
            notes=notes,
        )
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)


_PRELUDE = textwrap.dedent(
    """
    import json as _json, os as _os, sys as _sys
    SANDBOX_INPUT = _json.load(open(_sys.argv[1], encoding="utf-8"))
    def sandbox_result(value):
        with open(_os.environ["PPTARENA_SANDBOX_RESULT"], "w", encoding="utf-8") as _fh:
            _json.dump(value, _fh, default=str)
    """
)


def run_python(
    source: str,
    *,
    inputs: Any = None,
    limits: SandboxLimits = SandboxLimits(),
    env: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    python: str | None = None,
    extra_files: Mapping[str, str] | None = None,
    writable: Sequence[Path] = (),
) -> SandboxResult:
    """Run Python ``source`` in the sandbox.

    The code sees ``SANDBOX_INPUT`` (``inputs``, passed as JSON) and may call
    ``sandbox_result(value)`` to hand a JSON-serialisable value back
    (available as :attr:`SandboxResult.result`). ``extra_files`` are written
    into the working directory first (name → text), e.g. helper modules.
    """
    own_dir = workdir is None
    work = Path(tempfile.mkdtemp(prefix="pptarena-sandbox-")) if own_dir else Path(workdir)  # type: ignore[arg-type]
    try:
        script = work / ".sandbox_main.py"
        script.write_text(_PRELUDE + "\n" + source, encoding="utf-8")
        (work / ".sandbox_input.json").write_text(json.dumps(inputs, default=str), encoding="utf-8")
        for name, text in (extra_files or {}).items():
            target = (work / name).resolve()
            if work.resolve() not in target.parents:
                raise ValueError(f"extra file {name!r} escapes the sandbox directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        # -s: no user site; -E unless the caller passes PYTHONPATH. The working directory
        # (the script's folder) stays importable, so extra_files can be helper modules.
        flags = ["-s"] if env and "PYTHONPATH" in env else ["-E", "-s"]
        argv = [python or sys.executable, *flags, str(script), str(work / ".sandbox_input.json")]
        return run_command(argv, limits=limits, env=env, workdir=work, writable=writable)
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
