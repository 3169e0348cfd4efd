"""A judge's retries are in the pair's ``agent.log.jsonl`` (issue 32: "every retry and every second
waited is in the row's usage and in agent.log.jsonl"), marked ``by = "judge"``; the judge's ordinary
calls stay out of the agent's log."""

from __future__ import annotations

import json

from pptarena.models.sim import ProviderSim, SimConfig
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config


def test_a_judges_429_retry_is_logged_in_the_pairs_agent_log(tmp_path, fake_plugins, monkeypatch):
    from pptarena.run.configuration.registry import reset_registry

    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins,claims_plugins")  # model-judge: one call per pair
    reset_registry()
    monkeypatch.setenv("SIM_KEY", "sk-test")
    # one request at a time, a second's refill; no pacing on our side (adaptive = false), so the
    # judge's second call meets a 429 and waits out its retry-after
    with ProviderSim(SimConfig(rpm=60, burst=1)) as sim:
        cfg = write_run_config(
            tmp_path / "run.toml",
            fake_run_toml(
                1,
                ["retitle"],
                judges=[
                    use("model-judge", label="first", model="openai/judge"),
                    use("model-judge", label="second", model="openai/judge"),
                ],
                backends={
                    "openai": {
                        "base_url": sim.openai_base_url,
                        "api_key": {"env": "SIM_KEY"},
                        "adaptive": False,
                        "retry_base_delay": 0.01,
                    }
                },
                run={"preflight": False},
            ),
        )
        Runner(load_config(str(cfg), get_registry()), get_registry(), tmp_path / "run", quiet=True).run()
        assert sim.stats()["rate_limited"] >= 1
    (row,) = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "scored", row
    assert row["usage"]["judge_throttled"] >= 1
    log = [
        json.loads(line)
        for line in next((tmp_path / "run").rglob("agent.log.jsonl")).read_text().splitlines()
    ]
    retries = [e for e in log if e["event"] == "model_retry"]
    assert retries and all(e["by"] == "judge" and e["model"] == "openai/judge" for e in retries)
    assert retries[0]["status"] == 429 and retries[0]["wait_s"] > 0
    assert not [e for e in log if e["event"] == "model_call" and e.get("model") == "openai/judge"]
