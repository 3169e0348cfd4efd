"""Task requirements vs agent capabilities.

A task may list in ``metadata["requires"]`` what an agent must hand back besides the edited deck
(for example ``"libreoffice_settings"``: the office profile's settings file, or
``"accessibility_tree"``); an agent class lists what it can hand back in a ``provides`` class
attribute (a tuple of names). The runner does not give a task to an agent that lacks one of its
requirements and records the pair as skipped with the reason.
"""

from __future__ import annotations

from typing import Any

from pptarena.types import Task


def unmet_requirements(agent_factory: Any, task: Task) -> str:
    """Why ``agent_factory`` cannot take ``task`` ("" when it can).

    An agent class with ``needs_target = True`` (the ``oracle``, which hands in the reference deck)
    cannot take a task without a target deck (an OSWorld task whose checker reads the result only).
    """
    if getattr(agent_factory, "needs_target", False) and task.target is None:
        return "the task has no target deck (its checker reads the result only), which this agent hands in"
    needs = (task.metadata or {}).get("requires") or []
    if not isinstance(needs, list | tuple):
        return ""
    provides = set(getattr(agent_factory, "provides", ()) or ())
    missing = [str(n) for n in needs if n not in provides]
    if not missing:
        return ""
    return f"the task needs {', '.join(missing)} from the agent, which this agent does not provide"
