"""Copying a finished jail's workspace out to the pair folder, through :mod:`pptarena.trust.safeio`.

The workspace is a tmpfs inside the jail's mount namespace. When the launcher reports the CLI's
end, every other process of the jail is dead; the harness then opens the workspace through the
launcher's working directory (``/proc/<launcher>/cwd``: the very folder, however the CLI renamed
or replaced the folders above it, which may sit on the jail's writable ``/tmp``) and copies it with
:func:`pptarena.trust.safeio.copy_tree`: regular files and folders only, links never followed, FIFOs and
devices skipped, size-capped. ``output/`` is copied first within its own cap (``max_output_mb``), so
a workspace full of other files cannot crowd out the deck; the rest within ``keep_mb``. Folders count
too: a part (``output/``, or the workspace as a whole) holding more than :data:`MAX_ENTRIES` files and
folders is not copied at all (30,000 empty folders would otherwise become 30,000 folders of the pair
folder, outside every byte cap).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pptarena.trust.safeio import MAX_DEPTH, TreeCopy, copy_tree

DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
MAX_FILES = 10_000
MAX_ENTRIES = 10_000  # files and folders of output/, and of the whole workspace, copied out


@dataclass
class CopyReport:
    """What the copy-out did: files and bytes copied from ``output/`` and from the rest, and the
    names left out, counted by reason."""

    output_files: int = 0
    output_bytes: int = 0
    other_files: int = 0
    other_bytes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def skip(self, rel: str, why: str) -> None:
        """Count one name left out (the first few are kept as examples)."""
        reason = _reason(why)
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if len(self.examples) < 10:
            self.examples.append(f"{rel}: {why}")


def _reason(why: str) -> str:
    if "link" in why:
        return "link"
    if "not a regular file" in why:
        return "not a regular file"
    if "size limit" in why or "bytes" in why:
        return "over the size cap"
    if "-file limit" in why or "files and folders" in why:
        return "over the file count cap"
    return "unreadable"


def _too_many(folder: int, limit: int = MAX_ENTRIES) -> str | None:
    """Why the open folder ``folder`` is not copied out (more than ``limit`` files and folders), or None.

    Counted while listing, stopping at ``limit``: a folder of millions of empty files is never
    listed (let alone sorted) in full in the harness's memory.
    """
    if _over(folder, limit, [0], 0):
        return f"not copied: more than {limit} files and folders below it"
    return None


def _over(fd: int, limit: int, count: list[int], depth: int) -> bool:
    """True once more than ``limit`` names are counted below the folder ``fd`` (links never followed)."""
    with os.scandir(fd) as entries:
        for entry in entries:
            count[0] += 1
            if count[0] > limit:
                return True
            try:
                is_dir = depth < MAX_DEPTH and entry.is_dir(follow_symlinks=False)
                sub = (
                    os.open(entry.name, DIRECTORY | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd) if is_dir else -1
                )
            except OSError:
                continue
            if sub >= 0:
                try:
                    if _over(sub, limit, count, depth + 1):
                        return True
                finally:
                    os.close(sub)
    return False


def launcher_pid(init_pid: int) -> int | None:
    """The host PID of the jail's launcher: the child of bubblewrap's init that is PID 2 inside."""
    try:
        children = Path(f"/proc/{init_pid}/task/{init_pid}/children").read_text().split()
    except OSError:
        children = [p for p in os.listdir("/proc") if p.isdigit()]
    for pid in children:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(init_pid) and fields.get("NSpid", "").split()[-1:] == ["2"]:
            return int(pid)
    return None


def copy_workspace(init_pid: int, dst: Path, output_mb: int, keep_mb: int) -> CopyReport:
    """Copy the jail's workspace (the launcher's working directory) to the new folder ``dst``.

    :raises OSError: the launcher or its working directory is gone; ``dst`` exists.
    """
    pid = launcher_pid(init_pid)
    if pid is None:
        raise ProcessLookupError("the jail's launcher is gone")
    mb = 1024 * 1024
    report = CopyReport()
    top = os.open(f"/proc/{pid}/cwd", DIRECTORY)
    try:
        os.mkdir(dst, 0o755)
        try:
            out = os.open("output", DIRECTORY | getattr(os, "O_NOFOLLOW", 0), dir_fd=top)
        except OSError:
            out = -1  # no output folder, or a link / file in its place: nothing is taken from it
        if out >= 0:
            try:
                crowded = _too_many(out)
                if crowded:
                    report.skip("output/", crowded)
                else:
                    first = copy_tree(
                        f"/proc/self/fd/{out}", dst / "output", max_files=MAX_FILES, max_bytes=output_mb * mb
                    )
                    report.output_files, report.output_bytes = first.files, first.bytes
                    _skips(report, first, "output/")
            finally:
                os.close(out)
        crowded = _too_many(top)
        if crowded:
            report.skip("./", crowded)
            return report
        rest: TreeCopy = copy_tree(
            f"/proc/self/fd/{top}",
            dst,
            max_files=MAX_FILES,
            max_bytes=keep_mb * mb,
            max_file_bytes=keep_mb * mb,
        )
        report.other_files, report.other_bytes = rest.files, rest.bytes
        # output/ was taken above within its own cap; its names in this second pass do not count
        rest.skipped = [
            (rel, why) for rel, why in rest.skipped if rel != "output" and not rel.startswith("output/")
        ]
        _skips(report, rest, "")
    finally:
        os.close(top)
    return report


def _skips(report: CopyReport, copy: TreeCopy, prefix: str) -> None:
    for rel, why in copy.skipped:
        report.skip(prefix + rel, why)
