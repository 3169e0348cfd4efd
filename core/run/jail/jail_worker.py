"""An agent worker inside its jail (``python -m pptarena.run.jail.jail_worker``; see :mod:`.agent_jail`).

Started by :class:`pptarena.run.jail.jail_pool.JailPool` under bubblewrap, it serves one pair at a time
over its stdin/stdout (one JSON object per line):

- the harness sends ``{"op": "pair", "agent", "task", "deck", "deck_name", "timeout", "renderer"}``:
  the agent class (module, name, options as JSON), the task as an
  :class:`~pptarena.types.AgentTask` and the input deck's bytes;
- the worker builds the agent, runs it in a fresh workspace (:data:`~.agent_jail.JAIL_WORKSPACE`)
  whose model, renderer and log go through the bridge (:mod:`pptarena.run.jail.bridge`), then answers
  ``{"op": "done", "outcome", "archive"}``: the agent's outcome and its workspace as a gzip'd tar
  (regular files and folders only) that the harness copies out.

Whatever the agent prints goes to the worker's stderr, a file the harness holds and moves into the
pair's ``agent.stderr.txt``. After each pair every other process of the jail (what the agent started
and left running) is killed.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import io
import json
import os
import shutil
import signal
import sys
import tarfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ARCHIVE_LIMIT = 512 * 1024 * 1024
"""Largest workspace (bytes of regular files) handed back; larger files are left out."""


def _kill_others() -> int:
    """SIGKILL every process of this PID namespace but bwrap (pid 1) and this worker."""
    me, killed = os.getpid(), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, me):
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    return killed


@contextlib.contextmanager
def _output_to_stderr() -> Iterator[None]:
    """Point fd 1 at fd 2 (a file the harness holds and copies out per pair) for one pair."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _factory(spec: dict[str, Any]) -> Any:
    obj: Any = importlib.import_module(spec["module"])
    for name in str(spec["qualname"]).split("."):
        obj = getattr(obj, name)
    return obj


def _archive(root: Path) -> str:
    """The workspace as a base64 gzip'd tar of its regular files and folders (links and the like dropped)."""
    from pptarena.run.folder.rundir import INPUT

    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            if path.relative_to(root).parts[0] == INPUT:  # the harness has the input deck already
                continue
            if path.is_file():
                total += path.stat().st_size
                if total > ARCHIVE_LIMIT:
                    continue
            tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def run_pair(request: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Run the pair ``request`` describes; the ``done`` message."""
    from pptarena.run.folder.records import AgentOutcome
    from pptarena.run.folder.rundir import INPUT, prediction_name
    from pptarena.run.jail.agent_jail import JAIL_HOME, JAIL_WORKSPACE
    from pptarena.run.jail.bridge import BridgedLog, BridgedModelClient, BridgedRenderer
    from pptarena.run.worker import classify_exception, run_agent
    from pptarena.types import AgentTask, ComponentContext, Status, Workspace

    ws_dir = JAIL_WORKSPACE
    shutil.rmtree(ws_dir, ignore_errors=True)
    (ws_dir / INPUT).mkdir(parents=True)
    name = Path(str(request.get("deck_name") or "input.pptx")).name or "input.pptx"
    input_deck = ws_dir / INPUT / name
    input_deck.write_bytes(base64.b64decode(request["deck"]))
    output_deck = ws_dir / prediction_name(Path(name).suffix)
    setting_up = True
    outcome: AgentOutcome
    with _output_to_stderr():
        try:
            spec = request["agent"]
            factory = _factory(spec)
            options_model = getattr(factory, "Options", None)
            options = options_model.model_validate(spec.get("options") or {}) if options_model else None
            renderer = BridgedRenderer(channel) if request.get("renderer") else None

            def model(ref: str) -> BridgedModelClient:
                return BridgedModelClient(channel, ref)

            cache = JAIL_HOME / "cache"
            cache.mkdir(exist_ok=True)
            context = ComponentContext(
                cache_dir=cache,
                model=model,
                renderer=renderer,
                name=spec.get("name", ""),
                label=spec.get("label", ""),
            )
            setting_up = False
            agent = factory(options, context)
            task = AgentTask.from_json({**request["task"], "original": str(input_deck)})
            workspace = Workspace(
                dir=ws_dir,
                input_deck=input_deck,
                output_deck=output_deck,
                renderer=renderer,
                model=model,
                log=BridgedLog(channel),
                timeout=request.get("timeout"),
            )
            pred = run_agent(agent, task, workspace)
            handed_back = pred.path is not None and ws_dir in Path(pred.path).parents
            if (
                pred.path is not None
                and Path(pred.path).is_file()
                and (not handed_back or (ws_dir / "input") in Path(pred.path).parents)
            ):
                shutil.copyfile(pred.path, output_deck)  # only the workspace (not input/) is handed back
                pred.path = output_deck
            outcome = AgentOutcome(prediction=pred)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported to the harness
            status = Status.INFRA_ERROR if setting_up else classify_exception(exc)
            outcome = AgentOutcome.failed(
                status, f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=20)
            )
    strays = _kill_others()
    reply = outcome.to_json()
    return {"op": "done", "outcome": reply, "strays_killed": strays, "archive": _archive(ws_dir)}


def main() -> int:
    """Keep private copies of the protocol pipes, silence fds 0/1, serve pairs until told to exit."""
    from pptarena.run.jail.bridge import Channel
    from pptarena.trust.procs import take_protocol_pipes

    requests, replies = take_protocol_pipes()
    channel = Channel(requests, replies)
    import pptarena.run.folder.records  # noqa: F401 - loaded before the first pair, so pairs start warm
    import pptarena.run.worker  # noqa: F401

    channel.send({"ready": True})
    for line in requests:
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        if request.get("op") == "pair":
            channel.send(run_pair(request, channel))
    return 0


if __name__ == "__main__":  # pragma: no cover - started by the jail pool
    sys.exit(main())
