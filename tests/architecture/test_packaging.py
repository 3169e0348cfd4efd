"""Every Python package of the source tree ships in the wheel: ``[tool.setuptools] packages`` in
pyproject.toml lists each folder of ``core/`` and ``plugins/`` that holds an ``__init__.py`` (a
missing one installs entry points whose modules are not there: ``arena plugins`` then calls the
plugin broken), and every entry point names a module of a listed package."""

from __future__ import annotations

import tomllib

from tests.support.paths import ROOT


def packaging() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def source_packages() -> set[str]:
    found = set()
    for folder, name in (("core", "pptarena"), ("plugins", "pptarena.plugins")):
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if "__pycache__" not in rel.parts:
                found.add(".".join([name, *rel.parts]))
    return found


def test_every_source_package_is_listed():
    listed = set(packaging()["tool"]["setuptools"]["packages"])
    assert sorted(source_packages() - listed) == []


def test_every_entry_point_module_is_in_a_listed_package():
    cfg = packaging()
    listed = set(cfg["tool"]["setuptools"]["packages"])
    groups = cfg["project"].get("entry-points", {})
    modules = [target.partition(":")[0] for group in groups.values() for target in group.values()]
    modules += [t.partition(":")[0] for t in cfg["project"].get("scripts", {}).values()]
    assert modules
    orphans = [m for m in modules if m not in listed and m.rpartition(".")[0] not in listed]
    assert orphans == []
