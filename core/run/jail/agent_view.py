"""The agent side of the trust boundary: what an agent is given of a task, and where it runs.

Every agent gets an :class:`~pptarena.types.AgentTask` built by :func:`agent_task`: the task's id,
instruction, its private copy of the input deck, the metadata the dataset marks as public and the
turn history. The target deck, style target, rubric and reference paths are not part of that type.

:func:`placement` says where an agent runs (docs/security.md, "Where agents run"):

- ``"jail"`` (the default): a worker process under bubblewrap that sees the interpreter, pptarena's
  core, the agent plugin's own distribution and its workspace; model calls and renders go through
  a bridge the harness holds (:mod:`pptarena.run.jail.agent_jail`, :mod:`pptarena.run.jail.bridge`);
- ``"host"``: built-in agents (registered by pptarena's own entry points) that registered with
  ``placement="host"`` because they start sandboxes of their own (the code agents' program
  sandbox, the ``command`` agent's CLI jail, the ``gui`` agent's office jail) and bubblewrap cannot
  nest here; their own process is trusted harness code in a plain worker process;
- ``"in-process"``: the ``[[agents]]`` table says ``trusted = true``; rows say ``isolation: none``;
- ``"reference"``: a built-in reference baseline (registered ``placement="reference"``: the ``oracle``) that
  the runner hands the judge-side task (with its target); in the harness's process, rows say
  ``isolation: none`` and ``reference: true``, and the run says so when it starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pptarena.types import HIDDEN_KEYS, PUBLIC_METADATA_KEYS, AgentTask, Task

PLACEMENTS = ("jail", "host", "in-process", "reference")


def _scrub(value: Any) -> Any:
    """``value`` without any dict entry under a hidden key, at any depth."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if str(k) not in HIDDEN_KEYS}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def public_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The keys of a task's metadata an agent may see: :data:`~pptarena.types.PUBLIC_METADATA_KEYS`,
    the keys listed in ``metadata["public"]`` and ``turn_history`` (hidden keys removed at any depth)."""
    declared = metadata.get("public")
    extra = [k for k in declared if isinstance(k, str)] if isinstance(declared, list | tuple) else []
    keys = [*PUBLIC_METADATA_KEYS, *extra, "turn_history"]
    return {k: _scrub(metadata[k]) for k in keys if k in metadata and k not in HIDDEN_KEYS and k != "turns"}


def agent_task(task: Task, original: Path) -> AgentTask:
    """The view of ``task`` an agent gets; ``original`` is the agent's own copy of the input deck."""
    metadata = public_metadata(dict(task.metadata or {}))
    history = metadata.get("turn_history")
    turns = tuple(h for h in history if isinstance(h, dict)) if isinstance(history, list) else ()
    return AgentTask(
        id=task.id,
        instruction=task.instruction,
        original=Path(original),
        metadata=metadata,
        turn_history=turns,
    )


def is_builtin(spec: Any) -> bool:
    """Whether a :class:`~pptarena.run.configuration.plugin_specs.ComponentSpec` is one of pptarena's own
    components:
    decided by the registry from the entry point's distribution, never by a module name or a class
    attribute the component sets itself."""
    return getattr(spec, "builtin", False) is True and getattr(spec, "env", None) is None


def runs_untrusted_code(spec: Any) -> bool:
    """False only for built-in agents registered ``inert=True`` (``noop``, ``precomputed``: they copy a
    file); such agents do not make a run without bubblewrap refuse."""
    return not (is_builtin(spec) and getattr(spec, "runs_untrusted_code", True) is False)


def placement(agent: Any) -> str:
    """Where the agent of a :class:`~pptarena.run.configuration.config.ComponentConfig` runs (see the module
    doc).

    ``reference`` and ``host`` come from the placement a built-in asked for when it registered
    (:func:`pptarena.run.configuration.registry.check_trust_request` refuses them to any other plugin);
    ``trusted =
    true`` is the user's word in the config; everything else is jailed."""
    spec = agent.spec
    builtin_placement = getattr(spec, "placement", "jail") if is_builtin(spec) else "jail"
    if builtin_placement == "reference":
        return "reference"
    if getattr(agent, "trusted", False):
        return "in-process"
    if builtin_placement == "host":
        return "host"
    return "jail"


def options_json(options: Any) -> dict[str, Any]:
    """An agent's options as JSON for its jailed worker (secrets arrive masked: keys stay outside)."""
    return options.model_dump(mode="json") if hasattr(options, "model_dump") else {}
