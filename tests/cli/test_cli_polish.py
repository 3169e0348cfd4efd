"""Small things a new user hit (issue 26, point 5): each as the user saw it."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

import pptarena
from pptarena.cli.main import cli
from pptarena.models.pricing import fmt_usd
from pptarena.run.configuration.registry import PluginLoadError, Registry

BIN = Path(sys.executable).parent


def test_help_shows_the_whole_options_line():
    out = CliRunner().invoke(cli, ["--help"]).output
    line = next(x for x in out.splitlines() if x.strip().startswith("options"))
    assert "(e.g." not in line and line.rstrip().endswith("config table.")


def test_plugins_never_cuts_a_long_name_at_80_columns(tmp_path):
    long_name = "an-agent-with-a-really-quite-long-component-name-indeed"
    (tmp_path / "longplug.py").write_text(
        "import pptarena\nfrom pptarena.plugins.agents.baselines import NoopAgent\n"
        "@pptarena.hookimpl\ndef register_agents(register):\n"
        f"    register({long_name!r}, NoopAgent)\n"
    )
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(tmp_path), "PPTARENA_PLUGINS": "longplug"}
    out = subprocess.run([str(BIN / "arena"), "plugins"], env=env, capture_output=True, text=True).stdout
    assert "…" not in out
    cells = "".join(
        line.split("│")[-2].strip() for line in out.splitlines() if line.count("│") >= 6
    )  # the components column, wrapped lines joined
    assert long_name in cells


def test_a_misspelled_hook_gets_a_did_you_mean():
    module = types.ModuleType("misspelt")

    @pptarena.hookimpl
    def register_agent(register):  # the hook is register_agents
        pass

    module.register_agent = register_agent
    with pytest.raises(PluginLoadError, match=r"did you mean 'register_agents'\?"):
        Registry().register_plugin(module, "misspelt", strict=True)


def test_unknown_cost_has_single_brackets():
    text = fmt_usd({"usd": None, "known_usd": 0.0, "unpriced_models": ["(agent calls not reported)"]})
    assert text == "unknown (agent calls not reported)"


@pytest.mark.slow
def test_report_html_has_one_leaderboard_heading(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    res = CliRunner().invoke(cli, ["report", str(run_dir), "--no-render"])
    assert res.exit_code == 0, res.output
    html = (run_dir / "report.html").read_text()
    assert html.count(">Leaderboard</h") == 1
