"""The dual judge with real LibreOffice renders: SSIM picks exactly the slides that changed (slow:
one test)."""

from __future__ import annotations

import shutil

import pytest

from pptarena.models import ModelHub
from pptarena.plugins.judges.dual.judge import DualJudge
from pptarena.types import ComponentContext
from tests.support.structural_dual_fixtures import build_deck, derive, make_case, recolor, retitle

pytestmark = pytest.mark.slow


def test_real_renders_select_changed_slides_and_reach_the_model(tmp_path):
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer

    base = ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: None, name="x")
    renderer = LibreOfficeRenderer(LibreOfficeRenderer.Options(size=640, warm=False), base)
    backend = ScriptedBackend(
        ScriptedOptions(
            rules=[
                {"match": "instruction following", "reply": "4"},
                {"match": "visual quality", "reply": '{"score": 5}'},
            ]
        ),
        base,
    )
    ctx = ComponentContext(
        cache_dir=tmp_path / "cache",
        model=ModelHub({"scripted": backend}).factory(),
        name="dual",
        label="dual",
    )
    try:
        orig = build_deck(tmp_path / "orig.pptx", slides=5)
        target = derive(orig, tmp_path / "target.pptx", recolor(2, "Box1", (0xE0, 0x10, 0x10)))
        pred = derive(
            orig,
            tmp_path / "pred.pptx",
            recolor(2, "Box1", (0xD0, 0x20, 0x10)),
            retitle(4, "A different title"),
        )
        task, prediction, ev = make_case(tmp_path, orig, target, pred, renderer=renderer, model=ctx.model)
        verdict = DualJudge(DualJudge.Options(model="scripted/j"), ctx).judge(task, prediction, ev)
    finally:
        renderer.close()
    [vq] = [r for r in backend.requests if r.images]
    assert "PREDICTION slides 2, 4" in vq.last_user_text  # slides 1, 3, 5 render identically and are left out
    # the target's changed slide 2 in the task-stable part, then prediction slides 2 and 4 (slide 4
    # followed by the target's version: it is not in the stable part)
    assert len(vq.images) == 4
    assert "TARGET slide 2 (reference):" in vq.messages[1].parts() and vq.messages[1].cache_prefix
    pngs = {img.number: img.path.read_bytes() for img in ev.renders("prediction")}
    target_pngs = {img.number: img.path.read_bytes() for img in ev.renders("target")}
    assert [i.data for i in vq.images] == [target_pngs[2], pngs[2], pngs[4], target_pngs[4]]
    assert verdict.metrics["if_score"] == 4 and verdict.metrics["vq_score"] == 5
