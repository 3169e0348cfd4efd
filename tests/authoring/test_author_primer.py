"""The context API taught to rubric-drafting models stays true to the rubric judge, and the lint is right."""

from __future__ import annotations

import ast
import inspect
import json
import os
from dataclasses import fields
from pathlib import Path

import pytest

from pptarena.authoring.lint import (
    CONTEXT_NAMES,
    PPT_DIFF_ATTRIBUTES,
    free_names,
    lint_function_code,
    lint_rubric,
)
from pptarena.authoring.primer import RUBRIC_FORMAT, SCREENSHOT_FIELDS, context_api_primer
from tests.support.author_fixtures import DEMO_TASK, copy_demo_tasks, leaf, rubric_of
from tests.support.paths import ROOT


def _context_keys_of_rubric_child() -> set[str]:
    """The keys of the context dict the rubric judge's sandbox builds for every leaf."""
    import pptarena.plugins.judges.rubric.child as child

    tree = ast.parse(inspect.getsource(child))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "context" for t in node.targets
        ):
            if isinstance(node.value, ast.Dict):
                return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    raise AssertionError("rubric_child builds no context dict")


def test_context_names_match_the_rubric_judge():
    assert _context_keys_of_rubric_child() == set(CONTEXT_NAMES)


def test_screenshot_fields_and_model_helpers_match_the_rubric_judge():
    from pptarena.plugins.judges.rubric.child import SlideScreenshot, llm_call, vlm_call

    assert tuple(f.name for f in fields(SlideScreenshot)) == SCREENSHOT_FIELDS
    primer = context_api_primer()
    for fn in (llm_call, vlm_call):
        params = [
            p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
            for p in inspect.signature(fn).parameters.values()
        ]
        assert f"{fn.__name__}({', '.join(params)})" in primer


def test_diff_fields_come_from_the_deck_engine():
    from pptarena.deck.ppteval import AnimationEffect, PowerPointDiff, Slide, SlideTransition

    primer = context_api_primer()
    assert [f.name for f in fields(PowerPointDiff)] == sorted(
        PPT_DIFF_ATTRIBUTES[:9], key=[f.name for f in fields(PowerPointDiff)].index
    )
    assert set(PPT_DIFF_ATTRIBUTES[:9]) == {f.name for f in fields(PowerPointDiff)}
    for cls in (Slide, AnimationEffect, SlideTransition):
        assert ", ".join(f.name for f in fields(cls)) in primer
    for name in CONTEXT_NAMES:
        assert name in primer


@pytest.mark.slow
def test_the_documented_context_is_what_leaves_see(tmp_path):
    """A leaf using every attribute the primer names runs without error in the real judge."""
    from pptarena.authoring.check import RubricChecker
    from pptarena.authoring.files import load_task_folder
    from pptarena.cli.render import make_renderer
    from pptarena.run.configuration.registry import get_registry

    cache = Path(os.environ["PPTARENA_CACHE"])
    code = (
        "def compute_score():\n"
        "    from ppteval.verify.ppt.verifier import ScreenshotsUnavailableError\n"
        "    seen = []\n"
        + "".join(f"    seen.append(len(ppt_diff.{a}))\n" for a in PPT_DIFF_ATTRIBUTES[:9])
        + "    for old, new in ppt_diff.modified_slides:\n"
        "        seen += [old.slide_id, new.slide_number, new.title, new.layout_type, "
        "new.element_count, new.notes]\n"
        "    for shot in modified_ppt_screenshots + original_ppt_screenshots:\n"
        "        seen += [shot.slide_number, shot.image_path, shot.slide_id]\n"
        "    assert isinstance(original_ppt_path, str) and isinstance(modified_ppt_path, str)\n"
        "    assert callable(llm_call) and callable(vlm_call) "
        "and issubclass(ScreenshotsUnavailableError, RuntimeError)\n"
        "    ids = [new.slide_id for old, new in ppt_diff.modified_slides]\n"
        "    assert len(modified_ppt_screenshots) == 6 and modified_ppt_screenshots[1].slide_number == 2\n"
        "    return ('spelling: modified ' + repr(ids), 1.0)\n"
    )
    root = copy_demo_tasks(cache, tmp_path / "t", DEMO_TASK)
    task = load_task_folder(get_registry(), root / DEMO_TASK, cache).task
    import dataclasses

    task = dataclasses.replace(task, rubric=rubric_of(leaf("primer context", code)))
    renderer = make_renderer("libreoffice", {}, cache)
    checker = RubricChecker(get_registry(), cache_dir=cache, renderer=renderer, work_dir=tmp_path / "w")
    try:
        (check,) = checker.check([(task, None)])
    finally:
        renderer.close()
    target = check.case("target")
    assert target.score == 1.0 and not target.crashed_leaves, target.leaves
    assert target.leaves[0]["reason"] == "spelling: modified ['257']"  # sldId strings, as documented
    assert check.case("original").leaves[0]["reason"] == "spelling: modified []"
    assert check.flags == ["original>0"]  # the leaf scores 1.0 on anything: exactly what check must flag


def test_the_format_example_leaf_is_clean():
    start = RUBRIC_FORMAT.index('{"name": "title_is_dark_blue"')
    example = json.loads(RUBRIC_FORMAT[start:].strip())
    problems, names = lint_function_code(example["scorer"]["function_code"])
    assert problems == [] and names == {"modified_ppt_path"}


@pytest.mark.skipif(
    not (ROOT / "docs" / "judges-rubric.md").is_file(), reason="docs/judges-rubric.md not written yet"
)
def test_the_rubric_judge_docs_name_the_same_context():
    text = (ROOT / "docs" / "judges-rubric.md").read_text(encoding="utf-8")
    assert [n for n in CONTEXT_NAMES if n not in text] == []


# --------------------------------------------------------------------------- lint


@pytest.mark.parametrize(
    "code, expected",
    [
        ("def compute_score():\n    return ('x', len(ppt_diff.added_slides))\n", []),
        (
            "import re\ndef compute_score():\n    return (re.sub('a', 'b', 'a'), 1.0)\n",
            ["name 're' is defined at the top level of the leaf code, which compute_score() cannot see"],
        ),
        ("def compute_score():\n    return ('x', [el for x in [1]][0])\n", ["undefined name 'el'"]),
        (
            "def compute_score():\n    def helper():\n        return missing\n    return ('x', helper())\n",
            ["undefined name 'missing'"],
        ),
        (
            "def compute_score():\n    return ('x', len(ppt_diff.changed_slides))\n",
            ["ppt_diff has no attribute 'changed_slides'"],
        ),
        ("def compute_score(path):\n    return ('x', 1.0)\n", ["compute_score() must take no arguments"]),
        ("def score():\n    return ('x', 1.0)\n", ["defines no top-level compute_score()"]),
        (
            "```python\ndef compute_score():\n    global cache\n    cache = 1\n    return ('x', cache)\n```",
            [],
        ),
    ],
)
def test_leaf_lint(code, expected):
    problems, _ = lint_function_code(code)
    assert len(problems) == len(expected)
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start), problem


def test_free_names_follow_python_scoping():
    undefined, context = free_names(
        "def compute_score():\n    import os\n    x = [len(s) for s in modified_ppt_screenshots]\n"
        "    f = lambda: vlm_call('q', [])\n    return (os.sep + str(x) + str(f), 1.0)\n"
    )
    assert undefined == set() and context == {"modified_ppt_screenshots", "vlm_call"}


def test_tree_schema_problems():
    assert lint_rubric([]).problems == ["the rubric must be a JSON object with 'root', got list"]
    bad = {
        "root": {
            "name": "r",
            "is_critical": "yes",
            "children": [
                {"name": "a", "scorer": {"type": "regex"}},
                {"name": "a", "children": []},
                {"name": "b"},
            ],
        }
    }
    problems = lint_rubric(bad).all_problems()
    assert "root ('r'): 'is_critical' must be true or false" in problems
    assert "root.children[1] ('a'): 'children' must be a non-empty list" in problems
    assert "root.children[2] ('b'): a node needs either 'children' or 'scorer'" in problems
    assert "node name 'a' is used 2 times (names must be unique)" in problems
    assert "root.children[0] ('a'): unsupported scorer type 'regex' (use 'function')" in problems


def test_docs_usage_blocks_name_only_real_options():
    """Every --option in the usage blocks of docs/authoring.md exists on that command."""
    import re

    from pptarena.cli.author import author_group

    text = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```\n(arena author ([a-z-]+) .*?)```", text, re.S)
    assert {name for _, name in blocks} == {"propose", "rubric", "style-target", "check"}
    for block, name in blocks:
        command = author_group.commands[name]
        known = {opt for p in command.params for opt in getattr(p, "opts", [])}
        used = set(re.findall(r"--[a-z][a-z-]*", block))
        assert used <= known, (name, used - known)


def test_only_a_python_fence_is_stripped_as_the_judge_does():
    def rubric(code):
        return {
            "root": {
                "name": "r",
                "description": "d",
                "is_critical": True,
                "scorer": {"type": "function", "function_code": code},
            }
        }

    body = "def compute_score(**_):\n    return (1.0, 'ok')\n"
    assert lint_rubric(rubric(f"```python\n{body}```")).all_problems() == []
    problems = lint_rubric(rubric(f"```py\n{body}```")).all_problems()
    assert problems and any(
        "invalid syntax" in p or "SyntaxError" in p or "compile" in p for p in problems
    ), problems
