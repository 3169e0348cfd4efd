"""The CLI surface: version, help, lazy subcommands, tasks listing, plain progress lines when piped."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import pptarena
from tests.support.config import fake_dataset, fake_run_toml


def arena(*args, **kw):
    return subprocess.run([sys.executable, "-m", "pptarena.cli", *args], capture_output=True, text=True, **kw)


def test_version_and_help():
    out = arena("--version")
    assert out.returncode == 0 and pptarena.__version__ in out.stdout
    out = arena("--help")
    for cmd in ("run", "plugins", "tasks", "summarize", "diff", "render"):
        assert cmd in out.stdout


def test_plugins_json_lists_builtins_with_components():
    out = arena("plugins", "--json")
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    assert plugins["agents-baselines"]["components"]["agents"] == ["noop", "oracle", "precomputed"]
    assert all(p["builtin"] for n, p in plugins.items() if n.startswith(("agents-", "datasets-", "judges-")))


@pytest.mark.slow
def test_tasks_and_run_piped_output(tmp_path, fake_plugins, run_config):
    cfg = run_config("c.toml", fake_run_toml(3, ["noop"], dataset=fake_dataset(3, root="d")))
    out = arena("tasks", "--config", str(cfg), "--json")
    assert out.returncode == 0, out.stderr
    assert [t["id"] for t in json.loads(out.stdout)] == ["task-00", "task-01", "task-02"]
    out = arena("run", "--config", str(cfg), "--out", str(tmp_path / "r"), "--task", "task-0[12]")
    assert out.returncode == 0, out.stderr
    # not a terminal: one plain line per result, no progress-bar control characters
    lines = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 2 and "noop task-01: scored title=0.00" in out.stderr and "\x1b[" not in out.stderr


@pytest.mark.slow
def test_options_lists_a_components_config_keys():
    out = arena("options", "agent", "precomputed")
    assert out.returncode == 0, out.stderr
    assert "dir: Path (required)" in out.stdout and 'pattern: str (default "{task_id}.pptx")' in out.stdout
    out = arena("options", "judge", "dual", "--json")
    options = {o["name"]: o for o in json.loads(out.stdout)["options"]}
    assert options["model"]["required"] and options["model"]["type"].startswith("model ref")
    assert options["chunk_size"]["default"] == 4
    out = arena("options", "agent", "oracel")
    assert out.returncode != 0 and "Did you mean: oracle?" in out.stderr
