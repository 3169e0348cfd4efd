"""Modules that moved when the core was grouped by concern (issue 35) still import from their old
paths, as the same module object, with a warning naming the new home; the project itself uses
only the new homes."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings

import pytest

from pptarena._imports import MOVED_MODULES
from tests.support.paths import ROOT


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_path_is_the_new_module_with_a_warning(old):
    sys.modules.pop(old, None)
    new = importlib.import_module(MOVED_MODULES[old])
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED_MODULES[old]}"):
        aliased = importlib.import_module(old)
    assert aliased is new
    assert aliased.__spec__.name == MOVED_MODULES[old]  # the real spec, not the alias's


def test_patching_through_an_old_path_patches_the_one_module(monkeypatch):
    """Tests and plugins that patch ``pptarena.safeio.X`` still reach the code that runs."""
    from pptarena.trust import safeio

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        monkeypatch.setattr("pptarena.safeio.MAX_DEPTH", 3)
    assert safeio.MAX_DEPTH == 3


def test_an_old_path_imports_in_a_fresh_interpreter():
    """``from pptarena.run.records import ResultRow`` as a first import, the way an old plugin does."""
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n    from pptarena.run.records import ResultRow\nexcept DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        "from pptarena.run.records import ResultRow\n"
        "from pptarena.run.folder.records import ResultRow as New\n"
        "print(ResultRow is New)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "warned: pptarena.run.records moved to pptarena.run.folder.records; import it from there",
        "True",
    ]


def test_no_project_code_imports_an_old_path():
    offenders = []
    for top in ("core", "plugins", "tests", "benchmarks", "scripts", "examples"):
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                hits = [n for n in names if n in MOVED_MODULES]
                if hits and path.name != "test_architecture.py":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {hits}")
    assert offenders == []


LAZY_PACKAGES = ["pptarena", "pptarena.run", "pptarena.deck", "pptarena.mcp"]


def test_lazy_packages_import_nothing_until_a_name_is_used():
    code = (
        "import sys\n"
        f"for name in {LAZY_PACKAGES!r}:\n    __import__(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pptarena.', 'pydantic', 'pluggy', 'lxml'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['pptarena._imports', 'pptarena.deck', 'pptarena.mcp', 'pptarena.run']"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_exported_name_resolves_and_is_listed(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, (package, name)
        assert name in dir(module)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018
