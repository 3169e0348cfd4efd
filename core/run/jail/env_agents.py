"""An ``[[agents]]`` table with ``package = ...``: the agent comes from an environment of its own.

:func:`env_agent` builds (or finds) the environment (:mod:`pptarena.run.jail.agent_env`), asks a jailed
probe (:mod:`pptarena.run.jail.agent_probe`) which agents it registers and whether the table's options
are valid for the one named by ``use``, and returns the
:class:`~pptarena.run.configuration.plugin_specs.ComponentSpec`
and options the run uses. The spec's ``factory`` is a stand-in made on the harness's side from the
probe's answer (module and class name, ``provides``, ``needs_target``, docstring): nothing of the
agent's code is ever imported by the harness, and no answer of the probe decides where the agent runs
(always its jail) or what the jail sees (the environment, pptarena's core, no host path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pptarena.run.configuration.plugin_specs import ComponentSpec
from pptarena.run.jail.agent_env import AgentEnv, AgentEnvError, ensure_env

ENV_KINDS_REFUSED = ("datasets", "judges", "renderers", "backends", "executors", "reporters")
"""What an agent environment may not register: it holds the agent under test only."""


class EnvAgentOptions(BaseModel):
    """The options of an agent from its own environment, as its ``Options`` model read them in the jail."""

    model_config = ConfigDict(extra="allow", frozen=True)


def _stand_in(use: str, info: dict[str, Any]) -> type:
    """A harness-side class standing for the agent class (names and declared capabilities only)."""
    provides = tuple(str(p) for p in info.get("provides") or () if isinstance(p, str))[:32]
    attrs = {
        "__module__": str(info.get("module") or ""),
        "__qualname__": str(info.get("qualname") or use),
        "__doc__": str(info.get("doc") or "")[:2000],
        "Options": EnvAgentOptions,
        "provides": provides,
        "needs_target": info.get("needs_target") is True,
    }
    return type(str(info.get("qualname") or use).rpartition(".")[2] or "EnvAgent", (), attrs)


def _error(raw: dict[str, Any]) -> dict[str, Any]:
    """A validation error from the jail, reduced to plain strings and numbers of bounded size."""
    loc = [
        p if isinstance(p, int) else str(p)[:100] for p in raw.get("loc") or [] if isinstance(p, int | str)
    ]
    return {
        "loc": loc[:10],
        "msg": str(raw.get("msg", "invalid"))[:300],
        "type": str(raw.get("type", ""))[:60],
        "input_repr": str(raw.get("input_repr", ""))[:200],
    }


def check_registrations(env: AgentEnv, plugins: dict[str, Any]) -> None:
    """Refuse an environment whose plugins failed to load or register anything but agents."""
    for name, found in plugins.items():
        if not isinstance(found, dict):
            raise AgentEnvError(f"agent environment {env.package!r}: plugin {name!r} answered nonsense")
        if found.get("error"):
            raise AgentEnvError(
                f"agent environment {env.package!r}: plugin {name!r} failed to load: {found['error']}"
            )
        components = found.get("components") or {}
        refused = [k for k in ENV_KINDS_REFUSED if components.get(k)]
        if refused:
            raise AgentEnvError(
                f"agent environment {env.package!r}: plugin {name!r} registers {', '.join(refused)}; an "
                "agent's environment holds the agent under test only (install judges and datasets in the "
                "harness's environment)"
            )


def env_agent(
    use: str,
    package: str,
    options: dict[str, Any],
    base: Path,
    cache_dir: Path,
    key_path: str,
    say: Any = None,
) -> tuple[ComponentSpec, BaseModel, list[dict[str, Any]], list[str]]:
    """``(spec, options, validation errors, field names)`` for the agent ``use`` of ``package``.

    :raises AgentEnvError: the environment cannot be built or read, or registers no agent ``use``.
    """
    env = ensure_env(package, base, cache_dir, say=say)
    if not env.entry_points():
        raise AgentEnvError(
            f"{key_path}.package = {package!r}: {env.distribution} {env.version} declares no 'pptarena' "
            "entry point (see docs/plugins.md)"
        )
    from pptarena.run.jail.agent_probe import probe

    answer = probe(env, [{"use": use, "options": options}])
    check_registrations(env, answer["plugins"])
    info = answer["agents"].get(use)
    if not isinstance(info, dict):
        known = ", ".join(sorted(answer["agents"])) or "(none)"
        raise AgentEnvError(
            f"{key_path}.use = {use!r}: {env.distribution} registers no such agent; it registers: {known}"
        )
    checked = (answer["validated"] or [None])[0]
    if not isinstance(checked, dict):
        raise AgentEnvError(f"{key_path}: the agent environment did not validate the options")
    spec = ComponentSpec(
        "agents", use, _stand_in(use, info), f"env:{env.distribution}", env.distribution, env.version
    )
    spec.env = env
    if not checked.get("ok"):
        errors = [_error(e) for e in checked.get("errors") or [] if isinstance(e, dict)][:50]
        fields = [str(f) for f in checked.get("fields") or []]
        return spec, EnvAgentOptions(), errors, fields
    values = checked.get("options")
    return spec, EnvAgentOptions(**(values if isinstance(values, dict) else {})), [], []
