"""A long-lived agent worker (``python -m pptarena.plugins.executors.local.pool_worker BOOT_JSON``).

Started by :class:`pptarena.plugins.executors.local.pool.WorkerPool` in a session of
its own, it loads the plugins once, then runs one pair at a time: it reads a
request (one JSON line) on its private copy of stdin and answers with the
outcome (one JSON line) on its private copy of stdout. While a pair runs,
file descriptors 1 and 2 point at the pair's ``agent.stderr.txt``, so whatever
the agent prints stays with its task folder and cannot corrupt the protocol.

After each pair every other process left in the worker's process group (what
the agent started and did not wait for) is killed, so a pair never leaks into
the next. If the parent goes away (driver killed, Ray worker lost), a watchdog
kills the whole group, the worker included.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


def _watch_parent(parent: int, interval: float = 0.25) -> None:
    """Kill this process group as soon as the parent process is gone."""
    while True:
        time.sleep(interval)
        if os.getppid() != parent:
            os.killpg(os.getpgrp(), signal.SIGKILL)


def reap_strays() -> int:
    """SIGKILL every other process of this process group and reap finished children; how many were killed."""
    me, group, killed = os.getpid(), os.getpgrp(), 0
    try:
        entries = os.listdir("/proc")
    except OSError:  # not Linux: nothing to scan
        entries = []
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == group and fields[0] != "Z":
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
        except (OSError, ValueError, IndexError):
            continue
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    return killed


@contextlib.contextmanager
def _output_to(path: str | None) -> Iterator[None]:
    """Point fds 1 and 2 at ``path`` (appending) for the duration of one pair."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


def _send(out: BinaryIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message, default=str).encode() + b"\n")
    out.flush()


def serve(boot: dict[str, Any], requests: BinaryIO, replies: BinaryIO) -> int:
    """Answer requests until ``{"op": "exit"}`` or end of input."""
    from pptarena.run import AgentOutcome, execute, parse_config, worker_registry
    from pptarena.types import Status

    registry = worker_registry(boot)
    configs: dict[str, Any] = {}
    _send(replies, {"ready": True, "pid": os.getpid()})
    for line in requests:
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        t0 = time.monotonic()
        with _output_to(request.get("stderr_path")):
            key = hashlib.sha256(
                json.dumps([request["config"], request["config_path"]], sort_keys=True, default=str).encode()
            ).hexdigest()
            try:
                if key not in configs:
                    configs = {key: parse_config(request["config"], registry, Path(request["config_path"]))}
                outcome = execute(request, registry=registry, config=configs[key])
            except Exception as exc:  # noqa: BLE001 - a config that no longer parses is the harness's problem
                outcome = AgentOutcome.failed(
                    Status.INFRA_ERROR,
                    f"worker could not read the run config: {type(exc).__name__}: {exc}",
                    traceback.format_exc(limit=20),
                )
        reply = outcome.to_json()
        reply["strays_killed"] = reap_strays()
        reply["worker_s"] = round(time.monotonic() - t0, 4)
        _send(replies, reply)
    return 0


def main(argv: list[str]) -> int:
    """Entry point: keep private copies of the protocol pipes, silence fds 0/1, watch the parent, serve."""
    from pptarena.trust.procs import take_protocol_pipes

    boot = json.loads(argv[1]) if len(argv) > 1 else {}
    requests, replies = take_protocol_pipes()
    threading.Thread(
        target=_watch_parent, args=(int(boot.get("parent") or os.getppid()),), daemon=True
    ).start()
    return serve(boot, requests, replies)


if __name__ == "__main__":  # pragma: no cover - started by the pool
    sys.exit(main(sys.argv))
