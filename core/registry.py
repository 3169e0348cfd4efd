"""Compatibility alias: the plugin registry lives in :mod:`pptarena.run.registry`.

``from pptarena.registry import get_registry`` was documented for plugin authors before the
core was grouped by stage; it keeps working. New code imports :mod:`pptarena.run.registry`.
"""

from pptarena.run.registry import (
    AmbiguousComponentError,
    ComponentSpec,
    PluginInfo,
    PluginLoadError,
    Registry,
    UnknownComponentError,
    get_registry,
    load_registry,
    reset_registry,
)

__all__ = [
    "AmbiguousComponentError",
    "ComponentSpec",
    "PluginInfo",
    "PluginLoadError",
    "Registry",
    "UnknownComponentError",
    "get_registry",
    "load_registry",
    "reset_registry",
]
