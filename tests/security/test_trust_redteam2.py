"""Red-team round 2 on the trust layer (issue 23): each test performs the attack.

1. a folder of ~300,000 agent-written names walked with a small ``max_entries`` must be refused
   without the harness first holding the whole listing in memory (:func:`pptarena.trust.safeio.walk_tree`);
2. a program running inside the office's render jail must not fill host memory through the jail's
   ``/tmp``, ``/dev/shm`` or ``/dev`` (:mod:`pptarena.plugins.renderers.libreoffice.office_jail`);
3. a jailed agent worker's workspace archive and stderr must not make the harness grow without bound
   (:mod:`pptarena.run.jail.jail_pool`, :mod:`pptarena.run.jail.jail_worker`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WALK_CHILD = r"""
import resource, sys
from pptarena.trust.safeio import UnsafeFileError, walk_tree
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


RENDER_FLOOD = r"""
for target in /tmp/x /dev/shm/y /dev/z; do
  dd if=/dev/zero of=$target bs=1M count=2000 2>/dev/null
  echo "$target $(stat -c %s $target 2>/dev/null || echo none)"
  rm -f $target
done
"""


def test_render_jail_cannot_fill_host_memory_through_its_tmpfs():
    """Attack: code running in the office's jail writes 2000 MB into ``/tmp``, ``/dev/shm`` and ``/dev``
    (all tmpfs, i.e. host memory, not counted in the office's address-space cap). ``/tmp`` and
    ``/dev/shm`` stop at their size; ``/dev`` takes nothing."""
    from pptarena.plugins.renderers.libreoffice import office_jail

    if not office_jail.filesystem_isolated():
        pytest.skip("bubblewrap does not work here: the office runs without its jail")
    cmd = office_jail.jail_command(["/bin/sh", "-c", RENDER_FLOOD], writable=[])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=office_jail.office_env())
    sizes = dict(line.split() for line in done.stdout.splitlines())
    mb = 1024 * 1024
    assert set(sizes) == {"/tmp/x", "/dev/shm/y", "/dev/z"}, done.stdout + done.stderr
    assert sizes["/tmp/x"] != "none" and int(sizes["/tmp/x"]) <= office_jail.tmp_mb() * mb
    assert int(sizes["/tmp/x"]) < 2000 * mb
    assert sizes["/dev/shm/y"] != "none" and int(sizes["/dev/shm/y"]) <= 64 * mb
    assert sizes["/dev/z"] == "none"  # /dev is read-only: not even an empty file


PAX_CHILD = r"""
import resource, sys, time
from pathlib import Path
from pptarena.run.jail.jail_pool import unpack_workspace
archive = Path(sys.argv[1]).read_text()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.monotonic()
note = unpack_workspace(archive, Path(sys.argv[2]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before, round(time.monotonic() - start, 2))
print(note)
"""


def _pax_bomb(comment_mb: int) -> str:
    """A base64 tar.gz whose first member carries a PAX ``comment`` of ``comment_mb`` MB (a few hundred
    KB compressed), then one small file."""
    import base64
    import gzip
    import io
    import tarfile

    n = comment_mb * 1024 * 1024
    body = b" comment="
    length = len(body) + n + 1
    length += len(str(length + len(str(length))))  # the record's length counts its own digits
    record_head = str(length).encode() + body
    assert len(record_head) + n + 1 == length
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, length
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as gz:
        gz.write(pax.tobuf(format=tarfile.USTAR_FORMAT))
        gz.write(record_head)
        chunk = b"x" * (1024 * 1024)
        for _ in range(comment_mb):
            gz.write(chunk)
        gz.write(b"\n" + b"\0" * (-length % 512))
        small = tarfile.TarInfo("a.txt")
        small.size = 2
        gz.write(small.tobuf(format=tarfile.USTAR_FORMAT) + b"hi" + b"\0" * 510 + b"\0" * 1024)
    return base64.b64encode(raw.getvalue()).decode("ascii")


def test_a_workspace_archive_with_a_huge_pax_header_is_refused_cheaply(tmp_path):
    """Attack: a ~300 KB archive whose PAX header holds a 300 MB comment; tarfile reads (and parses)
    such a header whole, so the harness grew by ~900 MB. Now a header over the cap is refused on
    its size, before it is read."""
    archive = tmp_path / "bomb.b64"
    archive.write_text(_pax_bomb(300))
    assert archive.stat().st_size < 2 * 1024 * 1024
    (tmp_path / "pair").mkdir()
    out = subprocess.run(
        [sys.executable, "-c", PAX_CHILD, str(archive), str(tmp_path / "pair")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.splitlines()
    growth_kb = int(out[0].split()[0])
    assert growth_kb < 64 * 1024, f"unpacking grew the harness by {growth_kb} KB ({out})"
    assert "header" in out[1], out


def _many_members(n: int) -> str:
    import base64
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=1) as tar:
        for i in range(n):
            info = tarfile.TarInfo(f"d{i}" if i % 2 else f"e{i}")
            if i % 2:
                info.type = tarfile.DIRTYPE
            tar.addfile(info, io.BytesIO(b""))
    return base64.b64encode(raw.getvalue()).decode("ascii")


def test_a_workspace_archive_of_empty_files_and_folders_is_capped_in_names(tmp_path):
    """Attack: an archive of 0 bytes of content but 12,000 empty files and folders (inodes in the
    pair's folder, unbounded before: only bytes were counted). Now every member counts (10,000 at most)."""
    from pptarena.run.jail.jail_pool import unpack_workspace

    dest = tmp_path / "pair"
    dest.mkdir()
    note = unpack_workspace(_many_members(12_000), dest)
    assert len(os.listdir(dest)) <= 10_000
    assert note and "entries" in note


STDERR_CHILD = r"""
import os, resource, sys, time
from pathlib import Path
from pptarena.run.jail.jail_pool import JailWorker
script = (
    'echo "{\\"ready\\": true}"; head -c 600000000 /dev/zero >&2; echo THE END >&2;'
    ' echo "{\\"op\\": \\"done\\"}"'
)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
w = JailWorker(["/bin/sh", "-c", script], dict(os.environ))
message = w.read(time.monotonic() + 120)
largest = 0
for fd in os.listdir("/proc/self/fd"):
    try:
        st = os.stat(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    largest = max(largest, st.st_blocks * 512)
w.take_stderr(Path(sys.argv[1]))
w.retire()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(message, largest, after - before)
"""


def test_a_jailed_workers_stderr_flood_costs_the_harness_no_disk_or_memory(tmp_path):
    """Attack: the worker prints 600 MB on stderr during a pair. It went to a host temporary file of
    that size; now it goes through a pipe whose last ``MAX_STDERR_BYTES`` are kept."""
    from pptarena.run.jail.jail_pool import MAX_STDERR_BYTES

    kept = tmp_path / "agent.stderr.txt"
    out = subprocess.run(
        [sys.executable, "-c", STDERR_CHILD, str(kept)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    message, largest, growth_kb = out.stdout.rsplit(None, 2)
    assert "done" in message
    assert int(largest) < 16 * 1024 * 1024, f"an open file of the harness holds {largest} bytes"
    assert int(growth_kb) < 64 * 1024, f"the harness grew by {growth_kb} KB"
    data = kept.read_bytes()
    assert len(data) <= MAX_STDERR_BYTES and data.endswith(b"THE END\n")
