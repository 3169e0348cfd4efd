"""Static checks of PPT-Eval rubric JSON, for drafts written by a model or by hand.

:func:`lint_rubric` finds, without running anything:

* **schema** problems (ai-rubric's loader rules, see docs/datasets.md: ``{"root", "metadata"}``,
  nodes with ``name`` / ``description`` / ``is_critical`` / ``metadata`` and exactly one of
  ``children`` (non-empty) or ``scorer``, unique names, scorer types ``function`` and ``llm``);
* **compile** problems: a function leaf that is not valid Python or defines no zero-argument
  top-level ``compute_score()``;
* **undefined names**: names ``compute_score`` (or a function / comprehension nested in it)
  reads that are neither defined inside it, nor Python builtins, nor one of the seven context
  names the rubric judge provides (:data:`CONTEXT_NAMES`). A name defined at the *top level*
  of the leaf code is reported too: ai-rubric execs the code with the context as globals and a
  separate namespace, so top-level definitions are invisible inside ``compute_score``;
* **unknown ppt_diff attributes**: ``ppt_diff.<x>`` where ``x`` is not one of the nine lists
  of PPT-Eval's ``PowerPointDiff`` (or ``to_dict``).

The analysis uses :mod:`symtable`, so Python's own scoping rules decide what is free.
"""

from __future__ import annotations

import ast
import builtins
import symtable
from dataclasses import dataclass, field
from typing import Any

from pptarena.rubric_code import CONTEXT_NAMES, strip_code_fence

#: The attributes of the ``ppt_diff`` object rubric code may read.
PPT_DIFF_ATTRIBUTES: tuple[str, ...] = (
    "added_slides",
    "removed_slides",
    "modified_slides",
    "added_animations",
    "removed_animations",
    "modified_animations",
    "added_transitions",
    "removed_transitions",
    "modified_transitions",
    "to_dict",
    "to_json",
)
#: Names that look at the edited deck: a rubric none of whose leaves reads one never looks at the prediction.
PREDICTION_NAMES: tuple[str, ...] = ("modified_ppt_path", "ppt_diff", "modified_ppt_screenshots")

MAX_NODES = 500
MAX_DEPTH = 20
MAX_CODE_CHARS = 200_000
SCORER_TYPES = ("function", "llm")
_BUILTINS = frozenset(dir(builtins))


@dataclass
class LeafReport:
    """What the static checks found in one leaf."""

    path: str  # "root", "root.children[0]", ...
    name: str
    is_critical: bool
    scorer: str
    code: str = ""
    problems: list[str] = field(default_factory=list)
    context_names: set[str] = field(default_factory=set)  # context names the code reads

    def label(self) -> str:
        """``path ('name')`` for messages."""
        return f"{self.path} ({self.name!r})"


@dataclass
class RubricLint:
    """The result of :func:`lint_rubric`: tree-level problems plus one report per leaf."""

    problems: list[str] = field(default_factory=list)
    leaves: list[LeafReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was found."""
        return not self.all_problems()

    def all_problems(self) -> list[str]:
        """Every problem, tree-level first, leaf problems prefixed with the leaf."""
        out = list(self.problems)
        for leaf in self.leaves:
            out += [f"{leaf.label()}: {p}" for p in leaf.problems]
        return out


# --------------------------------------------------------------------------- names


def _scope_names(table: symtable.SymbolTable) -> tuple[set[str], set[str]]:
    """(names read as globals, names assigned through a ``global`` declaration) in ``table`` and below."""
    reads: set[str] = set()
    declared: set[str] = set()
    for sym in table.get_symbols():
        if sym.is_declared_global() and sym.is_assigned():
            declared.add(sym.get_name())
        elif sym.is_global() and sym.is_referenced():
            reads.add(sym.get_name())
    for child in table.get_children():
        r, d = _scope_names(child)
        reads |= r
        declared |= d
    return reads, declared


def free_names(code: str) -> tuple[set[str], set[str]]:
    """Names ``compute_score`` reads from its globals: ``(undefined, context_names_read)``.

    ``undefined`` holds names that are neither builtins nor context names nor assigned with a
    ``global`` declaration. Raises :class:`SyntaxError` for invalid code and :class:`LookupError`
    when there is no top-level ``compute_score`` function.
    """
    top = symtable.symtable(code, "<leaf>", "exec")
    functions = [
        c for c in top.get_children() if c.get_name() == "compute_score" and c.get_type() == "function"
    ]
    if not functions:
        raise LookupError("no top-level compute_score()")
    reads: set[str] = set()
    declared: set[str] = set()
    for fn in functions:
        r, d = _scope_names(fn)
        reads |= r
        declared |= d
    context = {n for n in reads if n in CONTEXT_NAMES}
    undefined = {n for n in reads if n not in CONTEXT_NAMES and n not in _BUILTINS and n not in declared}
    return undefined, context


def _top_level_names(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _diff_attribute_problems(module: ast.Module) -> list[str]:
    bad = sorted(
        {
            node.attr
            for node in ast.walk(module)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "ppt_diff"
            and node.attr not in PPT_DIFF_ATTRIBUTES
        }
    )
    return [f"ppt_diff has no attribute {a!r} (it has: {', '.join(PPT_DIFF_ATTRIBUTES[:9])})" for a in bad]


def lint_function_code(code: str) -> tuple[list[str], set[str]]:
    """Problems of one leaf's ``function_code`` and the context names it reads."""
    code = strip_code_fence(code)
    try:
        module = ast.parse(code)
        compile(module, "<leaf>", "exec")
    except SyntaxError as exc:
        return [f"not valid Python: line {exc.lineno}: {exc.msg}"], set()
    defs = [
        s
        for s in module.body
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == "compute_score"
    ]
    if not defs:
        return ["defines no top-level compute_score()"], set()
    problems: list[str] = []
    fn = defs[-1]
    args = fn.args
    required = (
        len(args.posonlyargs)
        + len(args.args)
        - len(args.defaults)
        + sum(1 for d in args.kw_defaults if d is None)
    )
    if required:
        problems.append("compute_score() must take no arguments (it is called as compute_score())")
    if isinstance(fn, ast.AsyncFunctionDef):
        problems.append("compute_score() must not be async")
    try:
        undefined, context = free_names(code)
    except (SyntaxError, LookupError) as exc:  # pragma: no cover - ruled out above
        return problems + [str(exc)], set()
    top = _top_level_names(module)
    for name in sorted(undefined):
        if name in top:
            problems.append(
                f"name {name!r} is defined at the top level of the leaf code, "
                "which compute_score() cannot see (put imports and helpers inside compute_score)"
            )
        else:
            problems.append(
                f"undefined name {name!r} "
                "(neither defined in compute_score, nor a builtin, nor a context name)"
            )
    problems += _diff_attribute_problems(module)
    return problems, context


# --------------------------------------------------------------------------- tree


def lint_rubric(data: Any) -> RubricLint:
    """Every schema, compile and name problem of a PPT-Eval rubric (see the module docstring)."""
    result = RubricLint()
    if not isinstance(data, dict):
        result.problems.append(f"the rubric must be a JSON object with 'root', got {type(data).__name__}")
        return result
    if "root" not in data:
        result.problems.append("the rubric has no 'root' node")
        return result
    if "metadata" in data and not isinstance(data["metadata"], dict):
        result.problems.append("'metadata' must be an object")
    seen: dict[str, int] = {}
    count = [0]

    def visit(node: Any, path: str, depth: int) -> None:
        count[0] += 1
        if count[0] > MAX_NODES:
            if count[0] == MAX_NODES + 1:
                result.problems.append(f"more than {MAX_NODES} nodes")
            return
        if depth > MAX_DEPTH:
            result.problems.append(f"{path}: deeper than {MAX_DEPTH} levels")
            return
        if not isinstance(node, dict):
            result.problems.append(f"{path}: a node must be an object, got {type(node).__name__}")
            return
        name = node.get("name")
        if not isinstance(name, str) or not name.strip():
            result.problems.append(f"{path}: 'name' must be a non-empty string")
            name = ""
        else:
            seen[name] = seen.get(name, 0) + 1
        where = f"{path} ({name!r})"
        if not isinstance(node.get("description", ""), str):
            result.problems.append(f"{where}: 'description' must be a string")
        critical = node.get("is_critical", False)
        if not isinstance(critical, bool):
            result.problems.append(f"{where}: 'is_critical' must be true or false")
            critical = False
        if not isinstance(node.get("metadata", {}), dict):
            result.problems.append(f"{where}: 'metadata' must be an object")
        if "scorer" in node:
            result.leaves.append(_lint_leaf(node["scorer"], path, name, critical))
        elif "children" in node:
            children = node["children"]
            if not isinstance(children, list) or not children:
                result.problems.append(f"{where}: 'children' must be a non-empty list")
                return
            for i, child in enumerate(children):
                visit(child, f"{path}.children[{i}]", depth + 1)
        else:
            result.problems.append(f"{where}: a node needs either 'children' or 'scorer'")

    visit(data["root"], "root", 0)
    for name, n in sorted(seen.items()):
        if n > 1:
            result.problems.append(f"node name {name!r} is used {n} times (names must be unique)")
    return result


def _lint_leaf(scorer: Any, path: str, name: str, critical: bool) -> LeafReport:
    if not isinstance(scorer, dict):
        report = LeafReport(path, name, critical, "?")
        report.problems.append("'scorer' must be an object")
        return report
    kind = scorer.get("type")
    report = LeafReport(path, name, critical, str(kind))
    if kind not in SCORER_TYPES:
        report.problems.append(f"unsupported scorer type {kind!r} (use 'function')")
        return report
    if kind == "llm":
        for key in ("system_prompt", "user_prompt"):
            if not isinstance(scorer.get(key), str):
                report.problems.append(f"llm scorer needs a string {key!r}")
        report.code = f"{scorer.get('system_prompt', '')}\n{scorer.get('user_prompt', '')}"
        report.context_names = {n for n in CONTEXT_NAMES if "{" + n in report.code}
        return report
    code = scorer.get("function_code")
    if not isinstance(code, str) or not code.strip():
        report.problems.append("function scorer needs a non-empty 'function_code' string")
        return report
    if len(code) > MAX_CODE_CHARS:
        report.problems.append(f"function_code has {len(code)} characters (limit {MAX_CODE_CHARS})")
        return report
    report.code = code
    report.problems, report.context_names = lint_function_code(code)
    return report
