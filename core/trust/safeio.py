"""The safe-file layer: how the harness reads, copies and rewrites files the agent side could have written.

An agent (or a program it started) may leave a symbolic link (to ``/proc/self/environ``, to the
answer key, to a file of the dataset cache), a FIFO (that blocks a reader for ever), a device
(``/dev/zero``, endless), a hard link to a host file, or a huge (sparse) file where the harness
expects its output, and it may plant a link in place of a *folder* on the way to a file. The
harness runs as the user (often root): following any of these would make it read, or write, a
file the agent chose. Everything here therefore:

- walks paths **below a trusted folder** (``root``: a folder the harness created, such as a
  pair's folder) one component at a time with directory descriptors, opening every component
  with ``O_NOFOLLOW`` (``openat`` semantics: a folder swapped for a link mid-way is refused, and
  a folder renamed while we work stays the folder we opened). Without ``root`` only the last
  component is protected (the parent is a folder the caller chose);
- opens files with ``O_NONBLOCK`` and checks **on the open descriptor** (``fstat``) that it is a
  regular file, so FIFOs, sockets and devices are refused at once, never read;
- caps sizes (checked on ``st_size`` before a byte is read, and again while reading, for files
  that grow);
- writes only through **new** files: a temporary file created with ``O_CREAT | O_EXCL |
  O_NOFOLLOW`` in the same folder descriptor, then renamed over the name with
  :func:`os.replace` (``src_dir_fd`` / ``dst_dir_fd``). A rename replaces the directory entry: it
  never writes through a link, and never changes the other names of a hard-linked file.

Public functions (all raise :class:`UnsafeFileError` for links, non-regular files, escapes and
sizes over a cap):

- :func:`open_regular`, :func:`read_regular`, :func:`read_tail`, :func:`regular_file`: open, read
  (all of it, or its end) or check one file;
- :func:`copy_regular`: copy one file out (hand-back copies of decks);
- :func:`write_replacing`, :func:`rewrite_regular`: replace one file's content (new file + rename);
- :func:`walk_tree`: list an agent-written folder without following anything;
- :func:`copy_tree`: copy an agent-written folder out (regular files only, caps on count and
  size; links and special files skipped and reported);
- :func:`ensure_dir`: create (or check) a folder below ``root`` without following links;
  :func:`remove_entry`: remove a name (a folder with its contents) without following links;
- descriptor-level helpers for callers that already hold a folder open: :func:`open_dir`,
  :func:`open_at`, :func:`rewrite_at`, :func:`write_at`;
- :func:`open_folder` / :class:`Folder`: hold one folder below ``root`` open (walked like
  :func:`open_regular` walks a file's path) and open, read or ``lstat`` many files in it relative to
  its descriptor, without walking the path from ``root`` again for each (reports read thousands of
  pair folders); :func:`read_open` reads a descriptor already checked.

Where it ends: the ``root`` itself, and the folders above it, are trusted (the harness made
them); a process still running on the agent side can change a file *after* it was checked
(the layer checks the descriptor it reads, not the name later users open): take copies with
:func:`copy_regular` / :func:`copy_tree` once the agent side has stopped, and read the copies.

Why it is long: every way the harness touches a file the agent side could have written is here,
so that it is reviewed (and attacked, ``tests/security/test_safeio.py``) in one place.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import PptArenaError

CHUNK = 1024 * 1024
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
READ_FLAGS = os.O_RDONLY | NONBLOCK | CLOEXEC
DIR_FLAGS = os.O_RDONLY | DIRECTORY | CLOEXEC
MAX_DEPTH = 64
MAX_ENTRIES = 200_000
LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR, getattr(errno, "EMLINK", errno.ELOOP))


class UnsafeFileError(PptArenaError):
    """A file is a link, not a regular file, outside its root, or larger than allowed."""


# ---------------------------------------------------------------- folders


def open_dir(path: str | os.PathLike[str]) -> int:
    """A descriptor of a folder the caller chose and trusts (links in ``path`` itself are followed)."""
    return os.open(path, DIR_FLAGS)


def _subdir(dir_fd: int, name: str, shown: str) -> int:
    """The sub-folder ``name`` of ``dir_fd``, never through a link."""
    try:
        return os.open(name, DIR_FLAGS | NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in LINK_ERRORS:
            raise UnsafeFileError(
                f"{shown} is a symbolic link or not a folder; refusing to follow it"
            ) from None
        raise


def _parts(rel: str | os.PathLike[str]) -> tuple[str, ...]:
    parts = PurePosixPath(os.fspath(rel)).parts
    if not parts or PurePosixPath(os.fspath(rel)).is_absolute() or ".." in parts:
        raise UnsafeFileError(f"{os.fspath(rel)!r} is not a path below its folder")
    return tuple(p for p in parts if p != ".")


def _split(path: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> tuple[str, tuple[str, ...]]:
    """(the trusted folder, the components below it) for ``path``. Without ``root``: its parent."""
    full = os.path.abspath(os.fspath(path))
    if root is None:
        parent, name = os.path.split(full)
        if not name:
            raise UnsafeFileError(f"{path} names no file")
        return parent, (name,)
    base = os.path.abspath(os.fspath(root))
    rel = os.path.relpath(full, base)
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
        raise UnsafeFileError(f"{path} is not inside {root}")
    return base, _parts(rel)


def _open_parent(path: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> tuple[int, str]:
    """(a descriptor of the folder holding ``path``, walked below ``root`` without links; its name)."""
    base, parts = _split(path, root)
    fd = open_dir(base)
    try:
        for i, part in enumerate(parts[:-1]):
            nxt = _subdir(fd, part, os.path.join(base, *parts[: i + 1]))
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def ensure_dir(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path:
    """Create the folder ``path`` below ``root`` (and the folders between) where missing; an existing
    component that is a link or not a folder is refused, never followed. ``root`` itself (trusted)
    is made where missing. Returns ``path``."""
    os.makedirs(root, exist_ok=True)
    base, parts = _split(path, root)
    fd = open_dir(base)
    try:
        for i, part in enumerate(parts):
            shown = os.path.join(base, *parts[: i + 1])
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            nxt = _subdir(fd, part, shown)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    return Path(path)


def remove_entry(folder: str | os.PathLike[str], name: str) -> bool:
    """Remove ``name`` from the trusted ``folder`` whatever it is (file, link, FIFO, or a folder
    with everything below it), never following a link; True when something was there."""
    import shutil

    fd = open_dir(folder)
    try:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=fd)  # descriptor-based: links inside are unlinked, never followed
        else:
            os.unlink(name, dir_fd=fd)
        return True
    finally:
        os.close(fd)


# ---------------------------------------------------------------- reading


def open_at(dir_fd: int, name: str, max_bytes: int | None = None, shown: str | None = None) -> int:
    """Open the regular file ``name`` of the folder ``dir_fd`` for reading (no link, FIFO, socket or
    device; at most ``max_bytes`` bytes); returns the descriptor."""
    shown = shown or name
    try:
        fd = os.open(name, READ_FLAGS | NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(f"{shown} is a symbolic link; refusing to follow it") from None
        raise
    return _checked(fd, shown, max_bytes)


def _checked(fd: int, shown: str, max_bytes: int | None) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafeFileError(f"{shown} is not a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(fd)
        raise UnsafeFileError(f"{shown} has {info.st_size} bytes, over the {max_bytes}-byte limit")
    return fd


def open_regular(
    path: str | os.PathLike[str],
    max_bytes: int | None = None,
    follow_links: bool = False,
    *,
    root: str | os.PathLike[str] | None = None,
) -> int:
    """Open ``path`` for reading as a regular file (no link, FIFO or device); returns the descriptor.

    :param root: a trusted folder holding ``path``: no component below it is followed when it is a
        link (without it only the last component is protected).
    :param follow_links: accept links (for paths the user chose, never for agent-written ones).
    :raises UnsafeFileError: a symbolic link, not a regular file, outside ``root`` or over ``max_bytes``.
    :raises FileNotFoundError: it does not exist.
    """
    if follow_links:
        return _checked(os.open(path, READ_FLAGS), os.fspath(path), max_bytes)
    dir_fd, name = _open_parent(path, root)
    try:
        return open_at(dir_fd, name, max_bytes, os.fspath(path))
    finally:
        os.close(dir_fd)


def regular_file(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``path`` is a regular file reached without following a link (see :func:`open_regular`)."""
    try:
        os.close(open_regular(path, root=root))
    except (OSError, UnsafeFileError):
        return False
    return True


def read_tail(
    path: str | os.PathLike[str], max_bytes: int, *, root: str | os.PathLike[str] | None = None
) -> bytes:
    """The last ``max_bytes`` bytes of a regular file (see :func:`open_regular`); ``b""`` when it is
    missing, a link or not a regular file (for the tails of logs shown in error messages)."""
    try:
        fd = open_regular(path, root=root)
    except (OSError, UnsafeFileError):
        return b""
    try:
        os.lseek(fd, max(0, os.fstat(fd).st_size - max_bytes), os.SEEK_SET)
        return os.read(fd, max_bytes)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _read_fd(fd: int, max_bytes: int, shown: str, expected: int | None = None) -> bytes:
    """Read to the end: the ``expected`` size (``st_size``) and one byte more, so a small file costs
    two small reads (not a 1 MiB buffer per read); a file that grows past it is read on in chunks."""
    if expected is None:
        expected = os.fstat(fd).st_size
    parts, size = [], 0
    while chunk := os.read(
        fd, min(CHUNK, max_bytes + 1 - size, expected - size + 1 if size <= expected else CHUNK)
    ):
        parts.append(chunk)
        size += len(chunk)
        if size > max_bytes:  # it grew while we read
            raise UnsafeFileError(f"{shown} grew over the {max_bytes}-byte limit")
    return b"".join(parts)


def read_open(fd: int, max_bytes: int, shown: str = "the file", expected: int | None = None) -> bytes:
    """Everything readable from the open descriptor ``fd`` (at most ``max_bytes``; a file that grew
    past it while read raises :class:`UnsafeFileError`, naming it ``shown``); ``expected``: its
    ``st_size`` when the caller has it (saves an ``fstat``)."""
    return _read_fd(fd, max_bytes, shown, expected)


def read_regular(
    path: str | os.PathLike[str],
    max_bytes: int,
    follow_links: bool = False,
    *,
    root: str | os.PathLike[str] | None = None,
) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (links, FIFOs and devices refused; see
    :func:`open_regular` for ``root`` and ``follow_links``)."""
    fd = open_regular(path, max_bytes, follow_links, root=root)
    try:
        return _read_fd(fd, max_bytes, os.fspath(path))
    finally:
        os.close(fd)


# ---------------------------------------------------------------- a folder held open


def _rel_parts(rel: str, shown: str) -> list[str]:
    """The components of ``rel``, a path below a folder (``.`` and empty ones dropped); an absolute
    path, ``..`` or no name at all is refused."""
    parts = [p for p in rel.split("/") if p and p != "."]
    if not parts or rel.startswith("/") or ".." in parts:
        raise UnsafeFileError(f"{rel!r} is not a path below {shown}")
    return parts


class Folder:
    """A folder held open by its descriptor (from :func:`open_folder`); a context manager that closes it.

    Everything below it is reached with ``openat`` semantics relative to :attr:`fd`, every component
    opened with ``O_NOFOLLOW``: the same guarantees as :func:`open_regular` with ``root`` (no link
    followed, regular files only, caps), but the path from the trusted root is walked once for all
    the files read. A folder renamed or replaced by a link after it was opened stays the folder
    opened.
    """

    def __init__(self, fd: int, shown: str):
        self.fd = fd
        self.shown = shown

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the descriptor (again: nothing)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def _walk(self, rel: str) -> tuple[int, str, str]:
        """(the descriptor of the folder holding ``rel``: this folder's own, or a new one the caller
        closes; its last name; the path shown in errors)."""
        if self.fd < 0:
            raise ValueError(f"{self.shown} is closed")
        if "/" not in rel and rel not in ("", ".", ".."):  # the common case: a name in this folder
            return self.fd, rel, f"{self.shown}/{rel}"
        parts = _rel_parts(rel, self.shown)
        fd = self.fd
        try:
            for i, part in enumerate(parts[:-1]):
                nxt = _subdir(fd, part, os.path.join(self.shown, *parts[: i + 1]))
                if fd != self.fd:
                    os.close(fd)
                fd = nxt
        except BaseException:
            if fd != self.fd:
                os.close(fd)
            raise
        return fd, parts[-1], os.path.join(self.shown, *parts)

    def open(self, rel: str, max_bytes: int | None = None) -> int:
        """Open the regular file ``rel`` (a path below this folder) for reading; returns its descriptor.

        :raises UnsafeFileError: a link (the file or a folder on the way), not a regular file, over
            ``max_bytes``, or a path leaving the folder.
        :raises FileNotFoundError: it does not exist.
        """
        dir_fd, name, shown = self._walk(rel)
        try:
            return open_at(dir_fd, name, max_bytes, shown)
        finally:
            if dir_fd != self.fd:
                os.close(dir_fd)

    def read(self, rel: str, max_bytes: int) -> bytes:
        """The bytes of the regular file ``rel`` of at most ``max_bytes`` (see :meth:`open`)."""
        fd = self.open(rel, max_bytes)
        try:
            return _read_fd(fd, max_bytes, os.path.join(self.shown, rel))
        finally:
            os.close(fd)

    def lstat(self, rel: str) -> os.stat_result | None:
        """``rel``'s own status (a link is described, not followed; folders on the way are walked
        without following links); None when it does or a folder on the way does not exist.

        :raises UnsafeFileError: a folder on the way is a link or not a folder.
        """
        try:
            dir_fd, name, _ = self._walk(rel)
        except FileNotFoundError:
            return None
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            if dir_fd != self.fd:
                os.close(dir_fd)

    def folder(self, rel: str) -> Folder:
        """The sub-folder ``rel`` held open (a link on the way, or in its place, is refused)."""
        dir_fd, name, shown = self._walk(rel)
        try:
            return Folder(_subdir(dir_fd, name, shown), shown)
        finally:
            if dir_fd != self.fd:
                os.close(dir_fd)

    def names(self) -> list[str]:
        """The names in this folder, in name order (read through a fresh descriptor of it)."""
        fd = os.open(".", DIR_FLAGS, dir_fd=self.fd)
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)


def open_folder(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> Folder:
    """Hold the folder ``path`` open: with ``root`` (a trusted folder holding it, or ``path`` itself)
    every component below ``root`` is opened with ``O_NOFOLLOW``; without it only ``path``'s own
    last component is (its parent is a folder the caller chose). Use as ``with open_folder(...) as f``.

    :raises UnsafeFileError: a component is a link or not a folder, or ``path`` is outside ``root``.
    :raises FileNotFoundError: a component does not exist.
    """
    if root is not None and os.path.abspath(os.fspath(path)) == os.path.abspath(os.fspath(root)):
        return Folder(open_dir(root), os.fspath(path))
    dir_fd, name = _open_parent(path, root)
    try:
        return Folder(_subdir(dir_fd, name, os.fspath(path)), os.fspath(path))
    finally:
        os.close(dir_fd)


# ---------------------------------------------------------------- writing


def _temp_at(dir_fd: int, name: str, mode: int) -> tuple[int, str]:
    """A new, empty file beside ``name`` (never an existing file, link or FIFO): (descriptor, name)."""
    for _ in range(100):
        tmp = f".{name[:80]}.{os.urandom(6).hex()}.part"
        try:
            return os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode, dir_fd=dir_fd
            ), tmp
        except FileExistsError:
            continue
    raise UnsafeFileError(f"cannot create a temporary file beside {name}")


def write_at(
    dir_fd: int, name: str, data: bytes | int, mode: int = 0o644, max_bytes: int | None = None
) -> int:
    """Replace ``name`` in the folder ``dir_fd`` by a new file holding ``data`` (bytes, or everything
    readable from a descriptor, at most ``max_bytes``); returns the bytes written.

    The new file is created under a fresh name with ``O_EXCL | O_NOFOLLOW`` and renamed over
    ``name``: a link, FIFO or hard-linked file at ``name`` is replaced, never written through.
    """
    out, tmp = _temp_at(dir_fd, name, mode & 0o777)
    size = 0
    try:
        try:
            if isinstance(data, bytes):
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                size = len(data)
            else:
                while chunk := os.read(data, CHUNK):
                    size += len(chunk)
                    if max_bytes is not None and size > max_bytes:
                        raise UnsafeFileError(f"{name} grew over the {max_bytes}-byte limit")
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view) :]
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    return size


def write_replacing(
    path: str | os.PathLike[str],
    data: bytes,
    mode: int = 0o644,
    *,
    root: str | os.PathLike[str] | None = None,
) -> None:
    """Replace the file ``path`` by one holding ``data`` (new file + rename, see :func:`write_at`);
    with ``root``, no folder below it is followed on the way."""
    dir_fd, name = _open_parent(path, root)
    try:
        write_at(dir_fd, name, data, mode)
    finally:
        os.close(dir_fd)


def rewrite_at(dir_fd: int, name: str, transform: Callable[[bytes], bytes], max_bytes: int) -> bool:
    """Pass the regular file ``name`` of ``dir_fd`` (at most ``max_bytes``) through ``transform`` and,
    when the bytes change, replace it by a new file (:func:`write_at`, same permission bits).
    Returns True when it was rewritten. A hard-linked file gets a new inode: its other names keep
    their content."""
    fd = open_at(dir_fd, name, max_bytes)
    try:
        data = _read_fd(fd, max_bytes, name)
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    new = transform(data)
    if new == data:
        return False
    write_at(dir_fd, name, new, mode & 0o777)
    return True


def rewrite_regular(
    path: str | os.PathLike[str],
    transform: Callable[[bytes], bytes],
    max_bytes: int,
    *,
    root: str | os.PathLike[str] | None = None,
) -> bool:
    """:func:`rewrite_at` for a path (with ``root``, no folder below it is followed)."""
    dir_fd, name = _open_parent(path, root)
    try:
        return rewrite_at(dir_fd, name, transform, max_bytes)
    finally:
        os.close(dir_fd)


def copy_regular(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    max_bytes: int,
    *,
    root: str | os.PathLike[str] | None = None,
) -> int:
    """Copy the regular file ``src`` (links, FIFOs and devices refused; with ``root``, no folder
    below it followed) of at most ``max_bytes`` to ``dst``; returns the bytes copied.

    ``dst`` (a path the harness chose) is replaced by a new file, never written through.
    """
    data_fd = open_regular(src, max_bytes, root=root)
    try:
        dst_dir, dst_name = os.path.split(os.path.abspath(os.fspath(dst)))
        dir_fd = open_dir(dst_dir)
        try:
            return write_at(dir_fd, dst_name, data_fd, 0o644, max_bytes)
        finally:
            os.close(dir_fd)
    finally:
        os.close(data_fd)


# ---------------------------------------------------------------- folders an agent wrote


@dataclass(frozen=True)
class Entry:
    """One name met by :func:`walk_tree`.

    ``kind``: ``file`` (regular), ``dir``, ``link`` (symbolic), ``special`` (FIFO, socket, device)
    or ``skipped`` (a folder not entered: ``problem`` says why). ``dir_fd`` is the open folder
    holding it, valid until the walk moves on (for :func:`open_at`, :func:`rewrite_at`).
    """

    rel: str
    name: str
    kind: str
    size: int
    nlink: int
    dir_fd: int
    problem: str | None = None


def walk_tree(
    root: str | os.PathLike[str], *, max_entries: int = MAX_ENTRIES, max_depth: int = MAX_DEPTH
) -> Iterator[Entry]:
    """Every name below the folder ``root``, depth first in name order, without following links:
    folders are entered through descriptors opened with ``O_NOFOLLOW``, so a link planted in place
    of a folder (or swapped in while walking) is reported as a ``link``, never entered.

    :raises UnsafeFileError: more than ``max_entries`` names. Names are counted as each folder is
        read (a folder is read whole, up to the cap, before its first name is given, to give them in
        order), so the walk stops as soon as the cap is passed, before giving any name of the folder
        that passed it, and never holds more than ``max_entries`` names in memory.
    """
    top = open_dir(root)
    count = [0]
    try:
        yield from _walk(top, "", 0, count, max_entries, max_depth)
    finally:
        os.close(top)


def _listing(dir_fd: int, count: list[int], max_entries: int) -> list[tuple[str, os.DirEntry[str]]]:
    """One folder's names in name order, read as a stream: every name counts against ``max_entries``
    (for the whole walk) as it is read, so a folder of millions of names is refused after reading
    ``max_entries`` of them, never listed (let alone sorted) whole. The listings held at once along
    the walk's path together never exceed ``max_entries``."""
    out: list[tuple[str, os.DirEntry[str]]] = []
    with os.scandir(dir_fd) as it:
        for entry in it:
            count[0] += 1
            if count[0] > max_entries:
                raise UnsafeFileError(f"more than {max_entries} files and folders below the walked folder")
            out.append((entry.name, entry))
    out.sort(key=lambda pair: pair[0])
    return out


def _walk(
    dir_fd: int, prefix: str, depth: int, count: list[int], max_entries: int, max_depth: int
) -> Iterator[Entry]:
    for name, entry in _listing(dir_fd, count, max_entries):
        rel = f"{prefix}{name}"
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:  # vanished
            continue
        mode = info.st_mode
        kind = (
            "link"
            if stat.S_ISLNK(mode)
            else "dir"
            if stat.S_ISDIR(mode)
            else "file"
            if stat.S_ISREG(mode)
            else "special"
        )
        size = info.st_size if kind == "file" else 0
        if kind != "dir":
            yield Entry(rel, name, kind, size, info.st_nlink, dir_fd)
            continue
        if depth + 1 > max_depth:
            yield Entry(rel, name, "skipped", 0, info.st_nlink, dir_fd, f"deeper than {max_depth} folders")
            continue
        try:
            sub = _subdir(dir_fd, name, rel)
        except (OSError, UnsafeFileError) as exc:
            yield Entry(rel, name, "skipped", 0, info.st_nlink, dir_fd, str(exc))
            continue
        try:
            yield Entry(rel, name, "dir", 0, info.st_nlink, dir_fd)
            yield from _walk(sub, rel + "/", depth + 1, count, max_entries, max_depth)
        finally:
            os.close(sub)


@dataclass
class TreeCopy:
    """What :func:`copy_tree` did: files and bytes copied, and every name left out with the reason."""

    files: int = 0
    bytes: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def copy_tree(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    max_files: int = 10_000,
    max_bytes: int = 1024 * 1024 * 1024,
    max_file_bytes: int | None = None,
    max_depth: int = MAX_DEPTH,
) -> TreeCopy:
    """Copy the agent-written folder ``src`` into ``dst`` (created where missing; a folder the
    harness chose): regular files and folders only, never following a link.

    Links, FIFOs, sockets and devices are skipped; so is a file over ``max_file_bytes``, or that
    would take the copy over ``max_files`` files or ``max_bytes`` bytes (sizes are checked before a
    byte is read: a sparse 2 GiB file costs nothing). Each skip is in :attr:`TreeCopy.skipped`.
    Copies are new files (permission bits kept, set-id bits dropped); existing names in ``dst`` are
    replaced, never written through.
    """
    os.makedirs(dst, exist_ok=True)
    done = TreeCopy()
    out_fds: dict[str, int] = {"": open_dir(dst)}
    try:
        for e in walk_tree(src, max_entries=max(MAX_ENTRIES, 4 * max_files), max_depth=max_depth):
            parent = e.rel.rpartition("/")[0]
            for key in [k for k in out_fds if k and k != parent and not parent.startswith(k + "/")]:
                os.close(out_fds.pop(key))  # a folder the depth-first walk has left for good
            out = out_fds.get(parent)
            if out is None:  # its folder was not copied
                continue
            if e.kind == "dir":
                try:
                    try:
                        os.mkdir(e.name, 0o755, dir_fd=out)
                    except FileExistsError:
                        pass
                    out_fds[e.rel] = _subdir(out, e.name, os.path.join(os.fspath(dst), e.rel))
                except (OSError, UnsafeFileError) as exc:
                    done.skipped.append((e.rel, f"folder not copied: {exc}"))
                continue
            if e.kind != "file":
                why = e.problem or ("a symbolic link" if e.kind == "link" else "not a regular file")
                done.skipped.append((e.rel, why))
                continue
            cap = (
                max_bytes - done.bytes
                if max_file_bytes is None
                else min(max_file_bytes, max_bytes - done.bytes)
            )
            if done.files >= max_files:
                done.skipped.append((e.rel, f"over the {max_files}-file limit"))
                continue
            if e.size > cap:
                done.skipped.append((e.rel, f"{e.size} bytes: over the size limit"))
                continue
            try:
                fd = open_at(e.dir_fd, e.name, cap, e.rel)
                try:
                    mode = os.fstat(fd).st_mode
                    done.bytes += write_at(out, e.name, fd, mode & 0o777, cap)
                finally:
                    os.close(fd)
                done.files += 1
            except (OSError, UnsafeFileError) as exc:
                done.skipped.append((e.rel, str(exc)))
    finally:
        for fd in out_fds.values():
            os.close(fd)
    return done
