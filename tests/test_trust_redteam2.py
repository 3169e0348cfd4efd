"""Red-team round 2 on the trust layer (issue 23): each test performs the attack.

1. a folder of ~300,000 agent-written names walked with a small ``max_entries`` must be refused
   without the harness first holding the whole listing in memory (:func:`pptarena.safeio.walk_tree`);
2. a program running inside the office's render jail must not fill host memory through the jail's
   ``/tmp``, ``/dev/shm`` or ``/dev`` (:mod:`pptarena.plugins.renderers._office_jail`);
3. a jailed agent worker's workspace archive and stderr must not make the harness grow without bound
   (:mod:`pptarena.run.jail_pool`, :mod:`pptarena.run.jail_worker`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WALK_CHILD = r"""
import resource, sys
from pptarena.safeio import UnsafeFileError, walk_tree
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
seen = 0
try:
    for _ in walk_tree(sys.argv[1], max_entries=10_000):
        seen += 1
except UnsafeFileError:
    pass
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before, seen)
"""


def _many_files(folder: Path, n: int) -> None:
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = os.O_CREAT | os.O_WRONLY | os.O_EXCL
        for i in range(n):
            os.close(os.open(f"f{i:07d}", flags, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


@pytest.fixture
def shm_dir(tmp_path):
    """A fresh folder on tmpfs (``/dev/shm``) when there is one (creating names there is fast)."""
    base = Path("/dev/shm")
    if not base.is_dir() or not os.access(base, os.W_OK):
        yield tmp_path
        return
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="pptarena-redteam-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_walk_refuses_a_huge_folder_without_loading_its_listing(shm_dir):
    """Attack: 300,000 empty files in one folder; a walk capped at 10,000 names used to list and sort
    all 300,000 (tens of MB) before refusing. Now it stops reading at the cap."""
    _many_files(shm_dir / "crowd", 300_000)
    out = subprocess.run(
        [sys.executable, "-c", WALK_CHILD, str(shm_dir / "crowd")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    growth_kb, seen = int(out[0]), int(out[1])
    assert seen <= 10_000
    assert growth_kb < 12 * 1024, f"peak RSS grew {growth_kb} KB walking a capped folder"
