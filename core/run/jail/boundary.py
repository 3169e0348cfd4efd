"""What a run tells about its trust boundary: refusing weak isolation, and the isolation it records.

Agents that run untrusted code (every agent but ``trusted = true`` ones, the built-in reference
baseline and the built-in ``noop`` and ``precomputed``, see :func:`untrusted_agents`) need
bubblewrap. Where it is unusable (not installed, no user namespaces, ``PPTARENA_SANDBOX=off``) a
run with such agents refuses to start with one line naming the fix, unless ``arena run
--allow-weak-isolation`` (or ``[run] allow_weak_isolation = true``) says otherwise; the agents then
run in plain worker processes and their rows say ``isolation: none``.

Each result row says what the agent's code ran in (``isolation``) and how its own process ran
(``agent_process``: ``jail``, ``host``, ``in-process``, ``reference`` or ``unjailed``);
``manifest.json`` and ``summary.json`` carry the run's :func:`isolation_record`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pptarena.run.jail.agent_jail import jail_available
from pptarena.run.jail.agent_view import placement, runs_untrusted_code
from pptarena.types import PptArenaError

ISOLATION_RANK = {"none": 0, "rlimits": 1, "unshare": 2, "bwrap": 3}
"""Weak to strong; unknown names rank with ``none``."""


class WeakIsolationRefused(PptArenaError):
    """A run with untrusted agents on a machine without bubblewrap, and no --allow-weak-isolation."""


def untrusted_agents(agents: list[Any]) -> list[str]:
    """Labels of the agents that run untrusted code (placement ``jail`` or ``host``, except built-ins
    registered ``inert=True``: :func:`~pptarena.run.jail.agent_view.runs_untrusted_code`)."""
    return [a.label for a in agents if placement(a) in ("jail", "host") and runs_untrusted_code(a.spec)]


def check_isolation(agents: list[Any], allow_weak: bool) -> None:
    """Raise :class:`WeakIsolationRefused` when untrusted agents would run without bubblewrap."""
    labels = untrusted_agents(agents)
    if not labels or allow_weak or jail_available():
        return
    raise WeakIsolationRefused(
        f"refusing to run {', '.join(labels)}: bubblewrap is not usable here (not installed, no user "
        "namespaces, or PPTARENA_SANDBOX=off), so agent code could read the answer key; install "
        "bubblewrap (scripts/setup.sh) or pass --allow-weak-isolation"
    )


WEAK_ISOLATION_ENV = "PPTARENA_ALLOW_WEAK_ISOLATION"
"""Set to ``1`` in the harness's processes while a run that allows weak isolation runs, so that
built-in agents which jail parts of their own (the ``tools`` agent's MCP servers) follow the run's
consent instead of refusing; jailed agents never see it (their environment is built, not inherited)."""


@contextmanager
def weak_isolation_consent(allowed: bool) -> Iterator[None]:
    """While the block runs, :func:`weak_isolation_allowed` says ``allowed`` in this process and in
    the worker processes it starts (the previous value is restored after)."""
    before = os.environ.get(WEAK_ISOLATION_ENV)
    if allowed:
        os.environ[WEAK_ISOLATION_ENV] = "1"
    else:
        os.environ.pop(WEAK_ISOLATION_ENV, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(WEAK_ISOLATION_ENV, None)
        else:
            os.environ[WEAK_ISOLATION_ENV] = before


def weak_isolation_allowed() -> bool:
    """Whether the run this process works for allows weak isolation (:func:`weak_isolation_consent`)."""
    return os.environ.get(WEAK_ISOLATION_ENV) == "1"


def agent_process(agent: Any) -> str:
    """How the agent's own process runs here: ``jail``, ``host``, ``in-process``, ``reference`` or
    ``unjailed`` (a ``jail`` agent where bubblewrap is unusable, with weak isolation allowed)."""
    where = placement(agent)
    if where == "jail" and not jail_available():
        return "unjailed"
    return where


def row_isolation(agent: Any, machine: str) -> str:
    """The ``isolation`` of a row: what the harness launched the agent's code in, never what the
    agent's prediction says.

    A jailed agent: ``bwrap``; trusted, reference and unjailed agents: ``none``; a built-in host
    worker: the weaker of the machine's level and what its own class says its options launch
    (``launched_isolation(options)``, e.g. ``none`` for a ``command`` agent with ``sandbox = "off"``;
    asked of pptarena's own host agents only).
    """
    process = agent_process(agent)
    if process == "jail":
        return "bwrap"
    if process != "host":
        return "none"
    declared = getattr(agent.spec.factory, "launched_isolation", None)
    levels = [machine]
    if callable(declared):
        level = declared(agent.options)
        if isinstance(level, str) and level:
            levels.append(level)
    return min(levels, key=lambda level: ISOLATION_RANK.get(level, 0))


def agent_code(agent: Any) -> str:
    """Which kind of code an agent is (``builtin``, ``installed`` or ``agent-env``): rows, the isolation
    record and ``arena plugins`` say it
    (:attr:`~pptarena.run.configuration.plugin_specs.ComponentSpec.code_kind`)."""
    return str(getattr(agent.spec, "code_kind", "installed"))


def weakest(levels: list[Any]) -> str | None:
    """The weakest of some isolation levels (None when there are none)."""
    found = [lv for lv in levels if isinstance(lv, str) and lv]
    return min(found, key=lambda level: ISOLATION_RANK.get(level, 0)) if found else None


def isolation_record(agents: list[Any], machine: str, allow_weak: bool) -> dict[str, Any]:
    """The run's isolation for ``manifest.json`` and ``summary.json``."""
    return {
        "machine": machine,
        "agent_jail": jail_available(),
        "allow_weak_isolation": allow_weak,
        "agents": {a.label: agent_process(a) for a in agents},
        # which kind of code each agent is: builtin, installed (trusted, in the harness's environment)
        # or agent-env (an environment of its own, never imported by the harness)
        "agent_code": {a.label: agent_code(a) for a in agents},
    }


_NOTES = {
    "reference": "Agent {label} is a reference baseline: it is handed each task's answer and runs without "
    "a sandbox (isolation none); its scores are a ceiling, not a result.",
    "in-process": "Agent {label} is trusted (trusted = true): it runs in the harness's process without a "
    "sandbox (isolation none).",
    "unjailed": "Agent {label} runs without a sandbox (bubblewrap is unusable here): its code can read the "
    "answer key (isolation none).",
}


def process_note(agent: Any) -> str | None:
    """What the run says when it starts about an agent that runs unsandboxed (None for the others)."""
    note = _NOTES.get(agent_process(agent))
    return note.format(label=agent.label) if note else None
