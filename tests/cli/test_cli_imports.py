"""Commands import only what they use (issue 18): what is imported is tested here, never how fast
(``arena --version`` start-up is measured in BENCHMARKS.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Run a command in a fresh interpreter and write the names of the modules it imported.
PROBE = """
import json, sys
out, argv = sys.argv[1], sys.argv[2:]
if argv == ["--import-only"]:
    import pptarena
else:
    from pptarena.cli.main import main
    sys.argv = ["arena", *argv]
    try:
        main()
    except SystemExit as exc:
        if exc.code:
            raise
import os
threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None
with open(out, "w") as fh:
    json.dump({"modules": sorted(sys.modules), "threads": threads}, fh)
"""

HEAVY = (
    "pydantic",
    "rich",
    "pluggy",
    "numpy",
    "pptarena.models",
    "pptarena.run.configuration.config",
    "pptarena.types",
)


def probe(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> dict:
    """What ``arena ARGV`` (or ``import pptarena`` with ``--import-only``) left behind: the modules it
    imported and the process's thread count (None without /proc).
    """
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *argv], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def imported(tmp_path: Path, *argv: str) -> set[str]:
    """Modules imported by ``arena ARGV`` (or by ``import pptarena`` with ``--import-only``)."""
    return set(probe(tmp_path, *argv)["modules"])


def loaded(modules: set[str], prefix: str) -> list[str]:
    return sorted(m for m in modules if m == prefix or m.startswith(prefix + "."))


def test_import_pptarena_does_not_import_pluggy_pydantic_or_the_model_layer(tmp_path):
    modules = imported(tmp_path, "--import-only")
    assert {p: loaded(modules, p) for p in HEAVY if loaded(modules, p)} == {}


def test_arena_version_imports_neither_plugins_nor_metadata(tmp_path):
    modules = imported(tmp_path, "--version")
    heavy = (*HEAVY, "importlib.metadata", "pptarena.run", "pptarena.deck", "pptarena.report")
    assert {p: loaded(modules, p) for p in heavy if loaded(modules, p)} == {}


def test_arena_diff_never_imports_the_model_layer_config_or_rich(tmp_path):
    from pptx import Presentation

    decks = []
    for title in ("Before", "After"):
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = title
        decks.append(tmp_path / f"{title}.pptx")
        prs.save(decks[-1])
    modules = imported(tmp_path, "diff", str(decks[0]), str(decks[1]), "--json")
    assert "pptarena.deck.diff" in modules  # the probe ran the command
    assert {p: loaded(modules, p) for p in HEAVY if loaded(modules, p)} == {}


def test_hookimpl_is_lazy_but_marks_plugins_as_documented():
    """``@pptarena.hookimpl`` (docs/plugins.md) still is pluggy's marker for the pptarena project."""
    import pluggy

    import pptarena
    from pptarena import hookspecs

    assert "hookimpl" in pptarena.__all__ and "hookimpl" in dir(pptarena)
    assert pptarena.hookimpl is hookspecs.hookimpl and pptarena.RegisterFn is hookspecs.RegisterFn

    class Plugin:
        @pptarena.hookimpl
        def register_judges(self, register):
            register("wordcount", dict)

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(Plugin())
    seen = []
    pm.hook.register_judges(register=lambda name, factory: seen.append((name, factory)))
    assert seen == [("wordcount", dict)]


def test_version_attribute_is_the_installed_distribution_version():
    from importlib.metadata import PackageNotFoundError, version

    import pptarena

    try:
        installed = version("pptarena")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        pytest.skip("pptarena is not installed")
    assert pptarena.__version__ == installed


def test_arena_report_keeps_numpy_to_one_blas_thread(tmp_path):
    """OpenBLAS's extra threads only spin on the statistics' small products (BENCHMARKS.md)."""
    import os

    if not os.path.isdir("/proc/self/task"):
        pytest.skip("thread count needs /proc")
    run = tmp_path / "run"
    run.mkdir()
    line = {"agent": "a", "task_id": "t", "status": "scored", "scores": {"j": {"score": 1.0}}}
    (run / "results.jsonl").write_text(json.dumps(line) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    found = probe(tmp_path, "report", str(run), "--no-html", env=env)
    assert "numpy" in found["modules"]  # the summary's statistics ran
    assert found["threads"] == 1
