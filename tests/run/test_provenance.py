"""Provenance that never lies (issue 33): agents are fingerprinted, tasks hashed, and a re-run never
shows a changed agent's or task's old rows as the new ones.

The attack: upgrade the agent plugin (pip, 0.1.0 -> 0.2.0, new code) and re-run the same command.
Before, the run "resumed", reported 0.1.0's numbers and rewrote manifest.json to say 0.2.0 made them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pptarena.run.folder.provenance import Provenance, agent_fingerprint, describe_change, task_sha
from pptarena.run.folder.records import ResultRow
from pptarena.types import Status, Task
from tests.support.config import demo_dataset, use, write_run_config

AGENT_SOURCE = '''"""A third-party agent whose behaviour depends on its version ({version})."""

from pptx import Presentation

import pptarena
from pptarena import Component, Options, Prediction


class GrowAgent(Component):
    """0.1.0 hands the deck back unchanged; 0.2.0 appends a slide."""

    class Options(Options):
        pass

    def edit(self, task, workspace):
        prs = Presentation(str(workspace.input_deck))
        if {grow}:
            prs.slides.add_slide(prs.slide_layouts[6])
        prs.save(str(workspace.output_deck))
        return Prediction(path=workspace.output_deck)


@pptarena.hookimpl
def register_agents(register):
    """Register the agent."""
    register("grow", GrowAgent)
'''

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "grow-agent"
version = "{version}"
requires-python = ">=3.11"

[project.entry-points.pptarena]
grow = "grow_agent"

[tool.setuptools]
py-modules = ["grow_agent"]
"""


def _install(version: str, grow: bool, target: Path, work: Path) -> None:
    """Build and pip-install (upgrade or downgrade) grow-agent ``version`` into ``target``."""
    for old in target.glob("grow_agent-*.dist-info"):  # what pip's uninstall does (--target keeps them)
        shutil.rmtree(old)
    src = work / f"grow-agent-{version}"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    (src / "grow_agent.py").write_text(AGENT_SOURCE.format(version=version, grow=grow))
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
            "--upgrade",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _arena(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pptarena.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]


def _slides(run: Path, row: dict) -> int:
    from pptx import Presentation

    return len(Presentation(str(run / row["prediction"])).slides)


def _latest(run: Path) -> dict[tuple[str, str], dict]:
    return {(r["agent"], r["task_id"]): r for r in _lines(run)}


@pytest.mark.slow
def test_upgrading_a_pip_installed_agent_reruns_its_pairs_and_the_manifest_keeps_both(tmp_path):
    target, work = tmp_path / "site", tmp_path / "build"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    cfg = write_run_config(
        tmp_path / "grow.toml",
        dataset=demo_dataset("birds-title-colour", "qbr-add-region-row"),
        agents=["grow", "noop"],
        judges=["structural"],
    )
    run = ["run", "--config", str(cfg), "--out", "run", "--no-report"]

    _install("0.1.0", False, target, work)
    first = _arena(env, tmp_path, *run)
    assert first.returncode == 0, first.stderr
    v1 = _latest(tmp_path / "run")
    slides_v1 = {
        t: _slides(tmp_path / "run", r) for (a, t), r in v1.items() if a == "grow"
    }  # files rewritten later
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    fp1 = manifest["agent_fingerprints"]["grow"]
    assert (fp1["distribution"], fp1["version"]) == ("grow-agent", "0.1.0")
    assert {r["agent_fingerprint"] for k, r in v1.items() if k[0] == "grow"} == {fp1["id"]}
    assert all(r["task_sha"] == manifest["task_hashes"][r["task_id"]] for r in v1.values())

    _install("0.2.0", True, target, work)  # the upgrade: new version, new code
    second = _arena(env, tmp_path, *run)
    assert second.returncode == 0, second.stderr
    assert "Agent grow changed since 2 of its results were recorded (version 0.1.0 -> 0.2.0" in second.stderr
    v2 = _latest(tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    fp2 = manifest["agent_fingerprints"]["grow"]
    assert fp2["version"] == "0.2.0" and fp2["id"] != fp1["id"]
    # grow's pairs ran again with the new code (one more slide each), noop's were reused as they were
    for task in ("birds-title-colour", "qbr-add-region-row"):
        assert v2[("grow", task)]["agent_fingerprint"] == fp2["id"]
        assert _slides(tmp_path / "run", v2[("grow", task)]) == slides_v1[task] + 1
        assert v2[("noop", task)] == v1[("noop", task)]
    # what produced each row stays on record: the old lines are kept, every id they carry is in the history
    assert len(_lines(tmp_path / "run")) == 6
    history = manifest["agent_fingerprint_history"]
    assert {
        history[r["agent_fingerprint"]]["version"] for r in _lines(tmp_path / "run") if r["agent"] == "grow"
    } == {
        "0.1.0",
        "0.2.0",
    }
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["source"]["rows"] == 4  # the summary is of the latest rows only

    _install("0.1.0", False, target, work)  # and back: a downgrade is a change too
    third = _arena(env, tmp_path, *run)
    assert third.returncode == 0, third.stderr
    assert "version 0.2.0 -> 0.1.0" in third.stderr
    v3 = _latest(tmp_path / "run")
    assert v3[("grow", "qbr-add-region-row")]["agent_fingerprint"] == fp1["id"]
    assert _slides(tmp_path / "run", v3[("grow", "qbr-add-region-row")]) == slides_v1["qbr-add-region-row"]

    unchanged = _arena(env, tmp_path, *run)  # nothing changed: nothing runs again
    assert unchanged.returncode == 0, unchanged.stderr
    assert len(_lines(tmp_path / "run")) == 8


def test_a_changed_task_file_reruns_that_tasks_pairs_only(tmp_path, monkeypatch):
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.runner import Runner

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "tasks"
    for name in ("fix-typo", "add-slide"):
        _folder_task(data / name)
    cfg = write_run_config(
        tmp_path / "folder.toml",
        dataset=use("folder", root="tasks"),
        agents=["noop", "oracle"],
        judges=["structural"],
    )

    def run_once() -> None:
        config = load_config(str(cfg), get_registry())
        Runner(config, get_registry(), tmp_path / "run", quiet=True).run()

    run_once()
    before = _latest(tmp_path / "run")
    (data / "fix-typo" / "task.toml").write_text(TASK_TOML.replace("Add a slide", "Please add a slide"))
    run_once()
    after = _latest(tmp_path / "run")
    assert len(_lines(tmp_path / "run")) == 6  # the two fix-typo pairs ran again, nothing else
    for agent in ("noop", "oracle"):
        assert after[(agent, "add-slide")] == before[(agent, "add-slide")]
        assert after[(agent, "fix-typo")]["task_sha"] != before[(agent, "fix-typo")]["task_sha"]


TASK_TOML = 'instruction = "Add a slide"\noriginal = "original.pptx"\ntarget = "target.pptx"\n'


def _folder_task(folder: Path) -> None:
    """A task of the folder format: a one-slide original, a two-slide target."""
    from pptx import Presentation

    folder.mkdir(parents=True)
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = "Hello"
    prs.save(str(folder / "original.pptx"))
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(str(folder / "target.pptx"))
    (folder / "task.toml").write_text(TASK_TOML)


def _task(tmp_path: Path, text: str = "edit") -> Task:
    deck = tmp_path / "a.pptx"
    if not deck.exists():
        deck.write_bytes(b"deck-bytes")
    return Task(id="t1", instruction=text, original=deck)


def test_task_sha_covers_instruction_rubric_and_deck_bytes(tmp_path):
    base = task_sha(_task(tmp_path))
    assert task_sha(_task(tmp_path)) == base
    assert task_sha(_task(tmp_path, "other")) != base
    assert task_sha(dataclasses.replace(_task(tmp_path), rubric={"name": "r"})) != base
    (tmp_path / "a.pptx").write_bytes(b"deck-bytes, edited")
    assert task_sha(_task(tmp_path)) != base


def test_agent_fingerprint_follows_version_options_and_code(tmp_path):
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry

    cfg = write_run_config(
        tmp_path / "a.toml",
        dataset=demo_dataset("qbr-add-region-row"),
        agents=["noop"],
        judges=["structural"],
    )
    agent = load_config(str(cfg), get_registry()).agents[0]
    fp = agent_fingerprint(agent)
    assert fp == agent_fingerprint(agent)  # stable
    assert fp["code"] == "builtin" and fp["code_sha"]
    old = {**fp, "version": "0.0.1", "code_sha": "x"}
    assert describe_change(old, fp) == f"version 0.0.1 -> {fp['version']}, code"


def test_stale_rows_and_stamping():
    prov = Provenance(agents={"a": {"id": "new", "version": "2"}}, tasks={"t1": "s1", "t2": "s2"})
    rows = [
        ResultRow(agent="a", task_id="t1", status=Status.SCORED, agent_fingerprint="old", task_sha="s1"),
        ResultRow(agent="a", task_id="t2", status=Status.SCORED, agent_fingerprint="new", task_sha="s-old"),
        ResultRow(
            agent="a", task_id="t2", epoch=2, status=Status.SCORED, agent_fingerprint="new", task_sha="s2"
        ),
        ResultRow(agent="a", task_id="t1", epoch=2, status=Status.SCORED),  # an old line: kept, unverified
        ResultRow(agent="gone", task_id="t1", status=Status.SCORED, agent_fingerprint="zzz"),
    ]
    stale = prov.stale(rows, {"old": {"id": "old", "version": "1"}})
    assert stale.keys == {("a", "t1", 1), ("a", "t2", 1)}
    assert stale.unverified == 1
    assert stale.messages[0].startswith(
        "Agent a changed since 1 of its results were recorded (version 1 -> 2"
    )
    assert "1 task(s) changed" in stale.messages[1] and "t2" in stale.messages[1]
    fresh = prov.stamp(ResultRow(agent="a", task_id="t2", status=Status.SCORED))
    assert (fresh.agent_fingerprint, fresh.task_sha) == ("new", "s2")
    assert "agent_fingerprint" not in ResultRow(agent="a", task_id="t", status=Status.SCORED).to_json()


def test_a_built_in_agents_code_hash_leaves_out_the_other_plugins_nested_in_its_folder():
    """``baselines`` lives in ``plugins/agents/`` beside every other built-in agent's package: a change
    to the tools agent must not make the no-op's rows stale, while its own package still counts."""
    import importlib

    from pptarena.run.configuration.registry import get_registry
    from pptarena.run.folder import provenance

    get_registry()
    baselines = importlib.import_module("pptarena.plugins.agents.baselines")
    files = {p.resolve() for p in provenance._package_files(baselines)}
    assert Path(baselines.__file__).resolve() in files
    agents_dir = Path(baselines.__file__).resolve().parent
    assert all(p.parent == agents_dir for p in files), sorted(map(str, files))
    pilot = importlib.import_module("pptarena.plugins.agents.pptpilot.agent")
    pilot_files = {p.name for p in provenance._package_files(pilot)}
    assert {"agent.py", "branch.py", "verify.py"} <= pilot_files
