"""Which isolation this machine gives untrusted code, and the bubblewrap command that applies it.

Untrusted code (model-written programs, rubric leaves, CLI agents, LibreOffice on hostile
decks) runs under `bubblewrap <https://github.com/containers/bubblewrap>`_ where it works:

- new PID, mount, IPC, UTS, cgroup and (unless network is asked for) network namespaces;
- a new user namespace with every capability dropped and no further user namespaces;
- a root file system that is an empty tmpfs holding only read-only binds of what the code
  needs (``/usr`` and the library folders, a few files of ``/etc``, fonts, the Python prefix,
  site-packages and pptarena's own packages) plus the paths the caller names;
- a size-limited tmpfs as its working directory, HOME and TMPDIR (the disk quota);
- ``--die-with-parent`` and ``--new-session``: when the harness dies or kills bwrap, every
  process of the sandbox dies with it (PID 1 of the namespace is bwrap's reaper).

:func:`pptarena.sandbox.isolation_level` says what is in force here: ``"bwrap"``, or
``"unshare"`` / ``"rlimits"`` for the weaker fallbacks of :mod:`pptarena.sandbox` when bubblewrap
is missing or user namespaces do not work. ``PPTARENA_SANDBOX=off`` forces the fallback (for debugging only).
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

BWRAP_LEVEL = "bwrap"

# Folders bound read-only in every sandbox when they exist (symlinks like /bin -> usr/bin are kept).
SYSTEM_DIRS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt/libreoffice",
    "/var/cache/fontconfig",
)
# Single files or folders of /etc a program may need (dynamic loader, fonts, TLS, name resolution).
ETC_PATHS = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/fonts",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/mime.types",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/libreoffice",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/java-17-openjdk",
)
# bwrap's own flags, in the order tried: the first that runs `true` here is used.
BASE_FLAGS: tuple[tuple[str, ...], ...] = (
    ("--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
    ("--unshare-all", "--cap-drop", "ALL"),  # setuid bwrap or kernels without nested-userns control
)


@dataclass(frozen=True)
class Jail:
    """What one bubblewrap sandbox may see.

    :param workdir: path of the working directory inside the sandbox (a fresh tmpfs of
        ``tmpfs_mb`` megabytes unless ``workdir_host`` is given, then that host folder, writable).
    :param read_only: host paths bound read-only at the same path.
    :param writable: host paths bound writable at the same path.
    :param files: ``{path inside: host path}`` bound read-only (e.g. into the tmpfs workdir).
    """

    workdir: Path
    tmpfs_mb: int = 512
    workdir_host: Path | None = None
    read_only: Sequence[Path] = ()
    writable: Sequence[Path] = ()
    files: dict[str, Path] = field(default_factory=dict)
    network: bool = False
    python: bool = True  # bind the Python prefix, site-packages and pptarena's packages


def bwrap_executable() -> str | None:
    """The ``bwrap`` program, or None off Linux, when ``PPTARENA_SANDBOX`` is off, or not installed."""
    if not sys.platform.startswith("linux") or os.environ.get("PPTARENA_SANDBOX", "").lower() in (
        "off",
        "0",
        "no",
    ):
        return None
    return shutil.which("bwrap")


@functools.cache
def base_flags() -> tuple[str, ...] | None:
    """bwrap's namespace flags that work on this machine, or None when bubblewrap cannot run here."""
    exe = bwrap_executable()
    if exe is None:
        return None
    for flags in BASE_FLAGS:
        try:
            probe = subprocess.run(
                [exe, *flags, "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "true"],
                capture_output=True,
                timeout=20,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return flags
    return None


def python_paths() -> list[Path]:
    """Folders the Python interpreter and pptarena need: prefixes, site-packages, pptarena's packages."""
    import importlib.util

    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix)}
    for entry in [*site.getsitepackages(), site.getusersitepackages()]:
        paths.add(Path(entry))
    for package in ("pptarena", "pptarena.plugins"):  # located, not imported: the core never imports plugins
        spec = importlib.util.find_spec(package)
        if spec is not None:
            paths.update(Path(p) for p in spec.submodule_search_locations or [])
    exe = Path(sys.executable)
    paths.add(exe.parent)
    try:
        paths.add(exe.resolve().parent.parent)  # the real interpreter's prefix behind a venv symlink
    except OSError:
        pass
    return sorted(p for p in paths if p.exists() and str(p) != "/")


def command(jail: Jail, argv: Sequence[str]) -> list[str]:
    """The full bwrap command line running ``argv`` in ``jail`` (requires :func:`base_flags`)."""
    flags = base_flags()
    exe = bwrap_executable()
    if flags is None or exe is None:
        raise RuntimeError("bubblewrap is not usable on this machine")
    out = [exe, *flags]
    if jail.network:
        out.append("--share-net")
    out += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"]
    out += ["--size", str(jail.tmpfs_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    binds: list[tuple[str, str]] = []
    for d in SYSTEM_DIRS + ETC_PATHS:
        p = Path(d)
        if p.is_symlink():
            out += ["--symlink", os.readlink(p), d]
        elif p.exists():
            binds.append(("--ro-bind", d))
    if jail.python:
        binds += [("--ro-bind", str(p)) for p in python_paths()]
    binds += [("--ro-bind", str(Path(p))) for p in jail.read_only]
    for kind, path in sorted(set(binds), key=lambda b: (b[1].count("/"), b[1])):
        out += [kind, path, path]
    if jail.workdir_host is not None:
        out += ["--bind", str(jail.workdir_host), str(jail.workdir)]
    else:
        out += ["--size", str(jail.tmpfs_mb * 1024 * 1024), "--tmpfs", str(jail.workdir)]
    for p in jail.writable:
        out += ["--bind", str(p), str(p)]
    for inside, host in jail.files.items():
        out += ["--ro-bind", str(host), str(jail.workdir / inside)]
    out += ["--remount-ro", "/", "--chdir", str(jail.workdir), "--", *argv]
    return out
