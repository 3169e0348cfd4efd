"""Helpers for the rubric judge tests: stand-in deck pairs, evidence and a scripted model."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pptarena.rubric_code import CONTEXT_NAMES  # noqa: F401 - re-exported for the rubric tests
from tests.support.paths import CORPUS, PPTEVAL

RUBRICS = PPTEVAL / "task_registry" / "rubrics"
STAND_IN = CORPUS / "poi_stress013.pptx"  # 23 slides with animations, transitions, tables and notes


def published_rubrics() -> dict[str, dict[str, Any]]:
    """Task id → published rubric JSON (empty when ../shared/ppteval is absent)."""
    if not RUBRICS.is_dir():
        return {}
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(RUBRICS.glob("*.json"))}


def edited_copy(src: Path, dst: Path) -> Path:
    """A lightly edited copy of ``src``: text changed on slides 2 and 8, slide 5 replaced by a new slide."""
    from pptx import Presentation

    prs = Presentation(str(src))
    for index in (1, 7):
        if index < len(prs.slides):
            for shape in prs.slides[index].shapes:
                if shape.has_text_frame and shape.text_frame.text.strip():
                    shape.text_frame.text = "Edited by the rubric tests"
                    break
    layout = prs.slide_layouts[min(1, len(prs.slide_layouts) - 1)]
    new = prs.slides.add_slide(layout)  # before the removal, so part names stay unique
    if new.shapes.title is not None:
        new.shapes.title.text = "A new slide"
    ids = prs.slides._sldIdLst  # noqa: SLF001 - python-pptx has no public slide removal
    if len(ids) > 5:
        victim = ids[4]
        prs.part.drop_rel(victim.rId)
        ids.remove(victim)
        added = ids[-1]
        ids.remove(added)
        ids.insert(4, added)  # the new slide takes the removed one's place: slide_number 5
    prs.save(str(dst))
    return dst


def edit_title(src: Path, dst: Path, text: str, index: int = 0) -> Path:
    """A copy of ``src`` whose first text shape on slide ``index`` reads ``text``."""
    from pptx import Presentation

    prs = Presentation(str(src))
    for shape in prs.slides[index].shapes:
        if shape.has_text_frame:
            shape.text_frame.text = text
            break
    prs.save(str(dst))
    return dst


def leaf(name: str, code: str, critical: bool = True) -> dict[str, Any]:
    """A rubric leaf in PPT-Eval's JSON form."""
    return {
        "name": name,
        "description": name,
        "is_critical": critical,
        "metadata": {},
        "scorer": {"type": "function", "function_code": code},
    }


def parent(name: str, children: list[dict[str, Any]], critical: bool = True) -> dict[str, Any]:
    """A rubric parent in PPT-Eval's JSON form."""
    return {
        "name": name,
        "description": name,
        "is_critical": critical,
        "metadata": {},
        "children": copy.deepcopy(children),
    }


def rubric(*children: dict[str, Any]) -> dict[str, Any]:
    """A whole rubric with ``children`` under the root."""
    return {"root": parent("root", list(children)), "metadata": {"task": "test"}}


def scripted_hub(tmp_path: Path, **options: Any):
    """``(backend, model_factory)`` for a scripted backend built with ``options``."""
    from pptarena.models import ModelHub
    from pptarena.plugins.backends.scripted import ScriptedBackend
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path / "cache", model=None)  # type: ignore[arg-type]
    backend = ScriptedBackend(ScriptedBackend.Options(**options), ctx)
    return backend, ModelHub({"scripted": backend}).factory()


def make_judge(tmp_path: Path, **options: Any):
    """A ``rubric`` judge built through the registry with ``options``."""
    from pptarena.plugins.judges.rubric.judge import RubricJudge
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path / "cache", model=None, name="rubric", label="rubric")  # type: ignore[arg-type]
    return RubricJudge(RubricJudge.Options(**options), ctx)


def make_evidence(task, prediction_path: Path, task_dir: Path, renderer=None, model=None):
    """An :class:`pptarena.evidence.Evidence` for ``task`` and a prediction deck."""
    from pptarena.evidence import Evidence
    from pptarena.types import Prediction

    return Evidence(task, Prediction(prediction_path), task_dir, renderer=renderer, model=model)


@pytest.fixture(scope="session")
def renderer(tmp_path_factory):
    """A real LibreOffice renderer (small images, cached for the session); skips without soffice."""
    from pptarena.plugins.renderers.libreoffice import LibreOfficeRenderer
    from pptarena.types import ComponentContext, ComponentUnavailable

    cache = tmp_path_factory.mktemp("rubric-renderer")
    try:
        r = LibreOfficeRenderer(
            LibreOfficeRenderer.Options(size=400), ComponentContext(cache_dir=cache, model=None)
        )  # type: ignore[arg-type]
    except ComponentUnavailable as exc:
        pytest.skip(f"LibreOffice is not available: {exc}")
    yield r
    r.close()


@pytest.fixture(scope="session")
def stand_in_pair(tmp_path_factory):
    """``(original, edited)``: the stand-in corpus deck and a lightly edited copy (skips without the
    corpus)."""
    if not STAND_IN.is_file():
        pytest.skip("../shared/corpus is not available")
    out = tmp_path_factory.mktemp("rubric-decks")
    return STAND_IN, edited_copy(STAND_IN, out / "edited.pptx")
