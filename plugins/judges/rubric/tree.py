"""PPT-Eval rubric trees: loading, validation and score aggregation.

A rubric is the JSON that ai-rubric's ``RubricTree.to_dict`` writes (the 120 files of
PPT-Eval's ``task_registry/rubrics``): ``{"root": node, "metadata": {...}}``. A node has
``name``, ``description``, ``is_critical``, ``metadata`` and either a ``scorer`` (a leaf) or
``children``. Loading follows ai-rubric's ``from_dict``:

* a node with a ``scorer`` is a leaf even when it also has ``children`` (they are ignored);
* a node with neither, or with ``children: []``, is an error;
* ``is_critical`` defaults to False, ``metadata`` to ``{}``, unknown keys are ignored;
* scorer types ``function`` (``function_code``) and ``llm`` (``system_prompt`` and
  ``user_prompt``); any other type is an error;
* a ``function_code`` wrapped in a Markdown fence has the fence lines removed;
* stale ``score`` / ``reason`` keys (left in 51 published files) are ignored: every
  evaluation computes them afresh.

Tree-level metadata (``compute_strategy``, ``critical_node_weight``...) is informational:
PPT-Eval's grader ignores it, and so does this module; strategy and λ come from the judge.

Aggregation (:func:`aggregate`) is ai-rubric's ``RubricNode.compute_score``:

* ``"default"``: with both critical and non-critical children,
  ``max(0, mean(critical) - lam * (1 - mean(non_critical)))``; otherwise the plain mean.
* ``"mind2web2"``: with critical children, 0 when any critical child scores exactly 0,
  else the mean of the non-critical children (1.0 when there are none) when every critical
  child scores exactly 1, else the mean of all children; without critical children the mean.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Literal

from pptarena.rubric_code import strip_code_fence
from pptarena.types import JudgeError

Strategy = Literal["default", "mind2web2"]
STRATEGIES: tuple[str, ...] = ("default", "mind2web2")
SCORER_TYPES: tuple[str, ...] = ("function", "llm")

MAX_NODES = 500
MAX_DEPTH = 20
MAX_CODE_CHARS = 200_000
MAX_TEXT_CHARS = 100_000


class RubricError(JudgeError):
    """A rubric is malformed; the message names the task and the node."""


@dataclass(frozen=True)
class FunctionScorer:
    """A leaf scored by Python source defining ``compute_score() -> (reason, score)``."""

    code: str
    type: str = "function"


@dataclass(frozen=True)
class LLMScorer:
    """A leaf scored by a model from a system and a user prompt (``str.format``-ed with the context)."""

    system_prompt: str
    user_prompt: str
    type: str = "llm"


Scorer = FunctionScorer | LLMScorer


@dataclass
class RubricNode:
    """One node of a rubric tree.

    ``node_id`` is the node's position: ``"root"``, ``"root.0"``, ``"root.0.2"``... (names are
    usually unique within a tree, but positions always are).
    """

    node_id: str
    name: str
    description: str
    is_critical: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    scorer: Scorer | None = None
    children: list[RubricNode] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        """True for a node with a scorer."""
        return self.scorer is not None

    def walk(self) -> Iterator[RubricNode]:
        """This node and every descendant, depth first, in document order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self) -> list[RubricNode]:
        """The leaves under (or equal to) this node, in document order."""
        return [n for n in self.walk() if n.is_leaf]


@dataclass
class RubricTree:
    """A loaded rubric: the root node and the tree-level metadata (informational only)."""

    root: RubricNode
    metadata: dict[str, Any] = field(default_factory=dict)

    def leaves(self) -> list[RubricNode]:
        """Every leaf, in document order."""
        return self.root.leaves()

    def nodes(self) -> list[RubricNode]:
        """Every node, depth first."""
        return list(self.root.walk())


def _text(value: Any, what: str, where: str, limit: int = MAX_TEXT_CHARS) -> str:
    if not isinstance(value, str):
        raise RubricError(f"{where}: {what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise RubricError(f"{where}: {what} has {len(value)} characters (limit {limit})")
    return value


def _load_scorer(data: Any, where: str) -> Scorer:
    if not isinstance(data, dict):
        raise RubricError(f"{where}: 'scorer' must be an object, got {type(data).__name__}")
    kind = data.get("type")
    if kind == "function":
        if "function_code" not in data:
            raise RubricError(f"{where}: function scorer has no 'function_code'")
        code = _text(data["function_code"], "function_code", where, MAX_CODE_CHARS)
        return FunctionScorer(strip_code_fence(code))
    if kind == "llm":
        for key in ("system_prompt", "user_prompt"):
            if key not in data:
                raise RubricError(f"{where}: llm scorer has no {key!r}")
        return LLMScorer(
            _text(data["system_prompt"], "system_prompt", where),
            _text(data["user_prompt"], "user_prompt", where),
        )
    raise RubricError(f"{where}: unsupported scorer type {kind!r} (supported: {', '.join(SCORER_TYPES)})")


def _load_node(data: Any, node_id: str, depth: int, counter: list[int], source: str) -> RubricNode:
    where = f"rubric {source}, node {node_id}"
    if not isinstance(data, dict):
        raise RubricError(f"{where}: a node must be an object, got {type(data).__name__}")
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise RubricError(f"rubric {source}: more than {MAX_NODES} nodes")
    if depth > MAX_DEPTH:
        raise RubricError(f"{where}: deeper than {MAX_DEPTH} levels")
    name = _text(data.get("name", ""), "name", where, 2000)
    where = f"rubric {source}, node {node_id} ({name!r})"
    description = _text(data.get("description", ""), "description", where)
    critical = data.get("is_critical", False)
    if not isinstance(critical, bool):
        raise RubricError(f"{where}: is_critical must be true or false, got {critical!r}")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RubricError(f"{where}: metadata must be an object")
    node = RubricNode(node_id, name, description, critical, dict(metadata))
    if "scorer" in data:  # a leaf, even if 'children' is present too (ai-rubric ignores them)
        node.scorer = _load_scorer(data["scorer"], where)
        return node
    children = data.get("children")
    if children is None:
        raise RubricError(f"{where}: node must have either children or scorer")
    if not isinstance(children, list) or not children:
        raise RubricError(f"{where}: 'children' must be a non-empty list")
    node.children = [
        _load_node(child, f"{node_id}.{i}", depth + 1, counter, source) for i, child in enumerate(children)
    ]
    return node


def load_rubric(data: Any, *, source: str = "<rubric>") -> RubricTree:
    """Build a :class:`RubricTree` from PPT-Eval rubric JSON (a dict).

    :param source: names the rubric in error messages (a task id or a file path).
    :raises RubricError: for any structural problem, naming the node.
    """
    if not isinstance(data, dict):
        raise RubricError(f"rubric {source}: expected an object with 'root', got {type(data).__name__}")
    if "root" not in data:
        raise RubricError(f"rubric {source}: no 'root' node")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RubricError(f"rubric {source}: 'metadata' must be an object")
    return RubricTree(_load_node(data["root"], "root", 0, [0], source), dict(metadata))


def compile_leaves(tree: RubricTree, *, source: str = "<rubric>") -> list[str]:
    """Problems found by compiling every function leaf (empty when all compile and define compute_score)."""
    import ast

    problems = []
    for leaf in tree.leaves():
        if not isinstance(leaf.scorer, FunctionScorer):
            continue
        try:
            module = ast.parse(leaf.scorer.code, filename=f"<{source} {leaf.node_id}>")
            compile(module, f"<{source} {leaf.node_id}>", "exec")
        except SyntaxError as exc:
            problems.append(f"{leaf.node_id} ({leaf.name!r}): syntax error line {exc.lineno}: {exc.msg}")
            continue
        if not any(
            isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == "compute_score"
            for s in module.body
        ):
            problems.append(f"{leaf.node_id} ({leaf.name!r}): no top-level compute_score()")
    return problems


# --------------------------------------------------------------------------- aggregation


def aggregate(children: Sequence[tuple[float, bool]], strategy: str = "default", lam: float = 0.3) -> float:
    """A parent's score from its children's ``(score, is_critical)`` pairs (ai-rubric's rule).

    >>> aggregate([(1.0, True), (0.5, False)])
    0.85
    >>> aggregate([(1.0, True), (0.5, False)], "mind2web2")
    0.5
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown aggregation strategy {strategy!r} (expected one of {STRATEGIES})")
    scores = [float(s) for s, _ in children]
    critical = [float(s) for s, c in children if c]
    other = [float(s) for s, c in children if not c]
    if not scores:
        return 0.0
    if strategy == "default":
        if critical and other:
            return max(0.0, fmean(critical) - lam * (1.0 - fmean(other)))
        return fmean(scores)
    if critical:
        if any(s == 0 for s in critical):
            return 0.0
        if all(s == 1 for s in critical):
            return fmean(other) if other else 1.0
    return fmean(scores)


def score_tree(
    node: RubricNode, leaf_scores: dict[str, float], strategy: str = "default", lam: float = 0.3
) -> dict[str, float]:
    """Every node's score (by node_id) given the leaf scores; a leaf missing from ``leaf_scores`` scores 0."""
    scores: dict[str, float] = {}

    def visit(n: RubricNode) -> float:
        if n.is_leaf:
            value = float(leaf_scores.get(n.node_id, 0.0))
        else:
            value = aggregate([(visit(c), c.is_critical) for c in n.children], strategy, lam)
        scores[n.node_id] = value
        return value

    visit(node)
    return scores
