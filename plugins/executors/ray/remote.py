"""What runs on a Ray node for one (agent, task) pair.

:func:`run_pair` is the body of the Ray task. It rebuilds the run from the
driver's config (kept per Ray worker process, so plugins load and the
renderer starts once per process), stages the task's decks it received
through the object store, runs the agent on a one-worker pool of its own (so
``task_timeout`` still kills everything the agent started) and the judges in
this process, and hands back the result row plus the whole task folder as a
tar archive. With ``shared_dir`` the task folder stays on the shared file
system instead and only its path travels back.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from pptarena.run import pack_task_folder
from pptarena.types import Task

_STATE: dict[str, Any] = {}


class NodeRun:
    """The run as one Ray worker process sees it (built once per config)."""

    def __init__(self, boot: dict[str, Any]):
        from pptarena.run import Attempts, Components, parse_config, worker_registry

        from ..local.pool import PoolLauncher, WorkerPool, boot_of

        for name, value in (boot.get("env") or {}).items():
            os.environ[name] = value  # variables the config references as { env = ... }
        self.limiter_service = None
        from pptarena.models.limiter_service import set_remote

        set_remote(None)  # never an earlier run's actor
        if boot.get("limiter_actor"):
            # every model call on this node (and in the agent workers it starts) draws from the
            # run's one limiter actor
            from pptarena.models.limiter_service import LimiterService

            from .limiter import use_actor

            use_actor(boot["limiter_actor"])
            self.limiter_service = LimiterService().start()
        self.registry = worker_registry(boot)
        self.config = parse_config(boot["config"], self.registry, Path(boot["config_path"]))
        root = Path(boot["shared_dir"]) if boot.get("shared_dir") else Path(tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix=f"pptarena-{boot['run_id']}-", dir=root))
        self.components = Components(self.config, self.registry)
        # no ledger: the driver owns crash accounting; the node's scratch folder stays empty
        bare = Attempts(
            self.config, self.registry, self.components, self.work / "run", strict=bool(boot.get("strict"))
        )
        self.pool = WorkerPool(1, int(boot.get("recycle_after") or 100), boot_of(bare))
        self.attempts = bare.using(PoolLauncher(self.pool, self.config, bare.stopping))

    def close(self) -> None:
        """Retire the agent workers (pooled and jailed), close the renderer and remove the scratch folder."""
        self.pool.close()
        self.attempts.close()  # jailed agents run on the attempts' own warm jail pool, not self.pool
        self.components.close()
        if self.limiter_service is not None:
            from pptarena.models.limiter_service import set_remote

            self.limiter_service.stop()
            set_remote(None)
        shutil.rmtree(self.work, ignore_errors=True)


def _node_run(boot: dict[str, Any]) -> NodeRun:
    key = hashlib.sha256(json.dumps(boot, sort_keys=True, default=str).encode()).hexdigest()
    if key not in _STATE:
        for old in list(_STATE.values()):
            old.close()
        _STATE.clear()
        _STATE[key] = NodeRun(boot)
        atexit.register(_STATE[key].close)
    return _STATE[key]


def _node_id() -> str | None:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - only informative
        return None


def run_pair(
    boot: dict[str, Any], agent_index: int, task_json: dict[str, Any], decks: dict[str, Any], epoch: int = 1
) -> dict[str, Any]:
    """Run attempt ``epoch`` of one pair here; ``{"row", "relpath", "archive" | "shared_path", "node"}``
    (row None when stopped).

    ``decks`` maps ``original`` / ``target`` to object refs of the decks' bytes.
    """
    from pptarena.run import EXECUTOR_RECORD, RunDir

    t0 = time.monotonic()
    node = _node_run(boot)
    agent = node.config.agents[agent_index]
    staging = Path(tempfile.mkdtemp(prefix="inputs-", dir=node.work))
    try:
        paths = {}
        if decks:
            import ray

            decks = dict(zip(decks, ray.get(list(decks.values())), strict=True))  # object refs -> bytes
        for role, data in decks.items():
            name = Path(task_json[role]).name or f"{role}.pptx"
            (staging / role).mkdir()
            paths[role] = str(staging / role / name)
            Path(paths[role]).write_bytes(data)
        task = Task.from_json({**task_json, **paths})
        task_dir = RunDir(node.attempts.run_dir).attempt(agent.label, task.id, epoch)
        relpath = task_dir.relative_to(node.attempts.run_dir).as_posix()
        row = node.attempts.run(agent, task, epoch)
        where = {
            "node": _node_id(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "seconds": round(time.monotonic() - t0, 3),
        }
        if task_dir.is_dir():
            (task_dir / EXECUTOR_RECORD).write_text(json.dumps({"executor": "ray", **where}, indent=2) + "\n")
        line = None if row is None else row.to_line()  # JSON on the wire, validated where it lands
        out: dict[str, Any] = {"row": line, "relpath": relpath, **where}
        if boot.get("shared_dir"):
            out["shared_path"] = str(task_dir)
        else:
            out["archive"] = pack_task_folder(task_dir) if task_dir.is_dir() else None
            shutil.rmtree(task_dir, ignore_errors=True)
        return out
    finally:
        shutil.rmtree(staging, ignore_errors=True)
