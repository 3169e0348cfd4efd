"""``arena run --batch`` end to end against the provider simulator through the official SDK: the dual
judge's calls go out as batch jobs, a ``kill -9`` while the run waits on them, and the same command
again polls the same jobs (nothing submitted twice) and finishes with every pair scored at batch
prices."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pptarena.models.sim import ProviderSim, SimConfig
from pptarena.run.folder.rundir import BATCHES
from tests.support.agents_fixtures import FIX_QBR_TYPOS
from tests.support.config import run_toml, use, write_run_config
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow


def book(out: Path) -> list[dict]:
    path = out / BATCHES
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rows_of(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def test_a_killed_batch_run_resumes_polling_the_same_jobs(tmp_path):
    with ProviderSim(SimConfig(batch_delay=30.0, seed=3)) as sim:
        cfg = write_run_config(
            tmp_path / "batch.toml",
            run_toml(
                run={
                    "jobs": 2,
                    "tasks": ["qbr-fix-typos", "qbr-add-region-row"],
                    "batch_poll": 0.3,
                    "batch_quiet": 0.5,
                },
                dataset="demo",
                agents=[
                    use("code", label="fixer", model="scripted/fixer", render_check=False, max_images=0),
                    "oracle",
                ],
                backends={
                    "scripted": {"rules": [{"match": ".", "reply": FIX_QBR_TYPOS}]},
                    "anthropic": {"base_url": sim.url, "api_key": {"env": "PPTARENA_SIM_KEY"}},
                },
                renderer="libreoffice",
                judges=[use("dual", model="anthropic/claude-sonnet-4-5")],
            ),
        )
        out = tmp_path / "run"
        cmd = [
            sys.executable,
            "-m",
            "pptarena.cli",
            "run",
            "--config",
            str(cfg),
            "--out",
            str(out),
            "--batch",
        ]
        env = {**os.environ, "PPTARENA_SIM_KEY": "sk-sim-test"}
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not any(e["op"] == "submitted" for e in book(out)):
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            time.sleep(0.1)
        first = [e for e in book(out) if e["op"] == "submitted"]
        assert first, "no batch was submitted"
        os.killpg(proc.pid, signal.SIGKILL)  # kill -9 while the judges wait on their batch
        proc.wait()
        assert not any(e["op"] == "ended" for e in book(out)), (
            "the batch ended before the kill: test too slow"
        )
        assert sim.stats()["batches_submitted"] == len(first)

        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Resuming" in done.stderr and "nothing is submitted again" in done.stderr
        stats = sim.stats()

    entries = book(out)
    submitted = [e for e in entries if e["op"] == "submitted"]
    ids = [cid for e in submitted for cid in e["custom_ids"]]
    assert len(ids) == len(set(ids)), "a request was submitted twice"
    ended = {e["batch_id"] for e in entries if e["op"] == "ended"}
    assert {e["batch_id"] for e in first} <= ended, "the first run's batch was not polled to its end"
    rows = rows_of(out)
    keys = [(r["agent"], r["task_id"]) for r in rows]
    assert len(keys) == len(set(keys)) == 4
    assert all(r["status"] == "scored" for r in rows), [
        (r["agent"], r["task_id"], r.get("error")) for r in rows
    ]
    # every judge call was answered from a batch (none went to the synchronous endpoint) ...
    assert not [p for p in stats["by_path"] if p.rstrip("/").endswith("/v1/messages")], stats["by_path"]
    # ... and priced at the batch rate: half of what the same usage costs at the standard rate
    from pptarena.models.messages import Usage
    from pptarena.models.pricing import bundled_prices

    price = bundled_prices()["claude-sonnet-4-5"]
    for r in rows:
        usage = Usage.from_dict(
            {k[len("judge_") :]: v for k, v in r["usage"].items() if k.startswith("judge_")}
        )
        if usage.total_tokens == 0:
            continue
        standard = price.cost(
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_input_tokens,
            usage.cache_write_input_tokens,
            usage.cache_write_1h_input_tokens,
        )
        assert r["cost"]["judges"]["dual"]["known_usd"] == pytest.approx(standard / 2, rel=1e-3, abs=1e-6)
