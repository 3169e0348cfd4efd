"""`arena run`'s exit codes (pptarena.cli.exit_codes): each is what a script or CI job acts on.

Agent failures are scores (0); a config error is 2; nothing selected 3 (no folder, no bogus path);
judge or infrastructure errors left 4; a budget stop 5; Ctrl-C 130 and SIGTERM 143, resumable.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pptarena.cli import exit_codes
from pptarena.cli.main import cli
from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.paths import ROOT

DEMO = ROOT / "examples" / "demo.toml"

PRICED = {  # $1000 per million input tokens, 1000 tokens a call: $1 a call (tests/run/test_epochs_cost.py)
    "scripted": {
        "responses": [{"reply": "x", "input_tokens": 1000, "output_tokens": 10}],
        "on_exhausted": "repeat_last",
        "pricing": {"echo-1": {"input": 1000.0, "output": 0.0}},
    }
}

# Executors whose start or close outlasts a signal: the moments outside the runner's own Ctrl-C handling.
EXIT_PLUGINS = '''
import os
import time
from pathlib import Path

import pptarena
from pptarena.types import Component

MARK = Path(os.environ["EXIT_TEST_MARK"])


class Inline(Component):
    def execute(self, jobs, run):
        for job in jobs:
            yield job, run.compute_pair(job.agent, job.task, job.epoch)

    def stop(self):
        pass

    def close(self):
        pass


class SlowStart(Inline):
    def start(self, run):
        MARK.write_text("starting")
        time.sleep(30)


class SwallowingClose(Inline):
    """Its clean-up swallows a KeyboardInterrupt, as a library's may: the run then ends normally."""

    closed = False

    def close(self):
        if self.closed:
            return
        self.closed = True
        MARK.write_text("closing")
        try:
            time.sleep(30)
        except BaseException:
            pass


@pptarena.hookimpl
def register_executors(register):
    register("slow-start", SlowStart)
    register("swallowing-close", SwallowingClose)
'''


def rows_of(run_dir: Path) -> list[dict]:
    latest = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        latest[(r["agent"], r["task_id"], r.get("epoch", 1))] = r
    return list(latest.values())


def run_cli(*args: str):
    """``arena ARGS`` in this process; the click result (stdout and stderr in ``output``)."""
    return CliRunner().invoke(cli, list(args))


def config(tmp_path: Path, agents: list, count: int = 2, **parts) -> Path:
    return write_run_config(tmp_path / "run.toml", fake_run_toml(count, agents, **parts))


def test_every_pair_failed_by_its_agent_is_a_score_and_exits_0(tmp_path, fake_plugins):
    cfg = config(tmp_path, ["crash"])
    res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet", "--no-report")
    assert res.exit_code == exit_codes.OK == 0, res.output
    assert [r["status"] for r in rows_of(tmp_path / "run")] == ["agent_error", "agent_error"]


def test_every_pair_failed_by_infrastructure_exits_4_saying_how_to_retry(tmp_path, fake_plugins):
    cfg = config(tmp_path, ["noop"], judges=[use("title", fail="infra")])
    out = tmp_path / "run"
    res = run_cli("run", "--config", str(cfg), "--out", str(out), "--quiet", "--no-report")
    assert res.exit_code == exit_codes.ERRORS_LEFT == 4, res.output
    assert [r["status"] for r in rows_of(out)] == ["infra_error", "infra_error"]
    assert "2 pair(s) left without a full verdict (2 infra_error)" in res.output
    assert f"arena run --config {cfg} --out {out} --retry-errors" in res.output
    # the errors are left in the run: resuming it says so again
    again = run_cli("run", "--config", str(cfg), "--out", str(out), "--quiet", "--no-report")
    assert again.exit_code == 4, again.output


def test_judge_errors_left_exit_4(tmp_path, fake_plugins):
    cfg = config(tmp_path, ["noop"], count=1, judges=[use("title", fail="judge")])
    res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet", "--no-report")
    assert res.exit_code == exit_codes.ERRORS_LEFT, res.output
    assert "(1 judge_error)" in res.output and "arena rescore" in res.output


def test_a_timeout_is_the_agents_and_exits_0(tmp_path, fake_plugins):
    cfg = config(tmp_path, [use("slowcopy", sleep=30)], count=1, run={"task_timeout": 1})
    res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet", "--no-report")
    assert res.exit_code == 0, res.output
    assert [r["status"] for r in rows_of(tmp_path / "run")] == ["timeout"]


def test_max_cost_stop_exits_5(tmp_path, fake_plugins):
    cfg = config(
        tmp_path,
        [use("asker-inproc", model="scripted/echo-1")],
        count=4,
        run={"jobs": 1, "max_cost": 1.5, "bootstrap": 50},
        backends=PRICED,
    )
    res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "run"), "--quiet", "--no-report")
    assert res.exit_code == exit_codes.BUDGET_STOPPED == 5, res.output
    assert len(rows_of(tmp_path / "run")) == 2 and "Budget reached" in res.output


def test_config_error_exits_2_and_starts_nothing(tmp_path, fake_plugins):
    cfg = write_run_config(tmp_path / "bad.toml", "[run]\njobs = 'two'\n")
    res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "run"))
    assert res.exit_code == exit_codes.CONFIG_ERROR == 2, res.output
    assert "run.jobs" in res.output and not (tmp_path / "run").exists()
    res = run_cli("run", "--config", str(tmp_path / "missing.toml"))
    assert res.exit_code == 2, res.output


def test_a_glob_selecting_nothing_exits_3_leaving_no_folder_and_printing_no_path(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(DEMO), "--out", str(out)]
    res = subprocess.run([*cmd, "--task", "nope*", "--task", "none-?"], capture_output=True, text=True)
    assert res.returncode == exit_codes.NOTHING_SELECTED == 3, res.stderr
    lines = [line for line in (res.stdout + res.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines  # no "Starting run in", no "Results: ..." of a run that never was
    assert "no task matches 'nope*' 'none-?' (the dataset has 12 tasks)" in lines[0]
    assert not out.exists()
    listed = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "tasks", "--config", str(DEMO), "--task", "nope*"],
        capture_output=True,
        text=True,
    )
    assert listed.returncode == 3 and "no task matches 'nope*'" in listed.stderr, listed.stderr


def test_an_empty_dataset_exits_3(tmp_path, fake_plugins):
    cfg = config(tmp_path, ["noop"], count=0)
    res = run_cli("run", "--config", str(cfg), "--out", str(tmp_path / "run"))
    assert res.exit_code == 3 and "the dataset has no tasks" in res.output, res.output
    assert not (tmp_path / "run").exists()


def test_the_readme_the_ci_page_and_the_help_list_every_exit_code():
    codes = {v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int)}
    assert codes == {0, 1, 2, 3, 4, 5, 6, 130, 143}
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("### Exit codes of `arena run`")[1]
    readme = readme.split("\n#")[0]
    assert {int(c) for c in re.findall(r"^\| (\d+) \|", readme, re.M)} == codes
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert {int(c) for c in re.findall(r"^\| (\d+) \|", ci, re.M)} == codes
    help_text = run_cli("run", "--help").output.split("Exit codes")[1]
    assert {int(c) for c in re.findall(r"^ +(\d+) {2,}\S", help_text, re.M)} == codes


def _signalled(cmd: list[str], sig: int, ready, env=None) -> tuple[int, str]:
    """Start ``cmd``, send it ``sig`` once ``ready()``; its exit code and stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ready() and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.slow
def test_sigterm_mid_run_exits_143_and_the_run_resumes(tmp_path, fake_plugins):
    cfg = config(tmp_path, [use("slowcopy", sleep=0.5)], count=6)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(out), "--quiet"]
    returncode, err = _signalled(
        cmd, signal.SIGTERM, lambda: (out / "results.jsonl").exists() and bool(rows_of(out))
    )
    assert returncode == exit_codes.TERMINATED == 143, err
    assert f"Resume with: arena run --config {cfg} --out {out}" in err
    assert 1 <= len(rows_of(out)) < 6
    done = subprocess.run([*cmd, "--no-report"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(rows_of(out)) == 6 and all(r["status"] == "scored" for r in rows_of(out))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("executor", "sig", "code"),
    [
        ("slow-start", signal.SIGINT, 130),  # before the runner's loop: was click's "Aborted!", 1
        ("swallowing-close", signal.SIGINT, 130),  # its KeyboardInterrupt swallowed: was 0
        ("swallowing-close", signal.SIGTERM, 143),
    ],
)
def test_an_interrupt_outside_the_pairs_loop_is_not_lost(tmp_path, fake_plugins, executor, sig, code):
    (tmp_path / "exitplugins.py").write_text(EXIT_PLUGINS)
    mark = tmp_path / "mark"
    env = {
        **os.environ,
        "PPTARENA_PLUGINS": "fakeplugins,exitplugins",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ["PYTHONPATH"]]),
        "EXIT_TEST_MARK": str(mark),
    }
    cfg = config(tmp_path, ["noop"], count=1, executor=executor)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", str(out), "--quiet"]
    returncode, err = _signalled(cmd, sig, mark.exists, env=env)
    assert mark.exists(), err
    assert returncode == code, err
    assert "Interrupted." in err and f"arena run --config {cfg} --out {out}" in err


def test_a_run_that_skipped_a_task_for_a_broken_target_exits_6_and_blames_no_agent(tmp_path):
    """A corrupt target used to pass validation and score 0 for every agent (the oracle blamed with
    agent_error). Now the task is skipped before any pair runs, the run says so and exits 6."""
    from pptx import Presentation

    from pptarena.run.configuration.datacheck import DATASET_ERRORS_EXIT

    assert DATASET_ERRORS_EXIT == exit_codes.DATASET_ERRORS  # `arena dataset check` says the same
    for name, broken in (("fine", False), ("broken-target", True)):
        folder = tmp_path / "tasks" / name
        folder.mkdir(parents=True)
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = "Hello"
        prs.save(str(folder / "original.pptx"))
        prs.slides.add_slide(prs.slide_layouts[6])
        prs.save(str(folder / "target.pptx"))
        if broken:
            (folder / "target.pptx").write_bytes(b"PK\x03\x04 not a deck")
        (folder / "task.toml").write_text(
            'instruction = "Add a slide"\noriginal = "original.pptx"\ntarget = "target.pptx"\n'
        )
    cfg = write_run_config(
        tmp_path / "c.toml",
        dataset=use("folder", root="tasks"),
        agents=["oracle", "noop"],
        judges=["structural"],
    )
    res = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "run", "--config", str(cfg), "--out", "run", "--no-report"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert res.returncode == 6, res.stderr[-2000:]
    assert "Skipped task broken-target for every agent: dataset error: target deck" in res.stderr
    assert "1 task(s) skipped for dataset errors (broken-target)" in res.stderr
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["agent"], r["task_id"], r["status"]) for r in rows) == [
        ("noop", "fine", "scored"),
        ("oracle", "fine", "scored"),
    ]
