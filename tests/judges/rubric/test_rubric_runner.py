"""The ``rubric`` judge inside a real run: folder dataset, baseline agents, LibreOffice, scripted VLM."""

from __future__ import annotations

import json
import shutil

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import use, write_run_config
from tests.support.rubric_fixtures import STAND_IN, edit_title, leaf, rubric

pytestmark = pytest.mark.slow

TITLE = (
    "def compute_score():\n    from pptx import Presentation\n"
    "    texts = [s.text_frame.text for s in Presentation(modified_ppt_path).slides[0].shapes "
    "if s.has_text_frame]\n"
    "    return 'checked title', float('Quarterly review' in texts)\n"
)
LOOKS = (
    "def compute_score():\n    shot = modified_ppt_screenshots[0]\n"
    "    answer = vlm_call('Is slide 1 retitled? YES or NO', [shot.image_path], temperature=0.0)\n"
    "    return f'VLM: {answer}', 1.0 if answer.startswith('YES') else 0.0\n"
)


def test_rubric_judge_in_a_run(tmp_path):
    if not STAND_IN.is_file():
        pytest.skip("../shared/corpus is not available")
    if shutil.which("soffice") is None and shutil.which("libreoffice") is None:
        pytest.skip("LibreOffice is not installed")
    task = tmp_path / "data" / "retitle"
    task.mkdir(parents=True)
    shutil.copyfile(STAND_IN, task / "original.pptx")
    edit_title(STAND_IN, task / "target.pptx", "Quarterly review")
    (task / "rubric.json").write_text(
        json.dumps(rubric(leaf("title", TITLE), leaf("looks", LOOKS, critical=False)))
    )
    (task / "task.toml").write_text(
        'instruction = "Retitle slide 1 to Quarterly review"\noriginal = "original.pptx"\n'
        'target = "target.pptx"\nrubric = "rubric.json"\n'
    )
    config = write_run_config(
        tmp_path / "run.toml",
        dataset=use("folder", root="data"),
        agents=["oracle", "noop"],
        renderer=use("libreoffice", size=400),
        judges=[use("rubric", label="ppteval", model="scripted/vlm", explain="deterministic")],
        backends={"scripted": {"rules": [{"match": "retitled", "reply": "YES"}]}},
    )
    Runner(load_config(config, get_registry()), get_registry(), tmp_path / "out", jobs=1, quiet=True).run()
    rows = {
        r["agent"]: r for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())
    }
    assert rows["oracle"]["status"] == "scored" and rows["oracle"]["scores"]["ppteval"]["score"] == 1.0
    assert rows["oracle"]["scores"]["ppteval"]["metrics"]["success"] is True
    # noop: the title check fails (critical 0), the scripted VLM still says YES (non-critical 1)
    # → max(0, 0 - 0) = 0
    assert rows["noop"]["status"] == "scored" and rows["noop"]["scores"]["ppteval"]["score"] == 0.0
    kept = json.loads(
        (tmp_path / "out" / "tasks" / "oracle" / "retitle" / "judges" / "ppteval" / "rubric.json").read_text()
    )
    assert [c["reason"] for c in kept["tree"]["children"]] == ["checked title", "VLM: YES"]
    assert kept["screenshots"]["rendered"] == ["prediction"]
