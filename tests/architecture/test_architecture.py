"""The layout's promises: no import cycle at run time, the core never imports a plugin, the
contract exported.

The import graph has an edge for every import a module makes when it runs: at module level and
inside functions (a function-level import is still a dependency: calling the function imports
the module), everything but ``if TYPE_CHECKING:`` blocks. A package's ``__init__`` importing its
own submodules is an edge like any other (``pptarena.models`` runs ``pptarena.models.client``);
only an edge from a module to a package it lives in is left out, since Python initialises that
package before the module anyway.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

import pptarena
from tests.support.paths import ROOT

PACKAGES = {"core": "pptarena", "plugins": "pptarena.plugins"}


def module_name(path: Path) -> str:
    top = path.relative_to(ROOT).parts[0]
    rel = path.relative_to(ROOT / top).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGES[top], *parts])


def runtime_imports(path: Path, modules: set[str]) -> dict[str, bool]:
    """Modules of the project imported by ``path`` when it runs (everything but
    ``if TYPE_CHECKING:`` blocks), each mapped to True when every import of it is inside a function.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found: dict[str, bool] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != this:
                found[name] = found.get(name, True) and id(node) in in_function
    return found


@functools.cache
def import_graph() -> dict[str, dict[str, bool]]:
    """Every module of ``core/`` and ``plugins/`` -> the project modules it imports at run time (True:
    only inside functions). Built once per session (~4 s) and shared by the layout tests, which only
    read it."""
    files = [p for top in PACKAGES for p in (ROOT / top).rglob("*.py")]
    modules = {module_name(p) for p in files}
    return {module_name(p): runtime_imports(p, modules) for p in files}


def graph() -> dict[str, set[str]]:
    """:func:`import_graph` without the function-level marks."""
    return {m: set(deps) for m, deps in import_graph().items()}


def find_cycle(edges: dict[str, set[str]] | dict[str, dict[str, bool]]) -> list[str] | None:
    """A cycle of ``edges`` (its modules, the first repeated last), or None. Package -> own
    submodule edges count; module -> enclosing package edges do not (see the module's note)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if node.startswith(nxt + "."):
                continue  # importing the package one lives in runs its __init__ first
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def describe(cycle: list[str], edges: dict[str, dict[str, bool]]) -> str:
    """``a -> b -(in a function)-> c ...``: the cycle with its function-level imports marked."""
    out = cycle[0]
    for a, b in zip(cycle, cycle[1:], strict=False):
        out += (" -(in a function)-> " if edges.get(a, {}).get(b) else " -> ") + b
    return out


@pytest.mark.slow
def test_no_import_cycle_at_run_time():
    edges = import_graph()
    cycle = find_cycle(edges)
    assert cycle is None, describe(cycle or [], edges)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_cycle_finder_sees_a_cycle_through_a_package_and_a_function_level_import(tmp_path):
    """The shape issue 24 found: a package's ``__init__`` imports its submodule, which imports a
    module that imports the package back inside a function."""
    edges = {
        "p.models": {"p.models.client": False},
        "p.models.client": {"p.redact": True, "p.models": False},  # the second: its own package, left out
        "p.redact": {"p.models": True},
    }
    cycle = find_cycle(edges)
    assert cycle == ["p.models", "p.models.client", "p.redact", "p.models"]
    assert describe(cycle, edges) == (
        "p.models -> p.models.client -(in a function)-> p.redact -(in a function)-> p.models"
    )
    assert find_cycle({"p.models": {"p.models.client"}, "p.models.client": {"p.models"}}) is None


def test_function_level_imports_are_edges(tmp_path, monkeypatch):
    src = tmp_path / "core" / "m.py"
    src.parent.mkdir()
    src.write_text("import os\nfrom pptarena import a\n\ndef f():\n    from pptarena import b\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert runtime_imports(src, {"pptarena", "pptarena.a", "pptarena.b", "pptarena.m"}) == {
        "pptarena": False,
        "pptarena.a": False,
        "pptarena.b": True,
    }


@pytest.mark.slow
def test_the_core_never_imports_a_plugin():
    offenders = {
        m: sorted(i for i in deps if i.startswith("pptarena.plugins"))
        for m, deps in graph().items()
        if not m.startswith("pptarena.plugins")
    }
    assert {m: d for m, d in offenders.items() if d} == {}


@pytest.mark.slow
def test_reports_never_import_the_runner():
    edges = graph()
    assert {
        m for m in edges if m.startswith("pptarena.report") and "pptarena.run.runner" in edges[m]
    } == set()


def test_the_plugin_contract_is_exported():
    for name in [
        "Evidence",
        "Dataset",
        "Agent",
        "Renderer",
        "Judge",
        "PptArenaError",
        "AgentError",
        "JudgeError",
        "InfraError",
        "ComponentUnavailable",
        "RegisterFn",
        "hookimpl",
        "Task",
        "Prediction",
        "Verdict",
    ]:
        assert name in pptarena.__all__ and hasattr(pptarena, name), name


def test_documented_plugin_import_paths_keep_working(monkeypatch):
    monkeypatch.delitem(sys.modules, "pptarena.registry", raising=False)
    monkeypatch.delattr(pptarena, "registry", raising=False)
    with pytest.warns(DeprecationWarning, match="pptarena.run.configuration.registry"):
        from pptarena.registry import get_registry  # the alias plugin authors were once shown
    from pptarena.run.configuration.registry import get_registry as new_home

    assert get_registry is new_home
