"""``PPTARENA_PLUGINS=mymodule`` finds ``mymodule.py`` kept beside the config, without ``PYTHONPATH=.``,
from any working folder, for ``arena tasks`` and for a whole ``arena run`` (its worker processes too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.config import run_toml, use, write_run_config

MYMODULE = '''
"""A user's own plugin, developed beside the config."""

from pathlib import Path

from pptx import Presentation

import pptarena
from pptarena.types import Component, Options, Prediction, Task, Verdict


def deck(path, title):
    path.parent.mkdir(parents=True, exist_ok=True)
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = title
    prs.save(str(path))
    return path


class TwoTasks(Component):
    class Options(Options):
        root: Path

    def tasks(self):
        for i in range(2):
            folder = self.options.root / f"t{i}"
            yield Task(
                id=f"mine-{i}",
                instruction=f"Title it 'New {i}'",
                original=deck(folder / "original.pptx", f"Old {i}"),
                target=deck(folder / "target.pptx", f"New {i}"),
            )


class Retitle(Component):
    """Writes the title the instruction asks for."""

    def edit(self, task, workspace):
        prs = Presentation(str(workspace.input_deck))
        prs.slides[0].shapes.title.text = task.instruction.split("'")[1]
        prs.save(str(workspace.output_deck))
        return Prediction(path=workspace.output_deck)


class SameTitle(Component):
    def judge(self, task, prediction, evidence):
        title = lambda p: Presentation(str(p)).slides[0].shapes.title.text  # noqa: E731
        return Verdict(1.0 if title(prediction.path) == title(task.target) else 0.0)


@pptarena.hookimpl
def register_datasets(register):
    register("mine", TwoTasks)


@pptarena.hookimpl
def register_agents(register):
    register("my-retitle", Retitle)


@pptarena.hookimpl
def register_judges(register):
    register("same-title", SameTitle)
'''


@pytest.fixture
def project(tmp_path) -> Path:
    """A folder holding a config and the plugin module it uses (``mymodule.py``), nothing else."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "mymodule.py").write_text(MYMODULE)
    write_run_config(
        folder / "run.toml",
        run_toml(dataset=use("mine", root="data"), agents=["my-retitle"], judges=["same-title"]),
    )
    return folder


def arena(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``arena ARGS`` from ``cwd`` with ``PPTARENA_PLUGINS=mymodule`` and no ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PPTARENA_PLUGINS"] = "mymodule"
    cmd = [sys.executable, "-m", "pptarena.cli", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_tasks_finds_the_plugin_module_beside_the_config(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = arena(["--strict", "tasks", "--config", "../project/run.toml", "--json"], elsewhere)
    assert res.returncode == 0, res.stderr
    assert [t["id"] for t in json.loads(res.stdout)] == ["mine-0", "mine-1"]
    assert "broken" not in res.stderr


@pytest.mark.slow
def test_a_run_uses_the_plugin_module_beside_the_config(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "run"
    args = ["run", "--config", str(project / "run.toml"), "--out", str(out), "--quiet", "--no-report"]
    res = arena(["--strict", *args], elsewhere)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["status"], r["scores"]["same-title"]["score"]) for r in rows] == [
        ("mine-0", "scored", 1.0),
        ("mine-1", "scored", 1.0),
    ]
