"""Which isolation this machine gives untrusted code, and the bubblewrap command that applies it.

Untrusted code (model-written programs, rubric leaves, CLI agents, LibreOffice on hostile
decks) runs under `bubblewrap <https://github.com/containers/bubblewrap>`_ where it works:

- new PID, mount, IPC, UTS, cgroup and (unless network is asked for) network namespaces;
- a new user namespace with every capability dropped and no further user namespaces;
- a root file system that is an empty tmpfs holding only read-only binds of what the code
  needs (``/usr`` and the library folders, a few files of ``/etc``, fonts, the Python
  interpreter and, of site-packages, only the distributions the code may import:
  :func:`python_view`) plus the paths the caller names;
- a size-limited tmpfs as its working directory, HOME and TMPDIR (the disk quota), a read-only
  ``/dev`` and a small ``/dev/shm``;
- ``--die-with-parent`` and ``--new-session``: when the harness dies or kills bwrap, every
  process of the sandbox dies with it (PID 1 of the namespace is bwrap's reaper).

:func:`pptarena.trust.sandbox.isolation_level` says what is in force here: ``"bwrap"``, or
``"unshare"`` / ``"rlimits"`` for the weaker fallbacks of :mod:`pptarena.trust.sandbox` when bubblewrap
is missing or user namespaces do not work. ``PPTARENA_SANDBOX=off`` forces the fallback (for debugging only).

Why it is long: it builds the whole view a bubblewrap sandbox gets: the system folders and ``/etc``
files, the Python view (which installed distributions the code may import, found from their metadata and
requirements), and the staging of bind sources for the ``uid`` limit level. The Python view
(:class:`PythonView`, :func:`distribution_closure`, :func:`python_view`) could move to a module of its
own (not done yet).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import site
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
# /dev is bubblewrap's own tmpfs, of no size limit (half the RAM): it is made read-only (its device
# nodes stay usable) and /dev/shm (POSIX shared memory, multiprocessing's semaphores) a tmpfs of this
# many MB (or the jail's tmpfs size when smaller).
SHM_MB = 64
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
    :param python: show the Python interpreter and the libraries of ``python_view`` (by default
        :func:`python_view`'s: python-pptx, lxml, Pillow, XlsxWriter and their requirements).
    """

    workdir: Path
    tmpfs_mb: int = 512
    workdir_host: Path | None = None
    read_only: Sequence[Path] = ()
    writable: Sequence[Path] = ()
    files: dict[str, Path] = field(default_factory=dict)
    network: bool = False
    python: bool = True  # bind the interpreter and the libraries of ``python_view`` (see below)
    python_view: PythonView | None = None  # what of Python to show; None: python_view() (model programs)


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


#: What a model-written program may import (python-pptx and the libraries it is written with);
#: each distribution's requirements come too (python-pptx needs typing_extensions).
CODE_DISTRIBUTIONS: tuple[str, ...] = ("python-pptx", "lxml", "Pillow", "XlsxWriter")
#: What rubric leaves may import: the above and numpy (one published PPT-Eval leaf imports it).
RUBRIC_DISTRIBUTIONS: tuple[str, ...] = (*CODE_DISTRIBUTIONS, "numpy")
#: The parts of pptarena's core package rubric leaves need: ``ppt_diff`` is rebuilt in the sandbox
#: from ``pptarena.deck.ppteval_items`` (or ``pptarena.deck.ppteval``). Never ``pptarena.plugins``.
#: ``deck/read.py`` reads files through ``trust/safeio.py``; ``__init__.py`` needs ``_imports.py``.
RUBRIC_CORE_PARTS: tuple[str, ...] = (
    "__init__.py",
    "_version.py",
    "_imports.py",
    "errors.py",
    "trust/__init__.py",
    "trust/safeio.py",
    "deck",
)

_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class PythonView:
    """What of the Python installation a sandbox sees (see :func:`python_view`).

    :param read_only: host paths bound read-only at the same path (the interpreter, its standard
        library, and each allowed distribution's top-level packages, modules and metadata).
    :param masked: folders (site-packages inside a bound prefix) hidden under an empty read-only
        tmpfs, so only the distributions bound into them are visible.
    :param placed: ``(host path, path inside)`` read-only binds at another path (pptarena's core
        parts, placed into site-packages so ``import pptarena`` finds them without the editable
        install's import hook).
    """

    read_only: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()
    placed: tuple[tuple[Path, Path], ...] = ()


def _canonical(name: str) -> str:
    """A distribution name as packaging compares them (``Foo_Bar`` = ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: Any, extras: frozenset[str] = frozenset()) -> list[tuple[str, frozenset[str]]]:
    """The distributions ``dist`` requires, each with the extras asked of it: its plain requirements
    and, for each of ``extras``, that extra's (the ``mcp`` SDK needs ``pyjwt[crypto]``, so
    ``cryptography``)."""
    wanted = ["", *sorted(extras)]
    out: list[tuple[str, frozenset[str]]] = []
    for text in dist.requires or []:
        try:
            from packaging.requirements import Requirement

            req = Requirement(text)
        except Exception:  # noqa: BLE001 - packaging missing or an odd line: a plain parse
            spec, _, marker = text.partition(";")
            match = _REQUIREMENT_NAME.match(spec)
            if match and "extra" not in marker:
                out.append((match.group(1), frozenset()))
            continue
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in wanted):
            continue
        out.append((req.name, frozenset(req.extras)))
    return out


def distribution_closure(names: Sequence[str]) -> list[Any]:
    """The installed distributions ``names`` and everything they require, extras a requirement asks
    for included (``pyjwt[crypto]`` brings ``cryptography``), each once; missing ones are skipped."""
    from importlib import metadata

    seen: dict[str, Any] = {}
    extras_done: dict[str, frozenset[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(n, frozenset()) for n in names]
    while todo:
        name, extras = todo.pop()
        key = _canonical(name)
        done = extras_done.get(key)
        if done is not None and extras <= done:
            continue
        dist = seen.get(key)
        if dist is None:
            try:
                dist = metadata.distribution(name)
            except metadata.PackageNotFoundError:
                continue
            seen[key] = dist
        extras_done[key] = (done or frozenset()) | extras
        requirements = _requirements(dist, extras)
        if done is not None:  # only what the new extras add
            requirements = [r for r in requirements if r not in _requirements(dist, done)]
        todo.extend(requirements)
    return list(seen.values())


def distribution_paths(names: Sequence[str]) -> list[Path]:
    """The installed files of distributions ``names`` and of everything they require, as top-level
    entries of their site-packages folder (package folders, single modules, ``*.dist-info``, shared
    library folders such as ``pillow.libs``), found from each distribution's metadata (``RECORD``).

    A byte-code file in a top-level ``__pycache__`` is listed itself, never the folder (which holds
    other distributions' files too). Distributions that are not installed are skipped.
    """
    paths: set[Path] = set()
    for dist in distribution_closure(names):
        root = Path(dist.locate_file(""))
        for item in dist.files or []:
            parts = Path(item).parts
            if not parts or parts[0] == "..":
                continue  # console scripts and data outside site-packages
            entry = root / parts[0] if parts[0] != "__pycache__" else root / Path(item)
            if entry.exists():
                paths.add(entry)
    return sorted(paths)


def site_dirs() -> list[Path]:
    """Every site-packages folder of this interpreter and of its base installation."""
    import sysconfig

    dirs = {Path(p) for p in site.getsitepackages()}
    dirs.add(Path(site.getusersitepackages()))
    for base in {sys.base_prefix, sys.base_exec_prefix, sys.prefix}:
        for key in ("purelib", "platlib"):
            dirs.add(Path(sysconfig.get_paths(vars={"base": base, "platbase": base})[key]))
    return sorted(d for d in dirs if d.is_dir())


@functools.cache
def python_view(
    distributions: tuple[str, ...] = CODE_DISTRIBUTIONS, core_parts: tuple[str, ...] = ()
) -> PythonView:
    """The minimal view of the Python installation for code that imports ``distributions``.

    The sandbox sees the interpreter (a virtual environment's ``pyvenv.cfg`` and executable, the base
    installation's prefix with its site-packages masked), the files of ``distributions`` and their
    requirements (:func:`distribution_paths`), and, when ``core_parts`` names any, those entries of
    pptarena's core package placed at ``<site-packages>/pptarena/``. Nothing else of
    site-packages, never ``pptarena.plugins`` (datasets, other plugins, their package data).
    Works for an editable install (the core found through its import hook) and a wheel.
    """
    import importlib.util
    import sysconfig

    read_only: set[Path] = set()
    exe = Path(sys.executable)
    read_only.add(exe)
    if sys.prefix != sys.base_prefix:
        read_only.add(Path(sys.prefix) / "pyvenv.cfg")
    prefixes = {Path(sys.base_prefix), Path(sys.base_exec_prefix)}
    try:
        prefixes.add(exe.resolve().parent.parent)  # the real interpreter's prefix behind a venv symlink
    except OSError:
        pass
    read_only |= {p for p in prefixes if str(p) != "/"}
    bound = [*read_only, *(Path(d) for d in SYSTEM_DIRS)]
    masked = [d for d in site_dirs() if any(d != b and d.is_relative_to(b) for b in bound)]
    read_only |= set(distribution_paths(distributions))
    placed: list[tuple[Path, Path]] = []
    if core_parts:
        spec = importlib.util.find_spec("pptarena")  # located, not imported
        source = Path(next(iter(spec.submodule_search_locations or []))) if spec else None
        inside = Path(sysconfig.get_paths()["purelib"]) / "pptarena"
        for part in core_parts:
            if source is not None and part != "plugins" and (source / part).exists():
                placed.append((source / part, inside / part))
    return PythonView(
        read_only=tuple(sorted(p for p in read_only if p.exists())),
        masked=tuple(masked),
        placed=tuple(placed),
    )


def python_paths(distributions: Sequence[str] = CODE_DISTRIBUTIONS) -> list[Path]:
    """Host paths bound read-only for code that imports ``distributions``: the interpreter and those
    distributions' files (the ``read_only`` part of :func:`python_view`; use the view itself to also
    hide the site-packages folders a bound prefix contains).
    """
    return list(python_view(tuple(distributions)).read_only)


def scratch_mounts(tmp_mb: int) -> list[str]:
    """bwrap flags for a jail's memory-backed folders: bubblewrap's ``/dev``, a ``/dev/shm`` of
    :data:`SHM_MB` (or ``tmp_mb`` when smaller) and a ``/tmp`` of ``tmp_mb`` megabytes, so a program
    writing there stops with ``ENOSPC`` instead of filling host memory. ``/dev`` itself has no size:
    end the command line with :data:`DEV_READ_ONLY` (after every mount below ``/dev``)."""
    mb = 1024 * 1024
    shm_mb = max(1, min(SHM_MB, tmp_mb))
    return [
        "--dev",
        "/dev",
        "--size",
        str(shm_mb * mb),
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(tmp_mb * mb),
        "--tmpfs",
        "/tmp",
    ]


#: Goes after :func:`scratch_mounts`' flags and every other mount: ``/dev`` read-only (its nodes work).
DEV_READ_ONLY: tuple[str, ...] = ("--remount-ro", "/dev")


def command(jail: Jail, argv: Sequence[str]) -> list[str]:
    """The full bwrap command line running ``argv`` in ``jail`` (requires :func:`base_flags`)."""
    flags = base_flags()
    exe = bwrap_executable()
    if flags is None or exe is None:
        raise RuntimeError("bubblewrap is not usable on this machine")
    out = [exe, *flags]
    if jail.network:
        out.append("--share-net")
    out += ["--die-with-parent", "--new-session", "--proc", "/proc", *scratch_mounts(jail.tmpfs_mb)]
    binds: list[tuple[str, str, str]] = []  # (flag, host path, path inside)
    for d in SYSTEM_DIRS + ETC_PATHS:
        p = Path(d)
        if p.is_symlink():
            out += ["--symlink", os.readlink(p), d]
        elif p.exists():
            binds.append(("--ro-bind", d, d))
    masks: list[str] = []
    if jail.python:
        view = jail.python_view if jail.python_view is not None else python_view()
        binds += [("--ro-bind", str(p), str(p)) for p in view.read_only]
        binds += [("--ro-bind", str(host), str(inside)) for host, inside in view.placed]
        masks = [str(m) for m in view.masked]
        binds += [("--tmpfs", "", m) for m in masks]
    binds += [("--ro-bind", str(Path(p)), str(Path(p))) for p in jail.read_only]
    for kind, host, inside in sorted(set(binds), key=lambda b: (b[2].count("/"), b[2], b[0] == "--ro-bind")):
        out += [kind, inside] if kind == "--tmpfs" else [kind, host, inside]
    if jail.workdir_host is not None:
        out += ["--bind", str(jail.workdir_host), str(jail.workdir)]
    else:
        out += ["--size", str(jail.tmpfs_mb * 1024 * 1024), "--tmpfs", str(jail.workdir)]
    for p in jail.writable:
        out += ["--bind", str(p), str(p)]
    for inside, host in jail.files.items():
        out += ["--ro-bind", str(host), str(jail.workdir / inside)]
    for m in masks:
        out += ["--remount-ro", m]
    out += [*DEV_READ_ONLY, "--remount-ro", "/", "--chdir", str(jail.workdir), "--", *argv]
    return out


_PATH_BINDS = ("--ro-bind", "--bind")


def staged_binds(cmd: Sequence[str], folder: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """A bwrap command line (from :func:`command`) whose bind sources are mount points in ``folder``.

    For running bubblewrap as an unprivileged uid (the ``uid`` level of :mod:`pptarena.trust.limits`) that
    may not be able to walk to the sources (an interpreter under ``/root``, a private run folder):
    the n-th source becomes ``folder/n`` (an empty folder or file made here), and
    :func:`mount_staged`, run as root in the child, binds each source there in a mount namespace of
    the child's own (nothing changes on the host; the mounts end with the sandbox). ``folder`` must be
    traversable by the uid (mode 0711). Returns ``(command, [(source, mount point)])``.
    """
    out: list[str] = []
    mounts: list[tuple[str, str]] = []
    i = 0
    while i < len(cmd):
        arg = cmd[i]
        if arg == "--":
            out += cmd[i:]
            break
        if arg in _PATH_BINDS and i + 2 < len(cmd):
            source = cmd[i + 1]
            point = folder / str(len(mounts))
            if os.path.isdir(source):
                point.mkdir(mode=0o755)
            else:
                point.touch(mode=0o644)
            mounts.append((source, str(point)))
            out += [arg, str(point), cmd[i + 2]]
            i += 3
            continue
        out.append(arg)
        i += 1
    return out, mounts


def mount_staged(mounts: Sequence[tuple[str, str]]) -> None:
    """In a child process running as root, before it drops to the sandbox's uid: enter a mount
    namespace of its own and bind each source on its mount point (see :func:`staged_binds`).
    Raises OSError when a step fails (the spawn then fails: nothing runs with a partial view).
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    clone_newns, ms_bind, ms_rec, ms_private = 0x00020000, 4096, 16384, 1 << 18
    if libc.unshare(clone_newns) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    if libc.mount(b"none", b"/", None, ms_rec | ms_private, None) != 0:
        raise OSError(ctypes.get_errno(), "making mounts private failed")
    for source, point in mounts:
        if libc.mount(source.encode(), point.encode(), None, ms_bind | ms_rec, None) != 0:
            raise OSError(ctypes.get_errno(), f"bind of {source} failed")
