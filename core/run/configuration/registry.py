"""Plugin loading and the component registry.

Entry points of the group ``pptarena`` are loaded once per process. Every
plugin — built-in or third-party — goes through the same path:

1. ``ep.load()`` and ``pm.register(module, name=ep.name)``, isolated: a plugin
   that raises is recorded as broken and everything else keeps working
   (``PPTARENA_STRICT_PLUGINS=1`` or ``arena --strict`` makes it fatal);
2. ``check_pending()`` per plugin, so a misspelled hook is an error naming it;
3. each ``register_<kind>`` hook implementation is called with a ``register``
   callback that knows which plugin is registering.

``PPTARENA_LOAD_PLUGINS`` (comma list; empty means none) and
``PPTARENA_BLOCK_PLUGINS`` select plugins by entry-point or distribution name.
``PPTARENA_PLUGINS`` (comma list of importable module names) registers extra
plugin modules without packaging them (handy for one-off plugins and tests).

Why it is long: every plugin, built-in or not, enters through the one path here: entry-point selection
and name clashes, isolating a plugin that raises, refusing a registration that asks for more trust than
its plugin has (:func:`check_trust_request`), and the lookup with its did-you-mean. These steps share
the registry's bookkeeping (which plugin registered what, which failed, which are pptarena's own), so
the loader and the :class:`Registry` stay together.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as md
import os
import re
import threading
import traceback
import types
from collections.abc import Callable, Iterable
from typing import Any

import pluggy
from pydantic import BaseModel

from pptarena import hookspecs
from pptarena.run.configuration.plugin_specs import OWN_DISTRIBUTION, ComponentSpec, PluginInfo
from pptarena.types import KINDS as KINDS
from pptarena.types import ComponentContext, PptArenaError

GROUP = "pptarena"
SINGULAR = {
    "datasets": "dataset",
    "agents": "agent",
    "renderers": "renderer",
    "judges": "judge",
    "backends": "backend",
    "executors": "executor",
    "reporters": "reporter",
}


class PluginLoadError(PptArenaError):
    """A plugin failed to load or register (fatal only in strict mode)."""


class UnknownComponentError(PptArenaError, LookupError):
    """A config or command named a component that no loaded plugin provides."""


class AmbiguousComponentError(PptArenaError, LookupError):
    """Two plugins registered the same component name and the config did not qualify it."""


def _env_list(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {item.strip() for item in raw.split(",") if item.strip()}


def _truthy(var: str) -> bool:
    return os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}


class Registry:
    """All loaded plugins and the components they registered, by kind."""

    def __init__(self) -> None:
        self.plugins: dict[str, PluginInfo] = {}
        self.manual: dict[str, str] = {}  # plugins registered by hand (not entry points): name -> module
        #: plugins loaded from pptarena's own entry points (the built-ins), decided from the entry
        #: point's distribution by :func:`load_registry`, never by anything a plugin says
        self.own_plugins: set[str] = set()
        self._components: dict[str, dict[str, list[ComponentSpec]]] = {k: {} for k in KINDS}
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)

    # ----------------------------------------------------------- registration

    def add(self, spec: ComponentSpec) -> None:
        """Record one component (used by the register callbacks)."""
        if spec.kind not in KINDS:
            raise ValueError(f"unknown component kind {spec.kind!r}")
        bucket = self._components[spec.kind].setdefault(spec.name, [])
        if not any(s.plugin == spec.plugin for s in bucket):
            bucket.append(spec)
        info = self.plugins.get(spec.plugin)
        if info is not None:
            info.components.setdefault(spec.kind, []).append(spec.name)

    def register_plugin(
        self,
        module: Any,
        name: str,
        distribution: str | None = None,
        version: str | None = None,
        strict: bool = False,
        from_entry_point: bool = False,
    ) -> PluginInfo:
        """Register a plugin object (a module or any object with hookimpls) and run its register hooks.

        Used for entry points and by tests that register a plugin for their duration.
        """
        info = PluginInfo(name, distribution, version, getattr(module, "__name__", type(module).__name__))
        info.builtin = name in self.own_plugins
        self.plugins[name] = info
        if not from_entry_point and isinstance(module, types.ModuleType):
            self.manual[name] = module.__name__
        try:
            self.pm.register(module, name=name)
            try:
                self.pm.check_pending()
            except pluggy.PluginValidationError as exc:
                self.pm.unregister(name=name)
                raise PluginLoadError(f"plugin {name!r}: {exc}{self._hook_hint(str(exc))}") from exc
            self._run_register_hooks(module, info)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - isolate any plugin failure, sys.exit() too
            self._fail(info, exc, strict)
        return info

    def _hook_hint(self, message: str) -> str:
        """`` (did you mean 'register_agents'?)`` for pluggy's "unknown hook 'register_agent'" message."""
        import difflib

        found = re.search(r"unknown hook '([^']+)'", message)
        if not found:
            return ""
        known = sorted(n for n, caller in vars(self.pm.hook).items() if getattr(caller, "spec", None))
        close = difflib.get_close_matches(found.group(1), known, n=1, cutoff=0.6)
        return f" (did you mean {close[0]!r}?)" if close else f" (hooks: {', '.join(known)})"

    def _run_register_hooks(self, module: Any, info: PluginInfo) -> None:
        for kind in KINDS:
            caller = getattr(self.pm.hook, f"register_{kind}")
            for impl in caller.get_hookimpls():
                if impl.plugin is not module:
                    continue

                def register(
                    name: str,
                    factory: Callable[..., Any],
                    *,
                    placement: str = "jail",
                    inert: bool = False,
                    reference_normalizer: Callable[[Any, Any], None] | None = None,
                    _kind: str = kind,
                ) -> None:
                    if not isinstance(name, str) or not name or ":" in name or "/" in name:
                        raise PluginLoadError(
                            f"plugin {info.name!r} registered an invalid {SINGULAR[_kind]} name {name!r}"
                        )
                    own = info.name in self.own_plugins
                    check_trust_request(
                        info.name, _kind, name, placement, inert or reference_normalizer is not None, own
                    )
                    spec = ComponentSpec(_kind, name, factory, info.name, info.distribution, info.version)
                    spec.builtin, spec.placement, spec.runs_untrusted_code = own, placement, not inert
                    spec.reference_normalizer = reference_normalizer
                    self.add(spec)

                kwargs = {"register": register} if "register" in impl.argnames else {}
                impl.function(**kwargs)

    def _fail(self, info: PluginInfo, exc: BaseException, strict: bool) -> None:
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if isinstance(exc, SystemExit):
            detail = f"the plugin called sys.exit({exc.code!r}) while loading"
        info.error = detail
        for kind in KINDS:  # drop anything half-registered
            for name in list(self._components[kind]):
                kept = [s for s in self._components[kind][name] if s.plugin != info.name]
                if kept:
                    self._components[kind][name] = kept
                else:
                    del self._components[kind][name]
        info.components = {}
        if self.pm.has_plugin(info.name):
            self.pm.unregister(name=info.name)
        if strict:
            raise PluginLoadError(
                f"plugin {info.name!r} ({info.distribution or '?'}) failed to load: {detail}"
            ) from exc

    def unregister_plugin(self, name: str) -> None:
        """Remove a plugin and its components (the inverse of :meth:`register_plugin`)."""
        info = self.plugins.pop(name, None)
        self.manual.pop(name, None)
        if info is not None:
            self._fail(info, RuntimeError("unregistered"), strict=False)

    # ----------------------------------------------------------- lookup

    @property
    def broken(self) -> list[PluginInfo]:
        """Plugins that failed to load."""
        return [p for p in self.plugins.values() if p.error]

    def names(self, kind: str) -> list[str]:
        """Sorted component names of one kind."""
        return sorted(self._components[kind])

    def get(self, kind: str, name: str) -> ComponentSpec:
        """Resolve ``name`` or ``plugin:name`` to a component.

        Raises :class:`UnknownComponentError` (with a did-you-mean and the
        installed choices) or :class:`AmbiguousComponentError`.
        """
        plugin, sep, bare = name.rpartition(":")
        specs = self._components[kind].get(bare if sep else name, [])
        if sep:
            specs = [s for s in specs if s.plugin == plugin]
        if not specs:
            raise UnknownComponentError(self.unknown_message(kind, name))
        if len(specs) > 1:
            choices = ", ".join(s.qualified_name for s in specs)
            raise AmbiguousComponentError(
                f"{SINGULAR[kind]} {name!r} is registered by {len(specs)} plugins; "
                f"pick one with its qualified name: {choices}"
            )
        return specs[0]

    def unknown_message(self, kind: str, name: str) -> str:
        """The message for an unknown component: did-you-mean, installed choices, where they come from."""
        singular = SINGULAR[kind]
        lines = [f"unknown {singular} {name!r}"]
        close = difflib.get_close_matches(name.rpartition(":")[2], self.names(kind), n=3, cutoff=0.6)
        if close:
            lines.append(f"Did you mean: {', '.join(close)}?")
        lines.append(f"Installed {kind}: {', '.join(self.names(kind)) or '(none)'}")
        broken = [p.name for p in self.broken]
        if broken:
            lines.append(
                "Not available (plugin may not be installed or failed to load): "
                f"{', '.join(broken)}; see `arena plugins`."
            )
        lines.append(
            f"{kind.capitalize()} come from plugins; third-party ones install with `pip install <package>`."
        )
        return "\n".join(lines)

    def create(
        self, kind: str, name: str, options: BaseModel | dict[str, Any], context: ComponentContext
    ) -> Any:
        """Build a component from validated options (or a raw dict, validated here)."""
        spec = self.get(kind, name)
        if isinstance(options, dict):
            options = spec.options_model.model_validate(options)
        return spec.factory(options, context)


PLACEMENTS = ("jail", "host", "reference")
"""Where an agent may be registered to run; ``host`` and ``reference`` are for pptarena's own agents."""


def check_trust_request(plugin: str, kind: str, name: str, placement: str, inert: bool, own: bool) -> None:
    """Refuse a registration asking for more trust than its plugin has.

    ``placement="host"`` (a plain worker process), ``placement="reference"`` (handed the task's answer),
    ``inert=True`` (runs no untrusted code, so a run without bubblewrap need not refuse it) and a
    ``reference_normalizer`` (judge-side code handed the target deck: :mod:`pptarena.run.references`) are
    honoured for pptarena's own agents only (docs/security.md); any other plugin asking for them fails
    to load with a message saying so.
    """
    if placement not in PLACEMENTS:
        raise PluginLoadError(
            f"plugin {plugin!r}: {SINGULAR[kind]} {name!r}: unknown placement {placement!r}"
        )
    if (placement != "jail" or inert) and (kind != "agents" or not own):
        asked = f"placement={placement!r}" if placement != "jail" else "inert=True or a reference_normalizer"
        raise PluginLoadError(
            f"plugin {plugin!r}: {SINGULAR[kind]} {name!r} asks for {asked}, which only pptarena's own "
            "agents may have; a third-party agent always runs in its jail"
        )


def _own_entry_points() -> set[tuple[str, str]]:
    """``(name, value)`` of the entry points pptarena's own distribution declares."""
    try:
        dist = md.distribution(OWN_DISTRIBUTION)
    except md.PackageNotFoundError:
        return set()
    return {(ep.name, ep.value) for ep in dist.entry_points if ep.group == GROUP}


def _duplicate_names(eps: list[md.EntryPoint]) -> dict[str, list[str]]:
    """Entry-point names that two or more distributions declare: name → the distributions (sorted)."""
    by_name: dict[str, set[str]] = {}
    for ep in eps:
        by_name.setdefault(ep.name, set()).add(_dist_of(ep)[0] or f"(no distribution: {ep.value})")
    return {name: sorted(dists) for name, dists in by_name.items() if len(dists) > 1}


def _dist_of(ep: md.EntryPoint) -> tuple[str | None, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    return dist.metadata["Name"], dist.version


def _clash_message(name: str, dists: list[str]) -> str:
    """Why a plugin name that several distributions declare is loaded from none of them."""
    return (
        f"entry point {name!r} is declared by {len(dists)} distributions ({', '.join(dists)}); none is "
        "loaded: uninstall the one you do not want (pip uninstall NAME), or block it with "
        "PPTARENA_BLOCK_PLUGINS"
    )


def _selected(ep_name: str, dist_name: str | None, allow: set[str] | None, block: set[str]) -> bool:
    keys = {ep_name} | ({dist_name} if dist_name else set())
    if keys & block:
        return False
    return allow is None or bool(keys & allow)


def load_registry(
    *,
    strict: bool | None = None,
    only: Iterable[str] | None = None,
    block: Iterable[str] | None = None,
    entry_points: Iterable[md.EntryPoint] | None = None,
) -> Registry:
    """Build a fresh registry from entry points (use :func:`get_registry` for the shared one).

    :param strict: make any plugin failure fatal (default: ``PPTARENA_STRICT_PLUGINS``).
    :param only: allow-list of entry-point or distribution names (default: ``PPTARENA_LOAD_PLUGINS``).
    :param block: block-list (default: ``PPTARENA_BLOCK_PLUGINS``).
    :param entry_points: the entry points to consider (default: the installed ``pptarena`` group).
    """
    strict = _truthy("PPTARENA_STRICT_PLUGINS") if strict is None else strict
    allow = set(only) if only is not None else _env_list("PPTARENA_LOAD_PLUGINS")
    blocked = set(block) if block is not None else (_env_list("PPTARENA_BLOCK_PLUGINS") or set())
    eps = list(entry_points) if entry_points is not None else list(md.entry_points(group=GROUP))
    if not eps:
        raise PluginLoadError(
            "pptarena is not installed (no 'pptarena' entry points found); run `pip install -e .`"
        )
    registry = Registry()
    seen: set[str] = set()
    own = _own_entry_points()
    eps = [ep for ep in eps if _selected(ep.name, _dist_of(ep)[0], allow, blocked)]
    clashes = _duplicate_names(eps)
    for ep in sorted(eps, key=lambda e: e.name):
        if ep.name in seen:
            continue
        seen.add(ep.name)
        dist, version = _dist_of(ep)
        if ep.name in clashes:  # never first-wins: a distribution could silently replace a judge
            info = PluginInfo(ep.name, ", ".join(clashes[ep.name]), None, ep.value)
            registry.plugins[ep.name] = info
            registry._fail(info, PluginLoadError(_clash_message(ep.name, clashes[ep.name])), strict)
            continue
        if dist == OWN_DISTRIBUTION and (ep.name, ep.value) in own:
            registry.own_plugins.add(ep.name)
        try:
            module = ep.load()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - isolate a plugin that raises (or exits) on import
            info = PluginInfo(ep.name, dist, version, ep.value)
            registry.plugins[ep.name] = info
            registry._fail(info, exc, strict)
            continue
        registry.register_plugin(module, ep.name, dist, version, strict=strict, from_entry_point=True)
    for module_name in sorted(_env_list("PPTARENA_PLUGINS") or ()):
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - isolated like an entry point
            info = PluginInfo(module_name, None, None, module_name)
            registry.plugins[module_name] = info
            registry._fail(info, exc, strict)
            continue
        registry.register_plugin(module, module_name, strict=strict)
    return registry


_lock = threading.Lock()
_default: Registry | None = None
_default_strict: bool | None = None


def get_registry(strict: bool | None = None) -> Registry:
    """The process-wide registry, loaded on first use (entry points are scanned once)."""
    global _default, _default_strict
    with _lock:
        if _default is None or (strict and not _default_strict):
            _default = load_registry(strict=strict)
            _default_strict = bool(strict)
        return _default


def reset_registry() -> None:
    """Forget the process-wide registry (tests; a new scan happens on next use)."""
    global _default
    with _lock:
        _default = None
