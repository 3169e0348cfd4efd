"""Headless Chromium for report tests and benchmarks: print a page's DOM after its scripts ran."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HEADLESS_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""The flags every browser test launches the system Chromium with (Playwright's ``args``)."""


def dump_dom(url: str, profile: Path, timeout: float = 120) -> str:
    """The DOM of ``url`` once its scripts ran (``--virtual-time-budget``), from a private profile."""
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-sync",
        "--disable-background-networking",
        "--disable-component-update",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    return subprocess.run(cmd, capture_output=True, timeout=timeout, check=False).stdout.decode(
        errors="replace"
    )
