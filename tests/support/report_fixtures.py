"""Real runs for the report, rescore and meta-eval tests (built with the real runner).

* :func:`demo_run`: the demo dataset (3 tasks), noop + oracle agents, rubric + structural judges,
  real LibreOffice renderer. Built once per test session and reused (read-only users only;
  tests that write into a run copy it with :func:`copy_run`).
* :func:`fake_run`: tests/plugin_modules/fakeplugins.py — retitle, noop and crash agents, the title judge,
  a renderer that always fails (so "rendering is impossible" paths are real too).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pptarena.run.config import load_config
from pptarena.run.registry import get_registry, reset_registry
from pptarena.run.runner import Runner

DEMO_TASKS = ("birds-align-pictures", "birds-title-colour", "qbr-fix-typos")

DEMO_CONFIG = """
[run]
jobs = 2
cache_dir = "{cache}"
tasks = {tasks}

[dataset]
use = "demo"

[[agents]]
use = "noop"

[[agents]]
use = "oracle"

[renderer]
use = "libreoffice"

[[judges]]
use = "rubric"

[[judges]]
use = "structural"
"""

FAKE_CONFIG = """
[dataset]
use = "fake"
root = "data"
count = {count}

[renderer]
use = "dummy"

[[agents]]
use = "retitle"

[[agents]]
use = "noop"

[[agents]]
use = "crash"

[[judges]]
use = "title"
"""


def rows_of(run_dir: Path) -> list[dict]:
    """The result lines of a run (or re-score) folder."""
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]


def demo_run(tmp_path_factory) -> Path:
    """A finished demo run, built on first use in this session and reused afterwards."""
    base = tmp_path_factory.getbasetemp()
    run_dir = base / "report-demo-run"
    manifest = run_dir / "manifest.json"
    if manifest.exists() and json.loads(manifest.read_text()).get("finished_at"):
        return run_dir
    cfg_dir = base / "report-demo-config"
    cfg_dir.mkdir(exist_ok=True)
    cfg = cfg_dir / "demo-report.toml"
    cfg.write_text(DEMO_CONFIG.format(cache=base / "cache", tasks=json.dumps(list(DEMO_TASKS))))
    reset_registry()
    Runner(load_config(cfg, get_registry()), get_registry(), run_dir, quiet=True).run()
    return run_dir


def copy_run(run_dir: Path, dest: Path) -> Path:
    """A private copy of a run folder (for tests that add to it)."""
    shutil.copytree(run_dir, dest)
    return dest


def fake_run(tmp_path: Path, count: int = 2) -> Path:
    """A finished fake-plugin run in ``tmp_path/run`` (needs the ``fake_plugins`` fixture)."""
    cfg = tmp_path / "fake.toml"
    cfg.write_text(FAKE_CONFIG.format(count=count))
    run_dir = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), run_dir, quiet=True).run()
    return run_dir
