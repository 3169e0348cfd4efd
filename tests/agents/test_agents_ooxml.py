"""Unit tests of the XML branch's reply parsing, part checks and package rewriting, and of code extraction."""

from __future__ import annotations

import zipfile

import pytest

from pptarena.plugins.agents.pptpilot.agent import parse_route
from pptarena.plugins.agents.pptpilot.branch import CandidateError, Unchanged
from pptarena.plugins.agents.pptpilot.code import extract_program
from pptarena.plugins.agents.pptpilot.context import find_json_object, mentioned_slides, summary_text
from pptarena.plugins.agents.pptpilot.package_parts import DeckParts, PartError, check_part, write_package
from pptarena.plugins.agents.pptpilot.verify import parse_verdict
from pptarena.plugins.agents.pptpilot.xml_branch import parse_xml_reply
from tests.support.agents_fixtures import make_deck


def test_parse_xml_reply_forms():
    reply = (
        "MODIFIED_XML_FILE: ppt/slides/slide1.xml\n```xml\n<a/>\n```\n"
        "MODIFIED_XML_FILE: `/ppt/theme/theme1.xml`\n```\n<b/>\n```"
    )
    assert parse_xml_reply(reply) == {"ppt/slides/slide1.xml": "<a/>", "ppt/theme/theme1.xml": "<b/>"}
    assert parse_xml_reply("MODIFIED_XML_FILE: ppt/slides/slide3.xml\n<c>raw</c>\n") == {
        "ppt/slides/slide3.xml": "<c>raw</c>"
    }
    assert parse_xml_reply('{"modified_files": {"/ppt/slides/slide1.xml": "<d/>"}}') == {
        "ppt/slides/slide1.xml": "<d/>"
    }
    with pytest.raises(Unchanged):
        parse_xml_reply("No changes needed.")
    with pytest.raises(CandidateError, match="holds no parts"):
        parse_xml_reply("I think the slide looks great")
    with pytest.raises(CandidateError, match="no XML follows"):
        parse_xml_reply("MODIFIED_XML_FILE: ppt/slides/slide1.xml\nsee above")


def test_check_part_rules(tmp_path):
    deck = make_deck(tmp_path / "d.pptx")
    original = zipfile.ZipFile(deck).read("ppt/slides/slide1.xml").decode()
    with DeckParts(deck) as parts:
        assert parts.editable()[:2] == ["ppt/slides/slide1.xml", "ppt/slides/slide2.xml"]
        assert "ppt/theme/theme1.xml" in parts.editable() and "ppt/presentation.xml" not in parts.editable()
        out = check_part(parts, "ppt/slides/slide1.xml", original.replace("Quarterly", "Annual").encode())
        assert out.startswith(b"<?xml") and b"Annual Review" in out
        bomb = (
            '<?xml version="1.0"?><!DOCTYPE p:sld [<!ENTITY a "aaaa">]>' + original.split("?>", 1)[1]
        ).encode()
        with pytest.raises(PartError, match="DOCTYPE"):
            check_part(parts, "ppt/slides/slide1.xml", bomb)
        with pytest.raises(PartError, match="root element is 'sldLayout'"):
            check_part(
                parts,
                "ppt/slides/slide1.xml",
                original.replace("p:sld ", "p:sldLayout ").replace("</p:sld>", "</p:sldLayout>").encode(),
            )
        with pytest.raises(PartError, match="no such part"):
            check_part(parts, "ppt/slides/slide9.xml", original.encode())
        with pytest.raises(PartError, match="not an editable part"):
            check_part(parts, "[Content_Types].xml", b"<x/>")
        with pytest.raises(PartError, match="not well-formed"):
            check_part(parts, "ppt/slides/slide1.xml", b"<p:sld>")
        ignorable = original.replace(
            "<p:sld ",
            '<p:sld xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
            'mc:Ignorable="p14" ',
            1,
        )
        with pytest.raises(PartError, match="undeclared prefixes: p14"):
            check_part(parts, "ppt/slides/slide1.xml", ignorable.encode())


def test_write_package_replaces_only_the_given_parts(tmp_path):
    deck = make_deck(tmp_path / "d.pptx")
    out = tmp_path / "out.pptx"
    write_package(deck, out, {"ppt/slides/slide1.xml": b"<new/>"})
    with zipfile.ZipFile(deck) as a, zipfile.ZipFile(out) as b:
        assert a.namelist() == b.namelist()
        assert b.read("ppt/slides/slide1.xml") == b"<new/>"
        assert all(a.read(n) == b.read(n) for n in a.namelist() if n != "ppt/slides/slide1.xml")
    with pytest.raises(PartError, match="not in the package"):
        write_package(deck, tmp_path / "x.pptx", {"ppt/slides/slide7.xml": b"<x/>"})
    assert not (tmp_path / "x.pptx").exists() and not (tmp_path / "x.pptx.tmp").exists()


def test_extract_program():
    assert extract_program("text\n```python\nimport pptx\nx = 1\n```\nmore") == "import pptx\nx = 1\n"
    assert extract_program("from pptx import Presentation\nPresentation(INPUT_PATH)").startswith("from pptx")
    with pytest.raises(CandidateError, match="does not compile"):
        extract_program("```python\ndef broken(:\n```")
    with pytest.raises(CandidateError, match="no ```python block"):
        extract_program("Sorry, I can't.")


def test_router_verifier_and_json_parsing():
    assert parse_route('{"route": "code", "reason": "many slides"}') == ("code", "many slides")
    assert parse_route('```json\n{"route": "XML", "reason": "chart"}\n```') == ("xml", "chart")
    assert parse_route("PYTHON_PPTX_EDIT")[0] == "code" and parse_route("XML_EDIT")[0] == "xml"
    assert parse_route("either would work") == (None, "")
    assert parse_verdict('{"done": true}').done is True
    v = parse_verdict('Here: {"done": false, "feedback": "title overflows"}')
    assert (v.done, v.feedback, v.parsed) == (False, "title overflows", True)
    assert parse_verdict('{"done": false}').parsed is False
    assert parse_verdict("REVISE: move the logo").feedback == "move the logo"
    assert parse_verdict("DONE.").done is True
    assert find_json_object('x {bad} y {"a": 1}') == {"a": 1}


def test_context_helpers():
    assert mentioned_slides("Fix slides 2-4 and slide 7, not slide 99", 10) == [2, 3, 4, 7]
    assert mentioned_slides("On slides 1, 3 and 5 make titles bold", 5) == [1, 3, 5]
    summary = {
        "file": "x",
        "slides": [{"number": i, "title": f"T{i}", "shapes": ["y" * 500]} for i in range(1, 30)],
    }
    text = summary_text(summary, 3000)
    assert len(text) <= 3000 and '"omitted_slides"' in text and '"title":"T29"' in text
