"""What Impress runs in for the GUI agent: its environment, its jail, and how its files come back.

- :func:`office_env`: the office's whole environment (display, home, locale, a fixed ``PATH``):
  none of the harness's variables (model API keys, judge secrets) reach it;
- :func:`jailed_impress`: bubblewrap with no network (so no abstract X sockets of other displays),
  the system folders, its own work and deck folders, the read-only lockdown layer
  (:mod:`.lockdown`) and only its own X socket;
- :func:`saved_package`: the saved deck is checked without following a link; hand-back copies use
  :func:`pptarena.trust.safeio.copy_regular` (a saved deck or settings file swapped for a link is refused).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from pptarena.trust import safeio

OFFICE_ENV_KEYS = ("LANG", "LANGUAGE", "LC_ALL", "TZ")
"""Variables of the harness's environment Impress inherits (plus every ``LC_*``); nothing else."""
OFFICE_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_DECK_BYTES = 1 << 30
MAX_SETTINGS_BYTES = 16 << 20


def office_env(display: str, home: Path) -> dict[str, str]:
    """The whole environment Impress runs with: its display, its home, locale and a fixed PATH.

    The harness's environment holds model API keys and judge secrets; a macro (or any bug) in the
    office that reads its environment must find none of them, so nothing is inherited but locale.
    """
    env = {k: v for k, v in os.environ.items() if k in OFFICE_ENV_KEYS or k.startswith("LC_")}
    env.update(
        {
            "DISPLAY": display,
            "HOME": str(home),
            "TMPDIR": "/tmp",
            "PATH": OFFICE_PATH,
            "SAL_USE_VCLPLUGIN": "gen",
        }
    )
    return env


def x_socket(display: str) -> Path:
    """The Unix socket of X display ``":N"`` (``/tmp/.X11-unix/XN``)."""
    return Path("/tmp/.X11-unix") / f"X{display.lstrip(':').split('.')[0]}"


def saved_package(path: Path) -> bool:
    """True when ``path`` is a regular file (not a link, FIFO or device) holding a zip package."""
    try:
        fd = safeio.open_regular(path, MAX_DECK_BYTES)
    except (OSError, safeio.UnsafeFileError):
        return False
    with os.fdopen(fd, "rb") as fh:
        return zipfile.is_zipfile(fh)


def jailed_impress(
    command: list[str], workdir: Path, deck_dir: Path, *, display: str, lock: Path | None = None
) -> tuple[list[str], str]:
    """Impress under bubblewrap where it works: no network (so no abstract X sockets either), and of
    the host only the system folders, its own work folder, the deck's folder (writable: Impress saves
    there), the lockdown layer (read-only) and **its own** X socket (not the whole ``/tmp/.X11-unix``).
    Its file dialogs cannot browse the run folder, the dataset or the home folder.
    Returns ``(command, isolation)``; unchanged with ``"none"`` where bubblewrap is unusable.
    """
    from pptarena.trust import isolation

    if isolation.base_flags() is None:
        return command, "none"
    socket = x_socket(display)
    read_only = [socket] if display and socket.exists() else []
    files: dict[str, Path] = {}
    if lock is not None:
        lock = Path(lock)
        if lock.is_relative_to(workdir):  # bound read-only over its own place in the writable folder
            files[str(lock.relative_to(workdir))] = lock
        else:
            read_only.append(lock)
    jail = isolation.Jail(
        workdir=workdir,
        workdir_host=workdir,
        writable=[deck_dir] if deck_dir != workdir else [],
        read_only=read_only,
        files=files,
        network=False,
        python=False,
        tmpfs_mb=512,
    )
    return isolation.command(jail, command), isolation.BWRAP_LEVEL
