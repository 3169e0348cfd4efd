"""Running LibreOffice safely: finding it, one-shot conversion and warm instances.

Every office instance gets its own throw-away user profile
(``-env:UserInstallation``), runs in its own process group/session and is
killed as a group on timeout, so parallel renders never collide and no
process outlives its render. Failures of the office itself raise
:class:`pptarena.types.InfraError`; a missing office raises
:class:`pptarena.types.ComponentUnavailable` with install instructions.

Why it is long: the two ways of running the office (:func:`convert_oneshot`, :class:`WarmOffice`)
share the profile, the flags and the killing of process groups, so they sit together; locating the
office (:func:`find_soffice`, :func:`office_version`, :func:`find_uno_python`) is a separate job
that could move to its own module (not done yet).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from pptarena.types import ComponentUnavailable, InfraError

INSTALL_HELP = (
    "LibreOffice (soffice) was not found. Install it, e.g.\n"
    "  Debian/Ubuntu: sudo apt-get install libreoffice-impress python3-uno "
    "fonts-crosextra-carlito fonts-crosextra-caladea fonts-liberation2 fonts-dejavu fonts-noto-cjk\n"
    "  Fedora:        sudo dnf install libreoffice-impress libreoffice-pyuno\n"
    "  macOS:         brew install --cask libreoffice\n"
    "  Windows:       https://www.libreoffice.org/download/\n"
    "or point the renderer at it with the `soffice` option or $PPTARENA_SOFFICE."
)

RESTART_EXIT_CODE = 81  # soffice.bin exits with 81 after creating a fresh profile: start it again
_STANDARD_LOCATIONS = (
    "/usr/lib/libreoffice/program/soffice",
    "/usr/lib64/libreoffice/program/soffice",
    "/opt/libreoffice/program/soffice",
    "/Applications/LibreOffice.app/Contents/MacOS/soffice",
    r"C:\Program Files\LibreOffice\program\soffice.exe",
)
_BRIDGE = Path(__file__).with_name("uno_bridge.py")
_counter = itertools.count(1)


class RenderTimeout(InfraError):
    """The office did not finish in time; its whole process group was killed."""


# --------------------------------------------------------------------------- discovery


def find_soffice(explicit: str | None = None) -> Path:
    """The soffice executable: ``explicit``, ``$PPTARENA_SOFFICE``, ``PATH``, then standard places.

    :raises ComponentUnavailable: with install instructions when none is found.
    """
    candidates = [explicit] if explicit else [os.environ.get("PPTARENA_SOFFICE")]
    if not explicit:
        candidates += [shutil.which("soffice"), shutil.which("libreoffice"), *_STANDARD_LOCATIONS]
    for cand in candidates:
        if not cand:
            continue
        found = shutil.which(cand) or (cand if os.path.isfile(cand) and os.access(cand, os.X_OK) else None)
        if found:
            return Path(found)
    if explicit:
        raise ComponentUnavailable(
            f"soffice {explicit!r} does not exist or is not executable.\n{INSTALL_HELP}"
        )
    raise ComponentUnavailable(INSTALL_HELP)


def office_command(soffice: Path) -> list[str]:
    """The program to run for ``soffice``.

    For a standard install this is ``program/soffice.bin`` next to the
    resolved ``soffice`` (skipping the shell wrapper and oosplash, so the
    process we start is the office itself); otherwise ``soffice`` as given.
    Either runs behind :func:`.office_jail.office_prefix` (the memory cap); callers put the whole
    command in the office's jail (:func:`.office_jail.jail_command`).
    """
    from .office_jail import office_prefix

    real = Path(os.path.realpath(soffice))
    binary = real.with_name("soffice.bin")
    if real.name == "soffice" and binary.is_file() and os.access(binary, os.X_OK):
        return [*office_prefix(), str(binary)]
    return [*office_prefix(), str(soffice)]


@functools.lru_cache(maxsize=8)
def office_version(soffice: Path) -> str:
    """A version fingerprint for cache keys, without running the office.

    ``versionrc`` next to a standard install's binary; otherwise the
    executable's resolved path, size and modification time.
    """
    real = Path(os.path.realpath(soffice))
    rc = real.with_name("versionrc")
    if rc.is_file():
        try:
            lines = [ln for ln in rc.read_text(errors="replace").splitlines() if ln.startswith("buildid=")]
        except OSError:
            lines = []
        if lines:
            return f"{real}|" + "|".join(lines)
    try:
        st = real.stat()
        return f"{real}|{st.st_size}|{int(st.st_mtime)}"
    except OSError:
        return str(real)


@functools.lru_cache(maxsize=8)
def find_uno_python(explicit: str | None = None) -> str | None:
    """A Python interpreter that can ``import uno`` (None when there is none).

    Tries ``explicit``, ``$PPTARENA_UNO_PYTHON``, this interpreter, the
    distribution's ``/usr/bin/python3`` and LibreOffice's bundled Python.
    """
    cands = (
        [explicit]
        if explicit
        else [
            os.environ.get("PPTARENA_UNO_PYTHON"),
            sys.executable,
            "/usr/bin/python3",
            "/usr/local/bin/python3",
            "/Applications/LibreOffice.app/Contents/Resources/python",
            r"C:\Program Files\LibreOffice\program\python.exe",
        ]
    )
    for cand in cands:
        if not cand or not (shutil.which(cand) or os.path.isfile(cand)):
            continue
        try:
            ok = subprocess.run([cand, "-c", "import uno"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return cand
    return None


# --------------------------------------------------------------------------- processes


def _pdeathsig_prefix() -> list[str]:
    """``setpriv --pdeathsig KILL --`` on Linux when available: the office dies with its parent."""
    if sys.platform.startswith("linux"):
        setpriv = shutil.which("setpriv")
        if setpriv:
            return [setpriv, "--pdeathsig", "KILL", "--"]
    return []


def kill_process_group(proc: subprocess.Popen[Any] | None, pgid: int | None = None) -> None:
    """SIGKILL the process group (session) led by ``proc`` (or ``pgid``) and reap ``proc``."""
    target = pgid if pgid is not None else (proc.pid if proc is not None else None)
    if target is not None:
        try:
            if hasattr(os, "killpg"):
                os.killpg(target, signal.SIGKILL)
            elif proc is not None:  # pragma: no cover - Windows
                subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True)
        except (ProcessLookupError, PermissionError, OSError):
            pass
    if proc is not None:
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass


def new_profile_dir(root: Path | None = None) -> Path:
    """A fresh, private LibreOffice user-profile folder."""
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="pptarena-lo-", dir=root))


def _profile_arg(profile: Path) -> str:
    return "-env:UserInstallation=" + profile.resolve().as_uri()


_COMMON_FLAGS = ["--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck"]
PDF_FILTER = 'pdf:impress_pdf_Export:{"ExportHiddenSlides":{"type":"boolean","value":"true"}}'


def convert_oneshot(soffice: Path, src: Path, out_dir: Path, profile: Path, timeout: float) -> Path:
    """Convert ``src`` to PDF (hidden slides included) with a fresh soffice; return the PDF path.

    The office runs in its own session; on timeout the whole group is killed.

    :raises InfraError: on timeout, crash or when no PDF is produced.
    """
    from .office_jail import jail_command, office_env, office_read_only

    office = [
        *office_command(soffice),
        _profile_arg(profile),
        *_COMMON_FLAGS,
        "--convert-to",
        PDF_FILTER,
        "--outdir",
        str(out_dir),
        str(src),
    ]
    # the office sees its profile, the output folder and the deck's folder (the renderer's scratch)
    jailed = jail_command(
        office, writable=[profile, out_dir, src.parent], read_only=office_read_only(soffice)
    )
    cmd = [*_pdeathsig_prefix(), *(jailed or office)]
    pdf = out_dir / (src.stem + ".pdf")
    deadline = time.monotonic() + timeout
    for _attempt in range(3):  # a fresh profile makes soffice.bin exit 81 once
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=office_env(),
        )
        try:
            output, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill_process_group(proc)
            raise RenderTimeout(
                f"LibreOffice timed out after {timeout:g}s converting {src.name} (process group killed)"
            ) from None
        finally:
            kill_process_group(None, proc.pid)  # stray children of the office
        if proc.returncode == RESTART_EXIT_CODE and not pdf.exists():
            continue
        break
    tail = (output or b"").decode(errors="replace").strip()[-600:]
    if proc.returncode != 0:
        raise InfraError(
            f"LibreOffice exited with code {proc.returncode} converting {src.name}: {tail or '(no output)'}"
        )
    if not pdf.is_file() or pdf.stat().st_size == 0:
        raise InfraError(f"LibreOffice produced no PDF for {src.name}: {tail or '(no output)'}")
    return pdf


def _wait_gone(pid: int, timeout: float) -> None:
    """Wait up to ``timeout`` seconds until ``pid`` is gone or a zombie."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except (OSError, IndexError):
            return
        if state == "Z":
            return
        time.sleep(0.02)


def host_pid(ancestor: int, inner: int | None) -> int | None:
    """The host pid of the descendant of ``ancestor`` whose pid in its own PID namespace is ``inner``."""
    if inner is None:
        return None
    children: dict[int, list[int]] = {}
    nspid: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            children.setdefault(int(fields.get("PPid", "0").strip()), []).append(int(entry))
        except ValueError:
            continue
        ns = fields.get("NSpid", "").split()
        nspid[int(entry)] = ns[-1] if ns else ""
    todo = list(children.get(ancestor, []))
    while todo:
        pid = todo.pop()
        if nspid.get(pid) == str(inner):
            return pid
        todo += children.get(pid, [])
    return None


class WarmOffice:
    """One long-running soffice driven through the UNO bridge.

    Not thread-safe: the renderer's pool hands each instance to one thread at a time.
    """

    def __init__(
        self,
        soffice: Path,
        uno_python: str,
        profile: Path,
        start_timeout: float = 60.0,
        *,
        prepare: bool = False,
        folders: tuple[Path, ...] = (),
    ):
        self.soffice = soffice
        self.folders = folders  # what the office may see besides its profile (the scratch folder)
        self.jailed = False  # True once started in its own mount namespace
        self.uno_python = uno_python
        self.profile = profile
        self.start_timeout = start_timeout
        self.prepare = prepare  # finish the (new) profile on start; see office_profile.build
        self.prepared: str | None = None  # the office version recorded in the profile by ``prepare``
        self.uses = 0
        self._bridge: subprocess.Popen[str] | None = None
        self._office_pid: int | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    @property
    def alive(self) -> bool:
        """True while the bridge (and so the office) is running."""
        return self._bridge is not None and self._bridge.poll() is None

    def start(self) -> None:
        """Start soffice and the bridge and wait until it accepts UNO calls.

        :raises InfraError: when the office does not come up in time.
        """
        name = f"pptarena-{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:8]}"
        spec = {
            "office": [*office_command(self.soffice), _profile_arg(self.profile), *_COMMON_FLAGS],
            "connect": f"pipe,name={name};urp;",
            "timeout": self.start_timeout,
            "prepare": self.prepare,
        }
        from .office_jail import INSIDE, jail_command, office_env, office_read_only, python_read_only

        # the bridge runs in the office's jail too: the UNO pipe lives in the jail's own /tmp
        jailed = jail_command(
            [self.uno_python, str(INSIDE / _BRIDGE.name), json.dumps(spec)],
            writable=[self.profile, *self.folders],
            read_only=[*python_read_only(self.uno_python), *office_read_only(self.soffice)],
            files={_BRIDGE.name: _BRIDGE},
        )
        self.jailed = jailed is not None
        self._bridge = subprocess.Popen(
            jailed or [self.uno_python, str(_BRIDGE), json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            start_new_session=True,
            env=office_env(),
        )
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self._bridge, self._lines), daemon=True).start()
        msg = self._read(self.start_timeout + 10, "starting")
        if not msg.get("ready"):
            self.close()
            raise InfraError(f"warm LibreOffice failed to start: {msg.get('error', 'unknown error')}")
        self._office_pid = int(msg["office_pid"])
        if self.jailed:  # the bridge saw the pid inside its PID namespace
            self._office_pid = host_pid(self._bridge.pid, self._office_pid)
        self.prepared = msg.get("prepared")

    @staticmethod
    def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _read(self, timeout: float, doing: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise RenderTimeout(
                f"LibreOffice timed out after {timeout:g}s {doing} (process group killed)"
            ) from None
        if line is None:
            code = self._bridge.poll() if self._bridge else None
            self.close()
            raise InfraError(f"LibreOffice bridge died while {doing} (exit code {code})")
        try:
            return dict(json.loads(line))
        except ValueError:
            self.close()
            raise InfraError(f"LibreOffice bridge sent garbage while {doing}: {line[:200]!r}") from None

    def convert(self, src: Path, dst: Path, timeout: float) -> Path:
        """Export ``src`` to the PDF ``dst`` (hidden slides included).

        :raises InfraError: on timeout (everything killed) or office failure.
        """
        if not self.alive:
            raise InfraError("warm LibreOffice is not running")
        assert self._bridge is not None and self._bridge.stdin is not None
        self.uses += 1
        try:
            self._bridge.stdin.write(json.dumps({"id": self.uses, "src": str(src), "dst": str(dst)}) + "\n")
            self._bridge.stdin.flush()
        except OSError as exc:
            self.close()
            raise InfraError(f"LibreOffice bridge is gone: {exc}") from exc
        msg = self._read(timeout, f"converting {src.name}")
        if not msg.get("ok"):
            if msg.get("fatal"):
                self.close()
            raise InfraError(f"LibreOffice failed converting {src.name}: {msg.get('error')}")
        if not dst.is_file() or dst.stat().st_size == 0:
            raise InfraError(f"LibreOffice produced no PDF for {src.name}")
        return dst

    def close(self) -> None:
        """Kill the office and the bridge (both process groups; in the jail, the PID namespace ends with
        the bridge's bubblewrap and takes every process in it along)."""
        bridge, self._bridge = self._bridge, None
        office, self._office_pid = self._office_pid, None
        if office is not None:
            kill_process_group(None, office)
        if bridge is not None:
            if bridge.stdin is not None:
                try:
                    bridge.stdin.close()
                except OSError:
                    pass
            kill_process_group(bridge)
        if office is not None and self.jailed:  # its parent is in the jail: wait until it is reaped
            _wait_gone(office, 5.0)
