"""A jailed agent's workspace coming back to the harness (used by :mod:`.jail_pool`).

The jail hands its workspace back as a base64 gzip'd tar; :func:`unpack_workspace` copies it into the
task folder as untrusted input (regular files and folders only, capped in size, members and header
sizes, never over a file the harness wrote), and :func:`host_path` maps a path the agent named inside
its jail to the copied file.
"""

from __future__ import annotations

import base64
import gzip
import io
import os
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

from pptarena.run.folder.rundir import (
    AGENT_ERROR,
    AGENT_LOG,
    EXECUTOR_RECORD,
    INPUT,
    JUDGES,
    REFERENCES,
    RENDERS,
    VERDICTS,
)
from pptarena.run.jail.agent_jail import JAIL_WORKSPACE

MAX_UNPACKED_BYTES = 2 * 1024 * 1024 * 1024
MAX_UNPACKED_ENTRIES = 10_000
"""Most members (files, folders, and the ones left out) a workspace archive may hold."""
MAX_HEADER_BYTES = 1024 * 1024
"""Largest extended header (PAX, GNU long name) a workspace archive may carry: refused on its size field."""
RESERVED = frozenset({INPUT, JUDGES, RENDERS, REFERENCES, VERDICTS, AGENT_LOG, AGENT_ERROR, EXECUTOR_RECORD})
"""Top-level names of a task folder only the harness writes: never copied out of a jail."""


def host_path(path: Any, ws_dir: Path) -> Path | None:
    """A path the jailed agent named, as the file copied out into ``ws_dir`` (None: outside its workspace)."""
    if path is None:
        return None
    p = PurePosixPath(str(path))
    try:
        rel = p.relative_to(JAIL_WORKSPACE.as_posix())
    except ValueError:
        return None
    if ".." in rel.parts or not rel.parts or rel.parts[0] in RESERVED:
        return None
    return ws_dir.joinpath(*rel.parts)


class ArchiveRefused(tarfile.TarError):
    """A workspace archive the harness will not read further (a header or a stream over its cap)."""


_EXTENDED = (
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
)


class _CappedTarInfo(tarfile.TarInfo):
    """A member header that refuses, on its size field and before tarfile reads it whole, an extended
    header (PAX, GNU long name) over :data:`MAX_HEADER_BYTES`, and GNU sparse members."""

    def _proc_member(self, archive: Any) -> Any:  # tarfile's hook for headers that read more blocks
        if self.type in _EXTENDED and self.size > MAX_HEADER_BYTES:
            raise ArchiveRefused(f"an extended header of {self.size} bytes (over {MAX_HEADER_BYTES})")
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise ArchiveRefused("a GNU sparse member")
        return super()._proc_member(archive)


class _CappedStream:
    """The decompressed archive, read as a stream that raises :class:`ArchiveRefused` past ``cap`` bytes
    (data of members left out is read too, and counts)."""

    def __init__(self, raw: Any, cap: int):
        self.raw, self.cap, self.seen = raw, cap, 0

    def read(self, size: int = -1) -> bytes:
        """At most ``size`` bytes (never all of an unbounded stream)."""
        chunk = self.raw.read(size if 0 <= size <= 1 << 20 else 1 << 20)
        self.seen += len(chunk)
        if self.seen > self.cap:
            raise ArchiveRefused(f"the workspace archive unpacks to more than {self.cap} bytes")
        return chunk


def unpack_workspace(archive: Any, dest: Path) -> str | None:
    """Copy a jailed agent's workspace (base64 gzip'd tar) into ``dest``: regular files and folders only,
    no absolute or ``..`` names, no reserved top-level name, never over an existing file; at most
    :data:`MAX_UNPACKED_BYTES` of content and :data:`MAX_UNPACKED_ENTRIES` members (folders and empty
    files count). The archive is read as a stream whose decompressed size is capped, and an extended
    header over :data:`MAX_HEADER_BYTES` is refused before it is read, so a small archive cannot make
    the harness decompress or hold hundreds of MB. Returns a note on what was left out (None when
    everything was copied)."""
    if not isinstance(archive, str):
        return "the worker handed back no workspace"
    skipped: list[str] = []
    total = entries = 0
    try:
        data = base64.b64decode(archive, validate=True)
        stream = _CappedStream(gzip.GzipFile(fileobj=io.BytesIO(data)), MAX_UNPACKED_BYTES + (64 << 20))
        with tarfile.open(fileobj=stream, mode="r|", tarinfo=_CappedTarInfo) as tar:
            for member in tar:
                entries += 1
                if entries > MAX_UNPACKED_ENTRIES:
                    return f"the workspace holds more than {MAX_UNPACKED_ENTRIES} entries; the rest left out"
                name = PurePosixPath(member.name)
                if name.is_absolute() or ".." in name.parts or not name.parts or name.parts[0] in RESERVED:
                    skipped.append(member.name)
                    continue
                target = dest.joinpath(*name.parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if not member.isfile():
                    skipped.append(member.name)
                    continue
                total += member.size
                if total > MAX_UNPACKED_BYTES:
                    return f"the workspace unpacks to more than {MAX_UNPACKED_BYTES} bytes; the rest left out"
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                if src is None:
                    continue
                try:
                    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                except OSError:
                    skipped.append(member.name)
                    continue
                with os.fdopen(fd, "wb") as out:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
    except (ValueError, OSError, tarfile.TarError, EOFError, zlib.error) as exc:
        return f"the workspace could not be copied out: {type(exc).__name__}: {exc}"
    return f"left out: {', '.join(skipped[:20])}" if skipped else None
