"""Reading files that untrusted code could have written or replaced.

A sandboxed program may leave a symbolic link (to ``/proc/self/environ``, to the answer key), a
FIFO (that blocks a reader for ever), a device (``/dev/zero``, endless) or a huge file where the
harness expects its output. Every function here opens the *last* path component without following
links (``O_NOFOLLOW``), without blocking (``O_NONBLOCK``), checks on the open descriptor that it is
a regular file, and never reads more than a cap.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import PptArenaError

CHUNK = 1024 * 1024


class UnsafeFileError(PptArenaError):
    """A file is a link, not a regular file, or larger than allowed."""


def open_regular(path: str | Path, max_bytes: int | None = None, follow_links: bool = False) -> int:
    """Open ``path`` for reading as a regular file (no link, FIFO or device); returns the descriptor.

    ``follow_links=True`` accepts a link whose target is a regular file (for paths the user chose).

    :raises UnsafeFileError: a symbolic link, not a regular file, or over ``max_bytes``.
    :raises FileNotFoundError: it does not exist.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == __import__("errno").ELOOP:
            raise UnsafeFileError(f"{path} is a symbolic link; refusing to follow it") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafeFileError(f"{path} is not a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(fd)
        raise UnsafeFileError(f"{path} has {info.st_size} bytes, over the {max_bytes}-byte limit")
    return fd


def read_regular(path: str | Path, max_bytes: int, follow_links: bool = False) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (links, FIFOs and devices refused;
    ``follow_links=True`` accepts a link to a regular file, see :func:`open_regular`)."""
    fd = open_regular(path, max_bytes, follow_links)
    try:
        parts, size = [], 0
        while True:
            chunk = os.read(fd, min(CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
            if size > max_bytes:  # it grew while we read
                raise UnsafeFileError(f"{path} grew over the {max_bytes}-byte limit")
        return b"".join(parts)
    finally:
        os.close(fd)


def copy_regular(src: str | Path, dst: str | Path, max_bytes: int) -> None:
    """Copy a regular file (links, FIFOs and devices refused) of at most ``max_bytes`` to ``dst``.

    ``dst`` is replaced, never followed: an existing link at ``dst`` is removed first.
    """
    data_fd = open_regular(src, max_bytes)
    dst = Path(dst)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.part")
    try:
        tmp.unlink(missing_ok=True)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        size = 0
        try:
            while chunk := os.read(data_fd, CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise UnsafeFileError(f"{src} grew over the {max_bytes}-byte limit")
                os.write(out, chunk)
        finally:
            os.close(out)
        os.replace(tmp, dst)
    finally:
        os.close(data_fd)
        tmp.unlink(missing_ok=True)
