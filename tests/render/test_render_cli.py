"""`arena render` through the plugin registry with real LibreOffice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from pptarena.cli.render import render_command
from tests.support.paths import CORPUS

HIDDEN_DECK = CORPUS / "shapecrawler_autoshape-case017_sections_hidden.pptx"
SMALL_DECK = CORPUS / "docling_powerpoint_comments.pptx"

pytestmark = pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed"
)


@pytest.fixture
def decks():
    if not (HIDDEN_DECK.is_file() and SMALL_DECK.is_file()):
        pytest.skip("corpus decks are not available")
    return HIDDEN_DECK, SMALL_DECK


@pytest.mark.slow
def test_several_decks_go_to_one_folder_each(decks, tmp_path):
    result = CliRunner().invoke(render_command, [*map(str, decks), "--out", str(tmp_path), "--size", "320"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(d.stem for d in decks)
    small = sorted((tmp_path / SMALL_DECK.stem).iterdir())
    assert [p.name for p in small] == ["slide-001.png", "slide-002.png", "slide-003.png"]
    with Image.open(small[0]) as im:
        assert im.size == (320, 240)
    assert "(1 slides, 1 hidden)" in result.output and "rendered 4 slides from 2 deck(s)" in result.output


@pytest.mark.slow
def test_one_deck_goes_straight_into_out_as_json(decks, tmp_path):
    result = CliRunner().invoke(
        render_command, [str(decks[0]), "--out", str(tmp_path), "--no-cache", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    [(deck, images)] = data.items()
    assert Path(deck) == decks[0]
    assert images == [
        {
            "number": 1,
            "sld_id": 264,
            "path": str(tmp_path / "slide-001.png"),
            "width": 1280,
            "height": 960,
            "hidden": True,
        }
    ]


def test_unknown_renderer_suggests_a_name(decks, tmp_path):
    result = CliRunner().invoke(
        render_command, [str(decks[0]), "--out", str(tmp_path), "--renderer", "libreofice"]
    )
    assert result.exit_code != 0
    assert "libreoffice" in result.output


@pytest.mark.slow
def test_render_loads_only_renderer_plugins_when_they_have_the_renderer(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pptarena.cli.render import make_renderer\n"
        "r = make_renderer('libreoffice', {'cache': False})\n"
        "kinds = {m.split('.')[2] for m in sys.modules if m.startswith('pptarena.plugins.')}\n"
        "print(type(r).__name__, sorted(kinds))\n"
        "r.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["LibreOfficeRenderer", "['renderers']"]
