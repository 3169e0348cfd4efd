"""Modules preloaded by the rubric sandbox's driver (issue 18, target 5): real, and no shared state.

The driver imports the modules leaves name (python-pptx above all) once, before forking a process
per leaf. These tests run real leaves in the real sandbox: the preload happens, the leaves that use
it score as before, and what one leaf does to a preloaded module (or to the file system) is not
seen by the next leaf of the tree nor by the next tree.
"""

from __future__ import annotations

import textwrap

import pytest

from pptarena.plugins.judges.rubric import child, execute
from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, preload_for, run_function_leaves
from tests.support.rubric_fixtures import STAND_IN, stand_in_pair  # noqa: F401 - fixture

INPUTS = {
    "original_ppt_path": str(STAND_IN),
    "modified_ppt_path": str(STAND_IN),
    "ppt_diff": None,
    "screenshots": {},
}


def code(body: str) -> str:
    return "def compute_score():\n" + textwrap.indent(textwrap.dedent(body), "    ")


def run(leaves: dict[str, str], run: LeafRun | None = None):
    items = [{"id": k, "code": v} for k, v in leaves.items()]
    return run_function_leaves(items, INPUTS, ModelBridge(None), run or LeafRun())


def test_preload_for_picks_the_modules_whose_package_a_leaf_names():
    pptx_leaf = {"id": "a", "code": "from pptx import Presentation\n"}
    plain = {"id": "b", "code": "import re\ndef compute_score():\n    return 'x', 1\n"}
    assert preload_for([plain]) == []
    chosen = preload_for([plain, pptx_leaf])
    assert chosen[0] == "pptx" and all(m.split(".")[0] == "pptx" for m in chosen)
    assert "pptx.enum.shapes" in chosen
    assert preload_for([{"id": "c", "code": "import difflib, zipfile"}]) == ["difflib", "zipfile"]
    assert preload_for([{"id": "d", "code": "mypptx = 1"}]) == []  # a word, not a substring
    assert preload_for([pptx_leaf], modules=()) == []


def test_preload_skips_modules_that_do_not_import():
    assert child.preload(["json", "pptarena_no_such_module_18", "difflib"]) == ["json", "difflib"]


@pytest.mark.slow
@pytest.mark.usefixtures("stand_in_pair")
def test_the_driver_preloads_python_pptx_and_leaves_use_it():
    probe = code(
        """
        import sys
        already = 'pptx' in sys.modules and 'pptx.enum.shapes' in sys.modules
        from pptx import Presentation
        return str(already) + ',' + str(len(Presentation(original_ppt_path).slides)), 1
        """
    )
    process = LeafRun()
    records = run({"probe": probe}, process)
    assert records["probe"]["reason"] == "True,23" and records["probe"]["score"] == 1.0
    startup = process.processes[0]["startup_s"]
    assert isinstance(startup, float) and 0.0 < startup < process.processes[0]["duration_s"]
    # without preloading (as before issue 18) the leaf imports python-pptx itself: same result
    saved = execute.PRELOAD_MODULES
    execute.PRELOAD_MODULES = ()
    try:
        cold = run({"probe": probe})
    finally:
        execute.PRELOAD_MODULES = saved
    assert cold["probe"]["reason"] == "False,23"


POISON = code(
    """
    import pptx, pptx.util, os, sys
    pptx.Presentation = lambda *a, **k: 'forged'
    pptx.util.Inches = lambda n: 0
    pptx.pwned_by_leaf = True
    sys.modules['difflib'] = 'forged'
    for folder in ('.', os.environ.get('TMPDIR', '.'), '/tmp'):
        try:
            with open(os.path.join(folder, 'left_by_leaf'), 'w') as fh:
                fh.write('state')
        except OSError:
            pass
    return 'poisoned', 1
    """
)

MODULE_CHECKS = """
import os, sys, pptx, pptx.util
seen = []
if getattr(pptx, 'pwned_by_leaf', False):
    seen.append('attribute')
if pptx.Presentation.__module__ != 'pptx.api':
    seen.append('Presentation')
if pptx.util.Inches(1) != 914400:
    seen.append('Inches')
if sys.modules.get('difflib') == 'forged':
    seen.append('sys.modules')
"""
FILE_CHECKS = """
for folder in ('.', os.environ.get('TMPDIR', '.'), '/tmp'):
    if os.path.exists(os.path.join(folder, 'left_by_leaf')):
        seen.append('file in ' + folder)
"""
RESULT = "return ','.join(seen) or 'clean', 0 if seen else 1\n"
CHECK_MODULES = code(MODULE_CHECKS + RESULT)  # leaves of one tree share its working directory
CHECK_ALL = code(MODULE_CHECKS + FILE_CHECKS + RESULT)


@pytest.mark.slow
@pytest.mark.usefixtures("stand_in_pair")
def test_a_leaf_poisoning_preloaded_modules_leaves_nothing_for_the_next_leaf_or_tree():
    first = run({"poison": POISON, "check_same_tree": CHECK_MODULES})
    assert first["poison"]["reason"] == "poisoned"  # the attack itself ran
    assert first["check_same_tree"]["reason"] == "clean" and first["check_same_tree"]["score"] == 1.0
    second = run({"check_next_tree": CHECK_ALL})
    assert second["check_next_tree"]["reason"] == "clean" and second["check_next_tree"]["score"] == 1.0


def test_startup_timing_reads_only_a_well_formed_ready_record():
    assert execute._startup_s([{"event": "start", "leaf": "a"}, {"event": "ready", "t": 10.25}], 10.0) == 0.25
    assert execute._startup_s([{"event": "ready", "t": "10.5"}], 10.0) is None
    assert execute._startup_s([{"event": "ready", "t": 9.0}], 10.0) is None
    assert execute._startup_s(["ready", None], 10.0) is None
