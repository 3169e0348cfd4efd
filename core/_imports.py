"""How pptarena's packages import on demand: names exported lazily, and modules that moved.

:func:`lazy_exports` gives a package a PEP 562 ``__getattr__``/``__dir__`` pair that imports a
public name's module on first use, so that ``import pptarena`` (and every ``arena`` command) does
not pay for pydantic, pluggy or the model layer until something needs them.

:data:`MOVED_MODULES` and :func:`install_moved_module_aliases` keep old import paths working after
the core was grouped by concern (issue 35): ``import pptarena.safeio`` gives the very module object
``pptarena.trust.safeio`` (one module, not a copy, so monkeypatching and ``isinstance`` agree) and
warns with a :class:`DeprecationWarning` naming the new home.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str], public: list[str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each of ``names`` (exported name -> submodule,
    relative to ``package``) is imported from its submodule on first access and then cached in the
    package's namespace. ``public`` (the package's ``__all__``) is added to ``dir()``."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names, *(public or [])})

    return __getattr__, __dir__


def _moved() -> dict[str, str]:
    groups = {
        "pptarena.run.configuration": "config config_options config_secrets registry plugin_specs "
        "components requirements mixed tasks datacheck",
        "pptarena.run.folder": "records results resume runlock rundir fingerprint manifest_record "
        "summary_record provenance reporting",
        "pptarena.run.statistics": "resample signflip bootdraws stats statsworker statsjobs summary_stats "
        "split_figures blas columns",
        "pptarena.run.jail": "agent_jail agent_view agent_env agent_probe env_agents jail_archive "
        "jail_pool jail_worker bridge",
    }
    moved = {
        f"pptarena.run.{name}": f"{home}.{name}" for home, names in groups.items() for name in names.split()
    }
    moved["pptarena.run.trust"] = "pptarena.run.jail.boundary"
    for name in "sandbox isolation limits procs safeio redact render_guard".split():
        moved[f"pptarena.{name}"] = f"pptarena.trust.{name}"
    moved["pptarena.registry"] = "pptarena.run.configuration.registry"  # documented for plugin authors
    return moved


MOVED_MODULES: dict[str, str] = _moved()
"""Old module path -> its home now. Old paths import the same module object, with a warning."""


class _AliasLoader(importlib.abc.Loader):
    """Loads an old module path as the module that lives at its new path."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        self.real_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{self.old} moved to {self.new}; import it from there", DeprecationWarning, stacklevel=2
        )
        module = importlib.import_module(self.new)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.real_spec  # the import machinery set the alias's spec on it


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """A meta path finder answering for the old paths of :data:`MOVED_MODULES` only."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec loading ``fullname``'s new home, when ``fullname`` is a moved module."""
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(fullname, new))


def install_moved_module_aliases() -> None:
    """Put :class:`MovedModuleFinder` on ``sys.meta_path`` once per process."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
