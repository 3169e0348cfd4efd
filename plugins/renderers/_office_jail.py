"""What the office runs inside: no network and a memory cap (issue 14, rows 5 and 6).

:func:`office_prefix` is put in front of ``soffice.bin`` for one-shot and warm renders:

- ``bwrap --unshare-user --unshare-net --die-with-parent --dev-bind / /`` where bubblewrap works: the
  office has no network at all (a linked ``http://`` picture cannot make it send a request) and dies
  with whoever started it. The file system stays visible (the warm office opens decks from many
  folders), so external links are also removed from the copy it renders (see
  :mod:`pptarena.render_guard`);
- ``prlimit --as=<bytes>``: an address-space cap (``PPTARENA_OFFICE_MEMORY_MB``, default 3072), so a
  deck that drives the office to many gigabytes fails as a render error instead of exhausting the host.

``PPTARENA_SANDBOX=off`` drops the bubblewrap part (as for the rest of the sandbox).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

DEFAULT_MEMORY_MB = 3072


@functools.cache
def _bwrap_prefix() -> tuple[str, ...]:
    from pptarena.isolation import bwrap_executable

    exe = bwrap_executable()
    if not exe:
        return ()
    prefix = (exe, "--unshare-user", "--unshare-net", "--die-with-parent", "--dev-bind", "/", "/")
    try:
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return prefix if ok else ()


def memory_mb() -> int:
    """The office's address-space cap in MB."""
    try:
        return max(512, int(os.environ.get("PPTARENA_OFFICE_MEMORY_MB", DEFAULT_MEMORY_MB)))
    except ValueError:
        return DEFAULT_MEMORY_MB


def office_prefix() -> list[str]:
    """The command prefix isolating the office here (may be empty on other systems)."""
    out = list(_bwrap_prefix())
    prlimit = shutil.which("prlimit") if sys.platform.startswith("linux") else None
    if prlimit:
        out += [prlimit, f"--as={memory_mb() * 1024 * 1024}", "--"]
    return out


def network_isolated() -> bool:
    """True when the office runs without network here."""
    return bool(_bwrap_prefix())
