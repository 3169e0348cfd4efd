"""docs/plugins.md cannot rot: its contract tables match the types, and its complete plugin runs.

The plugin files are the page's code blocks marked ``<!-- plugin-file: PATH -->``; they are written
out as a distribution, pip-installed into a fresh virtualenv holding pptarena's wheel (the user's
route), and run on the demo set. The venv is the session's shared wheel venv: the plugin is
uninstalled afterwards and the venv checked to hold exactly what it held before.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

import pptarena
from tests.support.paths import ROOT
from tests.support.wheel_env import clean_env, fresh_venv, installs_into, run

PAGE = ROOT / "docs" / "plugins.md"
TYPES = ["AgentTask", "Workspace", "Prediction", "Task", "Verdict", "ComponentContext"]


def plugin_files() -> dict[str, str]:
    """``{path: text}`` of the page's marked code blocks."""
    found = re.findall(r"<!-- plugin-file: (\S+) -->\n```\w*\n(.*?)\n```", PAGE.read_text(), re.S)
    return {path: text + "\n" for path, text in found}


def table_fields(type_name: str) -> list[str]:
    """The first column of the table under the page's "`pptarena.NAME` (...)" line."""
    text = PAGE.read_text()
    start = text.index(f"`pptarena.{type_name}` (")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        if line.startswith("| `"):
            rows.append(line.split("`")[1])
    return rows


@pytest.mark.parametrize("type_name", TYPES)
def test_the_contract_tables_list_exactly_the_fields(type_name):
    cls = getattr(pptarena, type_name)
    assert table_fields(type_name) == [f.name for f in dataclasses.fields(cls)]


def test_the_agent_example_reads_only_what_an_agent_gets():
    agent_code = plugin_files()["pptarena_notes/__init__.py"].split("class EditsLeftJudge")[0]
    used = set(re.findall(r"\btask\.(\w+)", agent_code))
    assert used and used <= {f.name for f in dataclasses.fields(pptarena.AgentTask)}, used


@pytest.fixture
def wheel_venv(tmp_path_factory):
    """The session's venv with pptarena's wheel, restored after the test (the page's plugin removed)."""
    with installs_into(fresh_venv(tmp_path_factory.getbasetemp() / "wheel-env"), "pptarena-notes") as venv:
        yield venv


@pytest.mark.slow
def test_the_pages_plugin_installs_and_runs_on_the_demo(tmp_path_factory, wheel_venv):
    files = plugin_files()
    assert set(files) == {"pyproject.toml", "pptarena_notes/__init__.py", "notes-demo.toml"}
    venv = wheel_venv
    dist = tmp_path_factory.mktemp("dist") / "pptarena-notes"
    for path, text in files.items():
        if path.endswith(".py") or path == "pyproject.toml":
            (dist / path).parent.mkdir(parents=True, exist_ok=True)
            (dist / path).write_text(text)
    python = str(venv / "bin" / "python")
    env = clean_env()
    done = run([python, "-m", "pip", "install", "-q", str(dist)], env=env)  # the page's own step
    assert done.returncode == 0, done.stdout + done.stderr
    work = tmp_path_factory.mktemp("work")
    (work / "notes-demo.toml").write_text(files["notes-demo.toml"])
    env = clean_env(PPTARENA_CACHE=str(work / "cache"))
    arena = str(venv / "bin" / "arena")
    listed = json.loads(run([arena, "plugins", "--json"], env=env).stdout)
    notes = next(p for p in listed if p["name"] == "notes")
    assert notes["distribution"] == "pptarena-notes" and notes["components"] == {
        "agents": ["note-instruction"],
        "judges": ["edits-left"],
    }
    done = run([arena, "run", "--config", "notes-demo.toml", "--quiet", "--no-report"], cwd=work, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (work / "runs").iterdir()
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 36 and all(r["status"] == "scored" for r in rows), [
        (r["agent"], r["status"], r.get("error")) for r in rows if r["status"] != "scored"
    ]
    score = {(r["agent"], r["task_id"]): r["scores"]["edits-left"]["score"] for r in rows}
    assert all(v == 1.0 for (a, _), v in score.items() if a == "oracle")
    assert all(v == 0.0 for (a, _), v in score.items() if a in ("noop", "note-instruction"))
    from pptx import Presentation

    row = next(r for r in rows if r["agent"] == "note-instruction")
    deck = Presentation(str(run_dir / row["prediction"]))
    note = deck.slides[0].notes_slide.notes_text_frame.text
    assert note.startswith(f"Please [{row['task_id']}, ") and len(note) > 40
    assert row.get("isolation") not in (None, "none")  # it ran in the jailed worker, as documented
