"""The documented `ray start` route (docs/distributed.md), as a user runs it, with Ray's token authentication.

Two `ray start --block` processes (a head and a worker) on one loopback address, both in token
mode with the token `ray get-auth-token --generate` wrote; `arena run` joins them through the ray
executor's `address` with nothing but the token file (no RAY_AUTH_MODE: the executor turns token
mode on when it finds a token), and the worker node is stopped mid-run. A wrong token and an
address where nothing listens each end in one line naming the fix, with no run folder left behind.

The cluster lives on 127.0.0.2, not 127.0.0.1: Ray rewrites 127.0.0.1 and "localhost" to the
machine's network address, and `ray start --address` refuses to start a worker at all when told
not to (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0). Every other 127.x address is loopback too.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.paths import PLUGIN_MODULES

pytest.importorskip("ray", reason="the ray executor tests need `pip install 'pptarena[ray]'`")

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
HOST = "127.0.0.2"
TAG = "PPTARENA_RAY_START_TEST"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _tagged(tag: str) -> list[int]:
    """Processes whose environment carries this test's tag (Ray's workers inherit it from the raylet)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                env = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if f"{TAG}={tag}".encode() in env.split(b"\0"):
                found.append(int(entry))
    return found


def stop_node(proc: subprocess.Popen) -> None:
    """Stop a `ray start --block` process as Ctrl-C would (SIGTERM to its group), then make sure."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Head and worker started with `ray start`, token mode, one CPU each, on 127.0.0.2."""
    try:
        socket.socket().bind((HOST, 0))
    except OSError as exc:
        pytest.skip(f"{HOST} is not a loopback address here: {exc}")
    base = tmp_path_factory.mktemp("raystart")
    home = base / "home"
    home.mkdir()
    tag = uuid.uuid4().hex
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(PLUGIN_MODULES), os.environ.get("PYTHONPATH", "")]),
        "PPTARENA_PLUGINS": "fakeplugins",
        "PPTARENA_CACHE": str(base / "cache"),
        TAG: tag,
    }
    env.pop("RAY_ADDRESS", None)
    env.pop(
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None
    )  # set by other Ray tests; ray start --address refuses it
    env.pop("RAY_AUTH_MODE", None)
    node_env = {**env, "RAY_AUTH_MODE": "token"}
    made = subprocess.run(
        [str(BIN / "ray"), "get-auth-token", "--generate"], env=node_env, capture_output=True, text=True
    )
    assert made.returncode == 0 and (home / ".ray" / "auth_token").is_file(), made.stderr
    port = free_port()
    short = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # Ray's socket paths must stay < 108 bytes
    common = ["--num-cpus=1", f"--temp-dir={short}", "--disable-usage-stats", "--block"]

    def start(name: str, *args: str) -> subprocess.Popen:
        ports = [
            f"--dashboard-agent-listen-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
        ]
        log = open(base / f"{name}.log", "w")  # noqa: SIM115 - kept open for the process's lifetime
        return subprocess.Popen(
            [str(BIN / "ray"), "start", *args, f"--node-ip-address={HOST}", *ports, *common],
            env=node_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_started(name: str, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = (base / f"{name}.log").read_text()
            if "Ray runtime started" in text:
                return
            assert proc.poll() is None, text[-3000:]
            time.sleep(0.3)
        raise AssertionError((base / f"{name}.log").read_text()[-3000:])

    head = start("head", "--head", f"--port={port}", "--include-dashboard=false")
    nodes = {"head": head}
    try:
        wait_started("head", head)
        nodes["worker"] = start("worker", f"--address={HOST}:{port}")
        wait_started("worker", nodes["worker"])
        yield {"address": f"{HOST}:{port}", "env": env, "nodes": nodes, "base": base}
    finally:
        for proc in reversed(nodes.values()):
            stop_node(proc)
        deadline = time.monotonic() + 20
        while _tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in _tagged(tag):  # what the nodes left running (Ray workers, agents)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(short, ignore_errors=True)
        for line in (base / "head.log").read_text().splitlines():
            assert "InvalidAuthToken" not in line or "driver" in line  # the nodes themselves agreed


def config(path: Path, address: str, count: int) -> Path:
    ray = use("ray", address=address, max_retries=3, connect_timeout=3)
    return write_run_config(path, fake_run_toml(count, [use("retitle", sleep=2.0)], executor=ray))


def nodes_of(out: Path) -> set[str]:
    """The Ray node ids that ran the pairs handed back so far (their executor.json)."""
    found = set()
    for path in (out / "tasks").rglob("executor.json") if (out / "tasks").is_dir() else ():
        try:
            found.add(json.loads(path.read_text())["node"])
        except (OSError, ValueError, KeyError):
            pass  # being unpacked right now
    return found


def arena(args: list[str], env: dict, cwd: Path, timeout: float = 120) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "arena"), *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_a_run_through_two_ray_start_nodes_survives_losing_one(cluster, tmp_path):
    env = {k: v for k, v in cluster["env"].items() if k != "RAY_AUTH_MODE"}  # the token file is enough
    cfg = config(tmp_path / "cluster.toml", cluster["address"], count=10)
    out = tmp_path / "run"
    driver = arena(["run", "--config", str(cfg), "--out", str(out), "--quiet", "--no-report"], env, tmp_path)
    try:
        deadline = time.monotonic() + 90
        results = out / "results.jsonl"
        while time.monotonic() < deadline and driver.poll() is None:
            if len(nodes_of(out)) == 2:  # a pair came back from each node: stop one now
                break
            time.sleep(0.2)
        assert driver.poll() is None, driver.communicate()
        stop_node(cluster["nodes"]["worker"])  # `ray stop` on that machine, as it were
        stdout, stderr = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == 0, stderr[-3000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    keys = [(r["agent"], r["task_id"]) for r in rows]
    assert len(rows) == 10 and len(set(keys)) == 10  # one line per pair, none lost, none twice
    assert all(r["status"] in ("scored", "infra_error") for r in rows), [r["status"] for r in rows]
    assert sum(r["status"] == "scored" for r in rows) >= 8, [(r["status"], r.get("error")) for r in rows]
    assert len(nodes_of(out)) == 2, "the pairs did not run on both nodes before one was stopped"
    assert "InvalidAuthToken" not in stderr, stderr[-4000:]


def test_a_wrong_token_is_one_line_and_leaves_no_run_folder(cluster, tmp_path):
    env = {**cluster["env"], "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64}
    cfg = config(tmp_path / "wrong.toml", cluster["address"], count=1)
    driver = arena(["run", "--config", str(cfg), "--out", str(tmp_path / "run")], env, tmp_path)
    _, stderr = driver.communicate(timeout=90)
    assert driver.returncode == 1
    errors = [line for line in stderr.splitlines() if line.strip()]  # no "Starting run in" either
    assert len(errors) == 1, stderr
    assert "refused this driver" in errors[0] and "ray get-auth-token" in errors[0]
    assert not (tmp_path / "run").exists()


def test_an_unreachable_cluster_is_one_line_and_leaves_no_run_folder(tmp_path):
    cfg = config(tmp_path / "gone.toml", f"{HOST}:{free_port()}", count=1)
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_MODULES), "PPTARENA_PLUGINS": "fakeplugins"}
    driver = arena(["run", "--config", str(cfg), "--out", str(tmp_path / "run")], env, tmp_path)
    _, stderr = driver.communicate(timeout=60)
    assert driver.returncode == 1
    errors = [line for line in stderr.splitlines() if line.strip()]  # no "Starting run in" either
    assert len(errors) == 1 and "cannot reach the Ray cluster" in errors[0]
    assert "ray start --head" in errors[0]
    assert not (tmp_path / "run").exists()
