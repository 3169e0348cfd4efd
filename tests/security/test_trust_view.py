"""Issue 23 item 2: the sandbox shows the minimum of the Python installation.

A model-written program and a rubric leaf once imported the demo dataset's task table (package data of
``pptarena.plugins.datasets.demo``), applied the task's own edit and scored 1.0. Each test here is that
program or leaf, run through the real paths (the code agent's runner in ``run_python``, a whole
``arena run`` with a loopback model, ``run_function_leaves``), plus the same reach by file path.
"""

from __future__ import annotations

import json
import site
import sys
import textwrap
from pathlib import Path

import pytest

from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves
from pptarena.trust import isolation
from pptarena.trust.sandbox import run_python
from tests.support.stub_llm_server import Reply, StubLLMServer
from tests.support.trust_fixtures import arena, code_agent_config, needs_bwrap, program_reply, rows

CHEAT = """
from pptx import Presentation
from pptarena.plugins.datasets.demo.tasks import TASKS
prs = Presentation(INPUT_PATH)
next(t for t in TASKS if t.id == "qbr-fix-typos").edit(prs)
prs.save(OUTPUT_PATH)
"""


def host_paths() -> dict[str, str]:
    """Paths of the host a program could try to open: the dataset's code, other installed packages."""
    import importlib.util

    plugins = Path(next(iter(importlib.util.find_spec("pptarena.plugins").submodule_search_locations)))
    venv_site = Path(site.getsitepackages()[0])
    return {
        "demo_tasks": str(plugins / "datasets" / "demo" / "tasks.py"),
        "plugins_dir": str(plugins),
        "pydantic_dir": str(Path(importlib.util.find_spec("pydantic").origin).parent),
        "anthropic_dir": str(venv_site / "anthropic"),
        "site_packages": str(venv_site),
    }


PROBE = """
import importlib, os
seen = {}
for name, path in SANDBOX_INPUT.items():
    try:
        seen[name] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path, "rb").read(9).decode()
    except OSError as exc:
        seen[name] = exc.strerror
for mod in ("pptarena.plugins.datasets.demo.tasks", "pptarena.plugins", "pptarena", "pydantic", "anthropic"):
    try:
        importlib.import_module(mod)
        seen[mod] = "imported"
    except ImportError as exc:
        seen[mod] = type(exc).__name__
hits = []
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev", "/usr")]
    hits += [os.path.join(root, f) for f in files if "/datasets" in root or root.endswith("/plugins")]
seen["walk"] = hits
sandbox_result(seen)
"""


@needs_bwrap
def test_model_program_cannot_import_or_read_the_datasets_code(tmp_path):
    from pptx import Presentation

    from pptarena.plugins.agents.pptpilot.code import _RUNNER

    Presentation().save(tmp_path / "in.pptx")
    out = tmp_path / "out.pptx"
    files = {"input.pptx": tmp_path / "in.pptx"}
    res = run_python(
        _RUNNER, extra_files={"program.py": CHEAT}, files=files, export="output.pptx", export_to=out
    )
    assert res.isolation == "bwrap"
    assert not res.ok and "ModuleNotFoundError: No module named 'pptarena'" in res.stderr, res.stderr[-2000:]
    assert not res.exported and not out.exists()
    paths = host_paths()
    probe = run_python(PROBE, inputs=paths)
    assert probe.ok, probe.stderr[-2000:]
    seen = probe.result
    for name in paths:
        if name == "site_packages":  # only the allowed distributions are in it
            assert "anthropic" not in seen[name] and "pydantic" not in json.dumps(seen[name])
        else:
            assert seen[name] == "No such file or directory", (name, seen[name])
    assert seen["pptarena.plugins.datasets.demo.tasks"] == "ModuleNotFoundError"
    assert seen["pptarena"] == seen["pydantic"] == seen["anthropic"] == "ModuleNotFoundError"
    assert seen["walk"] == []


@pytest.mark.slow
@needs_bwrap
def test_code_agent_run_copying_the_datasets_edit_scores_nothing(tmp_path):
    run_dir = tmp_path / "run"
    with StubLLMServer() as server:
        server.default = Reply(program_reply(CHEAT))
        (tmp_path / "c.toml").write_text(code_agent_config(server.openai_base_url, retries=0))
        out = arena(["run", "--config", "c.toml", "--out", str(run_dir)], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    hostile = rows(run_dir)["hostile"]
    assert hostile["status"] == "agent_error", hostile
    assert "No module named 'pptarena'" in hostile["error"]


@needs_bwrap
def test_rubric_leaf_sees_the_deck_engine_but_no_plugin_or_dataset():
    paths = host_paths()
    leaf = "def compute_score():\n" + textwrap.indent(
        textwrap.dedent(
            f"""
            import importlib, os
            seen = {{}}
            for mod in ("pptarena.plugins.datasets.demo.tasks", "pptarena.plugins.judges.rubric.judge",
                        "pydantic", "numpy", "pptx", "pptarena.deck.ppteval_items", "pptarena.deck.ppteval"):
                try:
                    importlib.import_module(mod)
                    seen[mod] = "imported"
                except ImportError as exc:
                    seen[mod] = type(exc).__name__
            for name, path in {paths!r}.items():
                try:
                    seen[name] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read(4)
                except OSError as exc:
                    seen[name] = exc.strerror
            import json
            return json.dumps(seen), 1
            """
        ),
        "    ",
    )
    no_decks = {"original_ppt_path": "/x/a.pptx", "modified_ppt_path": "/x/b.pptx", "ppt_diff": None}
    records = run_function_leaves([{"id": "peek", "code": leaf}], no_decks, ModelBridge(None), LeafRun())
    seen = json.loads(records["peek"]["reason"])
    assert seen["pptarena.plugins.datasets.demo.tasks"] == "ModuleNotFoundError"
    assert seen["pptarena.plugins.judges.rubric.judge"] == "ModuleNotFoundError"
    assert seen["pydantic"] == "ModuleNotFoundError"
    assert seen["numpy"] == seen["pptx"] == "imported"
    assert seen["pptarena.deck.ppteval_items"] == seen["pptarena.deck.ppteval"] == "imported"
    assert seen["demo_tasks"] == seen["plugins_dir"] == seen["anthropic_dir"] == "No such file or directory"
    assert "pptarena" in seen["site_packages"] and "anthropic" not in seen["site_packages"]


def test_views_come_from_distribution_metadata():
    view = isolation.python_view()
    names = {p.name for p in view.read_only}
    assert {"pptx", "lxml", "PIL", "xlsxwriter", "typing_extensions.py"} <= names
    assert not names & {"pydantic", "anthropic", "numpy", "pptarena", "plugins", "__pycache__"}
    site_dirs = {Path(d) for d in site.getsitepackages()}
    assert not site_dirs & set(view.read_only)  # never a whole site-packages folder
    assert Path(sys.prefix) not in view.read_only or sys.prefix == sys.base_prefix
    rubric = isolation.python_view(isolation.RUBRIC_DISTRIBUTIONS, isolation.RUBRIC_CORE_PARTS)
    assert "numpy" in {p.name for p in rubric.read_only}
    placed = {inside.relative_to(inside.parents[1]).as_posix() for _, inside in rubric.placed}
    assert "pptarena/deck" in placed and not any("plugins" in p for p in placed)


WHEEL_PROBE = """
import json
from pptarena.trust.sandbox import run_python
from pptarena.plugins.judges.rubric.execute import rubric_view
probe = '''
import importlib
seen = {}
mods = ("pptx", "pptarena.plugins.datasets.demo.tasks", "pptarena.plugins", "pydantic")
for mod in (*mods, "pptarena.deck.ppteval"):
    try:
        importlib.import_module(mod)
        seen[mod] = "imported"
    except ImportError as exc:
        seen[mod] = type(exc).__name__
sandbox_result(seen)
'''
code = run_python(probe)
leaf = run_python(probe, python_view=rubric_view())
errors = [code.stderr[-500:], leaf.stderr[-500:]]
print(json.dumps({"code": code.result, "leaf": leaf.result, "errors": errors}))
"""


@needs_bwrap
@pytest.mark.slow
def test_wheel_install_shows_the_same_minimum(tmp_path_factory):
    """From a regular wheel install (pptarena and its plugins in site-packages, no import hook)."""
    from tests.support.wheel_env import clean_env, fresh_venv, run

    venv = fresh_venv(tmp_path_factory.getbasetemp() / "wheel-env")
    out = run(
        [str(venv / "bin" / "python"), "-c", WHEEL_PROBE], cwd=tmp_path_factory.mktemp("w"), env=clean_env()
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["code"] == {
        "pptx": "imported",
        "pptarena.plugins.datasets.demo.tasks": "ModuleNotFoundError",
        "pptarena.plugins": "ModuleNotFoundError",
        "pydantic": "ModuleNotFoundError",
        "pptarena.deck.ppteval": "ModuleNotFoundError",
    }, seen["errors"]
    assert seen["leaf"] == {**seen["code"], "pptarena.deck.ppteval": "imported"}, seen["errors"]
