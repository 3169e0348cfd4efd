"""The zip fast path (core/deck/zipread.py): the same bytes as zipfile, or a fallback to zipfile's error."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from pptarena.deck import DeckError, summarize
from pptarena.deck.read import open_package
from pptarena.deck.zipread import RawZip
from tests.support.paths import CORPUS

DECKS = ("poi_stress013.pptx", "pythonpptx_missing_rels_item.pptx", "openxmlsdk_o09_Performance_typical.pptx")


def corpus(name: str) -> Path:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus deck {name} not available")
    return path


@pytest.mark.parametrize("name", DECKS)
def test_every_member_reads_like_zipfile(name):
    path = corpus(name)
    raw = RawZip(path)
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                fast = raw.read(info, 1 << 30)
                assert fast is not None, info.filename  # plain deflated/stored members take the fast path
                assert fast == zf.read(info), info.filename
    finally:
        raw.close()


def _deck_with(tmp_path: Path, compress: int) -> Path:
    out = tmp_path / "deck.pptx"
    with (
        zipfile.ZipFile(corpus("pythonpptx_missing_rels_item.pptx")) as zin,
        zipfile.ZipFile(out, "w", compress) as zout,
    ):
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    return out


def test_stored_members_take_the_fast_path(tmp_path):
    path = _deck_with(tmp_path, zipfile.ZIP_STORED)
    raw = RawZip(path)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("ppt/presentation.xml")
        assert raw.read(info, 1 << 30) == zf.read(info)
    raw.close()
    assert summarize(path)["slides"]


def _corrupt(path: Path, member: str, how: str) -> None:
    """Damage ``member`` in place: flip a compressed byte ("data") or rename it in the local
    header ("name").
    """
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    blob = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack_from("<2H", blob, info.header_offset + 26)
    if how == "name":
        blob[info.header_offset + 30] ^= 0x01
    else:
        at = info.header_offset + 30 + name_len + extra_len + info.compress_size // 2
        blob[at] ^= 0xFF
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize("how", ["data", "name"])
def test_a_damaged_member_falls_back_to_zipfile_and_fails_the_same_way(tmp_path, how):
    path = _deck_with(tmp_path, zipfile.ZIP_DEFLATED)
    _corrupt(path, "ppt/presentation.xml", how)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("ppt/presentation.xml")
        with pytest.raises((zipfile.BadZipFile, OSError, EOFError, Exception)):  # zipfile's own verdict
            zf.read(info)
    raw = RawZip(path)
    assert raw.read(info, 1 << 30) is None
    raw.close()
    with pytest.raises(DeckError, match="presentation.xml"):
        summarize(path)


def test_a_lying_size_is_not_trusted(tmp_path):
    """A central directory that understates a member's size: the fast path refuses, the limit still holds."""
    path = _deck_with(tmp_path, zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("ppt/presentation.xml")
        real = info.file_size
    raw = RawZip(path)
    info.file_size = real // 2  # what a zip bomb's directory would claim
    assert raw.read(info, 1 << 30) is None
    info.file_size = real
    assert raw.read(info, real - 1) is None  # inflating past the limit stops at limit + 1 bytes
    raw.close()
    with open_package(path) as pkg:
        pkg._infos["ppt/presentation.xml"].file_size = real // 2
        with pytest.raises(DeckError, match="presentation.xml"):
            pkg.read("ppt/presentation.xml")
