"""Rubric trees: ai-rubric's loading rules, the published rubrics, and both aggregation rules."""

from __future__ import annotations

import pytest

from pptarena.plugins.judges.rubric.tree import (
    FunctionScorer,
    LLMScorer,
    RubricError,
    aggregate,
    compile_leaves,
    load_rubric,
    score_tree,
    strip_code_fence,
)
from pptarena.types import JudgeError
from tests.support.rubric_fixtures import leaf, parent, published_rubrics, rubric

OK = "def compute_score():\n    return 'ok', 1.0\n"


# --------------------------------------------------------------------- aggregation: the spec's worked numbers


@pytest.mark.parametrize(
    ("children", "expected"),
    [
        ([(1.0, True), (0.5, False)], 0.85),
        ([(0.2, True), (0.0, False)], 0.0),
        ([(0.5, True), (1.0, False)], 0.5),
        ([(1.0, True), (0.5, True)], 0.75),
        ([(1.0, False), (0.0, False)], 0.5),
        ([(1.0, True), (1.0, False), (1.0, False)], 1.0),
    ],
)
def test_default_rule_matches_the_reference_examples(children, expected):
    assert aggregate(children, "default", 0.3) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("children", "expected"),
    [
        ([(1.0, True), (0.5, False)], 0.5),
        ([(0.2, True), (0.0, False)], 0.1),
        ([(0.5, True), (1.0, False)], 0.75),
        ([(1.0, True), (1.0, True)], 1.0),  # all critical at 1, no non-critical: 1.0
        ([(0.0, True), (1.0, True), (1.0, False)], 0.0),  # one critical exactly 0
        ([(0.3, False), (0.9, False)], 0.6),  # no critical: mean
    ],
)
def test_mind2web2_rule_matches_the_reference_examples(children, expected):
    assert aggregate(children, "mind2web2") == pytest.approx(expected, abs=1e-12)


def test_lambda_is_configurable_and_non_critical_failures_cost_at_most_lambda():
    assert aggregate([(1.0, True), (0.0, False)], "default", 0.5) == pytest.approx(0.5)
    assert aggregate([(1.0, True), (0.0, False)], "default", 0.0) == pytest.approx(1.0)
    assert aggregate([(1.0, True), (0.0, False)], "default", 0.3) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="unknown aggregation strategy"):
        aggregate([(1.0, True)], "median")


def test_nested_tree_scores_bubble_up():
    # root: A (critical parent: a1 crit 1.0, a2 non-crit 0.5) and B (non-critical leaf 0.0)
    tree = load_rubric(
        rubric(
            parent("A", [leaf("a1", OK), leaf("a2", OK, critical=False)]),
            leaf("B", OK, critical=False),
        )
    )
    leaves = {n.name: n.node_id for n in tree.leaves()}
    scores = score_tree(tree.root, {leaves["a1"]: 1.0, leaves["a2"]: 0.5, leaves["B"]: 0.0})
    # A = 1 - 0.3 * (1 - 0.5) = 0.85; root = max(0, 0.85 - 0.3 * (1 - 0)) = 0.55
    assert scores["root.0"] == pytest.approx(0.85)
    assert scores["root"] == pytest.approx(0.55)
    m2w = score_tree(tree.root, {leaves["a1"]: 1.0, leaves["a2"]: 0.5, leaves["B"]: 0.0}, "mind2web2")
    # A = mean(non-critical) = 0.5 (all critical are exactly 1);
    # root: A (0.5) critical, B non-critical → mean = 0.25
    assert m2w["root.0"] == pytest.approx(0.5)
    assert m2w["root"] == pytest.approx(0.25)
    # the root's own is_critical flag never matters; a missing leaf scores 0
    assert score_tree(tree.root, {})["root"] == 0.0


# --------------------------------------------------------------------------- loading rules


def test_a_node_with_scorer_and_children_is_a_leaf():
    node = leaf("x", OK)
    node["children"] = [leaf("ignored", OK)]
    tree = load_rubric(rubric(node))
    assert [n.name for n in tree.leaves()] == ["x"]


def test_defaults_and_ignored_keys():
    node = {
        "name": "n",
        "description": "d",
        "scorer": {"type": "function", "function_code": OK, "extra": 1},
        "score": 0.2,
        "reason": "stale",
        "other": True,
    }
    tree = load_rubric(
        {
            "root": {"name": "r", "description": "", "children": [node], "score": 0.9},
            "metadata": {"compute_strategy": "mind2web2"},
        }
    )
    only = tree.leaves()[0]
    assert only.is_critical is False and only.metadata == {}
    assert isinstance(only.scorer, FunctionScorer)
    assert tree.metadata["compute_strategy"] == "mind2web2"  # kept, but informational only


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"root": {"name": "r", "description": ""}}, "either children or scorer"),
        ({"root": {"name": "r", "description": "", "children": []}}, "non-empty list"),
        (
            {"root": parent("r", [{**leaf("x", OK), "scorer": {"type": "regex"}}])},
            "unsupported scorer type 'regex'",
        ),
        ({"root": parent("r", [{**leaf("x", OK), "scorer": {"type": "function"}}])}, "no 'function_code'"),
        (
            {"root": parent("r", [{**leaf("x", OK), "scorer": {"type": "llm", "user_prompt": "u"}}])},
            "system_prompt",
        ),
        ({"root": parent("r", [{**leaf("x", OK), "is_critical": "yes"}])}, "is_critical"),
        ({"metadata": {}}, "no 'root'"),
        ([1, 2], "expected an object"),
    ],
)
def test_malformed_rubrics_raise_naming_the_node(data, message):
    with pytest.raises(RubricError, match=message) as info:
        load_rubric(data, source="task-9")
    assert "task-9" in str(info.value)
    assert isinstance(info.value, JudgeError)


def test_llm_scorer_loads():
    node = {
        **leaf("x", OK),
        "scorer": {"type": "llm", "system_prompt": "s", "user_prompt": "u {modified_ppt_path}"},
    }
    scorer = load_rubric(rubric(node)).leaves()[0].scorer
    assert isinstance(scorer, LLMScorer) and scorer.user_prompt.endswith("{modified_ppt_path}")


def test_fenced_code_is_unwrapped():
    fenced = "```python\n" + OK + "```\n"
    assert strip_code_fence(fenced).strip() == OK.strip()
    assert strip_code_fence(OK) == OK
    tree = load_rubric(rubric(leaf("x", fenced)))
    assert compile_leaves(tree) == []


def test_compile_problems_are_reported():
    tree = load_rubric(rubric(leaf("bad", "def compute_score(:\n  pass\n"), leaf("none", "x = 1\n")))
    problems = compile_leaves(tree, source="t")
    assert len(problems) == 2
    assert "syntax error" in problems[0] and "no top-level compute_score" in problems[1]


def test_size_limits():
    with pytest.raises(RubricError, match="characters"):
        load_rubric(rubric(leaf("big", "#" * 300_000)))
    deep: dict = leaf("l", OK)
    for i in range(25):
        deep = parent(f"p{i}", [deep])
    with pytest.raises(RubricError, match="deeper than"):
        load_rubric({"root": deep})


# --------------------------------------------------------------------------- the 120 published rubrics


@pytest.mark.slow
def test_every_published_rubric_loads_and_every_leaf_compiles():
    rubrics = published_rubrics()
    if not rubrics:
        pytest.skip("../shared/ppteval is not available")
    assert len(rubrics) == 120
    nodes = leaves = critical_leaves = 0
    for task_id, data in rubrics.items():
        tree = load_rubric(data, source=task_id)
        assert compile_leaves(tree, source=task_id) == [], task_id
        names = [n.name for n in tree.nodes()]
        assert len(names) == len(set(names)), task_id
        nodes += len(names)
        leaves += len(tree.leaves())
        critical_leaves += sum(n.is_critical for n in tree.leaves())
        assert all(isinstance(n.scorer, FunctionScorer) for n in tree.leaves())
    # the counts the reference reports (ppteval-format.md §2.2)
    assert (nodes, leaves, critical_leaves) == (704, 481, 232)
