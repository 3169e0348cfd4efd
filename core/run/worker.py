"""The worker process that runs one agent on one task (``python -m pptarena.run.worker SPEC``).

The runner starts one worker per (agent, task) pair in a new session, so a
timeout can kill the worker and everything it started (a hung soffice, a
model-written script) as one process group. The worker writes its outcome to
``spec["result_path"]`` as JSON; a missing file means it crashed.

:func:`execute` is the same work without the file hand-over, for long-lived
workers (the ``local`` executor's pool) that keep the registry and the parsed
config between pairs.

In batch mode the host serves its batch queue to workers (:mod:`pptarena.run.batch_service`): a
batched agent's calls go there, and the host knows them by this process's id.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from pptarena.models import UsageBook
from pptarena.run.folder.records import AgentOutcome
from pptarena.run.jail.bridge import agent_renders
from pptarena.types import (
    AgentLog,
    AgentTask,
    ComponentUnavailable,
    InfraError,
    Prediction,
    Status,
    Workspace,
)


def classify_exception(exc: BaseException) -> Status:
    """``infra_error`` for tool and model failures, ``agent_error`` for everything else."""
    return Status.INFRA_ERROR if isinstance(exc, InfraError | ComponentUnavailable) else Status.AGENT_ERROR


def run_agent(agent: Any, task: Any, workspace: Workspace) -> Prediction:
    """Call ``agent.edit`` and normalise what it returns (``task``: an :class:`~pptarena.types.AgentTask`,
    or the full task for the reference baseline)."""
    result = agent.edit(task, workspace)
    if result is None:
        result = Prediction(path=workspace.output_deck if workspace.output_deck.exists() else None)
    if not isinstance(result, Prediction):
        raise TypeError(f"agent returned {type(result).__name__}, expected pptarena.Prediction")
    return result


def main(spec_path: str) -> int:
    """Entry point of the worker process."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    from pptarena.trust.procs import die_with_parent

    die_with_parent(spec.get("runner_pid"))  # a killed run takes its workers (and their sandboxes) with it
    result_path = Path(spec["result_path"])
    outcome = execute(spec)
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(outcome.to_json(), default=str), encoding="utf-8")
    tmp.replace(result_path)
    return 0


def workspace_spec(ws: Workspace) -> dict[str, str]:
    """The JSON form of a workspace handed to a worker process."""
    return {
        "dir": str(ws.dir),
        "input_deck": str(ws.input_deck),
        "output_deck": str(ws.output_deck),
        "log": str(ws.log.path),
    }


def timed_out_outcome(timeout: float) -> AgentOutcome:
    """The outcome of an agent whose worker overran ``task_timeout`` and was stopped."""
    return AgentOutcome.failed(Status.TIMEOUT, f"agent exceeded task_timeout={timeout:g}s and was stopped")


def vanished_outcome(returncode: int | None, stderr_path: Path) -> AgentOutcome:
    """The outcome of a worker that ended without handing back a result (the agent's fault).

    The tail of its stderr file is read without following a link the agent may have put in its
    place (:func:`pptarena.trust.safeio.read_tail`)."""
    from pptarena.trust.safeio import read_tail

    tail = read_tail(stderr_path, 8000).decode("utf-8", errors="replace")[-2000:]
    return AgentOutcome.failed(
        Status.AGENT_ERROR, f"agent worker exited with code {returncode} without a result: {tail}"
    )


def reported_outcome(reply: str | dict[str, Any]) -> AgentOutcome:
    """The outcome a worker handed back (its result file's text, or a decoded reply), validated.

    The worker writes its outcome after the agent returns, so only agent code running in it can
    forge one: a malformed outcome is the agent's error.
    """
    try:
        return AgentOutcome.from_json(json.loads(reply) if isinstance(reply, str) else reply)
    except ValueError as exc:  # a JSONDecodeError is a ValueError too
        return AgentOutcome.failed(
            Status.AGENT_ERROR, f"the agent's worker handed back a malformed outcome: {exc}"
        )


def worker_registry(spec: dict[str, Any]) -> Any:
    """The driver's plugin registry, rebuilt in a worker: installed plugins (``strict`` as the driver
    had it) plus the plugins the driver registered by hand (``manual_plugins``: name -> module)."""
    from pptarena.run.configuration.registry import load_registry

    registry = load_registry(strict=bool(spec.get("strict")))
    for name, module_name in (spec.get("manual_plugins") or {}).items():
        if name not in registry.plugins:
            registry.register_plugin(importlib.import_module(module_name), name, strict=True)
    return registry


def execute(spec: dict[str, Any], registry: Any = None, config: Any = None) -> AgentOutcome:
    """Run the agent a worker spec names and say what came of it.

    :param registry: an already loaded registry (default: load one, plus ``spec["manual_plugins"]``).
    :param config: the already parsed run config (default: ``load_config(spec["config_path"])``).
    """
    outcome: AgentOutcome
    components = None
    renders = None
    book = UsageBook()
    setting_up = True  # a failure before the agent is built is the harness's, never the agent's
    try:
        from pptarena.run.configuration.components import Components
        from pptarena.run.configuration.config import load_config

        if registry is None:
            registry = worker_registry(spec)
        if config is None:
            config = load_config(spec["config_path"], registry)
        components = Components(config, registry)
        agent_cfg = config.agents[spec["agent_index"]]
        ws = spec["workspace"]
        log = AgentLog(Path(ws["log"]))

        from pptarena.run.batch_service import remote_queue

        # batch mode: a batched agent's calls go to the host's queue ($PPTARENA_BATCH_SERVICE)
        components.batch_queue = remote_queue()
        model = components.agent_models(agent_cfg, book=book, log=log)

        setting_up = False
        agent = components.build(agent_cfg, model=model)
        task = AgentTask.from_json(spec["task"])  # the spec never holds the answer
        # the pair's renders get a render cache of their own (never the persistent one other pairs'
        # and the judges' renders are in), removed when the pair ends
        renders = agent_renders(components)
        workspace = Workspace(
            dir=Path(ws["dir"]),
            input_deck=Path(ws["input_deck"]),
            output_deck=Path(ws["output_deck"]),
            renderer=renders,
            model=model,
            log=log,
            timeout=spec.get("timeout"),
        )
        pred = run_agent(agent, task, workspace)
        outcome = AgentOutcome(prediction=pred)
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the runner
        outcome = AgentOutcome.failed(
            Status.INFRA_ERROR if setting_up else classify_exception(exc),
            f"{type(exc).__name__}: {exc}",
            traceback.format_exc(limit=20),
        )
    finally:
        if renders is not None:
            renders.close()
        if components is not None:
            components.close()
    outcome.model_usage = book.total().as_dict()
    outcome.model_cost = book.cost()
    return outcome


if __name__ == "__main__":  # pragma: no cover - exercised through the runner
    sys.exit(main(sys.argv[1]))
