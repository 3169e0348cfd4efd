"""Inside a jail: what an agent environment registers, and its agents' options validated there.

``python -m pptarena.run.jail.agent_probe`` is started by :func:`probe` under bubblewrap with the agent
environment's ``site/`` on ``PYTHONPATH`` (the view of a jailed agent worker,
:func:`pptarena.run.jail.agent_jail.worker_command`). It reads one JSON request on stdin::

    {"entry_points": [[name, value], ...], "validate": [{"use": NAME, "options": {...}}, ...]}

imports each entry point, calls its ``register_*`` hooks, and answers on its private copy of stdout
with, per entry point, the kinds and names it registered (or its error), per agent the class's
module, qualified name, ``provides``, ``needs_target`` and docstring, and per
``validate`` item the options as the agent's ``Options`` model reads them, or its validation errors.
Whatever it answers is the agent's claim: the harness checks its shape and sizes
(:func:`read_answer`) and trusts nothing in it but names.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from typing import Any

MAX_ANSWER = 4 * 1024 * 1024
PROBE_TIMEOUT = 120.0


def _load(value: str) -> Any:
    module, _, attr = value.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def _registered(plugin: Any, name: str) -> dict[str, dict[str, Any]]:
    """``{kind: {name: factory}}`` that ``plugin``'s register hooks register, through the harness's own
    registration path (:meth:`pptarena.run.configuration.registry.Registry.register_plugin`: the same hook
    checks and
    refusals, trust keywords included, as for an installed plugin).

    :raises RuntimeError: with the registry's message, when the plugin fails to register.
    """
    from pptarena.run.configuration.registry import Registry

    registry = Registry()
    info = registry.register_plugin(plugin, name)
    if info.error:
        raise RuntimeError(info.error)
    return {
        kind: {n: registry.get(kind, n).factory for n in names} for kind, names in info.components.items()
    }


def _describe(factory: Any) -> dict[str, Any]:
    return {
        "module": factory.__module__,
        "qualname": factory.__qualname__,
        "provides": [str(p) for p in getattr(factory, "provides", ()) or ()],
        "needs_target": bool(getattr(factory, "needs_target", False)),
        "doc": (factory.__doc__ or "").strip()[:2000],
    }


def _validate(factory: Any, options: dict[str, Any]) -> dict[str, Any]:
    from pydantic import ValidationError

    model = getattr(factory, "Options", None)
    if model is None:
        return {"ok": True, "options": {}}
    try:
        return {"ok": True, "options": model.model_validate(options).model_dump(mode="json")}
    except ValidationError as exc:
        errors = [
            {
                "loc": list(e["loc"]),
                "msg": str(e["msg"]),
                "type": str(e["type"]),
                "input_repr": repr(e.get("input"))[:200],
            }
            for e in exc.errors()
        ]
        return {"ok": False, "errors": errors, "fields": list(model.model_fields)}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The probe's answer to ``request`` (see the module doc)."""
    plugins: dict[str, Any] = {}
    agents: dict[str, Any] = {}
    for name, value in request.get("entry_points", []):
        try:
            found = _registered(_load(value), name)
        except BaseException as exc:  # noqa: BLE001 - a broken plugin is reported, not fatal
            plugins[name] = {"error": "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000]}
            continue
        plugins[name] = {"components": {kind: sorted(names) for kind, names in found.items()}}
        agents.update(found.get("agents", {}))
    described = {n: _describe(f) for n, f in agents.items()}
    checked = [
        _validate(agents[item["use"]], item.get("options") or {}) if item.get("use") in agents else None
        for item in request.get("validate", [])
    ]
    return {"plugins": plugins, "agents": described, "validated": checked}


def main() -> int:
    """Read the request, answer it on a private copy of stdout (what plugins print goes to stderr)."""
    import os

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    request = json.loads(sys.stdin.read())
    out.write(json.dumps(answer(request)))
    out.flush()
    return 0


def read_answer(text: str) -> dict[str, Any]:
    """The probe's answer, checked for shape (a plugin may have written anything)."""
    if len(text) > MAX_ANSWER:
        raise ValueError(f"the probe's answer is over {MAX_ANSWER >> 20} MB")
    data = json.loads(text)
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), t) for k, t in (("plugins", dict), ("agents", dict), ("validated", list))
    ):
        raise ValueError("the probe's answer is not the expected object")
    return data


def probe(env: Any, validate: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the probe for ``env`` (an :class:`~pptarena.run.jail.agent_env.AgentEnv`) in the agent's jail.

    :raises pptarena.run.jail.agent_env.AgentEnvError: the jail did not start or answered nonsense.
    """
    from pptarena.run.jail.agent_env import AgentEnvError
    from pptarena.run.jail.agent_jail import env_worker_command, run_jailed_capped

    argv, environ = env_worker_command(env, module=__name__)
    request = {"entry_points": [[n, v] for n, v, _ in env.entry_points()], "validate": validate}
    code, out, err = run_jailed_capped(argv, environ, json.dumps(request).encode(), PROBE_TIMEOUT, MAX_ANSWER)
    if code is None:
        raise AgentEnvError(f"reading the agent environment {env.package!r} took over {PROBE_TIMEOUT:.0f} s")
    try:
        return read_answer(out.decode("utf-8", "replace"))
    except ValueError as exc:
        tail = (err.decode("utf-8", "replace").strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise AgentEnvError(
            f"reading the agent environment {env.package!r} failed ({exc}): {tail[:300]}"
        ) from exc


if __name__ == "__main__":  # pragma: no cover - started in a jail by probe()
    sys.exit(main())
