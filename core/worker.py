"""The worker process that runs one agent on one task (``python -m pptarena.worker SPEC``).

The runner starts one worker per (agent, task) pair in a new session, so a
timeout can kill the worker and everything it started (a hung soffice, a
model-written script) as one process group. The worker writes its outcome to
``spec["result_path"]`` as JSON; a missing file means it crashed.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from .types import AgentLog, ComponentUnavailable, InfraError, Prediction, Task, Workspace


def classify_exception(exc: BaseException) -> str:
    """``infra_error`` for tool and model failures, ``agent_error`` for everything else."""
    return "infra_error" if isinstance(exc, InfraError | ComponentUnavailable) else "agent_error"


def prediction_to_json(pred: Prediction) -> dict[str, Any]:
    """JSON form of a Prediction."""
    return {"path": str(pred.path) if pred.path else None, "notes": pred.notes, "usage": pred.usage, "metadata": pred.metadata}


def prediction_from_json(data: dict[str, Any]) -> Prediction:
    """Inverse of :func:`prediction_to_json`."""
    return Prediction(
        path=Path(data["path"]) if data.get("path") else None,
        notes=data.get("notes", ""),
        usage=dict(data.get("usage") or {}),
        metadata=dict(data.get("metadata") or {}),
    )


def run_agent(agent: Any, task: Task, workspace: Workspace) -> Prediction:
    """Call ``agent.edit`` and normalise what it returns."""
    result = agent.edit(task, workspace)
    if result is None:
        result = Prediction(path=workspace.output_deck if workspace.output_deck.exists() else None)
    if not isinstance(result, Prediction):
        raise TypeError(f"agent returned {type(result).__name__}, expected pptarena.Prediction")
    return result


def main(spec_path: str) -> int:
    """Entry point of the worker process."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    from .procs import die_with_parent

    die_with_parent(spec.get("runner_pid"))  # a killed run takes its workers (and their sandboxes) with it
    result_path = Path(spec["result_path"])
    outcome: dict[str, Any]
    components = None
    clients: list[Any] = []
    setting_up = True  # a failure before the agent is built is the harness's, never the agent's
    try:
        from .components import Components
        from .config import load_config
        from .registry import load_registry

        registry = load_registry(strict=spec.get("strict", False))
        for name, module_name in (spec.get("manual_plugins") or {}).items():
            if name in registry.plugins:
                continue
            registry.register_plugin(importlib.import_module(module_name), name, strict=True)
        config = load_config(spec["config_path"], registry)
        components = Components(config, registry)
        agent_cfg = config.agents[spec["agent_index"]]
        ws = spec["workspace"]
        log = AgentLog(Path(ws["log"]))

        def model(ref: str) -> Any:
            client = components.model_client(ref, log=log)  # type: ignore[union-attr]
            clients.append(client)
            return client

        setting_up = False
        agent = components.build(agent_cfg, model=model)
        task = Task.from_json(spec["task"])
        workspace = Workspace(
            dir=Path(ws["dir"]),
            input_deck=Path(ws["input_deck"]),
            output_deck=Path(ws["output_deck"]),
            renderer=_LazyRenderer(components),
            model=model,
            log=log,
            timeout=spec.get("timeout"),
        )
        pred = run_agent(agent, task, workspace)
        outcome = {"ok": True, "prediction": prediction_to_json(pred)}
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the runner
        outcome = {
            "ok": False,
            "status": "infra_error" if setting_up else classify_exception(exc),
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=20),
        }
    finally:
        if components is not None:
            components.close()
    usage: dict[str, int] = {}
    for c in clients:
        for k, v in c.usage.as_dict().items():
            usage[k] = usage.get(k, 0) + v
    outcome["model_usage"] = usage
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(outcome, default=str), encoding="utf-8")
    tmp.replace(result_path)
    return 0


class _LazyRenderer:
    """Builds the run's renderer only if the agent renders something."""

    def __init__(self, components: Any):
        self._components = components

    def render(self, deck_path: Path, out_dir: Path) -> Any:
        return self._components.renderer().render(deck_path, out_dir)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._components.renderer(), name)


if __name__ == "__main__":  # pragma: no cover - exercised through the runner
    sys.exit(main(sys.argv[1]))
