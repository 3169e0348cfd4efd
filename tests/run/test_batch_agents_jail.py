"""``arena run --batch`` with a jailed third-party agent whose ``[[agents]]`` table says
``batch = true``: its one model call goes out as a batch job through the bridge (the official
Anthropic SDK against the provider simulator), the batch takes longer than the task timeout and the
pair is still scored (waiting on a batch is not the agent's time), at the batch price. The attack:
an agent that asks for batching and then just hangs is stopped at its timeout as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pptarena.models.sim import ProviderSim, Rule, SimConfig
from pptarena.run.folder.rundir import BATCHES
from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.paths import ROOT
from tests.support.report_fixtures import jsonl_of
from tests.support.trust_fixtures import needs_bwrap

pytestmark = [pytest.mark.slow, needs_bwrap]

MODEL = "anthropic/claude-sonnet-4-5"
TIMEOUT = 4.0
DELAY = 9.0


def run_batch(tmp_path: Path, sim: ProviderSim, agents: list, **run) -> subprocess.CompletedProcess:
    cfg = write_run_config(
        tmp_path / "run.toml",
        fake_run_toml(
            2,
            agents,
            run={"task_timeout": TIMEOUT, "batch_poll": 0.3, "batch_quiet": 0.5, "jobs": 2, **run},
            backends={"anthropic": {"base_url": sim.url, "api_key": {"env": "PPTARENA_SIM_KEY"}}},
        ),
    )
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(tmp_path / "run")]
    env = {**os.environ, "PPTARENA_SIM_KEY": "sk-sim-test"}
    return subprocess.run([*cmd, "--batch"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_jailed_agent_asking_for_batch_waits_past_its_timeout_and_is_scored_at_batch_price(
    tmp_path, fake_plugins
):
    """One agent slot (jobs = 1) for 2 tasks x 2 epochs: the waiting pairs give it to each other, all
    four calls share one batch, and each epoch gets an answer of its own (same prompt, own request)."""
    rules = [Rule(match="New 0", reply="New 0"), Rule(match="New 1", reply="New 1")]
    with ProviderSim(SimConfig(batch_delay=DELAY, rules=rules, seed=5)) as sim:
        done = run_batch(tmp_path, sim, [use("asker", model=MODEL, batch=True)], jobs=1, epochs=2)
        stats = sim.stats()
    out = tmp_path / "run"
    assert done.returncode == 0, done.stderr[-3000:]
    rows = jsonl_of(out / "results.jsonl")
    assert sorted((r["task_id"], r["epoch"]) for r in rows) == [
        ("task-00", 1),
        ("task-00", 2),
        ("task-01", 1),
        ("task-01", 2),
    ]
    assert all(r["status"] == "scored" and r["scores"]["title"]["score"] == 1.0 for r in rows), [
        (r["task_id"], r["status"], r.get("error")) for r in rows
    ]
    # all four calls went out in batch jobs, each under an id of its own, none to the synchronous endpoint
    submitted = [e for e in jsonl_of(out / BATCHES) if e["op"] == "submitted"]
    ids = [cid for e in submitted for cid in e["custom_ids"]]
    assert len(ids) == len(set(ids)) == 4
    assert stats["batches_submitted"] == len(submitted)
    assert not [p for p in stats["by_path"] if p.rstrip("/").endswith("/v1/messages")], stats["by_path"]
    from pptarena.models.messages import Usage
    from pptarena.models.pricing import bundled_prices

    price = bundled_prices()["claude-sonnet-4-5"]
    for r in rows:
        # the batch took longer than the task timeout: the pair's log says how long it waited
        folder = out / Path(r["prediction"]).parent
        waits = [e for e in jsonl_of(folder / "agent.log.jsonl") if e.get("event") == "batch_wait"]
        assert waits and waits[0]["seconds"] > TIMEOUT, waits
        usage = Usage.from_dict({k: v for k, v in r["usage"].items() if not k.startswith("judge_")})
        assert usage.input_tokens > 0
        standard = price.cost(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        # rows keep 6 decimals of a dollar: the half price within that rounding, far from the full one
        assert r["cost"]["agent"]["usd"] == pytest.approx(standard / 2, abs=1e-6)
        assert abs(r["cost"]["agent"]["usd"] - standard) > 10e-6


def test_an_agent_that_asks_for_batch_and_hangs_still_times_out(tmp_path, fake_plugins):
    with ProviderSim(SimConfig(batch_delay=DELAY, seed=5)) as sim:
        done = run_batch(
            tmp_path, sim, [use("hang", batch=True, pidfile="/tmp/hang.pid")]
        )  # the jail's own /tmp
    rows = jsonl_of(tmp_path / "run" / "results.jsonl")
    assert len(rows) == 2, done.stderr[-3000:]
    assert all(r["status"] == "timeout" and f"task_timeout={TIMEOUT:g}" in r["error"] for r in rows), [
        (r["status"], r.get("error")) for r in rows
    ]
    assert not (tmp_path / "run" / BATCHES).exists() or not [
        e for e in jsonl_of(tmp_path / "run" / BATCHES) if e["op"] == "submitted"
    ]


def test_batch_true_outside_batch_mode_is_said_and_changes_nothing(tmp_path, fake_plugins):
    cfg = write_run_config(tmp_path / "run.toml", fake_run_toml(1, [use("retitle", batch=True)]))
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(tmp_path / "run")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Agent 'retitle' asks for batch = true, but the run is not in batch mode" in done.stderr
    assert [r["status"] for r in jsonl_of(tmp_path / "run" / "results.jsonl")] == ["scored"]
    assert not (tmp_path / "run" / BATCHES).exists()
