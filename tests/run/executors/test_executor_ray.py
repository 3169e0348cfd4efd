"""The ``ray`` executor on a real multi-node Ray cluster on 127.0.0.1 (three raylets, one CPU each).

Demo set results equal the local executor's; a worker node killed mid-run gives retries (or
infra_error), never a lost or duplicated result; SIGKILL of the driver leaves nothing running
and re-running resumes; GUI-marked agents run only on a node advertising ``desktop``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.config import fake_run_toml, run_toml, use, write_run_config
from tests.support.paths import PLUGIN_MODULES, ROOT

# every Ray process of these tests talks over 127.0.0.1 only (Ray would advertise the host's address)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

ray = pytest.importorskip("ray", reason="the ray executor tests need `pip install 'pptarena[ray]'`")
from pptarena.run.configuration.config import load_config  # noqa: E402
from pptarena.run.configuration.registry import get_registry  # noqa: E402
from pptarena.run.runner import Runner  # noqa: E402

pytestmark = pytest.mark.slow

STORE = 80 * 1024 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head and two worker nodes on 127.0.0.1; the second worker advertises one ``desktop``."""
    from ray.cluster_utils import Cluster

    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PPTARENA_CACHE")}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(PLUGIN_MODULES), str(ROOT), os.environ.get("PYTHONPATH", "")]
    )
    os.environ["PPTARENA_CACHE"] = str(tmp_path_factory.mktemp("ray-cache"))
    local = {"num_cpus": 1, "object_store_memory": STORE, "node_ip_address": "127.0.0.1"}
    c = Cluster(initialize_head=True, head_node_args={**local, "include_dashboard": False})
    c.add_node(**local)
    desktop = c.add_node(**local, resources={"desktop": 1})
    c.wait_for_nodes()
    c.desktop_node_id = desktop.node_id  # type: ignore[attr-defined]
    try:
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def rows_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]


def executor_table(cluster, **agents: dict) -> dict:
    """The ray executor on ``cluster``; ``agents``: per-agent options by label (``resources``)."""
    return use("ray", address=cluster.address, max_retries=2, **({"agents": agents} if agents else {}))


def run_config(tmp_path: Path, text: str, out: str, **kw) -> dict:
    cfg = write_run_config(tmp_path / f"{out}.toml", text)
    return Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / out, quiet=True, **kw).run()


def files_of(task_dir: Path) -> set[str]:
    return {p.relative_to(task_dir).as_posix() for p in task_dir.rglob("*") if p.is_file()} - {
        "executor.json"
    }


FIX_TYPOS = """```python
from pptx import Presentation
prs = Presentation(INPUT_PATH)
for slide in prs.slides:
    for shape in slide.shapes:
        if shape.has_text_frame:
            for paragraph in shape.text_frame.paragraphs:
                for run in paragraph.runs:
                    run.text = run.text.replace("Quartely", "Quarterly").replace("performence", "performance")
prs.save(OUTPUT_PATH)
```"""
DEMO = {  # three demo tasks, two baselines and a scripted code agent, real renders and judges
    "run": {"jobs": 2, "tasks": ["qbr-*"], "limit": 3},
    "dataset": "demo",
    "agents": [
        "noop",
        "oracle",
        use("code", label="scripted-code", model="scripted/fixer", render_check=False, max_images=0),
    ],
    "backends": {"scripted": {"rules": [{"match": ".", "reply": FIX_TYPOS}]}},
    "renderer": "libreoffice",
    "judges": ["rubric", "structural"],
}


def test_demo_set_on_three_nodes_equals_the_local_executor(tmp_path, cluster):
    run_config(tmp_path, run_toml(**DEMO), "local")
    run_config(tmp_path, run_toml(**DEMO, executor=executor_table(cluster)), "ray")
    local = {(r["agent"], r["task_id"]): r for r in rows_of(tmp_path / "local")}
    remote = {(r["agent"], r["task_id"]): r for r in rows_of(tmp_path / "ray")}
    assert len(rows_of(tmp_path / "ray")) == len(remote) == len(local) == 9
    assert set(remote) == set(local)
    for key, row in local.items():
        assert remote[key]["status"] == row["status"], key
        assert remote[key]["scores"] == row["scores"], key
        assert remote[key]["prediction"] == row["prediction"], key
    # the scripted model agent really edited and scored on the cluster, the baselines behave as baselines
    assert remote[("scripted-code", "qbr-fix-typos")]["scores"]["structural"]["score"] == 1.0
    assert all(remote[("oracle", t)]["scores"]["rubric"]["score"] == 1.0 for _, t in remote if _ == "oracle")
    nodes = set()
    for agent, task in local:
        rel = Path(local[(agent, task)]["prediction"]).parent
        assert files_of(tmp_path / "ray" / rel) == files_of(tmp_path / "local" / rel), rel
        nodes.add(json.loads((tmp_path / "ray" / rel / "executor.json").read_text())["node"])
    assert len(nodes) >= 2, "the pairs did not spread over the cluster's nodes"


def test_gui_marked_agents_only_run_on_a_desktop_node(tmp_path, cluster, fake_plugins):
    text = fake_run_toml(
        3,
        ["desktop", use("retitle", label="pinned"), "retitle"],
        executor=executor_table(cluster, pinned={"resources": {"desktop": 1}}),
    )
    run_config(tmp_path, text, "out")
    rows = rows_of(tmp_path / "out")
    assert len(rows) == 9 and all(r["status"] == "scored" for r in rows)
    for agent in ("desktop", "pinned"):
        for task_dir in (tmp_path / "out" / "tasks" / agent).iterdir():
            assert json.loads((task_dir / "executor.json").read_text())["node"] == cluster.desktop_node_id


def test_unknown_agent_label_in_executor_options_fails_before_work(tmp_path, cluster, fake_plugins):
    from pptarena.run.configuration.config import ConfigError

    cfg = write_run_config(
        tmp_path / "bad.toml",
        fake_run_toml(1, ["noop"], executor=executor_table(cluster, gui={"resources": {"desktop": 1}})),
    )
    with pytest.raises(ConfigError, match=r"executor\.agents\.gui: no agent is labelled 'gui'"):
        load_config(cfg, get_registry())


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                out.append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _is_agent_worker(pid: int) -> bool:
    cmd = _cmdline(pid)
    return "pool_worker" in cmd or "jail_worker" in cmd  # agents run jailed by default (issue 23)


def _agent_workers(root_pids: list[int]) -> list[int]:
    """Agent workers (pooled or jailed: the processes running agents) below the given processes."""
    return [p for r in root_pids for p in _descendants(r) if _is_agent_worker(p)]


def _raylet_pid(node) -> int:
    return node.all_processes["raylet"][0].process.pid


def _wait(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_worker_node_killed_mid_run_gives_retries_never_lost_or_duplicated_results(
    tmp_path, cluster, fake_plugins
):
    victim = cluster.add_node(num_cpus=1, object_store_memory=STORE, node_ip_address="127.0.0.1")
    cluster.wait_for_nodes()
    text = fake_run_toml(6, [use("retitle", sleep=1.5)], executor=executor_table(cluster))
    cfg = write_run_config(tmp_path / "run.toml", text)
    errors: list[BaseException] = []

    def go() -> None:
        try:
            Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True).run()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=go)
    thread.start()
    raylet = _raylet_pid(victim)
    assert _wait(lambda: bool(_agent_workers([raylet])), 90), "no pair ever ran on the node to be killed"
    doomed = _agent_workers([raylet])
    cluster.remove_node(victim, allow_graceful=False)  # SIGKILL of the node's raylet, workers and agents
    thread.join(240)
    assert not thread.is_alive() and not errors, errors
    assert _wait(lambda: not any(Path(f"/proc/{p}").exists() and _is_agent_worker(p) for p in doomed), 10)
    rows = rows_of(tmp_path / "out")
    keys = [(r["agent"], r["task_id"]) for r in rows]
    assert len(keys) == len(set(keys)) == 6, keys  # none lost, none twice
    assert {r["status"] for r in rows} <= {"scored", "infra_error"}
    # resume (retrying infrastructure failures) completes the run with every pair scored once more at most
    Runner(
        load_config(cfg, get_registry()), get_registry(), tmp_path / "out", quiet=True, retry_errors=True
    ).run()
    final = {(r["agent"], r["task_id"]): r for r in rows_of(tmp_path / "out")}
    assert len(final) == 6 and all(r["status"] == "scored" for r in final.values())


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_killing_the_driver_leaves_nothing_running_and_rerunning_resumes(
    tmp_path, cluster, fake_plugins, sig
):
    text = fake_run_toml(6, [use("retitle", sleep=1.5)], executor=executor_table(cluster))
    cfg = write_run_config(tmp_path / "run.toml", text)
    out = tmp_path / "out"
    env = {**os.environ, "PPTARENA_PLUGINS": "fakeplugins"}
    cmd = [
        sys.executable,
        "-m",
        "pptarena.cli",
        "run",
        "--config",
        str(cfg),
        "--out",
        str(out),
        "--no-report",
    ]
    raylets = [_raylet_pid(n) for n in [cluster.head_node, *cluster.worker_nodes]]
    # Ray reaps the idle workers of earlier tests' runs (and their agent workers) shortly after they end
    assert _wait(lambda: not _agent_workers(raylets), 30), [_cmdline(p) for p in _agent_workers(raylets)]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert _wait(
            lambda: (
                (out / "results.jsonl").exists() and len(rows_of(out)) >= 1 and bool(_agent_workers(raylets))
            ),
            120,
        )
    finally:
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    if sig == signal.SIGINT:  # Ctrl-C: a clean stop that says how to resume
        assert proc.returncode != 0 and "Interrupted" in stderr and "Resume with" in stderr, stderr[-2000:]
    first = rows_of(out)
    assert 1 <= len(first) < 6
    # nothing of the run keeps running on the cluster: no agent worker, no task of ours
    assert _wait(lambda: not _agent_workers(raylets), 30), [_cmdline(p) for p in _agent_workers(raylets)]
    assert _wait(
        lambda: not [p for r in raylets for p in _descendants(r) if "ray::pptarena" in _cmdline(p)], 30
    )
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = rows_of(out)
    keys = [(r["agent"], r["task_id"]) for r in rows]
    assert len(keys) == len(set(keys)) == 6  # the resumed run added exactly the missing pairs
    assert rows[: len(first)] == first and all(r["status"] == "scored" for r in rows)


def test_an_agent_needing_a_resource_no_node_has_fails_before_submitting(tmp_path, cluster, fake_plugins):
    from pptarena.run.executors import ExecutorError

    text = fake_run_toml(
        1, ["retitle"], executor=executor_table(cluster, retitle={"resources": {"gpu_desktop": 1}})
    )
    with pytest.raises(ExecutorError, match=r"agent 'retitle' needs 1 'gpu_desktop' per pair.*advertises 0"):
        run_config(tmp_path, text, "out")
    assert not ray.is_initialized()  # the executor disconnected from the cluster


def test_default_local_cluster_with_shared_dir_runs_gui_marked_agents(tmp_path, fake_plugins):
    """No address: the executor starts (and stops) a private cluster that advertises what the agents need."""
    shared = tmp_path / "shared"
    text = fake_run_toml(
        2,
        ["desktop", "slowcopy"],
        executor=use("ray", local_cpus=1, object_store_memory=STORE, shared_dir=str(shared)),
    )
    run_config(tmp_path, text, "out")
    rows = rows_of(tmp_path / "out")
    assert len(rows) == 4 and all(r["status"] == "scored" for r in rows)
    assert (tmp_path / "out" / "tasks" / "desktop" / "task-00" / "prediction.pptx").is_file()
    # task folders were moved from the shared folder into the run folder, nothing left behind but
    # empty scratch
    assert not [p for p in shared.rglob("*") if p.is_file()]
    assert not ray.is_initialized()
