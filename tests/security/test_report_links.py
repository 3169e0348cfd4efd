"""The report never follows what an agent left in its pair's folder (issue 23: "the harness never
follows what the agent side wrote"): a log, a trajectory, a screenshot, a prediction or an input
deck replaced by a link to a host file is not read into the report, and a render folder replaced
by a link to a host folder is not rendered into. Each test fails on the report of commit 9b36a35.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pptarena.report.fileio import read_regular
from pptarena.report.renders import PairDecks, RenderBudget, pair_decks, pair_view
from pptarena.report.verdicts import agent_log_html, trajectory_html
from pptarena.run.folder.records import ResultRow
from pptarena.types import SlideImage

HOST_SECRET = "host-only-text-0451"


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host folder the agent must not make the report read or write."""
    folder = tmp_path / "host"
    (folder / "trajectory").mkdir(parents=True)
    (folder / "log.jsonl").write_text(json.dumps({"event": "x", "text": HOST_SECRET}) + "\n")
    (folder / "trajectory" / "trajectory.jsonl").write_text(json.dumps({"step": 1, "actions": [HOST_SECRET]}))
    (folder / "shot.png").write_bytes(b"\x89PNG host image")
    return folder


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    folder = tmp_path / "run" / "tasks" / "agent" / "task"
    folder.mkdir(parents=True)
    return folder


def test_a_linked_log_or_verdicts_file_is_not_read(pair, host):
    (pair / "agent.log.jsonl").symlink_to(host / "log.jsonl")
    (pair / "verdicts.json").symlink_to(host / "log.jsonl")
    assert HOST_SECRET not in agent_log_html(pair)
    assert read_regular(pair / "verdicts.json", 10_000) is None


def test_a_large_linked_log_is_not_streamed_either(pair, host, monkeypatch):
    import pptarena.report.verdicts as verdicts

    monkeypatch.setattr(verdicts, "SMALL_LOG_BYTES", 4)  # every log is "large": the streaming path
    (pair / "agent.log.jsonl").symlink_to(host / "log.jsonl")
    assert HOST_SECRET not in agent_log_html(pair)
    (pair / "agent.log.jsonl").unlink()
    (pair / "agent.log.jsonl").write_text(json.dumps({"event": "own"}) + "\n")
    assert "own" in agent_log_html(pair)  # a regular log still is


def test_a_linked_trajectory_folder_or_screenshot_is_not_shown(pair, host):
    (pair / "trajectory").symlink_to(host / "trajectory", target_is_directory=True)
    assert trajectory_html(pair, pair) == ""
    (pair / "trajectory").unlink()
    (pair / "trajectory").mkdir()
    (pair / "trajectory" / "trajectory.jsonl").write_text(json.dumps({"step": 1, "screenshot": "s.png"}))
    (pair / "trajectory" / "s.png").symlink_to(host / "shot.png")
    html = trajectory_html(pair, pair)
    assert "step 1" in html and "<img" not in html


def demo_decks(tmp_path: Path) -> tuple[Path, Path]:
    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set

    root = ensure_demo_set(tmp_path / "cache")
    return root / "_decks" / "qbr.pptx", root / "qbr-fix-typos" / "target.pptx"


def test_linked_decks_in_the_pair_folder_are_not_taken(tmp_path, pair):
    original, target = demo_decks(tmp_path)
    (pair / "input").mkdir()
    (pair / "input" / "original.pptx").symlink_to(target)
    (pair / "prediction.pptx").symlink_to(target)  # "my prediction is the answer key"
    row = ResultRow.from_json(
        {
            "agent": "agent",
            "task_id": "task",
            "status": "scored",
            "prediction": "tasks/agent/task/prediction.pptx",
        }
    )
    decks = pair_decks(tmp_path / "run", pair, row, None)
    assert decks.original is None and decks.prediction is None


class WritingRenderer:
    """A renderer that writes one PNG per wanted slide into the folder it is given."""

    def render(self, deck: Path, out_dir: Path) -> list[SlideImage]:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "slide-001.png"
        path.write_bytes(b"\x89PNG rendered")
        return [SlideImage(1, None, path, 10, 10)]


def test_a_linked_render_folder_is_never_rendered_into(tmp_path, pair, host):
    original, target = demo_decks(tmp_path)
    shutil.copyfile(target, pair / "prediction.pptx")
    (pair / "renders").symlink_to(host, target_is_directory=True)
    before = sorted(os.listdir(host))
    view = pair_view(
        PairDecks(pair, original, pair / "prediction.pptx", None), RenderBudget(WritingRenderer, 10)
    )
    assert sorted(os.listdir(host)) == before  # nothing written into the host folder
    assert view.rows and "prediction" not in view.images
    assert any("symbolic link" in note for note in view.notes)
    (pair / "renders").unlink()  # a real folder: rendered as before
    view = pair_view(
        PairDecks(pair, original, pair / "prediction.pptx", None), RenderBudget(WritingRenderer, 10)
    )
    assert "prediction" in view.images and (pair / "renders" / "prediction" / "slide-001.png").is_file()
