"""The layout's promises: no import cycle at run time, the core never imports a plugin, the
contract exported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pptarena

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"core": "pptarena", "plugins": "pptarena.plugins"}


def module_name(path: Path) -> str:
    top = path.relative_to(ROOT).parts[0]
    rel = path.relative_to(ROOT / top).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGES[top], *parts])


def runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """Modules of the project imported by ``path`` when it runs (everything but
    ``if TYPE_CHECKING:`` blocks).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found: set[str] = set()
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
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    files = [p for top in PACKAGES for p in (ROOT / top).rglob("*.py")]
    modules = {module_name(p) for p in files}
    return {module_name(p): runtime_imports(p, modules) for p in files}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt.startswith(node + "."):  # a package importing its own submodules is not a cycle
                continue
            if state.get(nxt) == 1:
                if node.startswith(nxt + "."):
                    continue  # importing the package one lives in runs its __init__ first
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


def test_no_import_cycle_at_run_time():
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_core_never_imports_a_plugin():
    offenders = {
        m: sorted(i for i in deps if i.startswith("pptarena.plugins"))
        for m, deps in graph().items()
        if not m.startswith("pptarena.plugins")
    }
    assert {m: d for m, d in offenders.items() if d} == {}


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


def test_documented_plugin_import_paths_keep_working():
    from pptarena.registry import get_registry  # docs/plugins.md
    from pptarena.run.registry import get_registry as new_home

    assert get_registry is new_home
