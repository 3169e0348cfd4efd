"""The layering rules of docs/architecture.md ("Rooms and their rules"), checked on the run-time
import graph of ``core/`` and ``plugins/``: which rooms a room may import, the few named
exceptions with their reasons, how many modules a room holds, and a reason at the top of every
long module."""

from __future__ import annotations

import ast

import pytest

from tests.architecture.test_architecture import import_graph, module_name
from tests.support.paths import ROOT

CONTRACT = "contract"
FOUNDATIONS = {CONTRACT, "deck", "trust"}

# room -> the rooms it may import at run time (its own room always). The stages' own apps (cli,
# view, label, report, authoring) are free above the run, except that no core room imports plugins.
ALLOWED: dict[str, set[str]] = {
    CONTRACT: {"deck", "trust"},  # the plugin contract imports nothing from the stages
    "deck": {CONTRACT, "trust"},
    "trust": {CONTRACT, "deck"},
    "models": {CONTRACT, "trust"},
    "mcp": {CONTRACT, "deck", "trust"},
    "run.statistics": {CONTRACT, "trust", "run.folder"},  # nothing from the jail, nor the run itself
    "run.folder": {CONTRACT, "trust", "models", "run.configuration", "run.statistics"},
    "run.configuration": {CONTRACT, "deck", "trust", "models", "run.folder"},
    "run.jail": {CONTRACT, "trust", "models", "run.configuration", "run.folder"},
    "run": {
        CONTRACT,
        "deck",
        "trust",
        "models",
        "run.configuration",
        "run.folder",
        "run.statistics",
        "run.jail",
    },
    # plugins: the contract, the engines and ``pptarena.run``'s exported names (never a module below it)
    "plugins": {CONTRACT, "deck", "trust", "models", "mcp", "run.api"},
}

# (importer, imported): why this edge crosses the rules. Each must still exist (see the last test).
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("pptarena.models.preflight", "pptarena.run.configuration.config_options"): (
        "preflight checks the backends a run config names, with the config's own option parsing"
    ),
    ("pptarena.models.preflight", "pptarena.run.configuration.components"): (
        "preflight builds the run's model hub the way the run will"
    ),
    ("pptarena.run.folder.results", "pptarena.run.jail.boundary"): (
        "summary.json records the isolation the run gave its agents"
    ),
    ("pptarena.run.configuration.config", "pptarena.run.jail.agent_env"): (
        "an [[agents]] table with package = ... is resolved from its own environment when the config is read"
    ),
    ("pptarena.run.configuration.config", "pptarena.run.jail.env_agents"): (
        "the same: the agent's options are validated in its jail"
    ),
    ("pptarena.run.configuration.components", "pptarena.run.batches"): (
        "batch mode wraps the judges' model clients when the components are built"
    ),
    ("pptarena.run.jail.jail_pool", "pptarena.run.worker_pool"): (
        "the jailed pool is one of the two pools sharing the worker lifecycle"
    ),
    ("pptarena.run.jail.jail_pool", "pptarena.run.worker"): (
        "a jailed worker's outcome is read and decided with the plain worker's functions"
    ),
    ("pptarena.run.jail.jail_worker", "pptarena.run.worker"): (
        "inside the jail the agent runs through the plain worker's execute"
    ),
}

MAX_MODULES = {"pptarena": 12, "pptarena.run": 15}  # a room of the run stage: 15 as well
LONG = 400
LONG_REASON = "Why it is long:"


def room(module: str) -> str:
    """The room a module lives in: ``plugins``, ``run.<sub>``, ``run``, a top-level package, or the
    contract (a module at the top of ``core/``)."""
    parts = module.split(".")
    if module.startswith("pptarena.plugins"):
        return "plugins"
    if module == "pptarena.run":
        return "run.api"
    if len(parts) == 1 or (len(parts) == 2 and not (ROOT / "core" / parts[1]).is_dir()):
        return CONTRACT
    if parts[1] == "run":
        sub = parts[2] if len(parts) > 3 else ""
        return f"run.{sub}" if sub else "run"
    return parts[1]


def violations(edges: dict[str, dict[str, bool]]) -> list[str]:
    """Every import edge that crosses the rules and is not a listed exception."""
    out = []
    for module, deps in sorted(edges.items()):
        here = room(module)
        if here not in ALLOWED:
            continue
        for dep in sorted(deps):
            there = room(dep)
            if dep.startswith(module + ".") or module.startswith(dep + "."):
                continue  # a package and its own modules
            if there == here or (here.startswith("run") and there == "run.api"):
                continue
            if there not in ALLOWED[here] and (module, dep) not in EXCEPTIONS:
                out.append(f"{module} ({here}) imports {dep} ({there})")
    return out


@pytest.mark.slow
def test_every_import_keeps_to_its_rooms_rules():
    assert violations(import_graph()) == []


@pytest.mark.slow
def test_every_listed_exception_is_still_an_import():
    edges = import_graph()
    assert [pair for pair in EXCEPTIONS if pair[1] not in edges.get(pair[0], {})] == []


def test_the_checker_catches_the_imports_the_rules_forbid():
    edges = {
        "pptarena.types": {"pptarena.run.runner": True},  # the contract reaching into a stage
        "pptarena.run.statistics.stats": {"pptarena.run.jail.bridge": False},
        "pptarena.plugins.agents.x": {"pptarena.run.folder.records": False, "pptarena.run": False},
        "pptarena.run.folder.results": {"pptarena.run.jail.boundary": False},  # a listed exception
        "pptarena.view.app": {"pptarena.run.runner": False},  # an app: free above the run
    }
    assert violations(edges) == [
        "pptarena.plugins.agents.x (plugins) imports pptarena.run.folder.records (run.folder)",
        "pptarena.run.statistics.stats (run.statistics) imports pptarena.run.jail.bridge (run.jail)",
        "pptarena.types (contract) imports pptarena.run.runner (run)",
    ]


def modules_in(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")


def test_rooms_stay_small():
    assert len(modules_in(ROOT / "core")) <= MAX_MODULES["pptarena"], modules_in(ROOT / "core")
    run = ROOT / "core" / "run"
    for folder in [run, *(p for p in run.iterdir() if (p / "__init__.py").is_file())]:
        assert len(modules_in(folder)) <= MAX_MODULES["pptarena.run"], (folder, modules_in(folder))


def test_every_room_of_the_run_says_its_job():
    run = ROOT / "core" / "run"
    for init in [run / "__init__.py", *run.glob("*/__init__.py"), ROOT / "core" / "trust" / "__init__.py"]:
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 20, init


def test_a_long_module_says_why_at_its_top():
    missing = []
    for top in ("core", "plugins"):
        for path in sorted((ROOT / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if text.count("\n") <= LONG:
                continue
            doc = ast.get_docstring(ast.parse(text)) or ""
            reason = doc.partition(LONG_REASON)[2].strip()
            if len(reason.split()) < 8:
                missing.append(f"{module_name(path)} ({text.count(chr(10))} lines)")
    assert missing == []
