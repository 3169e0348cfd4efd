"""Safe reading: slide_ids, open_presentation and DeckError on real corpus decks."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from pptarena.deck import DeckError, open_presentation, slide_ids
from tests.support.paths import CORPUS


def corpus(name: str) -> Path:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus deck {name} not available")
    return path


def test_slide_ids_order_and_hidden():
    ids = slide_ids(corpus("poi_2411-Performance_Up.pptx"))
    assert len(ids) == 48
    assert [n for n, _, _ in ids] == list(range(1, 49))
    assert ids[0][:2] == (1, 256) and ids[1][:2] == (2, 300)
    assert sum(h for _, _, h in ids) == 2
    prs = open_presentation(corpus("poi_2411-Performance_Up.pptx"))
    assert [s.slide_id for s in prs.slides] == [i for _, i, _ in ids]


def test_hidden_slide_flag():
    assert slide_ids(corpus("shapecrawler_033_14-masters.pptx")) == [(1, 1214, True)]


@pytest.mark.parametrize(
    "name,count",
    [
        ("openxmlsdk_strict_2D_Area_charts.pptx", 3),  # ISO Strict: python-pptx alone refuses it
        ("poi_stress022_rtl_ppsx-content-type.pptx", 45),  # slideshow main content type
        ("poi_bug59273_template.potx", 1),  # template main content type
        ("poi_PPTWithAttachments.pptm", 2),
    ],
)
def test_open_presentation_normalises(name, count):
    prs = open_presentation(corpus(name))
    assert len(prs.slides) == count
    assert len(slide_ids(corpus(name))) == count


def test_not_a_zip(tmp_path):
    bad = tmp_path / "x.pptx"
    bad.write_bytes(b"hello, not a zip")
    with pytest.raises(DeckError, match="x.pptx: not a zip"):
        slide_ids(bad)
    with pytest.raises(DeckError, match="x.pptx"):
        open_presentation(bad)


def test_docx_is_not_powerpoint(tmp_path):
    path = tmp_path / "doc.pptx"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        z.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        z.writestr("word/document.xml", "<w:document xmlns:w='urn:w'/>")
    with pytest.raises(DeckError, match="not a PowerPoint file"):
        slide_ids(path)


def test_entity_bomb_rejected(tmp_path):
    src = corpus("pythonpptx_missing_rels_item.pptx")
    out = tmp_path / "bomb.pptx"
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
        "<lolz>&lol2;</lolz>"
    )
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "ppt/presentation.xml":
                data = bomb.encode()
            zout.writestr(info, data)
    with pytest.raises(DeckError, match="DTD or entity"):
        slide_ids(out)


def test_zip_bomb_member_rejected(tmp_path, monkeypatch):
    from pptarena.deck import read

    src = corpus("pythonpptx_missing_rels_item.pptx")
    monkeypatch.setattr(read, "MAX_XML_BYTES", 1000)
    with pytest.raises(DeckError, match="over the limit|size limit"):
        slide_ids(src)
    buf = io.BytesIO(src.read_bytes())
    assert zipfile.is_zipfile(buf)


def test_duplicate_zip_entry_is_corrupt(tmp_path):
    import warnings

    src = corpus("pythonpptx_missing_rels_item.pptx")
    out = tmp_path / "dup.pptx"
    with zipfile.ZipFile(src) as zin:
        members = [(info.filename, zin.read(info)) for info in zin.infolist()]
    with zipfile.ZipFile(out, "w") as zout, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data in members:
            zout.writestr(name, data)
        zout.writestr("ppt/presentation.xml", dict(members)["ppt/presentation.xml"])
    with pytest.raises(DeckError, match="duplicate zip entry"):
        slide_ids(out)
