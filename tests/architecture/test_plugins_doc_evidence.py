"""Judge evidence is kept per judge label, and docs/plugins.md's example judge does it right.

A config may use one judge twice with two labels; each instance must keep its own
``judges/<label>/`` files in the pair's folder. The page's example judge (``edits-left``) is run as
a user's plugin module, twice in one run, and both evidence files must survive.
"""

from __future__ import annotations

import json
import os

import pytest

from pptarena.evidence import Evidence
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.runner import Runner
from pptarena.types import Prediction, Task
from tests.architecture.test_plugins_doc import plugin_files
from tests.support.config import fake_run_toml, use, write_run_config


@pytest.fixture
def notes_plugin(tmp_path, monkeypatch, plugin_modules):
    """docs/plugins.md's ``pptarena_notes`` module importable by name, beside fakeplugins."""
    folder = tmp_path / "plugin-src"
    (folder / "pptarena_notes").mkdir(parents=True)
    (folder / "pptarena_notes" / "__init__.py").write_text(plugin_files()["pptarena_notes/__init__.py"])
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins,pptarena_notes")
    reset_registry()
    yield
    reset_registry()


def test_two_labels_of_the_pages_judge_keep_both_evidence_files(tmp_path, notes_plugin):
    judges = [use("edits-left", label="strict"), use("edits-left", label="lenient")]
    cfg = write_run_config(tmp_path / "run.toml", fake_run_toml(1, ["retitle", "noop"], judges=judges))
    run_dir = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), run_dir, quiet=True).run()
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] == "scored" for r in rows), rows
    for row in rows:
        assert set(row["scores"]) == {"strict", "lenient"}
        pair = run_dir / "tasks" / row["agent"] / row["task_id"]
        kept = {p.parent.name for p in pair.rglob("judges/*/counts.json")}
        assert kept == {"strict", "lenient"}, sorted(str(p) for p in pair.rglob("judges/**/*"))
        assert not list(pair.rglob("judges/edits-left"))  # no folder named after the constant


def _evidence(tmp_path):
    deck = tmp_path / "deck.pptx"
    deck.write_bytes(b"")
    task = Task(id="t1", instruction="x", original=deck)
    return Evidence(task, Prediction(path=deck), tmp_path / "pair", renderer=None)


def test_write_json_lands_under_the_label_it_is_given(tmp_path):
    evidence = _evidence(tmp_path)
    a = evidence.write_json("strict", "counts.json", {"left": 1})
    b = evidence.write_json("lenient", "counts.json", {"left": 2})
    assert a == tmp_path / "pair" / "judges" / "strict" / "counts.json"
    assert json.loads(a.read_text()) == {"left": 1} and json.loads(b.read_text()) == {"left": 2}


@pytest.mark.parametrize("label", ["", ".", "..", "a/b", ".hidden"])
def test_a_label_that_names_no_folder_of_its_own_is_refused(tmp_path, label):
    evidence = _evidence(tmp_path)
    with pytest.raises(ValueError, match="self.context.label"):
        evidence.write_json(label, "counts.json", {})
    assert not (tmp_path / "pair" / "counts.json").exists()
    assert not (tmp_path / "pair" / "judges" / "counts.json").exists()
