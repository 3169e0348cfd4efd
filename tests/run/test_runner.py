"""The runner end to end with test plugins: statuses, timeouts, resume after SIGKILL, results files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.folder.records import ResultRow
from pptarena.run.runner import Runner
from tests.support.config import fake_dataset, fake_run_toml, use, write_run_config


def config_file(tmp_path: Path, agents: list, count: int = 3, **parts) -> Path:
    """run.toml: the fake dataset of ``count`` tasks, the dummy renderer, the title judge and ``agents``."""
    return write_run_config(tmp_path / "run.toml", fake_run_toml(count, agents, **parts))


def rows_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_statuses_and_run_directory(tmp_path, fake_plugins):
    cfg = config_file(
        tmp_path,
        [
            "retitle",
            "noop",
            "crash",
            use("crash", label="broken-tool", infra=True),
            use("crash", label="trusted-tool", infra=True, trusted=True),
        ],
        count=2,
    )
    config = load_config(cfg, get_registry())
    summary = Runner(config, get_registry(), tmp_path / "out", jobs=2, quiet=True).run()
    rows = {(r["agent"], r["task_id"]): r for r in rows_of(tmp_path / "out")}
    assert len(rows) == 10
    assert rows[("retitle", "task-00")]["status"] == "scored"
    assert rows[("retitle", "task-00")]["scores"]["title"]["score"] == 1.0
    assert rows[("noop", "task-01")]["scores"]["title"]["score"] == 0.0
    assert (
        rows[("crash", "task-00")]["status"] == "agent_error"
        and "agent bug" in rows[("crash", "task-00")]["error"]
    )
    # a jailed agent's own InfraError is its failure unless the harness saw a tool fail (issue 31);
    # harness-side code the user trusts keeps the claim
    broken = rows[("broken-tool", "task-00")]
    assert broken["status"] == "agent_error" and "saw no infrastructure failure" in broken["error"]
    assert rows[("trusted-tool", "task-00")]["status"] == "infra_error"
    assert summary.agents["retitle"].judges["title"].mean == 1.0
    assert summary.agents["noop"].judges["title"].mean == 0.0
    assert summary.agents["crash"].status["agent_error"] == 2
    assert summary.agents["retitle"].groups["difficulty"]["hard"].tasks == 1
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["finished_at"]
    assert any(c["name"] == "noop" and c["distribution"] == "pptarena" for c in manifest["components"])
    task_dir = tmp_path / "out" / "tasks" / "retitle" / "task-00"
    assert (task_dir / "prediction.pptx").is_file() and (
        task_dir / "judges" / "title" / "looked.json"
    ).is_file()
    assert json.loads((task_dir / "verdicts.json").read_text())["verdicts"]["title"]["score"] == 1.0
    assert any(
        json.loads(line)["event"] == "edit"
        for line in (task_dir / "agent.log.jsonl").read_text().splitlines()
    )
    # the dataset's original deck is never modified
    from fakeplugins import deck_title

    assert deck_title(tmp_path / "data" / "t0" / "original.pptx") == "Old 0"


@pytest.mark.slow
def test_judge_errors_are_classified(tmp_path, fake_plugins):
    judges = ["title", use("title", label="buggy", fail="judge")]
    cfg = config_file(tmp_path, ["noop"], count=1, judges=judges)
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "a", quiet=True).run()
    row = rows_of(tmp_path / "a")[0]
    assert (
        row["status"] == "judge_error" and "buggy" in row["error"] and row["scores"]["title"]["score"] == 0.0
    )
    cfg = config_file(
        tmp_path, ["noop"], count=1, judges=["title", use("title", label="buggy", fail="infra")]
    )
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "b", quiet=True).run()
    assert rows_of(tmp_path / "b")[0]["status"] == "infra_error"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


@pytest.mark.slow
def test_timeout_kills_agent_and_its_children(tmp_path, fake_plugins, monkeypatch):
    """A plain worker process (weak isolation allowed; tests/security/test_trust_boundary.py times out
    a jail)."""
    monkeypatch.setenv("PPTARENA_SANDBOX", "off")
    pidfile = tmp_path / "child.pid"
    cfg = config_file(
        tmp_path,
        [use("hang", pidfile=str(pidfile))],
        count=1,
        run={"task_timeout": 3, "allow_weak_isolation": True},
    )
    t0 = time.monotonic()
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    assert time.monotonic() - t0 < 60
    row = rows_of(tmp_path / "out")[0]
    assert row["status"] == "timeout" and "task_timeout=3" in row["error"]
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), "the agent's grandchild process survived the timeout"


@pytest.mark.slow
def test_sigkill_then_resume_records_every_pair_once(tmp_path, fake_plugins):
    cfg = config_file(
        tmp_path,
        [use("slowcopy", sleep=0.4), use("slowcopy", label="second", sleep=0.4)],
        count=6,
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
        "--jobs",
        "2",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "results.jsonl").exists() and len(rows_of(out)) >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = rows_of(out)
    assert 3 <= len(first) < 12, len(first)
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Resuming" in done.stderr
    rows = rows_of(out)
    keys = [(r["agent"], r["task_id"]) for r in rows]
    assert len(keys) == len(set(keys)) == 12
    assert all(r["status"] == "scored" and r["scores"]["title"]["score"] == 1.0 for r in rows)
    assert json.loads((out / "manifest.json").read_text())["resumed_at"]


def test_partial_last_line_is_repaired(tmp_path):
    from pptarena.run.folder.results import ResultsStore

    (tmp_path / "results.jsonl").write_text(
        '{"agent": "a", "task_id": "1", "status": "scored"}\n{"agent": "a", "task_'
    )
    store = ResultsStore(tmp_path)
    assert store.done() == {("a", "1")}
    store.append(ResultRow.from_json({"agent": "a", "task_id": "2", "status": "scored"}))
    assert [
        json.loads(line)["task_id"] for line in (tmp_path / "results.jsonl").read_text().splitlines()
    ] == ["1", "2"]


@pytest.mark.slow
def test_filters_limit_and_globs(tmp_path, fake_plugins):
    cfg = config_file(tmp_path, ["noop"], count=5)
    config = load_config(cfg, get_registry())
    Runner(config, get_registry(), tmp_path / "g", task_globs=["task-0[13]"], quiet=True).run()
    assert sorted(r["task_id"] for r in rows_of(tmp_path / "g")) == ["task-01", "task-03"]
    Runner(config, get_registry(), tmp_path / "l", limit=2, quiet=True).run()
    assert len(rows_of(tmp_path / "l")) == 2


def _interrupt_run(cfg: Path, out: Path, ready=None) -> tuple[int, str]:
    """Start ``arena run``, press Ctrl-C once the first result is saved (or once ``ready()``);
    its exit code and stderr."""
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    if ready is None:
        ready = lambda: (out / "results.jsonl").exists() and bool(rows_of(out))  # noqa: E731
    while time.monotonic() < deadline and not ready():
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path, fake_plugins):
    cfg = config_file(tmp_path, [use("slowcopy", sleep=0.5)], count=8)
    out = tmp_path / "run"
    returncode, err = _interrupt_run(cfg, out)
    assert returncode == 130, err
    assert "Resume with: arena run --config" in err and str(out) in err
    assert 1 <= len(rows_of(out)) < 8


@pytest.mark.slow
def test_ctrl_c_says_how_to_resume_even_when_the_executor_crashes_while_stopping(tmp_path, fake_plugins):
    """The attack is Ray's own: cancelling its tasks can abort the driver. The user must still be
    told how to resume, so the message is printed before anything is stopped."""
    cfg = config_file(tmp_path, [use("slowcopy", sleep=0.5)], count=8, executor="crash-on-stop")
    out = tmp_path / "run"
    returncode, err = _interrupt_run(cfg, out)
    assert returncode == 1, err  # the executor's crash, not a clean 130
    assert "Interrupted." in err and "Resume with: arena run --config" in err and str(out) in err, err
    assert 1 <= len(rows_of(out)) < 8


@pytest.mark.slow
def test_ctrl_c_stops_the_run_even_when_the_agent_swallows_the_keyboard_interrupt(tmp_path, fake_plugins):
    """The attack: pairs run in the driver's main thread and the agent catches ``BaseException`` around
    the moment Ctrl-C lands (a finalizer drops it the same way). The run must stop after that pair and
    not record it, instead of running every remaining pair to the end."""
    cfg = config_file(
        tmp_path,
        [use("swallower", sleep=0.5, trusted=True)],
        executor="inline",
        count=8,
    )
    out = tmp_path / "run"
    returncode, err = _interrupt_run(cfg, out)
    assert returncode == 130, err
    assert "Resume with: arena run --config" in err and str(out) in err, err
    assert 1 <= len(rows_of(out)) < 8


@pytest.mark.slow
def test_model_usage_is_recorded_per_pair_and_calls_logged(tmp_path, fake_plugins):
    cfg = config_file(
        tmp_path,
        [use("asker", model="scripted/echo-1")],
        backends={"scripted": {"responses": ["New 0"], "on_exhausted": "repeat_last"}},
        count=2,
    )
    summary = Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    rows = {r["task_id"]: r for r in rows_of(tmp_path / "out")}
    assert (
        rows["task-00"]["scores"]["title"]["score"] == 1.0
        and rows["task-01"]["scores"]["title"]["score"] == 0.0
    )
    assert rows["task-00"]["usage"]["calls"] == 1 and rows["task-00"]["usage"]["output_tokens"] > 0
    assert summary.agents["asker"].usage["calls"] == 2
    log = [
        json.loads(line)
        for line in (tmp_path / "out/tasks/asker/task-00/agent.log.jsonl").read_text().splitlines()
    ]
    assert [e["event"] for e in log] == ["model_call"] and log[0]["model"] == "scripted/echo-1"


@pytest.fixture
def resaving_builtin(fake_plugins, monkeypatch):
    """The ``resaving`` fake agent given a reference normalizer as pptarena's own registration would
    give it (a third-party class's ``normalize_reference`` is never used: checked first). Only the
    normalizer lookup is granted: the agent itself stays a jailed third-party one."""
    from fakeplugins import resave_with_marker

    import pptarena.run.attempt
    from pptarena.run.references import normalizer_of

    spec = get_registry().get("agents", "resaving")
    assert normalizer_of(spec) is None
    monkeypatch.setattr(spec, "reference_normalizer", resave_with_marker)
    monkeypatch.setattr(
        pptarena.run.attempt,
        "normalizer_of",
        lambda s: normalizer_of(s) or (resave_with_marker if s is spec else None),
    )
    return spec


@pytest.mark.slow
def test_agents_tool_resaves_the_reference_decks_for_judges(tmp_path, resaving_builtin, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PPTARENA_CACHE", str(cache))
    cfg = config_file(tmp_path, ["resaving", "slowcopy"], count=2)
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    rows = {(r["agent"], r["task_id"]): r for r in rows_of(tmp_path / "out")}
    assert all(r["status"] == "scored" for r in rows.values())
    seen = json.loads((tmp_path / "out/tasks/resaving/task-00/judges/title/subjects.json").read_text())
    assert seen == {"original": "re-saved by the tool", "target": "re-saved by the tool"}
    refs = tmp_path / "out/tasks/resaving/task-00/references"
    assert sorted(p.name for p in refs.iterdir()) == ["original.pptx", "target.pptx"]
    assert len(list((cache / "references").rglob("*.pptx"))) == 4  # 2 tasks x (original, target), cached
    plain = json.loads((tmp_path / "out/tasks/slowcopy/task-00/judges/title/subjects.json").read_text())
    assert plain == {"original": "", "target": ""}  # agents without a tool see the dataset's decks
    from pptarena.report.rescore import rescore

    out_dir, _ = rescore(tmp_path / "out", get_registry(), name="again")
    again = json.loads((out_dir / "tasks/resaving/task-00/judges/title/subjects.json").read_text())
    assert again == seen  # re-scoring judges the same re-saved references


@pytest.mark.slow
def test_reference_resave_failure_is_an_infra_error(tmp_path, resaving_builtin, monkeypatch):
    monkeypatch.setenv("PPTARENA_CACHE", str(tmp_path / "cache"))
    cfg = config_file(tmp_path, ["resaving"], dataset=fake_dataset(1, root="data-fail"))
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    row = rows_of(tmp_path / "out")[0]
    assert row["status"] == "infra_error" and "tool crashed" in row["error"]


def test_worker_setup_failure_is_an_infra_error(tmp_path):
    """A worker that cannot even load the config (the harness's fault) never charges the agent."""
    from pptarena.run.worker import main as worker_main

    spec = tmp_path / "spec.json"
    result = tmp_path / "result.json"
    spec.write_text(
        json.dumps(
            {
                "config_path": str(tmp_path / "gone.toml"),
                "agent_index": 0,
                "task": {},
                "workspace": {},
                "result_path": str(result),
            }
        )
    )
    assert worker_main(str(spec)) == 0
    outcome = json.loads(result.read_text())
    assert outcome["ok"] is False and outcome["status"] == "infra_error"
    assert "gone.toml does not exist" in outcome["error"]


def test_a_missing_input_deck_skips_its_task_as_a_dataset_error_and_the_run_goes_on(
    tmp_path, fake_plugins, monkeypatch
):
    import dataclasses

    import pptarena.run.runner as runner_mod

    real_load = runner_mod.load_tasks

    def one_deck_gone(components):
        tasks = real_load(components)
        return [dataclasses.replace(tasks[0], original=tmp_path / "vanished.pptx"), *tasks[1:]]

    monkeypatch.setattr(runner_mod, "load_tasks", one_deck_gone)
    cfg = config_file(tmp_path, ["noop"], count=2)
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    rows = rows_of(tmp_path / "out")
    skipped = json.loads((tmp_path / "out" / "manifest.json").read_text())["skipped"]
    assert len(skipped) == 1 and skipped[0]["agent"] == "noop"
    # nothing is recorded against the agent for the broken task; the other one is scored
    assert [r["status"] for r in rows] == ["scored"] and rows[0]["task_id"] != skipped[0]["task_id"]
    assert (
        skipped[0]["reason"].startswith("dataset error: original deck ")
        and "vanished.pptx" in skipped[0]["reason"]
    )


def test_safe_names_of_long_ids_do_not_collide():
    from pptarena.run.folder.rundir import safe_name

    a, b = "x" * 130 + "a", "x" * 130 + "b"
    assert safe_name(a) != safe_name(b) and len(safe_name(a)) <= 120
    assert safe_name("case-1") == "case-1" and safe_name("Case 1: a/b").startswith("Case_1_a_b-")


@pytest.mark.slow
def test_resume_refuses_a_changed_config_but_accepts_a_new_agent(tmp_path, fake_plugins):
    from pptarena.types import PptArenaError

    cfg = config_file(tmp_path, ["noop"], count=1)
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    cfg = config_file(tmp_path, ["noop", "slowcopy"], count=1)  # adding an agent resumes
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    assert sorted(r["agent"] for r in rows_of(tmp_path / "out")) == ["noop", "slowcopy"]
    cfg = config_file(tmp_path, ["noop", "slowcopy"], count=1, judges=[use("title", label="other")])
    with pytest.raises(PptArenaError, match=r"\[judges\] differs.*arena rescore"):
        Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
    assert len(rows_of(tmp_path / "out")) == 2


@pytest.mark.slow
def test_rerunning_without_out_resumes_the_same_configs_run(tmp_path, fake_plugins):
    cfg = config_file(tmp_path, ["noop"], count=2)
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--no-report"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0 and "Resuming run in runs/run-" in again.stderr
    assert "2 of 2 results already recorded" in again.stderr
    fresh = subprocess.run([*cmd, "--new"], capture_output=True, text=True, cwd=tmp_path)
    assert fresh.returncode == 0 and "Starting run in" in fresh.stderr
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(len(rows_of(r)) == 2 for r in runs)


def test_a_key_copied_out_encoded_is_masked_in_every_file_of_the_run(tmp_path, fake_plugins, monkeypatch):
    """The attack: an agent that can read the environment writes the API key base64-, hex- and
    percent-encoded into its transcript and its prediction's notes (the row, verdicts, report)."""
    from fakeplugins import encoded_leaks

    from pptarena.report.html import write_report
    from tests.support.trust_fixtures import files_holding

    secret = "sk-test/encoded+0123456789abcdef"  # "/" and "+" change under percent-encoding
    monkeypatch.setenv("PPTARENA_TEST_API_KEY", secret)
    cfg = config_file(tmp_path, [use("encoding-leaker", trusted=True)], count=1)
    out = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    write_report(out, render=False)
    leaks = encoded_leaks(secret)
    assert files_holding(out, list(leaks.values())) == []
    transcript = (out / "tasks/encoding-leaker/task-00/transcript.txt").read_text()
    assert transcript.count("***") == len(leaks)  # every form found, none left whole


@pytest.mark.slow
def test_ctrl_c_mid_pair_leaves_no_key_in_the_run_folder(tmp_path, fake_plugins, monkeypatch):
    """The attack: an agent writes the API key into its folder and is still working when Ctrl-C
    comes; the run exits at once, before the pair's own clean-up, and must not leave the key behind."""
    from tests.support.trust_fixtures import files_holding

    secret = "sk-test-interrupt-0123456789abcdef"
    monkeypatch.setenv("PPTARENA_TEST_API_KEY", secret)
    cfg = config_file(tmp_path, [use("leaky", sleep=1.5, trusted=True)], count=6)
    out = tmp_path / "run"
    # Ctrl-C while the second pair sleeps, its transcript written and its result not
    returncode, err = _interrupt_run(
        cfg, out, lambda: len(list(out.glob("tasks/leaky/*/transcript.txt"))) >= 2
    )
    assert returncode == 130, err
    transcripts = list((out / "tasks" / "leaky").glob("*/transcript.txt"))
    assert len(transcripts) > len(rows_of(out))  # the interrupted pairs had written theirs
    assert files_holding(out, [secret]) == []


def test_a_run_that_cannot_start_leaves_no_folder_behind(tmp_path, fake_plugins, monkeypatch):
    """Failed validations used to leave run folders holding only ``.lock``: a run that stops before its
    manifest is written removes the folder it made (and never one that was there before)."""
    import pptarena.run.runner as runner_mod
    from pptarena.types import PptArenaError

    def broken(components):
        raise PptArenaError("the dataset does not load")

    monkeypatch.setattr(runner_mod, "load_tasks", broken)
    cfg = config_file(tmp_path, ["noop"], count=1)
    with pytest.raises(PptArenaError, match="does not load"):
        Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "new", quiet=True).run()
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "mine"
    kept.mkdir()
    (kept / "notes.txt").write_text("the user's")
    with pytest.raises(PptArenaError):
        Runner(load_config(cfg, get_registry()), get_registry(), kept, quiet=True).run()
    assert (kept / "notes.txt").read_text() == "the user's"
