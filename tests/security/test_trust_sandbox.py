"""Attacks on the sandbox by model-written programs, rubric leaves and CLI agents (issue 14, rows 1-4, 7, 9).

Each test is the hostile program, leaf or command, and checks what really happened on this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves
from pptarena.trust.sandbox import SandboxLimits, run_python
from tests.support.config import command_agent, demo_dataset, write_run_config
from tests.support.stub_llm_server import Reply, StubLLMServer
from tests.support.trust_fixtures import (
    OTHER_SECRET,
    SECRET,
    arena,
    code_agent_config,
    files_holding,
    needs_bwrap,
    program_reply,
    requests_holding,
    rows,
    wait_gone,
)

NO_DECKS = {
    "original_ppt_path": "/nonexistent/a.pptx",
    "modified_ppt_path": "/nonexistent/b.pptx",
    "ppt_diff": None,
    "screenshots": {},
}


def leaf(body: str) -> str:
    return "def compute_score():\n" + textwrap.indent(textwrap.dedent(body), "    ")


def demo_target(tmp_path: Path) -> tuple[Path, Path]:
    """The demo task's original and target decks, generated in this test's cache (as the run will see
    them)."""
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import load_registry
    from pptarena.run.configuration.tasks import load_tasks

    cfg = write_run_config(tmp_path / "probe.toml", dataset=demo_dataset("qbr-fix-typos"), agents=["noop"])
    (task,) = load_tasks(Components(load_config(cfg, load_registry()), load_registry()))
    return task.original, task.target


# ---------------------------------------------------------------- row 1: reading the answer key


@needs_bwrap
def test_row1_program_cannot_reach_run_folder_cache_targets_or_home(tmp_path):
    original, target = demo_target(tmp_path)
    run_dir = tmp_path / "run"
    probes = [str(run_dir / "manifest.json"), str(target), str(target.parent), str(Path.home()), str(run_dir)]
    program = f"""
import json, os, shutil
report = {{}}
for p in {probes!r}:
    try:
        report[p] = sorted(os.listdir(p)) if os.path.isdir(p) else \
("READ" if open(p, "rb").read(4) else "EMPTY")
    except OSError as exc:
        report[p] = exc.strerror
decks = []
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev", "/usr")]
    if "site-packages" not in root:  # python-pptx's own template deck lives there
        decks += [os.path.join(root, f) for f in files if f.endswith(".pptx") and f != "input.pptx"]
report["decks"] = decks
for deck in decks:  # hand in the answer if it can be found
    shutil.copyfile(deck, OUTPUT_PATH)
    break
else:
    shutil.copyfile(INPUT_PATH, OUTPUT_PATH)
print("REPORT" + json.dumps(report))
"""
    with StubLLMServer() as server:
        server.default = Reply(program_reply(program))
        (tmp_path / "c.toml").write_text(code_agent_config(server.openai_base_url))
        out = arena(["run", "--config", "c.toml", "--out", str(run_dir)], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = rows(run_dir)
    assert result["noop"]["status"] == "scored"
    hostile = result["hostile"]
    assert hostile["isolation"] == "bwrap"
    assert hostile["status"] == "scored" and hostile["scores"]["structural"]["score"] < 1.0
    prediction = run_dir / hostile["prediction"]
    assert prediction.read_bytes() != target.read_bytes() and prediction.read_bytes() == original.read_bytes()
    log = [json.loads(line) for line in (prediction.parent / "agent.log.jsonl").read_text().splitlines()]
    (run,) = [e for e in log if e["event"] == "code_run"]
    report = json.loads(run["stdout"].split("REPORT", 1)[1])
    assert report.pop("decks") == []
    # the home folder shows only the way to the Python installation (when that lives in it)
    home = report.pop(str(Path.home()))
    assert home in ("No such file or directory", [], [".pyenv"]) or all(
        not (Path.home() / name).is_file() for name in home
    ), home
    assert set(report.values()) == {"No such file or directory"}, report


@needs_bwrap
def test_row1_command_agents_cli_sees_only_its_workspace(tmp_path):
    original, target = demo_target(tmp_path)
    run_dir = tmp_path / "run"
    cli = tmp_path / "cli.py"
    probes = [str(run_dir / "manifest.json"), str(target), str(target.parent), str(run_dir / "tasks")]
    cli.write_text(
        "import json, os, shutil, sys\n"
        "report = {}\n"
        f"for p in {probes!r} + [os.path.dirname(os.getcwd())]:\n"
        "    try:\n"
        "        report[p] = sorted(os.listdir(p)) if os.path.isdir(p) else open(p, 'rb').read(4).hex()\n"
        "    except OSError as exc:\n"
        "        report[p] = exc.strerror\n"
        "print('REPORT' + json.dumps(report))\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
    )
    write_run_config(
        tmp_path / "c.toml",
        dataset=demo_dataset("qbr-fix-typos"),
        agents=["noop", command_agent(sys.executable, cli, "{input}", "{output}")],
        judges=["structural"],
    )
    out = arena(["run", "--config", "c.toml", "--out", str(run_dir), "--jobs", "1"], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (run_dir / "tasks" / "noop").is_dir()
    row = rows(run_dir)["cli"]
    assert row["status"] == "scored" and row["isolation"] == "bwrap"
    stdout = (run_dir / "tasks" / "cli" / "qbr-fix-typos" / "cli.stdout.txt").read_text()
    report = json.loads(stdout.split("REPORT", 1)[1])
    parent = report.pop(next(k for k in report if k not in probes))
    assert parent == ["cli"]  # its task folder shows only the workspace: no input copy, logs or verdicts
    assert report.pop(str(run_dir / "tasks")) == ["cli"]  # only the way to it: no other agent's folder
    assert set(map(str, report.values())) == {"No such file or directory"}, report


# ---------------------------------------------------------------- row 2: leaking secrets


LEAK = """
import os, sys
stolen = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            stolen.append(open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
        except OSError:
            pass
for name in (".stderr", ".stdout", ".sandbox-result.json"):
    try:
        os.symlink("/proc/self/environ", name)
    except OSError:
        pass
sys.stderr.write("STOLEN " + " | ".join(stolen))
raise SystemExit(3)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_row2_program_and_leaf_cannot_leak_keys_to_files_or_prompts(tmp_path, monkeypatch, sandbox):
    """With bubblewrap the environ of the harness is out of reach; without it the redactor still masks it."""
    run_dir = tmp_path / "run"
    env = {"PPTARENA_SANDBOX": sandbox}
    with StubLLMServer() as server:
        server.default = Reply(program_reply(LEAK))
        (tmp_path / "c.toml").write_text(code_agent_config(server.openai_base_url, retries=1))
        weak = ["--allow-weak-isolation"] if sandbox == "off" else []  # refused without it (issue 23)
        out = arena(["run", "--config", "c.toml", "--out", str(run_dir), *weak], tmp_path, env=env)
        report = arena(["report", str(run_dir)], tmp_path, env=env)
        requests = list(server.requests)
    assert out.returncode == 0, out.stderr[-3000:]
    assert report.returncode == 0, report.stderr[-2000:]
    result = rows(run_dir)
    assert result["hostile"]["status"] == "agent_error" and "STOLEN" in result["hostile"]["error"]
    assert result["noop"]["status"] == "scored"
    assert len(requests) == 2 and "STOLEN" in json.dumps(
        requests[1].body
    )  # the failure went back to the model
    assert files_holding(run_dir, [SECRET, OTHER_SECRET]) == []
    assert requests_holding(requests, [SECRET, OTHER_SECRET]) == []
    assert SECRET not in out.stdout + out.stderr + report.stdout + report.stderr
    # the leaf version of the attack, with the secrets in this (the judge's) process's environment
    from pptarena.run.folder.results import write_json_atomic
    from pptarena.trust import isolation

    monkeypatch.setenv("STUB_KEY", SECRET)
    monkeypatch.setenv("UNRELATED_SERVICE_TOKEN", OTHER_SECRET)
    monkeypatch.setenv("PPTARENA_SANDBOX", sandbox)
    isolation.base_flags.cache_clear()
    try:
        records = run_function_leaves(
            [
                {
                    "id": "leak",
                    "code": leaf(LEAK.replace("raise SystemExit(3)", "return ' | '.join(stolen), 0")),
                }
            ],
            NO_DECKS,
            ModelBridge(None),
            LeafRun(),
        )
    finally:
        monkeypatch.delenv("PPTARENA_SANDBOX")
        isolation.base_flags.cache_clear()
    if sandbox == "auto" and isolation.base_flags() is not None:
        assert SECRET not in json.dumps(records)  # out of reach: the leaf sees only its own sandbox
    verdict = tmp_path / "verdict.json"
    write_json_atomic(verdict, records)  # how a leaf's reason reaches the run folder
    assert SECRET not in verdict.read_text() and OTHER_SECRET not in verdict.read_text()


# ---------------------------------------------------------------- row 3: killing the run


KILLER = """
import os, signal
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass
"""


@needs_bwrap
def test_row3_program_killing_every_process_it_sees_fails_alone(tmp_path):
    run_dir = tmp_path / "run"
    with StubLLMServer() as server:
        server.default = Reply(
            program_reply(KILLER + "\nimport shutil\nshutil.copyfile(INPUT_PATH, OUTPUT_PATH)\n")
        )
        (tmp_path / "c.toml").write_text(code_agent_config(server.openai_base_url, retries=0))
        out = arena(["run", "--config", "c.toml", "--out", str(run_dir)], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = rows(run_dir)
    assert result["noop"]["status"] == "scored"
    assert result["hostile"]["status"] in ("agent_error", "scored")


@needs_bwrap
def test_row3_leaf_killing_its_parent_fails_alone_and_later_leaves_run(tmp_path):
    script = tmp_path / "judge.py"
    leaves = [
        {"id": "killer", "code": leaf(KILLER + "return 'k', 1")},
        {"id": "honest", "code": leaf("return 'fine', 0.5")},
    ]
    script.write_text(
        "import json, sys\n"
        "from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves\n"
        f"records = run_function_leaves({leaves!r}, {NO_DECKS!r}, ModelBridge(None), LeafRun())\n"
        "print(json.dumps({k: [v['score'], v.get('error')] for k, v in records.items()}))\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]  # the judge process survived
    records = json.loads(out.stdout.strip().splitlines()[-1])
    assert records["honest"] == [0.5, None]
    assert records["killer"][0] in (0.0, 1.0)  # it may finish (nothing to kill) or take its own driver down


# ---------------------------------------------------------------- row 4: surviving grandchildren


def assert_marker_visible(spawn: str, marker: str) -> None:
    """The marker process really shows in /proc when spawned outside any sandbox (so 'gone' means
    something)."""
    from tests.support.trust_fixtures import processes_with

    subprocess.run([sys.executable, "-c", spawn], check=True, timeout=30)
    pids = processes_with(marker)
    assert pids, "the marker process is not visible in /proc"
    import os
    import signal

    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert wait_gone(marker) == []


@pytest.mark.slow
@needs_bwrap
def test_row4_setsid_grandchildren_die_with_the_sandbox_and_the_command_agent(tmp_path):
    marker = f"pptarena-marker-{tmp_path.name}"
    spawn = (
        "import subprocess, sys\n"
        f"subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'],"
        " start_new_session=True)\n"
    )
    assert_marker_visible(spawn, marker)
    res = run_python(spawn + "sandbox_result('spawned')")
    assert res.ok and res.result == "spawned"
    assert wait_gone(marker) == []
    res = run_python(spawn + "import time\ntime.sleep(60)", limits=SandboxLimits(timeout=2))
    assert res.timed_out and wait_gone(marker) == []
    # the command agent: its CLI tree escapes with setsid, then the task times out
    cli = tmp_path / "cli.py"
    cli.write_text(spawn.replace(marker, marker + "-cli") + "import time\ntime.sleep(300)\n")
    write_run_config(
        tmp_path / "c.toml",
        run={"task_timeout": 6},
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[command_agent(sys.executable, cli, timeout=3)],
        judges=["structural"],
    )
    out = arena(["run", "--config", "c.toml", "--out", str(tmp_path / "run")], tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert rows(tmp_path / "run")["cli"]["status"] in ("agent_error", "timeout")
    assert wait_gone(marker + "-cli") == []


@needs_bwrap
def test_row4_kill_9_of_the_run_ends_the_command_agents_tree(tmp_path):
    marker = f"pptarena-kill9-{tmp_path.name}"
    cli = tmp_path / "cli.py"
    cli.write_text(
        "import subprocess, sys, time\n"
        f"subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'],"
        " start_new_session=True)\ntime.sleep(300)\n"
    )
    write_run_config(
        tmp_path / "c.toml",
        run={"task_timeout": 200},
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[command_agent(sys.executable, cli)],
        judges=["structural"],
    )
    import os
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "pptarena.cli", "run", "--config", "c.toml", "--out", "run"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    from tests.support.trust_fixtures import processes_with

    deadline = time.monotonic() + 60
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(marker), "the CLI never started"
    proc.kill()
    proc.wait()
    assert wait_gone(marker, 10) == []


# ---------------------------------------------------------------- row 7: forging leaf results


def test_row7_lying_float_and_forged_records_do_not_score():
    lying = leaf(
        """
        class Liar(float):
            def __le__(self, other): return True
            def __ge__(self, other): return True
            def __lt__(self, other): return False
            def __gt__(self, other): return False
        return "all good", Liar(1e300)
        """
    )
    forger = leaf(
        """
        import json, os
        fake = [{"event": "start", "leaf": "critical"}, \
{"event": "done", "leaf": "critical", "score": 1.0, "reason": "forged"}]
        data = "".join(json.dumps(r) + "\\n" for r in fake).encode()
        for fd in range(3, 64):
            try:
                os.write(fd, data)
            except OSError:
                pass
        for pid in os.listdir("/proc"):
            for fd in ("3", "4"):
                try:
                    with open(f"/proc/{pid}/fd/{fd}", "wb") as fh:
                        fh.write(data)
                except OSError:
                    pass
        return "forger", 0
        """
    )
    critical = leaf("return 'the title is still wrong', 0")
    records = run_function_leaves(
        [
            {"id": "liar", "code": lying},
            {"id": "forger", "code": forger},
            {"id": "critical", "code": critical},
        ],
        NO_DECKS,
        ModelBridge(None),
        LeafRun(),
    )
    assert records["liar"]["score"] == 0.0 and "float" in records["liar"]["error"]
    assert records["critical"]["score"] == 0.0 and records["critical"]["reason"] == "the title is still wrong"
    assert records["forger"]["score"] == 0.0
    assert all(type(r["score"]) is float for r in records.values())


# ---------------------------------------------------------------- row 9: filling the disk


@needs_bwrap
def test_row9_writing_a_gigabyte_in_many_files_stops_at_the_quota(tmp_path):
    program = """
import os
written = 0
error = None
try:
    for i in range(100):  # 100 x 10 MB = 1 GB
        with open(f"fill-{i}.bin", "wb") as fh:
            for _ in range(10):
                fh.write(b"x" * (1 << 20))
                written += 1 << 20
except OSError as exc:
    error = exc.strerror
sandbox_result({"written": written, "error": error})
"""
    res = run_python(program, limits=SandboxLimits(disk_mb=32, file_size_mb=200, timeout=60))
    assert res.ok, res.stderr
    assert res.result["error"] == "No space left on device"
    assert res.result["written"] <= 33 * (1 << 20)


@needs_bwrap
def test_row1_gui_desktops_impress_sees_only_its_folders(tmp_path):
    """The jail Impress runs in for the GUI agent: its file dialogs could browse only what this shows."""
    from pptarena.plugins.agents.gui.impress_jail import jailed_impress

    secret_dir = tmp_path / "run" / "tasks"
    secret_dir.mkdir(parents=True)
    (secret_dir / "target.pptx").write_bytes(b"answer key")
    work, deck_dir = tmp_path / "env", tmp_path / "deck"
    work.mkdir()
    deck_dir.mkdir()
    probe = f"ls {secret_dir} 2>&1; ls {Path.home()} 2>&1; touch {deck_dir}/saved.pptx && echo saved"
    command, level = jailed_impress(["sh", "-c", probe], work, deck_dir, display="")
    out = subprocess.run(command, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert level == "bwrap"
    assert "target.pptx" not in out.stdout and "No such file or directory" in out.stdout
    assert "saved" in out.stdout and (deck_dir / "saved.pptx").exists()
