"""A fast path for reading zip members: inflate straight from a memory map of the file.

``zipfile.ZipFile.open`` + ``read`` costs about as much per member as parsing a slide's XML
(file objects, seeks, a header re-read and a Python read loop). For the plain case — a stored or
deflated member, not encrypted, whose local header agrees with the central directory — this
module inflates the member's bytes from a memory map in one call and checks its size and CRC-32.
Anything else (other compression methods, encryption, a mismatched header, a truncated stream, a
wrong CRC or size) returns None, and the caller falls back to ``zipfile``, which then raises its
usual error: the result is the same bytes or the same failure, only faster.
"""

from __future__ import annotations

import mmap
import struct
import zipfile
import zlib
from pathlib import Path

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile.structFileHeader
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ENCRYPTED = 0x1
_PATCHED = 0x20
_UTF8 = 0x800


class RawZip:
    """A read-only memory map of a zip file (closed with :meth:`close`)."""

    def __init__(self, path: Path) -> None:
        self._map: mmap.mmap | None = None
        try:
            with open(path, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # empty file, special file: zipfile alone will do
            self._map = None

    def close(self) -> None:
        """Release the map."""
        if self._map is not None:
            self._map.close()
            self._map = None

    def read(self, info: zipfile.ZipInfo, limit: int) -> bytes | None:
        """The member's bytes if it is a plain stored/deflated member that checks out, else None.

        Members over ``limit`` bytes are refused; inflation never produces more than ``limit + 1``.
        """
        buf = self._map
        if (
            buf is None
            or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
            or info.file_size > limit
        ):
            return None
        start = info.header_offset
        if start < 0 or start + _LOCAL_HEADER.size > len(buf):
            return None
        fields = _LOCAL_HEADER.unpack_from(buf, start)
        flags, name_len, extra_len = fields[3], fields[10], fields[11]
        if fields[0] != _LOCAL_SIGNATURE or flags & (_ENCRYPTED | _PATCHED) or info.flag_bits & _ENCRYPTED:
            return None
        name_at = start + _LOCAL_HEADER.size
        raw_name = buf[name_at : name_at + name_len]
        try:
            name = raw_name.decode("utf-8" if info.flag_bits & _UTF8 else "cp437")
        except UnicodeDecodeError:
            return None
        if name != info.orig_filename:
            return None
        data_at = name_at + name_len + extra_len
        end = data_at + info.compress_size
        if end > len(buf):
            return None
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                return None
            data = buf[data_at:end]
        else:
            inflater = zlib.decompressobj(-15)
            try:
                data = inflater.decompress(buf[data_at:end], limit + 1)
            except zlib.error:
                return None
            if not inflater.eof or len(data) != info.file_size:
                return None
        if zlib.crc32(data) != info.CRC:
            return None
        return data
