"""The third-party path: a real plugin distribution (tests/fixtures/pptarena-dummy) installed with pip.

If ``pptarena_dummy`` is already installed (the tox ``plugins`` env), the current
interpreter is used as it is; otherwise the project's interpreter pip-installs the
fixture into a private folder that the ``arena`` subprocesses get on ``PYTHONPATH``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.config import use, write_run_config
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "pptarena-dummy"


@pytest.fixture(scope="module")
def python_with_plugin(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """An interpreter that sees the installed fixture plugin, and the environment to run it with.

    The fixture is built and installed by this project's own interpreter (its venv has
    setuptools and wheel from the ``test`` extra), into a private target folder put on
    ``PYTHONPATH``: nothing comes from the base interpreter and no index is contacted.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if importlib.util.find_spec("pptarena_dummy") is not None:  # the tox ``plugins`` env
        return Path(sys.executable), env
    target = tmp_path_factory.mktemp("site")
    src = tmp_path_factory.mktemp("src") / "pptarena-dummy"
    shutil.copytree(FIXTURE, src)  # builds write egg-info beside the sources: keep the fixture clean
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    env["PYTHONPATH"] = str(target)
    return Path(sys.executable), env


def arena(
    py: tuple[Path, dict[str, str]], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    python, env = py
    return subprocess.run(
        [str(python), "-m", "pptarena.cli", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def test_plugins_lists_the_third_party_plugin(python_with_plugin):
    out = arena(python_with_plugin, "plugins", "--json")
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    dummy = plugins["dummy"]
    assert (
        dummy["distribution"] == "pptarena-dummy"
        and dummy["version"] == "0.3.0"
        and dummy["builtin"] is False
    )
    assert dummy["components"] == {"agents": ["append-slide"], "judges": ["slide-count"]}
    assert plugins["agents-baselines"]["builtin"] is True


@pytest.mark.slow
def test_a_run_uses_the_plugins_agent_and_judge(python_with_plugin, tmp_path):
    from pptx import Presentation

    task = tmp_path / "tasks" / "add-slide"
    task.mkdir(parents=True)
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = "Hello"
    prs.save(str(task / "original.pptx"))
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(str(task / "target.pptx"))
    (task / "task.toml").write_text(
        'instruction = "Add a slide"\noriginal = "original.pptx"\ntarget = "target.pptx"\n'
    )
    cfg = write_run_config(
        tmp_path / "dummy.toml",
        dataset=use("folder", root="tasks"),
        agents=["append-slide", "noop"],
        judges=["dummy:slide-count"],
    )
    out = arena(python_with_plugin, "run", "--config", str(cfg), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = {
        r["agent"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    }
    assert rows["append-slide"]["scores"]["slide-count"]["score"] == 1.0
    assert rows["noop"]["scores"]["slide-count"]["score"] == 0.0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    judge = next(c for c in manifest["components"] if c["kind"] == "judges")
    assert (judge["distribution"], judge["version"]) == ("pptarena-dummy", "0.3.0")
