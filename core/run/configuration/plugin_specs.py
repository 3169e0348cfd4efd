"""What the registry records: each registered component (:class:`ComponentSpec`: its factory, options
model and origin) and each loaded plugin (:class:`PluginInfo`: its distribution and components).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from pptarena.types import Options

OWN_DISTRIBUTION = "pptarena"
"""The distribution of the built-in plugins."""


@dataclass
class ComponentSpec:
    """A registered component and where it came from."""

    kind: str
    name: str
    factory: Callable[..., Any]
    plugin: str
    distribution: str | None
    version: str | None
    #: registered by one of pptarena's own entry points (decided by the registry from the entry point's
    #: distribution, never by anything the component says about itself)
    builtin: bool = False
    #: where an agent runs (``jail``; ``host`` and ``reference`` only for built-ins that asked for it
    #: when registering: :func:`pptarena.run.jail.agent_view.placement`)
    placement: str = "jail"
    #: False only for built-in agents registered with ``inert=True`` (they copy a file)
    runs_untrusted_code: bool = True
    #: a built-in agent's judge-side re-saver of reference decks (:mod:`pptarena.run.references`)
    reference_normalizer: Callable[[Any, Any], None] | None = None
    #: for an agent from its own environment (``package = ...``):
    #: the :class:`~pptarena.run.jail.agent_env.AgentEnv`
    env: Any = None

    @property
    def options_model(self) -> type[BaseModel]:
        """The pydantic model validating this component's config table."""
        model = getattr(self.factory, "Options", None)
        return model if isinstance(model, type) and issubclass(model, BaseModel) else Options

    def describe_options(self) -> list[dict[str, Any]]:
        """One entry per option: name, type, required, default
        (secrets shown as ``{ env = ... }``), description.
        """
        rows = []
        for name, info in self.options_model.model_fields.items():
            type_name = _type_name(info.annotation, info.metadata)
            default = None if info.is_required() else info.get_default(call_default_factory=True)
            if hasattr(default, "get_secret_value"):
                default = "***"
            rows.append(
                {
                    "name": name,
                    "type": type_name,
                    "required": info.is_required(),
                    "default": default,
                    "description": info.description or "",
                }
            )
        return rows

    @property
    def qualified_name(self) -> str:
        """``plugin:name``, unambiguous even when two plugins share ``name``."""
        return f"{self.plugin}:{self.name}"

    def provenance(self) -> dict[str, Any]:
        """JSON-ready record of the component's origin (for manifest.json)."""
        return {
            "kind": self.kind,
            "name": self.name,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "code": self.code_kind,
        }

    @property
    def code_kind(self) -> str:
        """Which kind of code this is: ``builtin`` (pptarena's own), ``installed`` (a plugin in the
        harness's environment: code the harness trusts) or ``agent-env`` (an agent distribution in an
        environment of its own, never imported by the harness)."""
        if self.env is not None:
            return "agent-env"
        return "builtin" if self.builtin else "installed"


def _type_name(annotation: Any, metadata: list[Any]) -> str:
    """A readable type for option listings (``str | None``, ``Literal['min', 'mean']``, ``model ref``)."""
    import typing

    from pptarena.models.messages import check_model_ref

    def is_model_ref(ann: Any, meta: list[Any]) -> bool:
        if any(getattr(m, "func", None) is check_model_ref for m in meta):
            return True
        return any(is_model_ref(a, list(getattr(a, "__metadata__", ()))) for a in typing.get_args(ann))

    if is_model_ref(annotation, metadata):
        ref = "model ref '<backend>/<model>'"
        return f"{ref} | None" if type(None) in typing.get_args(annotation) else ref
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    text = str(annotation)
    for prefix in ("typing.", "pathlib.", "pydantic.types.", "collections.abc."):
        text = text.replace(prefix, "")
    text = re.sub(r"Optional\[(.*)\]$", r"\1 | None", text)
    return text


@dataclass
class PluginInfo:
    """One plugin (entry point) and what it provides."""

    name: str
    distribution: str | None
    version: str | None
    module: str
    error: str | None = None
    components: dict[str, list[str]] = field(default_factory=dict)
    #: loaded from one of pptarena's own entry points (set by the registry from the entry point's
    #: distribution; a plugin naming itself ``pptarena`` is not one)
    builtin: bool = False

    @property
    def code_kind(self) -> str:
        """``builtin`` or ``installed``: a plugin in the harness's environment, code the harness trusts
        (it is imported here; its agents still run jailed)."""
        return "builtin" if self.builtin else "installed"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form used by ``arena plugins --json``."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "builtin": self.builtin,
            "code": self.code_kind,
            "error": self.error,
            "components": {k: sorted(v) for k, v in self.components.items() if v},
        }
