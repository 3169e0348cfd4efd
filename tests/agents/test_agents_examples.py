"""The agent example configs load and validate (components, options, model references)."""

from __future__ import annotations

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from tests.support.paths import ROOT

EXAMPLES = [
    "pptpilot-openai",
    "ppteval-rubric",
    "local-openai-compatible",
    "cli-agent",
    "gui-computer-use",
    "osworld-impress",
    "tsbench",
    "pptc",
    "tools-vs-alone",
]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_config_is_valid(name, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    path = ROOT / "examples" / f"{name}.toml"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# ") and "arena run --config examples/" in text  # the explanatory header
    config = load_config(path, get_registry())
    assert config.agents and config.judges
    for agent in config.agents:
        assert agent.use in ("hybrid", "code", "xml", "command", "gui", "tools")


def test_pptpilot_example_uses_the_paper_setting(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = load_config(ROOT / "examples" / "pptpilot-openai.toml", get_registry())
    agent = config.agents[0]
    assert (agent.use, agent.options.loops, agent.options.router_model) == ("hybrid", 3, "openai/gpt-5-nano")
    assert [j.use for j in config.judges] == ["dual", "structural"]


def test_every_example_is_covered():
    assert {p.stem for p in (ROOT / "examples").glob("*.toml")} == {*EXAMPLES, "demo"}
