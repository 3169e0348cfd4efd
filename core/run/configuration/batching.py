"""Which agents' model calls go through the run's batch queue in batch mode (``arena run --batch``).

An agent's calls are batched when its ``[[agents]]`` table says ``batch = true``, or, with nothing
said, when it is one of pptarena's own agents and its options make one model call per attempt
(its Options' ``one_call_per_attempt()``). A third-party agent never decides this for itself: the
harness does not ask its code, only the table the user wrote. ``batch = false`` keeps an agent's
calls direct in batch mode. An agent that makes more calls than it declared is only slower (each
call waits for a batch), never wrong.
"""

from __future__ import annotations

from typing import Any


def declares_one_call(agent: Any) -> bool:
    """Whether ``agent`` (a ComponentConfig) is a built-in whose options make one model call per attempt."""
    spec = agent.spec
    if spec is None or not getattr(spec, "builtin", False):
        return False
    declared = getattr(agent.options, "one_call_per_attempt", None)
    return bool(callable(declared) and declared() is True)


def batches_agent(agent: Any, batch_mode: bool) -> bool:
    """Whether ``agent``'s model calls go through the batch queue (only ever in batch mode)."""
    if not batch_mode:
        return False
    said = getattr(agent, "batch", None)
    if said is not None:
        return bool(said)
    return declares_one_call(agent)


def unbatched_asks(agents: list[Any], batch_mode: bool) -> list[str]:
    """One line per agent whose table says ``batch = true`` in a run that is not in batch mode."""
    if batch_mode:
        return []
    return [
        f"Agent {a.label!r} asks for batch = true, but the run is not in batch mode "
        "([run] batch = true or arena run --batch): its calls go out directly."
        for a in agents
        if getattr(a, "batch", None) is True
    ]
