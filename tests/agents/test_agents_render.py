"""The xml and hybrid agents with the real LibreOffice renderer (one real corpus deck)."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest

from pptarena.models import ImagePart
from pptarena.types import ComponentContext, Task
from tests.support.agents_fixtures import (
    FIX_TYPO_PROGRAM,
    build_agent,
    deck_texts,
    events,
    make_task,
    scripted_workspace,
)

DECK = "shapecrawler_autoshape-case018_rotation.pptx"  # 3 slides saved by PowerPoint 16


@pytest.fixture(scope="module")
def renderer(tmp_path_factory):
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer

    cache = tmp_path_factory.mktemp("render-cache")
    r = LibreOfficeRenderer(
        LibreOfficeRenderer.Options(size=480), ComponentContext(cache_dir=cache, model=None)
    )  # type: ignore[arg-type]
    yield r
    r.close()


@pytest.mark.slow
def test_xml_agent_on_a_real_deck_renders_and_verifies(tmp_path, corpus_dir, renderer):
    source = corpus_dir / DECK
    if not source.is_file():
        pytest.skip(f"{DECK} is not in the corpus")
    xml = zipfile.ZipFile(source).read("ppt/slides/slide2.xml").decode("utf-8")
    assert "Green Texting" in xml
    reply = (
        "MODIFIED_XML_FILE: ppt/slides/slide2.xml\n```xml\n"
        + xml.replace("Green Texting", "Blue Texting")
        + "\n```"
    )
    ws, backend = scripted_workspace(tmp_path, [reply, '{"done": true}'], renderer=renderer, deck=source)
    task = Task(
        id="real-1",
        instruction="On slide 2, change the words 'Green Texting' to 'Blue Texting'.",
        original=source,
    )
    pred = build_agent("xml", tmp_path, selection="heuristic", loops=1, max_images=3).edit(task, ws)
    from pptarena.deck import summarize

    texts = json.dumps(summarize(pred.path)["slides"][1], ensure_ascii=False)  # text in groups too
    assert "Blue Texting" in texts and "Green Texting" not in texts
    assert pred.metadata["rounds"] == [{"round": 1, "done": True, "parsed": True, "feedback": ""}]
    # the edit prompt had the 3 input renders; the verifier got renders of the edited deck (slide 2 first)
    edit_images = [p for p in backend.requests[0].messages[1].parts() if isinstance(p, ImagePart)]
    verify_parts = backend.requests[1].messages[1].parts()
    verify_images = [p for p in verify_parts if isinstance(p, ImagePart)]
    assert len(edit_images) == 3 and len(verify_images) == 3
    assert all(img.data.startswith(b"\x89PNG") for img in edit_images + verify_images)
    assert edit_images[1].data != verify_images[1].data  # slide 2 changed on screen
    assert any("Blue Texting" in p for p in verify_parts if isinstance(p, str))
    assert len(list((ws.dir / "pilot" / "renders").rglob("*.png"))) >= 6
    assert not events(ws, "render_failed")
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(pred.path) as b:
        assert all(a.read(n) == b.read(n) for n in a.namelist() if n != "ppt/slides/slide2.xml")


def test_hybrid_code_branch_with_real_renders(tmp_path, renderer):
    ws, backend = scripted_workspace(
        tmp_path,
        ['{"route": "code", "reason": "typo"}', FIX_TYPO_PROGRAM, '{"done": true}'],
        renderer=renderer,
    )
    pred = build_agent("hybrid", tmp_path, loops=1).edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    assert sum(isinstance(p, ImagePart) for p in backend.requests[2].messages[1].parts()) == 2
