"""Reading decks from several threads at once (``arena render`` of several decks does).

``slide_ids`` used to read each slide's start tag with an ``iterparse`` abandoned after its first
event; with two renderer threads reading decks, the process died of heap corruption in about one
``arena render`` of three corpus decks in five. The crash does not reproduce reliably outside that
command, so these tests pin the replacement's behaviour (same answers and errors as a full parse)
and run the concurrent reads as a smoke test.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pptarena.deck import DeckError, open_package, slide_ids
from pptarena.deck.read import _root_show_attr, parse_xml
from pptarena.render_guard import check_deck

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


class _Part:
    """A stand-in package holding one part's bytes."""

    name = "deck.pptx"

    def __init__(self, data: bytes):
        self.data = data

    def xml_bytes(self, part: str) -> bytes:
        return self.data


def corpus_decks() -> list[Path]:
    decks = sorted(CORPUS.glob("*.pptx"))
    if not decks:
        pytest.skip("../shared/corpus is not available")
    return decks


def test_show_attribute_matches_a_full_parse_on_every_corpus_slide():
    checked = 0
    for deck in corpus_decks():
        try:
            with open_package(deck) as pkg:
                for _sid, part in pkg.slide_refs():
                    data = pkg.xml_bytes(part)
                    full = parse_xml(data, part).get("show") in ("0", "false")
                    assert _root_show_attr(pkg, part) is full, (deck.name, part)
                    checked += 1
        except DeckError:
            continue  # decks the engine refuses are not this test's subject
    assert checked > 300


@pytest.mark.parametrize(
    "data, expected",
    [
        (b'<p:sld xmlns:p="u" show="0"/>', True),
        (b'<?xml version="1.0"?><!-- c --><sld show="false"><a/></sld>', True),
        (b'<sld show="1"><a/></sld>', False),
        (b"<sld>" + b"<a/>" * 20000 + b"</sld>", False),  # larger than one fed piece
        (b'<sld show="0"><a></b></sld>', True),  # an error after the root's start tag does not matter
    ],
)
def test_show_attribute_of_edge_cases(data, expected):
    assert _root_show_attr(_Part(data), "ppt/slides/slide1.xml") is expected


@pytest.mark.parametrize("data", [b"", b"<", b"garbage", b'<?xml version="1.0"?>'])
def test_unreadable_start_tags_are_deck_errors(data):
    with pytest.raises(DeckError, match="malformed XML|empty XML document"):
        _root_show_attr(_Part(data), "ppt/slides/slide1.xml")


def test_concurrent_reads_give_the_single_threaded_answers():
    decks = corpus_decks()[:12]
    expected = {}
    for deck in decks:
        try:
            expected[deck] = slide_ids(deck)
        except DeckError:
            continue

    def read(deck: Path):
        check_deck(deck)
        return deck, slide_ids(deck)

    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            for deck, ids in pool.map(read, list(expected) * 2):
                assert ids == expected[deck]
