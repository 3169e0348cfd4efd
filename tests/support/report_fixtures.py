"""Real runs for the report, rescore and meta-eval tests (built with the real runner).

* :func:`build_demo_run` (the session fixture ``demo_run`` of tests/conftest.py): the demo dataset
  (3 tasks), noop + oracle agents, rubric + structural judges, real LibreOffice renderer. Built
  once per test session and reused (read-only users only; tests that write into a run copy it
  with :func:`copy_run`).
* :func:`build_fake_run` (the ``fake_run`` fixture): tests/plugin_modules/fakeplugins.py — retitle,
  noop and crash agents, the title judge, a renderer that always fails (so "rendering is
  impossible" paths are real too).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, run_toml, write_run_config

DEMO_TASKS = ("birds-align-pictures", "birds-title-colour", "qbr-fix-typos")


def demo_config(cache: Path) -> str:
    """The demo run's config: noop and oracle on DEMO_TASKS, real renders, rubric + structural judges."""
    return run_toml(
        run={"jobs": 2, "cache_dir": str(cache), "tasks": list(DEMO_TASKS)},
        dataset="demo",
        agents=["noop", "oracle"],
        renderer="libreoffice",
        judges=["rubric", "structural"],
    )


def jsonl_of(path: Path, missing_ok: bool = True) -> list[dict]:
    """The records of a JSON-lines file of a run (``results.jsonl``, ``batches.jsonl``,
    ``agent.log.jsonl``); none when it does not exist and ``missing_ok`` (else the read fails)."""
    if missing_ok and not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rows_of(run_dir: Path) -> list[dict]:
    """The result lines of a run (or re-score) folder (a folder without them fails the read)."""
    return jsonl_of(run_dir / "results.jsonl", missing_ok=False)


def build_demo_run(tmp_path_factory) -> Path:
    """A finished demo run, built on first use in this session and reused afterwards."""
    base = tmp_path_factory.getbasetemp()
    run_dir = base / "report-demo-run"
    manifest = run_dir / "manifest.json"
    if manifest.exists() and json.loads(manifest.read_text()).get("finished_at"):
        return run_dir
    cfg_dir = base / "report-demo-config"
    cfg_dir.mkdir(exist_ok=True)
    cfg = cfg_dir / "demo-report.toml"
    write_run_config(cfg, demo_config(base / "cache"))
    reset_registry()
    Runner(load_config(cfg, get_registry()), get_registry(), run_dir, quiet=True).run()
    return run_dir


def copy_run(run_dir: Path, dest: Path) -> Path:
    """A private copy of a run folder (for tests that add to it)."""
    shutil.copytree(run_dir, dest)
    return dest


def build_fake_run(tmp_path: Path, count: int = 2) -> Path:
    """A finished fake-plugin run in ``tmp_path/run`` (needs the ``fake_plugins`` fixture)."""
    cfg = write_run_config(tmp_path / "fake.toml", fake_run_toml(count, ["retitle", "noop", "crash"]))
    run_dir = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), run_dir, quiet=True).run()
    return run_dir
