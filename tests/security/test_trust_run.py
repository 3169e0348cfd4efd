"""Attacks on the run itself: concurrent runs, hostile files, hostile plugins and configs
(issue 14, rows 3, 8, 10-12).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.support.config import run_toml, use, write_run_config
from tests.support.stub_llm_server import Reply, StubLLMServer
from tests.support.trust_fixtures import (
    OTHER_SECRET,
    SECRET,
    arena,
    code_agent_config,
    files_holding,
    needs_bwrap,
    requests_holding,
    rows,
)

TWO_TASKS = ["qbr-fix-typos", "qbr-*"]


def demo_deck(tmp_path: Path) -> Path:
    """A real deck of the demo set (generated into this test's cache)."""
    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set

    root = ensure_demo_set(Path(os.environ["PPTARENA_CACHE"]) / "probe")
    return sorted(root.rglob("*.pptx"))[0]


def command_config(
    script: Path, *, ids: list[str] = ("qbr-fix-typos",), timeout: int = 120, more_agents=(), **options
) -> str:
    """A run of a command agent running ``script {input} {output}`` on demo tasks, judged structurally
    (``options``: more options of that agent; ``more_agents``: agents beside it)."""
    cli = use("command", label="cli", command=[sys.executable, str(script), "{input}", "{output}"], **options)
    return run_toml(
        run={"task_timeout": timeout, "jobs": 1},
        dataset=use("demo", ids=list(ids)),
        agents=[cli, *more_agents],
        judges=["structural"],
    )


# ---------------------------------------------------------------- row 8: two runs in one folder


@pytest.mark.slow
def test_row8_second_run_on_the_same_folder_refuses_naming_the_holder(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import shutil, sys, time\ntime.sleep(3)\nshutil.copyfile(sys.argv[1], sys.argv[2])\n")
    (tmp_path / "c.toml").write_text(command_config(script, ids=TWO_TASKS))
    first = subprocess.Popen(
        [sys.executable, "-m", "pptarena.cli", "run", "--config", "c.toml", "--out", "run"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = tmp_path / "run" / ".lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text().strip()):
        time.sleep(0.1)
    second = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    assert second.returncode != 0
    assert (
        f"process {first.pid}" in second.stderr + second.stdout and "in use" in second.stderr + second.stdout
    )
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    pairs = [(json.loads(line)["agent"], json.loads(line)["task_id"]) for line in lines]
    assert len(pairs) == len(set(pairs)) >= 2  # every pair once, none lost to the second run
    assert all(r["status"] == "scored" for r in rows_list(tmp_path / "run"))


def rows_list(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------- row 3 (resume): a pair that kills the run


def test_row3_pair_that_killed_the_run_twice_is_recorded_failed_on_resume(tmp_path):
    """A CLI agent without a sandbox kills the runner (its grandparent); the third attempt is not made."""
    killer = tmp_path / "killer.py"
    killer.write_text(
        "import os, signal\n"
        "worker = os.getppid()\n"
        "runner = int(open(f'/proc/{worker}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "os.kill(runner, signal.SIGKILL)\n"
    )
    config = command_config(killer, sandbox="off", more_agents=["noop"])
    (tmp_path / "c.toml").write_text(config)
    for _ in range(2):
        died = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path)
        assert died.returncode == -9, died.stderr[-2000:]
    third = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path)
    assert third.returncode == 4, third.stderr[-2000:]  # the run finished with an infra_error left in it
    result = rows(tmp_path / "run")
    assert result["cli"]["status"] == "infra_error" and "died 2 times" in result["cli"]["error"]
    assert result["noop"]["status"] == "scored"


# ---------------------------------------------------------------- row 10: hostile files for the loaders


def test_row10_devices_fifos_and_zip_bombs_are_refused_fast(tmp_path):
    fifo = tmp_path / "deck.pptx"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        out = arena(["summarize", path], tmp_path, timeout=60)
        assert out.returncode != 0 and "not a regular file" in out.stderr, out.stderr
    # a real deck whose slide XML inflates ~1000:1 (40 MB of whitespace in a few dozen KB)
    bomb = tmp_path / "bomb.pptx"
    with zipfile.ZipFile(demo_deck(tmp_path)) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("ppt/slides/slide") and info.filename.endswith(".xml"):
                head, _, rest = data.partition(b"?>")
                data = head + b"?>" + b" " * (40 << 20) + rest
            dst.writestr(info.filename, data)
    assert bomb.stat().st_size < 2_000_000
    out = arena(["summarize", str(bomb)], tmp_path, timeout=120)
    assert out.returncode != 0 and "zip bomb" in out.stderr, out.stderr[-2000:]


# ---------------------------------------------------------------- row 11: hostile plugins, folders and decks


def test_row11_plugin_calling_sys_exit_at_import_is_named_and_skipped(tmp_path):
    (tmp_path / "exiter.py").write_text("import sys\nsys.exit(7)\n")
    env = {"PPTARENA_PLUGINS": "exiter", "PYTHONPATH": str(tmp_path)}
    out = arena(["plugins"], tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert "exiter" in out.stdout + out.stderr and "sys.exit(7)" in out.stdout + out.stderr


@needs_bwrap
def test_row11_read_only_run_and_cache_folders_give_a_clear_message(tmp_path):
    write_run_config(tmp_path / "c.toml", dataset=use("demo", ids=["qbr-fix-typos"]), agents=["noop"])
    frozen = tmp_path / "frozen"
    (frozen / "run").mkdir(parents=True)
    (frozen / "cache").mkdir()
    wrap = [
        "bwrap",
        "--bind",
        "/",
        "/",
        "--ro-bind",
        str(frozen),
        str(frozen),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    env = {**os.environ, "PPTARENA_CACHE": str(frozen / "cache")}
    run = subprocess.run(
        [
            *wrap,
            sys.executable,
            "-m",
            "pptarena.cli",
            "run",
            "--config",
            "c.toml",
            "--out",
            str(frozen / "run"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert str(frozen) in run.stderr and ("Read-only" in run.stderr or "read-only" in run.stderr), run.stderr[
        -2000:
    ]


def test_row11_broken_original_is_the_datasets_fault_and_rejected_prediction_the_agents(tmp_path):
    good = demo_deck(tmp_path)
    root = tmp_path / "tasks"
    for name, original in (("broken-original", None), ("fine", good)):
        (root / name).mkdir(parents=True)
        deck = root / name / "original.pptx"
        if original is None:
            deck.write_text("this is not a deck")
        else:
            shutil.copyfile(original, deck)
        (root / name / "task.toml").write_text('instruction = "Fix the typos."\noriginal = "original.pptx"\n')
    # the agent hands in a deck whose slide carries an entity declaration: the deck engine refuses it
    writer = tmp_path / "dtd.py"
    writer.write_text(
        "import sys, zipfile\n"
        "src, dst = sys.argv[1], sys.argv[2]\n"
        "with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, 'w') as b:\n"
        "    for info in a.infolist():\n"
        "        data = a.read(info)\n"
        "        if info.filename == 'ppt/slides/slide1.xml':\n"
        "            head, _, rest = data.partition(b'?>')\n"
        "            data = head + b'?><!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\">]>' + rest\n"
        "        b.writestr(info, data)\n"
    )
    write_run_config(
        tmp_path / "c.toml",
        dataset=use("folder", root=str(root)),
        agents=[use("command", label="cli", command=[sys.executable, str(writer), "{input}", "{output}"])],
        judges=["structural"],
    )
    out = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path)
    assert out.returncode not in (1, 2), out.stderr[-2000:]
    rows = rows_list(tmp_path / "run")
    # the broken original is caught before any pair runs: a dataset error, no row against the agent
    assert [r["task_id"] for r in rows] == ["fine"], rows
    assert rows[0]["status"] == "agent_error" and "DTD" in rows[0]["error"]
    skipped = json.loads((tmp_path / "run" / "manifest.json").read_text())["skipped"]
    assert [(s["agent"], s["task_id"]) for s in skipped] == [("cli", "broken-original")]
    assert skipped[0]["reason"].startswith("dataset error: original deck ")
    assert "Skipped task broken-original for every agent: dataset error: original deck" in out.stderr


def test_a_broken_original_found_at_attempt_time_gives_one_line_per_epoch(tmp_path, monkeypatch):
    """Where the run's up-front check did not catch it (here: switched off), each attempt of a pair whose
    original is broken is its own infra_error line, with its epoch and the dataset error."""
    import pptarena.run.runner as runner_module
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry

    monkeypatch.setattr(runner_module, "dataset_skips", lambda *a, **k: {})
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "tasks" / "broken-original"
    root.mkdir(parents=True)
    (root / "original.pptx").write_text("this is not a deck")
    (root / "task.toml").write_text('instruction = "Fix the typos."\noriginal = "original.pptx"\n')
    write_run_config(
        tmp_path / "c.toml",
        run={"epochs": 2},
        dataset=use("folder", root=str(tmp_path / "tasks")),
        agents=[use("command", label="cli", command=[sys.executable, "-c", "pass"])],
        judges=["structural"],
    )
    config = load_config("c.toml", get_registry())
    runner_module.Runner(config, get_registry(), tmp_path / "run", quiet=True).run()
    rows = rows_list(tmp_path / "run")
    assert sorted(r["epoch"] for r in rows) == [1, 2], rows
    assert all(r["status"] == "infra_error" and "dataset error: original deck" in r["error"] for r in rows)


# ---------------------------------------------------------------- row 12: literal secrets and echoed keys


@pytest.mark.parametrize(
    "table",
    [
        (
            '[backends.local]\nuse = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            'api_key = "sk-live-0123456789abcdef"\n'
        ),
        (
            '[backends.local]\nuse = "openai"\n'
            'base_url = "http://user:hunter2-very-secret@127.0.0.1:9/v1"\napi_key = { env = "STUB_KEY" }\n'
        ),
        (
            '[[agents]]\nuse = "command"\nlabel = "cli"\ncommand = ["true"]\n'
            'env = { ANTHROPIC_API_KEY = "sk-ant-0123456789abcdef" }\n'
        ),
    ],
)
def test_row12_literal_secrets_in_a_config_are_refused_with_a_hint(tmp_path, table):
    # the literal secret tables above are the attack; the rest of the config is built
    write_run_config(tmp_path / "c.toml", dataset="demo", agents=["noop"], extra=table)
    out = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path)
    assert out.returncode != 0
    assert "written literally" in out.stderr and "{ env = " in out.stderr, out.stderr[-2000:]
    for literal in ("sk-live-0123456789abcdef", "hunter2-very-secret", "sk-ant-0123456789abcdef"):
        assert literal not in out.stderr + out.stdout
    assert (
        not (tmp_path / "run").exists()
        or files_holding(tmp_path / "run", ["0123456789abcdef", "hunter2"]) == []
    )


@pytest.mark.slow
def test_row12_a_model_reply_echoing_the_key_is_never_written_or_sent_back(tmp_path):
    run_dir = tmp_path / "run"
    echo = (
        f"Sure! Your key is {SECRET} and the other one {OTHER_SECRET}.\n"
        f"```python\nraise SystemExit('{SECRET}')\n```"
    )
    with StubLLMServer() as server:
        server.default = Reply(echo)
        (tmp_path / "c.toml").write_text(code_agent_config(server.openai_base_url, retries=1))
        out = arena(["run", "--config", "c.toml", "--out", str(run_dir)], tmp_path)
        report = arena(["report", str(run_dir)], tmp_path)
        requests = list(server.requests)
    assert out.returncode == 0 and report.returncode == 0, out.stderr[-2000:] + report.stderr[-2000:]
    assert len(requests) == 2  # the retry carried the failed reply and its error back
    assert "***" in json.dumps(requests[1].body)
    assert requests_holding(requests, [SECRET, OTHER_SECRET]) == []
    assert files_holding(run_dir, [SECRET, OTHER_SECRET]) == []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["backends"]["local"]["api_key"] == {"env": "STUB_KEY"}
