"""Fuzz-style robustness: mutated real decks either read fine or raise DeckError — nothing else.

Mutations: truncation, flipped bytes, deleted parts, dangling relationships, entity bombs,
malformed/over-deep XML, wrong root elements and non-numeric attribute values.
"""

from __future__ import annotations

import random
import re
import zipfile
from pathlib import Path

import pytest

from pptarena.deck import DeckError, diff_decks, open_presentation, ppteval_diff, slide_ids, summarize
from tests.support.paths import CORPUS

SMALL = ["pythonpptx_shp-shapes.pptx", "openxmlsdk_strict_2D_Area_charts.pptx", "poi_stress013.pptx"]


def load(name: str) -> dict[str, bytes]:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus deck {name} not available")
    with zipfile.ZipFile(path) as z:
        return {info.filename: z.read(info) for info in z.infolist()}


def write(members: dict[str, bytes], path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def exercise(path: Path, with_pptx: bool = True) -> str:
    """Run every reader on ``path``; return "ok" or "DeckError"; anything else propagates."""
    try:
        slide_ids(path)
        summary = summarize(path)
        d = diff_decks(summary, summary)
        assert d.edit_count == 0
        ppteval_diff(d).to_json()
        if with_pptx:
            open_presentation(path)
    except DeckError as exc:
        assert path.name in str(exc)
        return "DeckError"
    return "ok"


def mutations(members: dict[str, bytes], rng: random.Random):
    """Yield (label, members-or-raw-bytes) mutations of one deck."""
    names = list(members)
    slide = next(n for n in names if re.match(r"ppt/slides/slide\d+\.xml$", n))
    yield (
        "entity-bomb",
        {
            **members,
            slide: b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><x>&b;</x>',
        },
    )
    yield (
        "external-entity",
        {
            **members,
            slide: b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
        },
    )
    yield "malformed-xml", {**members, slide: members[slide][: len(members[slide]) // 2]}
    yield (
        "wrong-root",
        {
            **members,
            slide: b'<p:notes xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>',
        },
    )
    deep = b"<a>" * 5000 + b"</a>" * 5000
    yield "too-deep", {**members, slide: deep}
    for label, pattern, repl in [
        ("bad-id", rb'<p:cNvPr id="\d+"', b'<p:cNvPr id="x1"'),
        ("bad-size", rb'sz="\d+"', b'sz="big"'),
        ("bad-offset", rb'<a:off x="\d+"', b'<a:off x="1e5"'),
        ("bad-sldid", rb'<p:sldId id="\d+"', b'<p:sldId id="abc"'),
    ]:
        mutated = {n: re.sub(pattern, repl, d) if n.endswith(".xml") else d for n, d in members.items()}
        yield label, mutated
    rels = [n for n in names if n.endswith(".rels")]
    for rel in rels[:12]:
        yield (
            f"dangling:{rel}",
            {**members, rel: re.sub(rb'Target="[^"]+"', b'Target="nowhere/missing.xml"', members[rel])},
        )
    for name in rng.sample(names, min(len(names), 15)):
        yield f"deleted:{name}", {n: d for n, d in members.items() if n != name}


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL)
def test_mutated_parts(name, tmp_path):
    members = load(name)
    rng = random.Random(1234)
    outcomes = {}
    for k, (label, mutated) in enumerate(mutations(members, rng)):
        path = write(mutated, tmp_path / f"m{k}.pptx")
        outcomes[label] = exercise(path, with_pptx=name != "poi_stress013.pptx")
    for label in ("entity-bomb", "external-entity", "malformed-xml", "too-deep", "wrong-root"):
        assert outcomes[label] == "DeckError", label
    assert (
        outcomes["deleted:[Content_Types].xml"] == "DeckError"
        if "deleted:[Content_Types].xml" in outcomes
        else True
    )


@pytest.mark.parametrize("name", SMALL[:2])
def test_truncated_and_flipped_bytes(name, tmp_path):
    raw = (CORPUS / name).read_bytes() if (CORPUS / name).exists() else pytest.skip("corpus missing")
    rng = random.Random(99)
    seen = set()
    for k, frac in enumerate((0.0, 0.01, 0.1, 0.5, 0.9, 0.999)):
        path = tmp_path / f"t{k}.pptx"
        path.write_bytes(raw[: int(len(raw) * frac)])
        seen.add(exercise(path))
    for k in range(40):
        data = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
        path = tmp_path / f"f{k}.pptx"
        path.write_bytes(bytes(data))
        seen.add(exercise(path))
    assert "DeckError" in seen


def test_zip_bomb(tmp_path, monkeypatch):
    """A member that inflates far beyond its limit is refused while inflating, not after."""
    from pptarena.deck import read

    members = load("pythonpptx_shp-shapes.pptx")
    slide = "ppt/slides/slide1.xml"
    members[slide] = members[slide] + b" " * (3 << 20)  # 3 MiB of whitespace compresses to ~3 KiB
    path = write(members, tmp_path / "bomb.pptx")
    assert path.stat().st_size < 400_000
    monkeypatch.setattr(read, "MAX_XML_BYTES", 1 << 20)
    with pytest.raises(DeckError, match="bomb.pptx"):
        summarize(path)


def test_too_many_entries(tmp_path, monkeypatch):
    from pptarena.deck import read

    members = load("pythonpptx_shp-shapes.pptx")
    members.update({f"junk/{i}.bin": b"" for i in range(50)})
    path = write(members, tmp_path / "many.pptx")
    monkeypatch.setattr(read, "MAX_ENTRIES", 40)
    with pytest.raises(DeckError, match="zip entries"):
        slide_ids(path)


@pytest.mark.parametrize(
    "colour",
    [
        b'<a:srgbClr val="112233"><a:alpha val="inf"/></a:srgbClr>',
        b'<a:srgbClr val="112233"><a:tint val="nan"/></a:srgbClr>',
        b'<a:srgbClr val="112233"><a:lumMod val="1e999"/></a:srgbClr>',
        b'<a:srgbClr val="GGGGGG"><a:lumMod val="50000"/></a:srgbClr>',
        b'<a:hslClr hue="-5" sat="900000000" lum="50000"/>',
    ],
)
def test_colour_values_out_of_range_never_crash(tmp_path, colour):
    """Non-finite percentages, non-hex RGB and out-of-range HSL: the deck reads, colours stay 6-hex or
    absent."""
    import io

    from pptx import Presentation
    from pptx.dml.color import RGBColor
    from pptx.util import Inches

    prs = Presentation()
    box = prs.slides.add_slide(prs.slide_layouts[6]).shapes.add_textbox(
        Inches(1), Inches(1), Inches(2), Inches(1)
    )
    box.fill.solid()
    box.fill.fore_color.rgb = RGBColor(0x11, 0x22, 0x33)
    buf = io.BytesIO()
    prs.save(buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    slide = "ppt/slides/slide1.xml"
    assert b'<a:srgbClr val="112233"/>' in members[slide]
    members[slide] = members[slide].replace(b'<a:srgbClr val="112233"/>', colour)
    path = write(members, tmp_path / "colour.pptx")
    fill = summarize(path)["slides"][0]["shapes"][0]["fill"]
    assert fill["type"] == "solid"
    rgb = (fill["color"] or {}).get("rgb")
    assert rgb is None or re.fullmatch(r"[0-9A-F]{6}", rgb), rgb
