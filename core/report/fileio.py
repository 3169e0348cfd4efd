"""File reading and writing for large reports, with as few system calls and disk flushes as possible.

A report of 10,000 pairs reads some 20,000 small files (``verdicts.json``, ``agent.log.jsonl``);
through :class:`pathlib.Path` and :func:`open` each read costs a stat, an open, an fstat, an
ioctl, a seek and a text decoder around the read. :func:`read_regular` opens the file once
(:func:`pptarena.trust.safeio.read_regular`), checks it is a regular file (never following a link an
agent left, never blocking on a FIFO or reading a device) and reads its bytes.

It rewrites hundreds of task pages. Replacing a file by renaming a temporary copy over it (or
truncating it to zero) makes ext4 write the new data out at once (``auto_da_alloc``): ~1.5 ms a
page on the development VM. :func:`write_derived` overwrites the page in place instead, which is
safe for derived output only (a crash can leave a page half-written until the next report; the
run's own records are never written this way).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from pptarena.types import PptArenaError

#: the errors of a folder that cannot be written: a read-only mount, or permissions
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def read_regular(
    path: str | os.PathLike[str], limit: int, root: str | os.PathLike[str] | None = None
) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes; None when it is
    missing, a link, not a regular file, larger, or unreadable.

    Pair folders hold what agents wrote: links are never followed (:mod:`pptarena.trust.safeio`); with
    ``root`` (the pair's folder) no folder between it and the file is followed either.
    """
    from pptarena.trust.safeio import UnsafeFileError
    from pptarena.trust.safeio import read_regular as read_checked

    try:
        return read_checked(os.fspath(path), limit, root=root)
    except (OSError, UnsafeFileError):
        return None


def open_text(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> IO[str] | None:
    """``path`` opened for reading as text (UTF-8, bad bytes replaced) when it is a regular file
    reached without following a link (see :func:`read_regular`), else None. For large files read
    as a stream."""
    from pptarena.trust.safeio import UnsafeFileError, open_regular

    try:
        fd = open_regular(path, root=root)
    except (OSError, UnsafeFileError):
        return None
    return open(fd, encoding="utf-8", errors="replace")


def is_regular(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``path`` is a regular file reached without following a link (see :func:`read_regular`)."""
    from pptarena.trust.safeio import UnsafeFileError, open_regular

    try:
        os.close(open_regular(path, root=root))
    except (OSError, UnsafeFileError):
        return False
    return True


def text_lines(data: bytes) -> list[str]:
    """``data`` decoded (UTF-8, bad bytes replaced) and split into lines exactly as iterating over a
    file opened in text mode would: universal newlines, each line keeping its ``\\n``.
    """
    text = data.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    last = lines.pop()
    out = [line + "\n" for line in lines]
    if last:
        out.append(last)
    return out


def write_derived(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, overwriting a regular file in place (see the module's note).

    A symlink or any other non-regular file at ``path`` is replaced (temporary file and rename)
    rather than written through.
    """
    data = text.encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o666)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.ftruncate(fd, len(data))
                return
        finally:
            os.close(fd)
    tmp = f"{os.fspath(path)}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


class ReadOnlyFolderError(PptArenaError):
    """A command could not write into a folder (read-only file system, or no permission); the message
    is one line naming the folder and what to do instead."""


def read_only_message(exc: OSError, folder: str | os.PathLike[str], instead: str) -> str:
    """``cannot write into FOLDER (Read-only file system): INSTEAD`` for a read-only error ``exc``."""
    why = exc.strerror or os.strerror(exc.errno or 0) or type(exc).__name__
    return f"cannot write into {os.fspath(folder)} ({why}): {instead}"


@contextmanager
def writing_into(folder: str | os.PathLike[str], instead: str) -> Iterator[None]:
    """Turn a read-only error (:data:`READ_ONLY_ERRNOS`) raised inside the block into a
    :class:`ReadOnlyFolderError` naming ``folder`` and ``instead`` (the option to use, e.g. ``"write
    the report elsewhere with --out FILE"``); other errors pass through unchanged."""
    try:
        yield
    except ReadOnlyFolderError:
        raise
    except OSError as exc:
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
        raise ReadOnlyFolderError(read_only_message(exc, folder, instead)) from exc
