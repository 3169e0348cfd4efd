"""Every corpus deck: summarises (schema-valid, deterministic), self-diffs to 0 edits, and a
python-pptx open-and-save round trip is not an edit either."""

from __future__ import annotations

import json

import pytest

from pptarena.deck import DeckError, diff_decks, open_presentation, ppteval_diff, slide_ids, summarize
from pptarena.deck.ppteval import PowerPointDiff
from tests.support.paths import ROOT

CORPUS = ROOT.parent / "shared" / "corpus"
DECK_SUFFIXES = (".pptx", ".pptm", ".ppsx", ".potx")
DECKS = (
    sorted(p.name for p in CORPUS.iterdir() if p.suffix.lower() in DECK_SUFFIXES) if CORPUS.is_dir() else []
)
SCHEMA = ROOT / "core" / "schemas" / "deck-summary.schema.json"


@pytest.fixture(scope="module")
def validator():
    import jsonschema  # in the `test` extra: a missing package must fail, not skip the corpus tests

    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))


@pytest.mark.skipif(not DECKS, reason="corpus not available")
@pytest.mark.parametrize("name", DECKS)
def test_corpus_deck(name, tmp_path, validator):
    path = CORPUS / name
    try:
        summary = summarize(path)
    except DeckError as exc:  # allowed only for files that are not valid presentations
        assert name in str(exc)
        return
    validator.validate(summary)
    assert json.dumps(summary, sort_keys=False) == json.dumps(summarize(path), sort_keys=False)
    ids = slide_ids(path)
    assert [(s["number"], s["sld_id"], s["hidden"]) for s in summary["slides"]] == ids
    same = diff_decks(summary, summarize(path))
    assert same.edit_count == 0 and same.edits == []
    assert same.slide_matches == [(n, n) for n in range(1, len(ids) + 1)]
    view = ppteval_diff(same)
    assert all(getattr(view, name) == [] for name in view.to_json())
    out = tmp_path / "roundtrip.pptx"
    open_presentation(path).save(out)
    roundtrip = diff_decks(summary, out)
    assert roundtrip.edit_count == 0, roundtrip.to_text()


def test_ppteval_json_round_trip():
    if not DECKS:
        pytest.skip("corpus not available")
    d = diff_decks(CORPUS / "poi_stress013.pptx", CORPUS / "poi_themes.pptx")
    view = ppteval_diff(d)
    data = json.loads(json.dumps(view.to_json()))
    back = PowerPointDiff.from_json(data)
    assert back.to_json() == view.to_json()
    assert back.modified_slides and isinstance(back.modified_slides[0], tuple)
    old, new = back.modified_slides[0]
    assert isinstance(old.slide_id, str) and int(old.slide_id) >= 256 and isinstance(new.slide_number, int)
    assert back.removed_animations and isinstance(back.removed_animations[0].slide_id, str)
    combined = back.added_slides + back.removed_slides
    assert len(combined) == len(view.added_slides) + len(view.removed_slides)
