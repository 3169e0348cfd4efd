"""An attempt folder's files, read for the report through one held folder descriptor.

A 10,000-pair report reads some 30,000 small files from pair folders (``verdicts.json``,
``agent.log.jsonl``, a missing ``trajectory/trajectory.jsonl``). :class:`PairFiles` opens the pair's
folder once (:func:`pptarena.trust.safeio.open_folder`: walked from the run folder with ``O_NOFOLLOW``, so
a pair folder, or a folder on its way, replaced by a link is refused) and reads each file relative
to it (``openat``, ``O_NOFOLLOW``, regular files only, size caps), instead of walking each file's
path from the top again. Inside :func:`held_parents` the ``tasks/<agent>`` folders are held open
too, so a pair folder costs one ``openat``.

Every name read, checked or found missing is noted with its status (type, size, mtime, ctime,
inode): the task pages' input record (:mod:`pptarena.report.pageinputs`) uses these notes to tell
whether a page's files changed since it was written (:func:`folder_unchanged`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from pptarena.trust.safeio import Folder, UnsafeFileError, open_dir, open_folder, read_open

#: a pair folder that could not be opened: missing, or refused (a link, or not a folder)
MISSING = "missing"
REFUSED = "refused"

StatKey = list[int] | None


def stat_key(info: os.stat_result | None) -> StatKey:
    """What is compared to tell a file unchanged: type and mode, size, mtime, ctime, inode (None: absent)."""
    if info is None:
        return None
    return [info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


class _Parents:
    """Open descriptors of the folders holding pair folders (``tasks/<agent>``), per run folder."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, str], Folder | None] = {}

    def get(self, root: str, parent_rel: str) -> Folder:
        key = (root, parent_rel)
        found = self.open.get(key)
        if found is None:
            found = self.open[key] = _open_below(root, parent_rel)
        return found

    def close(self) -> None:
        for folder in self.open.values():
            if folder is not None:
                folder.close()
        self.open.clear()


_held: _Parents | None = None


@contextmanager
def held_parents() -> Iterator[None]:
    """Within the block, the folders holding pair folders stay open between pairs (closed at its end)."""
    global _held
    if _held is not None:  # nested: the outer block holds them
        yield
        return
    _held = _Parents()
    try:
        yield
    finally:
        held, _held = _held, None
        held.close()


def _open_below(root: str, rel: str) -> Folder:
    """The folder ``rel`` below the trusted ``root`` (``""``: ``root`` itself), walked without links."""
    if not rel:
        return Folder(open_dir(root), root)
    return open_folder(os.path.join(root, rel), root=root)


def _split_rel(root: str, folder: str) -> str:
    """``folder``'s path below ``root`` (``folder`` as the report builds it: ``root/...``)."""
    if folder.startswith(root + os.sep):
        return folder[len(root) + 1 :]
    rel = os.path.relpath(os.path.abspath(folder), os.path.abspath(root))
    if rel == ".." or rel.startswith(".." + os.sep):
        raise UnsafeFileError(f"{folder} is not inside {root}")
    return "" if rel == "." else rel


def open_pair_folder(root: str, rel: str) -> Folder:
    """The folder ``rel`` below ``root`` held open (through :func:`held_parents` when active)."""
    parent, _, name = rel.rpartition("/")
    if _held is None or not name:
        return _open_below(root, rel)
    holder = _held.get(root, parent)
    return holder.folder(name)


class PairFiles:
    """The files of one attempt folder (``folder``, below the trusted run folder ``root``), read
    without following links; each name read or checked is noted in :attr:`seen`.

    Use as a context manager (or call :meth:`close`). A folder that is missing or refused reads as
    empty: every read gives None, as a missing file does.
    """

    def __init__(self, root: str | os.PathLike[str], folder: str | os.PathLike[str]):
        self.root = os.fspath(root)
        self.folder = Path(folder)
        self.rel = _split_rel(self.root, os.fspath(folder))
        self.seen: dict[str, StatKey] = {}
        self.state = ""  # "" open (or not tried yet), MISSING or REFUSED
        self._dir: Folder | None = None
        _note(self)

    def __enter__(self) -> PairFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the folder's descriptor."""
        if self._dir is not None:
            self._dir.close()
            self._dir = None

    def _folder(self) -> Folder | None:
        if self._dir is None and not self.state:
            try:
                self._dir = open_pair_folder(self.root, self.rel)
            except FileNotFoundError:
                self.state = MISSING
            except (OSError, UnsafeFileError):
                self.state = REFUSED
        return self._dir

    def _note_lstat(self, name: str) -> None:
        folder = self._dir
        if folder is None:
            return
        try:
            self.seen[name] = stat_key(folder.lstat(name))
        except (OSError, UnsafeFileError):
            self.seen[name] = [-1, 0, 0, 0, 0]  # a folder on the way is a link: refused

    def open(self, name: str, limit: int | None = None) -> int | None:
        """A descriptor of the regular file ``name`` (at most ``limit`` bytes), or None."""
        folder = self._folder()
        if folder is None:
            return None
        try:
            fd = folder.open(name, limit)
        except FileNotFoundError:  # the file, or a folder on its way, is missing
            self.seen[name] = None
            return None
        except (OSError, UnsafeFileError):
            self._note_lstat(name)
            return None
        self.seen[name] = stat_key(os.fstat(fd))
        return fd

    def read(self, name: str, limit: int) -> bytes | None:
        """The bytes of the regular file ``name`` of at most ``limit`` bytes; None when it is missing,
        a link, not a regular file, larger, or unreadable."""
        fd = self.open(name, limit)
        if fd is None:
            return None
        try:
            key = self.seen[name]
            return read_open(fd, limit, os.path.join(self.folder, name), key[1] if key else None)
        except (OSError, UnsafeFileError):
            return None
        finally:
            os.close(fd)

    def open_text(self, name: str) -> IO[str] | None:
        """The regular file ``name`` opened as text (UTF-8, bad bytes replaced), or None."""
        fd = self.open(name)
        return None if fd is None else open(fd, encoding="utf-8", errors="replace")

    def is_regular(self, name: str) -> bool:
        """Whether ``name`` is a regular file reached without following a link."""
        fd = self.open(name)
        if fd is None:
            return False
        os.close(fd)
        return True

    def is_dir(self, name: str) -> bool:
        """Whether ``name`` is a folder (not a link to one)."""
        if self._folder() is None:
            return False
        self._note_lstat(name)
        key = self.seen[name]
        return key is not None and key[0] >= 0 and (key[0] & 0o170000) == 0o040000

    def names(self, rel: str) -> list[str]:
        """The names in the sub-folder ``rel`` in name order (``[]`` when it is missing or a link);
        its own status is noted (a name added or removed changes it)."""
        folder = self._folder()
        if folder is None:
            return []
        self._note_lstat(rel)
        try:
            with folder.folder(rel) as sub:
                return sub.names()
        except (OSError, UnsafeFileError):
            return []

    def record(self) -> str | dict[str, StatKey]:
        """What :func:`folder_unchanged` compares: the folder's state or the status of every name seen."""
        return self.state or dict(self.seen)


def folder_unchanged(root: str, rel: str, recorded: Any) -> bool:
    """Whether the folder ``rel`` below ``root`` is as :meth:`PairFiles.record` recorded it: the same
    state, and every name seen with the same status (checked through the same no-link walk)."""
    try:
        folder = open_pair_folder(root, rel)
    except FileNotFoundError:
        return recorded == MISSING
    except (OSError, UnsafeFileError):
        return recorded == REFUSED
    with folder:
        if not isinstance(recorded, dict):
            return False
        for name, key in recorded.items():
            try:
                now = stat_key(folder.lstat(name))
            except (OSError, UnsafeFileError):
                now = [-1, 0, 0, 0, 0]
            if now != key:
                return False
    return True


# ---------------------------------------------------------------- noting the folders a page reads


class Reads:
    """The pair folders read while one page was built, and whether the page read anything not noted
    (:attr:`volatile`: decks and renders, outside this record; such a page is always rebuilt)."""

    def __init__(self) -> None:
        self.files: list[PairFiles] = []
        self.volatile = False

    def record(self) -> dict[str, dict[str, Any]]:
        """``{root: {folder: record}}`` of every folder read (the last read of a folder wins)."""
        out: dict[str, dict[str, Any]] = {}
        for files in self.files:
            out.setdefault(files.root, {})[files.rel] = files.record()
        return out


_reads: Reads | None = None


def _note(files: PairFiles) -> None:
    if _reads is not None:
        _reads.files.append(files)


def mark_volatile() -> None:
    """The page being built read something :class:`PairFiles` does not note: rebuild it every time."""
    if _reads is not None:
        _reads.volatile = True


@contextmanager
def noting_reads() -> Iterator[Reads]:
    """Note every :class:`PairFiles` made within the block (one page's build)."""
    global _reads
    outer, _reads = _reads, Reads()
    try:
        yield _reads
    finally:
        _reads = outer
