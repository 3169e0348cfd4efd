"""The render guard's copy (issue 23, item 5): what it strips from a deck before an office sees it.

Fast checks on the package level; tests/security/test_trust_render.py renders the attacks with LibreOffice.
"""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

from pptx import Presentation
from pptx.util import Inches

from pptarena.trust.render_guard import check_deck, leaves_package, render_copy, sanitize_svg

RELS = "ppt/slides/_rels/slide1.xml.rels"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"


def base_deck(path: Path) -> Path:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    box.text_frame.text = "plain"
    prs.save(str(path))
    return path


def with_members(deck: Path, edit: dict[str, object]) -> Path:
    tmp = deck.with_suffix(".tmp")
    with zipfile.ZipFile(deck) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
        names = zin.namelist()
        for name in names:
            data = zin.read(name)
            change = edit.get(name)
            zout.writestr(name, change(data) if callable(change) else (change or data))  # type: ignore[operator]
        for name, change in edit.items():
            if name not in names:
                zout.writestr(name, change)  # type: ignore[arg-type]
    tmp.replace(deck)
    return deck


def add_rel(xml: str):
    return lambda data: data.replace(b"</Relationships>", xml.encode() + b"</Relationships>")


def copied(deck: Path) -> dict[str, bytes]:
    with render_copy(deck) as safe:
        assert safe != deck
        with zipfile.ZipFile(safe) as z:
            return {n: z.read(n) for n in z.namelist()}


def test_a_plain_deck_is_handed_over_as_is(tmp_path):
    deck = base_deck(tmp_path / "d.pptx")
    assert check_deck(deck) == []
    with render_copy(deck) as safe:
        assert safe == deck


def test_every_mode_but_internal_is_external_in_any_case(tmp_path):
    deck = with_members(
        base_deck(tmp_path / "d.pptx"),
        {
            RELS: add_rel(
                f'<Relationship Id="rX1" Type="{PR[:-22]}officeDocument/2006/relationships/image" '
                'Target="file:///root/a.png" TargetMode="external"/>'
                '<Relationship Id="rX2" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                'relationships/oleObject" Target="C:\\x.xls" TargetMode="EXTERNAL"/>'
                '<Relationship Id="rX3" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                'relationships/image" Target="../media/ok.png" TargetMode="iNtErNaL"/>'
                '<Relationship Id="rX4" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                'relationships/image" Target="../../../../../etc/x.png"/>'
                '<Relationship Id="rX5" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                'relationships/image" Target="vnd.sun.star.expand:$HOME/x.png"/>'
                '<Relationship Id="rX6" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                'relationships/hyperlink" Target="file:///root/x.png" TargetMode="External"/>'
                '<Relationship Id="rX7" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                'relationships/hyperlink" Target="https://example.org/" TargetMode="External"/>'
            )
        },
    )
    assert len(check_deck(deck)) == 6
    rels = copied(deck)[RELS].decode()
    for gone in ("rX1", "rX2", "rX4", "rX5", "/root/x.png"):
        assert gone not in rels
    assert 'Id="rX3"' in rels and 'Target="../media/ok.png" TargetMode="Internal"' in rels
    assert (
        'Id="rX6" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"'
        in rels
    )
    assert "https://removed.invalid/" in rels and "https://example.org/" in rels


def test_targets_leaving_the_package():
    name = "ppt/slides/_rels/slide1.xml.rels"
    for bad in ("../../../x", "/../x", "..%2F..%2F..%2Fx", "file:///x", "//host/x", "a\\..\\..\\x", "C:/x"):
        assert leaves_package(name, bad), bad
    for ok in ("../media/a.png", "/ppt/media/a.png", "slide2.xml", "../../docProps/app.xml"):
        assert not leaves_package(name, ok), ok
    members = frozenset({"ppt/media/a.png"})
    assert leaves_package(name, "/etc/passwd", members)
    assert not leaves_package(name, "/ppt/media/a.png", members)


def test_svg_external_references_are_removed_and_local_ones_kept(tmp_path):
    svg = (
        b'<?xml version="1.0"?><?xml-stylesheet href="file:///x.css" type="text/css"?>'
        b'<!DOCTYPE svg [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
        b"<style>@import url(file:///a.css); .a{fill:url(#g)} .b{fill:url('file:///b.svg#p')}</style>"
        b'<image xlink:href="file:///root/x.png"/><image href="http://127.0.0.1/x.png"/>'
        b'<image href="data:image/png;base64,AAAA"/><use xlink:href="/etc/x.svg#a"/><use href="#ok"/>'
        b'<rect style="fill:url(file:///c.svg#p)"/><text>&e;</text><script>x()</script></svg>'
    )
    out = sanitize_svg(svg)
    assert out is not None
    for gone in (
        b"file:",
        b"127.0.0.1",
        b"@import",
        b"DOCTYPE",
        b"ENTITY",
        b"stylesheet",
        b"script",
        b"/etc/",
    ):
        assert gone not in out, gone
    for kept in (b"url(#g)", b"data:image/png", b'href="#ok"'):
        assert kept in out
    assert sanitize_svg(b'<svg xmlns="http://www.w3.org/2000/svg"><use href="#a"/></svg>') is None
    assert sanitize_svg(b"<svg><unclosed") is not None  # garbage becomes an empty SVG

    # in a deck: by name, by content under another name, and gzipped (svgz)
    bad = b'<svg xmlns="http://www.w3.org/2000/svg"><image href="file:///root/x.png"/></svg>'
    deck = with_members(
        base_deck(tmp_path / "d.pptx"),
        {"ppt/media/a.svg": bad, "ppt/media/b.png": bad, "ppt/media/c.svgz": gzip.compress(bad)},
    )
    assert len(check_deck(deck)) == 3
    parts = copied(deck)
    assert b"file:" not in parts["ppt/media/a.svg"] + parts["ppt/media/b.png"]
    assert b"file:" not in gzip.decompress(parts["ppt/media/c.svgz"])


def test_chart_external_data_outside_the_package_is_removed_with_its_relationship(tmp_path):
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    data = CategoryChartData()
    data.categories = ["a", "b"]
    data.add_series("s", (1, 2))
    slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, 0, 0, Inches(4), Inches(3), data)
    deck = tmp_path / "chart.pptx"
    prs.save(str(deck))
    with zipfile.ZipFile(deck) as z:
        chart = next(n for n in z.namelist() if n.startswith("ppt/charts/") and n.endswith(".xml"))
        rels = chart.replace("charts/", "charts/_rels/") + ".rels"
        assert b"externalData" in z.read(chart)  # python-pptx links the chart to its embedded workbook
        embedded = z.read(rels)
    assert check_deck(deck) == []  # an embedded workbook stays: nothing to do, no copy
    # the same chart linked to a workbook on some host path instead
    linked = embedded.replace(b'Target="../embeddings/', b'TargetMode="External" Target="file:///srv/data/')
    assert linked != embedded
    with_members(deck, {rels: linked})
    parts = copied(deck)
    assert b"externalData" not in parts[chart]
    assert b"/srv/data/" not in parts[rels]
    assert b"numCache" in parts[chart]  # the cached values the office draws from stay
