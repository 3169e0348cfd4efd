"""What the office runs inside: a mount namespace of its own, no network, a scrubbed environment, a
memory cap (issue 14, rows 5 and 6; issue 23, item 5).

:func:`jail_command` wraps the office (one-shot) or the UNO bridge that starts it (warm) where
bubblewrap works:

- new user, PID, mount, IPC, UTS and network namespaces, every capability dropped,
  ``--die-with-parent``: no network at all (a linked ``http://`` picture cannot make it send a request)
  and nothing outlives the renderer;
- a file system that is an empty tmpfs holding **only** read-only binds of the system folders
  (:data:`pptarena.trust.isolation.SYSTEM_DIRS` and the few files of ``/etc`` in
  :data:`pptarena.trust.isolation.ETC_PATHS`, LibreOffice's own configuration among them), the bridge script
  (read-only, at ``/pptarena/``), the uno Python's prefix when it is not a system one, and the folders
  it works in, writable: its **profile** and its **scratch folder**, which holds only the private copy
  of the deck being rendered and the PDF written back. ``/root``, home folders, the dataset cache, the
  run folder and the rest of ``/tmp`` are not there, so a reference the render guard
  (:mod:`pptarena.trust.render_guard`) missed still reads nothing of the host;
- an environment of its own (:func:`office_env`): locale, a fixed ``PATH``, ``HOME=/tmp``; none of the
  harness's variables (model API keys);
- memory-backed folders of a fixed size: ``/tmp`` (the office's ``HOME`` and ``TMPDIR``) a tmpfs of
  :func:`tmp_mb` (``PPTARENA_OFFICE_TMP_MB``, default 512), ``/dev/shm`` one of 64 MB, ``/dev``
  read-only (:func:`pptarena.trust.isolation.scratch_mounts`), so nothing running in the jail can fill host
  memory by writing files there (it gets ``ENOSPC``);
- ``prlimit --as=<bytes>`` (:func:`memory_prefix`) in front of ``soffice.bin``: an address-space cap
  (``PPTARENA_OFFICE_MEMORY_MB``, default 3072), so a deck that drives the office to many gigabytes
  fails as a render error instead of exhausting the host.

``PPTARENA_SANDBOX=off`` or a machine without working bubblewrap drops the jail (the memory cap and
the render guard stay; :func:`filesystem_isolated` says which is in force).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

DEFAULT_MEMORY_MB = 3072
DEFAULT_TMP_MB = 512
INSIDE = Path("/pptarena")
"""Where files the jail needs from pptarena (the UNO bridge script) are bound, read-only."""
OFFICE_ENV_KEYS = ("LANG", "LANGUAGE", "LC_ALL", "TZ")
OFFICE_PATH = "/usr/local/bin:/usr/bin:/bin"
WINDOWS_ENV_KEYS = (
    "SYSTEMROOT",
    "WINDIR",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMFILES",
    "COMSPEC",
)


def memory_mb() -> int:
    """The office's address-space cap in MB."""
    try:
        return max(512, int(os.environ.get("PPTARENA_OFFICE_MEMORY_MB", DEFAULT_MEMORY_MB)))
    except ValueError:
        return DEFAULT_MEMORY_MB


def tmp_mb() -> int:
    """The size in MB of the office's ``/tmp`` (a tmpfs: host memory the address-space cap does not
    count), ``PPTARENA_OFFICE_TMP_MB`` (default 512, at least 64)."""
    try:
        return max(64, int(os.environ.get("PPTARENA_OFFICE_TMP_MB", DEFAULT_TMP_MB)))
    except ValueError:
        return DEFAULT_TMP_MB


def memory_prefix() -> list[str]:
    """``prlimit --as=<bytes> --`` where prlimit exists (Linux), else nothing."""
    prlimit = shutil.which("prlimit") if sys.platform.startswith("linux") else None
    return [prlimit, f"--as={memory_mb() * 1024 * 1024}", "--"] if prlimit else []


def office_prefix() -> list[str]:
    """What goes in front of ``soffice.bin`` itself: the memory cap (the jail wraps the whole command)."""
    return memory_prefix()


def office_env() -> dict[str, str]:
    """The whole environment the office (and the warm bridge) runs with: nothing of the harness's
    but the locale, so a macro or bug reading its environment finds no API key."""
    env = {k: v for k, v in os.environ.items() if k in OFFICE_ENV_KEYS or k.startswith("LC_")}
    if sys.platform.startswith("linux"):
        env.update({"PATH": OFFICE_PATH, "HOME": "/tmp", "TMPDIR": "/tmp"})
    else:  # no jail there: the office runs in the user's own folders and needs the platform's basics
        keep = (*WINDOWS_ENV_KEYS, "PATH", "HOME", "TMPDIR", "USER")
        env.update({k: v for k, v in os.environ.items() if k.upper() in keep})
    return env


def _system_binds() -> list[str]:
    from pptarena.trust.isolation import ETC_PATHS, SYSTEM_DIRS

    out: list[str] = []
    for d in (*SYSTEM_DIRS, *ETC_PATHS):
        p = Path(d)
        if p.is_symlink():
            out += ["--symlink", os.readlink(p), d]
        elif p.exists():
            out += ["--ro-bind", d, d]
    return out


def _bwrap_base() -> list[str] | None:
    from pptarena.trust.isolation import base_flags, bwrap_executable, scratch_mounts

    flags = base_flags()
    exe = bwrap_executable()
    if flags is None or exe is None:
        return None
    return [exe, *flags, "--die-with-parent", "--new-session", "--proc", "/proc", *scratch_mounts(tmp_mb())]


def jail_command(
    argv: Sequence[str],
    *,
    writable: Sequence[Path],
    read_only: Sequence[Path] = (),
    files: Mapping[str, Path] | None = None,
) -> list[str] | None:
    """``argv`` inside the office's own jail (see the module text), or None where bubblewrap is unusable.

    :param writable: folders bound writable at the same path (created when missing): the profile and
        the scratch folder holding the deck copy.
    :param read_only: further host paths bound read-only at the same path.
    :param files: ``{name: host file}`` bound read-only at ``/pptarena/<name>``.
    """
    base = _bwrap_base()
    if base is None:
        return None
    from pptarena.trust.isolation import DEV_READ_ONLY

    out = [*base, *_system_binds()]
    for p in sorted({str(Path(p)) for p in read_only}, key=lambda s: (s.count("/"), s)):
        out += ["--ro-bind", p, p]
    for name, host in (files or {}).items():
        out += ["--ro-bind", str(host), str(INSIDE / name)]
    folders = sorted({os.path.abspath(p) for p in writable}, key=lambda s: (s.count("/"), s))
    for p in folders:
        Path(p).mkdir(parents=True, exist_ok=True)
        out += ["--bind", p, p]
    out += [*DEV_READ_ONLY, "--remount-ro", "/"]
    if folders:
        out += ["--chdir", folders[0]]
    return [*out, "--", *argv]


@functools.cache
def _jail_works() -> bool:
    cmd = jail_command(["true"], writable=[])
    if cmd is None:
        return False
    try:
        return subprocess.run(cmd, capture_output=True, timeout=20, env=office_env()).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def filesystem_isolated() -> bool:
    """True when the office runs in its own mount (and network) namespace here."""
    return _jail_works()


def network_isolated() -> bool:
    """True when the office runs without network here."""
    return _jail_works()


def _outside_system(path: Path) -> bool:
    from pptarena.trust.isolation import SYSTEM_DIRS

    return not any(path == Path(d) or Path(d) in path.parents for d in SYSTEM_DIRS)


def python_read_only(python: str) -> list[Path]:
    """What of ``python`` (the uno interpreter) the jail must show besides the system folders."""
    given, real = Path(os.path.abspath(python)), Path(os.path.realpath(python))
    # <prefix>/bin/python -> <prefix>; a virtual environment's own folder (pyvenv.cfg) and its base
    return sorted({p.parent.parent for p in (given, real) if _outside_system(p)})


def office_read_only(soffice: Path | str) -> list[Path]:
    """The office installation, when it is not in a system folder (``<root>/program/soffice`` →
    ``<root>``; any other layout → the executable's folder)."""
    real = Path(os.path.realpath(soffice))
    root = real.parent.parent if real.parent.name == "program" else real.parent
    return [root] if _outside_system(real) else []
