"""Copying a folder the agent side wrote out to the run folder: regular files only, capped.

The walk opens every folder and file relative to its parent's descriptor with ``O_NOFOLLOW`` (a
link is never followed, at any depth), opens files with ``O_NONBLOCK`` and checks on the descriptor
that each is a regular file (a FIFO, socket or device is skipped, never read), and stops copying at
the caps (files, bytes per file, bytes in total, depth). Destination files are created with
``O_EXCL`` in folders this walk created itself. What was skipped is counted by reason.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1024 * 1024
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
FILE_FLAGS = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass
class CopyCaps:
    """Limits of one copy-out."""

    max_files: int = 20_000
    max_file_bytes: int = 512 * 1024 * 1024
    max_total_bytes: int = 1024 * 1024 * 1024
    max_depth: int = 32


@dataclass
class CopyReport:
    """What a copy-out did: files and bytes copied, entries skipped by reason."""

    files: int = 0
    bytes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one skipped entry."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def copy_out(
    src: str | Path, dst: Path, caps: CopyCaps | None = None, first: dict[str, CopyCaps] | None = None
) -> CopyReport:
    """Copy the regular files and folders under ``src`` to the new folder ``dst`` (created here).

    ``src`` itself is opened following links (the caller names it, e.g. ``/proc/<pid>/root/…``);
    nothing below it is. The top-level folders named in ``first`` are copied before anything else,
    each within its own caps (e.g. ``output/``, so a workspace full of other files cannot crowd
    out the deck); ``caps`` bound the rest.

    :raises FileExistsError: ``dst`` exists.
    """
    caps = caps or CopyCaps()
    report = CopyReport()
    top = os.open(src, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.mkdir(dst, 0o755)
        for name, own_caps in (first or {}).items():
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=top)
            except OSError:
                continue  # missing, or not a folder (a link is never followed)
            part = CopyReport()
            try:
                os.mkdir(dst / name, 0o755)
                _copy_dir(sub, dst / name, own_caps, part, 1)
            finally:
                os.close(sub)
            report.files += part.files
            report.bytes += part.bytes
            for reason, count in part.skipped.items():
                report.skipped[reason] = report.skipped.get(reason, 0) + count
        _copy_dir(top, dst, caps, report, 0, skip=frozenset(first or ()))
    finally:
        os.close(top)
    return report


def _copy_dir(
    fd: int, dst: Path, caps: CopyCaps, report: CopyReport, depth: int, skip: frozenset[str] = frozenset()
) -> None:
    with os.scandir(fd) as entries:
        names = sorted(e.name for e in entries if e.name not in skip)
    for name in names:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            report.skip("vanished")
            continue
        if stat.S_ISDIR(info.st_mode):
            if depth >= caps.max_depth:
                report.skip("too deep")
                continue
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                report.skip("unreadable")
                continue
            try:
                os.mkdir(dst / name, 0o755)
                _copy_dir(sub, dst / name, caps, report, depth + 1)
            finally:
                os.close(sub)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(fd, name, dst / name, caps, report)
        elif stat.S_ISLNK(info.st_mode):
            report.skip("link")
        else:
            report.skip("not a regular file")


def _copy_file(fd: int, name: str, dst: Path, caps: CopyCaps, report: CopyReport) -> None:
    if report.files >= caps.max_files:
        report.skip("over the file count cap")
        return
    try:
        src = os.open(name, FILE_FLAGS, dir_fd=fd)
    except OSError as exc:
        report.skip("link" if exc.errno == errno.ELOOP else "unreadable")
        return
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):
            report.skip("not a regular file")
            return
        if info.st_size > caps.max_file_bytes or report.bytes + info.st_size > caps.max_total_bytes:
            report.skip("over the size cap")
            return
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o644)
        size = 0
        try:
            while chunk := os.read(src, CHUNK):
                size += len(chunk)
                if size > caps.max_file_bytes or report.bytes + size > caps.max_total_bytes:
                    break
                os.write(out, chunk)
        finally:
            os.close(out)
        if size > caps.max_file_bytes or report.bytes + size > caps.max_total_bytes:
            os.unlink(dst)
            report.skip("over the size cap")
            return
        report.files += 1
        report.bytes += size
    finally:
        os.close(src)
