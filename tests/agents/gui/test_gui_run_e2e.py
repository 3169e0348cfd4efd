"""The GUI agent through `arena run` on a demo deck: real Xvfb, Impress, runner, judges.

A scripted model retitles the first slide of the demo QBR deck with keyboard actions (focus the
slide, Tab to the title, Return to edit, select all, type, Escape). The task's target is the same
edit made with python-pptx. The runner re-saves the original and the target through Impress (the
gui agent's reference normalizer, registered with it), so the structural judge compares like with
like: the GUI prediction scores 1.0 and the unchanged noop deck 0.0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from pptx import Presentation

from tests.support.config import use, write_run_config

pytestmark = [pytest.mark.gui, pytest.mark.slow]
if any(
    shutil.which(p) is None for p in ("Xvfb", "xdotool", "soffice")
):  # pragma: no cover - CI installs them
    pytest.skip(
        "needs Xvfb, xdotool and soffice (apt-get install xvfb xdotool libreoffice-impress)",
        allow_module_level=True,
    )

NEW_TITLE = "Renamed by keyboard"
KEYBOARD_RETITLE = json.dumps(
    {
        "actions": [
            {
                "action": "click",
                "x": 900,
                "y": 680,
            },  # empty corner of the 4:3 slide at 1280x800: focus, nothing selected
            {"action": "key", "keys": "Tab"},  # select the first object: the title
            {"action": "key", "keys": "Return"},  # edit its text
            {"action": "key", "keys": "ctrl+a"},
            {"action": "type", "text": NEW_TITLE},
            {"action": "key", "keys": "Escape"},
            {"action": "key", "keys": "Escape"},
        ]
    }
)


def arena_run(cfg, tmp_path) -> None:
    """``arena run --config CFG --out tmp_path/run --no-report`` as a user runs it; asserts it succeeds."""
    out = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(tmp_path / "run")]
        + ["--no-report"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env=dict(os.environ),
    )
    assert out.returncode == 0, out.stderr[-3000:]


def test_gui_agent_run_on_a_demo_deck_is_judged_against_impress_round_trips(tmp_path):
    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set
    from pptarena.run.configuration.components import default_cache_dir

    demo = ensure_demo_set(default_cache_dir())
    task = tmp_path / "tasks" / "retitle"
    task.mkdir(parents=True)
    shutil.copyfile(demo / "_decks" / "qbr.pptx", task / "original.pptx")
    prs = Presentation(str(task / "original.pptx"))
    prs.slides[0].shapes.title.text_frame.paragraphs[0].runs[0].text = NEW_TITLE
    prs.save(str(task / "target.pptx"))
    (task / "task.toml").write_text(
        f'instruction = "Change the title of slide 1 to \\"{NEW_TITLE}\\"."\n'
        'original = "original.pptx"\ntarget = "target.pptx"\n'
    )
    cfg = write_run_config(
        tmp_path / "gui.toml",
        run={"task_timeout": 400},
        dataset=use("folder", root="tasks"),
        agents=[use("gui", model="scripted/keyboard", max_steps=3, step_delay=0.3), "noop"],
        judges=["structural"],
        backends={"scripted": {"responses": [KEYBOARD_RETITLE, '{"action": "done"}']}},
    )
    arena_run(cfg, tmp_path)
    rows = {
        r["agent"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    }
    gui, noop = rows["gui"], rows["noop"]
    assert gui["status"] == "scored", gui["error"]
    assert gui["scores"]["structural"]["score"] == 1.0, gui["scores"]
    assert noop["scores"]["structural"]["score"] == 0.0
    pair = tmp_path / "run" / "tasks" / "gui" / "retitle"
    assert sorted(p.name for p in (pair / "references").iterdir()) == ["original.pptx", "target.pptx"]
    assert Presentation(str(pair / "prediction.pptx")).slides[0].shapes.title.text_frame.text == NEW_TITLE
    assert (pair / "trajectory" / "trajectory.jsonl").is_file()
    # noop is judged against the dataset's own decks (it has no tool that re-saves them)
    assert not (tmp_path / "run" / "tasks" / "noop" / "retitle" / "references").exists()


def test_gui_agent_hands_its_office_settings_to_the_osworld_checker(tmp_path):
    """OSWorld task 0f84bef9 is scored on LibreOffice's settings file, not the deck: only the gui
    agent provides it (noop is skipped with the reason). The scripted model answers "done" at once,
    so the presenter console is still enabled; the checker must read the settings file the episode
    left behind and say so, instead of "the agent did not hand back" it."""
    from tests.support import osworld_standin as standin

    if not (standin.SHARED_OSWORLD.is_dir() and standin.CORPUS.is_dir()):
        pytest.skip("../shared/osworld or ../shared/corpus is absent")
    root, files = standin.build(tmp_path / "osworld")
    task_id = "0f84bef9-9790-432e-92b7-eece357603fb"
    cfg = write_run_config(
        tmp_path / "gui.toml",
        run={"task_timeout": 400},
        dataset=use("osworld", root=str(root), files_dir=str(files), ids=[task_id]),
        agents=[use("gui", model="scripted/done", max_steps=2), "noop"],
        judges=["osworld"],
        backends={"scripted": {"responses": ['{"action": "done"}']}},
    )
    arena_run(cfg, tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["agent"] for r in rows] == ["gui"]  # noop cannot hand back settings: skipped
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert [(s["agent"], s["task_id"]) for s in manifest["skipped"]] == [("noop", task_id)]
    (gui,) = rows
    assert gui["status"] == "scored", gui["error"]
    assert gui["scores"]["osworld"]["score"] == 0.0
    verdicts = json.loads((tmp_path / "run" / "tasks" / "gui" / task_id / "verdicts.json").read_text())
    explanation = verdicts["verdicts"]["osworld"]["explanation"]
    assert "did not hand back" not in explanation and "EnablePresenterScreen" in explanation, explanation
    kept = tmp_path / "run" / "tasks" / "gui" / task_id / "registrymodifications.xcu"
    assert kept.is_file() and b"org.openoffice" in kept.read_bytes()
