"""``arena author check``: run each rubric against decks whose right score is known.

For every task with a rubric, the rubric judge (built through the plugin registry, so its tree
loading, sandboxed leaf execution and aggregation are the ones a run uses) scores:

* the **original** deck as an unchanged prediction: it should score 0;
* the **target** deck as a perfect prediction: it must score exactly 1.0;
* each **partial** deck (a half-done edit) when the task provides one: it must score below 1.0.
  Partials are ``partials/*.pptx`` in the task folder and/or the paths listed in
  ``[metadata] partials = ["...", ...]`` of task.toml (relative to the task folder; the
  ``[metadata]`` table is used because task.toml rejects unknown top-level keys).

Flags (any flag makes the command exit non-zero):

=============== ==========================================================================
``crash``       a leaf raised (or the rubric could not be loaded) on some deck
``lint``        static problems: syntax, undefined names, unknown ppt_diff attributes
``target<1``    the target deck does not score 1.0
``original>0``  the unchanged original scores above 0
``partial=1``   a partial deck scores 1.0
``blind``       no leaf reads the edited deck (modified_ppt_path / ppt_diff /
                modified_ppt_screenshots), or no leaf's code, name or description mentions
                any key term of the instruction (:func:`pptarena.authoring.context.key_terms`)
``error``       the check itself could not run (renderer or model failure, renders switched off
                for a rubric that needs them)
=============== ==========================================================================

Speed: cases sharing the same (original, prediction) deck pair (e.g. every task on one deck
checked "unchanged") run as one merged rubric, so one sandboxed process serves them all.

Why it is long: it is the whole known-answer check of one rubric, from the static lint and
blind findings through the merged-rubric batching (:class:`RubricChecker`, ``_chunks``,
``_leaf_rows``) to the verdict flags and the printed table, and every step reads and writes the
same :class:`CaseResult` / :class:`RubricCheck` records.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.authoring.context import key_terms, mentions_any
from pptarena.authoring.lint import PREDICTION_NAMES, lint_rubric
from pptarena.evidence import Evidence
from pptarena.types import ComponentContext, PptArenaError, Prediction, Task

SCREENSHOT_LISTS = ("original_ppt_screenshots", "modified_ppt_screenshots")
EPS = 1e-9
MAX_PARTIALS = 20
#: Largest merged rubric (nodes) run in one judge call; the rubric judge accepts up to 500.
BATCH_MAX_NODES = 400
NO_MODEL_MARK = "no model is configured"


@dataclass
class CaseResult:
    """One rubric run on one deck."""

    case: str  # "original", "target", "partial:<file name>"
    deck: Path
    expect: str  # "0", "1", "<1"
    score: float | None = None
    leaves: list[dict[str, Any]] = field(
        default_factory=list
    )  # node_id, name, critical, score, reason, error
    error: str | None = None

    @property
    def crashed_leaves(self) -> list[dict[str, Any]]:
        """Leaves that raised on this deck."""
        return [leaf for leaf in self.leaves if leaf.get("error")]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "case": self.case,
            "deck": str(self.deck),
            "expect": self.expect,
            "score": self.score,
            "error": self.error,
            "leaves": self.leaves,
        }


@dataclass
class RubricCheck:
    """The verdict of ``check`` on one task's rubric."""

    task_id: str
    instruction: str
    cases: list[CaseResult] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        """True when anything is wrong."""
        return bool(self.flags)

    def case(self, name: str) -> CaseResult | None:
        """The case called ``name`` (``"original"``, ``"target"``...), if it ran."""
        return next((c for c in self.cases if c.case == name), None)

    def flag(self, code: str, problem: str) -> None:
        """Add a flag (once) and its explanation."""
        if code not in self.flags:
            self.flags.append(code)
        self.problems.append(problem)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "task_id": self.task_id,
            "flags": self.flags,
            "problems": self.problems,
            "notes": self.notes,
            "cases": [c.to_json() for c in self.cases],
        }


def partial_decks(task: Task, folder: Path | None) -> list[Path]:
    """The partial decks of a task: ``folder/partials/*.pptx`` plus ``metadata.partials``
    (inside ``folder``).
    """
    if folder is None:
        return []
    found: list[Path] = []
    pdir = folder / "partials"
    if pdir.is_dir():
        found += sorted(p for p in pdir.iterdir() if p.suffix.lower() == ".pptx" and p.is_file())
    listed = task.metadata.get("partials") or []
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list):
        raise PptArenaError(f"task {task.id}: metadata.partials must be a list of deck paths")
    base = folder.resolve()
    for rel in listed:
        path = (folder / str(rel)).resolve()
        if base not in path.parents:
            raise PptArenaError(f"task {task.id}: partial {rel!r} is outside the task folder {folder}")
        if not path.is_file():
            raise PptArenaError(f"task {task.id}: partial {rel!r} does not exist ({path})")
        if path not in found:
            found.append(path)
    if len(found) > MAX_PARTIALS:
        raise PptArenaError(f"task {task.id}: {len(found)} partial decks (limit {MAX_PARTIALS})")
    return found


def static_findings(check: RubricCheck, rubric: dict[str, Any], instruction: str) -> bool:
    """Add ``lint`` / ``blind`` flags from the rubric text; returns False when it cannot be run at all."""
    lint = lint_rubric(rubric)
    if lint.problems:
        for p in lint.problems:
            check.flag("crash", f"rubric does not load: {p}")
        return False
    for leaf in lint.leaves:
        for p in leaf.problems:
            check.flag("lint", f"{leaf.label()}: {p}")
    if not any(set(leaf.context_names) & set(PREDICTION_NAMES) for leaf in lint.leaves):
        check.flag(
            "blind", "no leaf reads the edited deck (modified_ppt_path, ppt_diff or modified_ppt_screenshots)"
        )
    terms = key_terms(instruction)
    text = "\n".join(f"{leaf.name}\n{leaf.code}" for leaf in lint.leaves) + "\n" + _descriptions(rubric)
    if terms and not mentions_any(text, terms):
        check.flag("blind", f"no leaf mentions any key term of the instruction ({', '.join(terms[:10])})")
    return True


def _descriptions(rubric: dict[str, Any]) -> str:
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            out.append(f"{node.get('name', '')} {node.get('description', '')}")
            for child in node.get("children") or []:
                walk(child)

    walk(rubric.get("root"))
    return "\n".join(out)


def needs_renders(rubric: dict[str, Any]) -> bool:
    """True when some leaf mentions a screenshot list (the rubric judge then renders decks)."""
    lint = lint_rubric(rubric)
    return any(set(leaf.context_names) & set(SCREENSHOT_LISTS) for leaf in lint.leaves)


@dataclass
class _Job:
    check: RubricCheck
    case: CaseResult
    task: Task


class RubricChecker:
    """Runs rubrics on known-answer decks through the registry's ``rubric`` judge.

    :param registry: the plugin registry (``pptarena.run.configuration.registry.get_registry()``).
    :param cache_dir: cache folder for components.
    :param model: ``"<backend>/<model>"`` backing llm_call / vlm_call in leaves (None: those calls
        fail inside the leaf).
    :param model_factory: ``ref -> ModelClient`` (required with ``model``).
    :param renderer: the renderer, a callable building it, or None (rubrics needing screenshots are
        then not run).
    :param work_dir: where judge evidence goes (a temporary folder, removed by :meth:`close`, when None).
    :param leaf_timeout: seconds per leaf.
    """

    def __init__(
        self,
        registry: Any,
        *,
        cache_dir: Path,
        model: str | None = None,
        model_factory: Callable[[str], Any] | None = None,
        renderer: Any = None,
        work_dir: Path | None = None,
        leaf_timeout: float = 60.0,
    ):
        self.registry = registry
        self.cache_dir = Path(cache_dir)
        self.model = model
        self.model_factory = model_factory
        self.renderer = renderer
        self._own_work = work_dir is None
        self.work_dir = (
            Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="pptarena-author-check-"))
        )
        self.leaf_timeout = leaf_timeout
        self._judge: Any = None
        self._batches = 0

    def close(self) -> None:
        """Remove the temporary work folder (if this checker made it)."""
        if self._own_work:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def judge(self) -> Any:
        """The ``rubric`` judge (built once through the registry)."""
        if self._judge is None:

            def no_model(ref: str) -> Any:
                raise PptArenaError(
                    f"no model backend is available to author check (asked for {ref!r}); pass --model"
                )

            context = ComponentContext(
                cache_dir=self.cache_dir,
                model=self.model_factory or no_model,
                name="rubric",
                label="author-check",
            )
            options: dict[str, Any] = {"explain": "deterministic", "leaf_timeout": self.leaf_timeout}
            if self.model:
                options["model"] = self.model
            self._judge = self.registry.create("judges", "rubric", options, context)
        return self._judge

    # ------------------------------------------------------------------ planning

    def plan(self, task: Task, folder: Path | None) -> tuple[RubricCheck, list[_Job]]:
        """The check record of ``task`` and the rubric runs it needs."""
        check = RubricCheck(task.id, task.instruction)
        if task.rubric is None:
            check.notes.append("no rubric: nothing to check")
            return check, []
        if not static_findings(check, task.rubric, task.instruction):
            return check, []
        if needs_renders(task.rubric) and self.renderer is None:
            check.flag("error", "the rubric reads slide screenshots but renders are switched off")
            return check, []
        cases = [CaseResult("original", task.original, "0")]
        if task.target is not None:
            cases.append(CaseResult("target", task.target, "1"))
        else:
            check.notes.append("no target deck: the target check (score 1.0) was skipped")
        try:
            cases += [CaseResult(f"partial:{p.name}", p, "<1") for p in partial_decks(task, folder)]
        except PptArenaError as exc:
            check.flag("error", str(exc))
        check.cases = cases
        return check, [_Job(check, c, task) for c in cases]

    # ------------------------------------------------------------------ running

    def run(self, jobs: Sequence[_Job]) -> None:
        """Run ``jobs``; cases sharing an (original, prediction) pair run as one merged rubric."""
        groups: dict[tuple[str, str], list[_Job]] = {}
        for job in jobs:
            key = (str(Path(job.task.original).resolve()), str(Path(job.case.deck).resolve()))
            groups.setdefault(key, []).append(job)
        for group in (chunk for g in groups.values() for chunk in _chunks(g)):
            try:
                self._run_batch(group)
            except Exception:  # noqa: BLE001 - one bad rubric must not hide the others: retry one by one
                if len(group) == 1:
                    self._record_failure(group[0])
                    continue
                for job in group:
                    try:
                        self._run_batch([job])
                    except Exception:  # noqa: BLE001 - recorded on the case
                        self._record_failure(job)

    def _record_failure(self, job: _Job) -> None:
        import sys

        exc = sys.exc_info()[1]
        job.case.error = f"{type(exc).__name__}: {exc}"

    def _run_batch(self, group: list[_Job]) -> None:
        self._batches += 1
        first = group[0]
        merged = {
            "root": {
                "name": "author-check",
                "description": "",
                "is_critical": True,
                "metadata": {},
                "children": [job.task.rubric["root"] for job in group],
            },  # type: ignore[index]
            "metadata": {"task": "author check batch"},
        }
        task = Task(
            id=f"check-{self._batches}",
            instruction="author check",
            original=first.task.original,
            rubric=merged,
        )
        prediction = Prediction(first.case.deck)
        task_dir = self.work_dir / f"batch-{self._batches:04d}"
        evidence = Evidence(task, prediction, task_dir, renderer=self.renderer, model=self.model_factory)
        verdict = self.judge().judge(task, prediction, evidence)
        tree = verdict.details.get("tree") or {}
        children = tree.get("children") or []
        if len(children) != len(group):
            raise PptArenaError(
                f"the rubric judge returned {len(children)} subtrees for {len(group)} rubrics"
            )
        for index, (job, scored) in enumerate(zip(group, children, strict=True)):
            job.case.score = float(scored["score"])
            job.case.leaves = _leaf_rows(scored, prefix=f"root.{index}")

    # ------------------------------------------------------------------ verdicts

    def check(self, tasks: Sequence[tuple[Task, Path | None]]) -> list[RubricCheck]:
        """Check every ``(task, task folder or None)``; returns one :class:`RubricCheck` per task."""
        checks: list[RubricCheck] = []
        jobs: list[_Job] = []
        for task, folder in tasks:
            check, task_jobs = self.plan(task, folder)
            checks.append(check)
            jobs += task_jobs
        self.run(jobs)
        for check in checks:
            judge_cases(check)
        return checks


def _count_nodes(node: Any) -> int:
    if not isinstance(node, dict):
        return 1
    if "scorer" in node:
        return 1
    return 1 + sum(_count_nodes(c) for c in node.get("children") or [])


def _chunks(group: list[_Job]) -> list[list[_Job]]:
    """Split a group so that each merged rubric stays under :data:`BATCH_MAX_NODES` nodes."""
    out: list[list[_Job]] = []
    current: list[_Job] = []
    size = 1
    for job in group:
        n = _count_nodes(job.task.rubric["root"])  # type: ignore[index]
        if current and size + n > BATCH_MAX_NODES:
            out.append(current)
            current, size = [], 1
        current.append(job)
        size += n
    if current:
        out.append(current)
    return out


def _leaf_rows(node: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def walk(n: dict[str, Any]) -> None:
        if n.get("kind") == "leaf":
            node_id = str(n.get("node_id", ""))
            rows.append(
                {
                    "node_id": "root" + node_id[len(prefix) :] if node_id.startswith(prefix) else node_id,
                    "name": n.get("name"),
                    "critical": n.get("is_critical"),
                    "score": n.get("score"),
                    "reason": str(n.get("reason", ""))[:500],
                    "error": n.get("error"),
                }
            )
        for child in n.get("children") or []:
            walk(child)

    walk(node)
    return rows


def judge_cases(check: RubricCheck) -> None:
    """Turn the case scores of ``check`` into flags.

    A leaf that failed only because ``llm_call`` / ``vlm_call`` had no model is not a crash of
    the rubric: it is noted, and a target scoring below 1.0 only because of such leaves is
    reported as inconclusive rather than flagged.
    """
    for case in check.cases:
        if case.error:
            check.flag("error", f"{case.case}: the check could not run: {case.error}")
            continue
        unscored = [leaf for leaf in case.crashed_leaves if NO_MODEL_MARK in str(leaf["error"])]
        if unscored:
            check.notes.append(
                f"{case.case}: {len(unscored)} leaf(s) need a model (pass --model) and scored 0: "
                + ", ".join(str(leaf["node_id"]) for leaf in unscored)
            )
        for leaf in case.crashed_leaves:
            if leaf in unscored:
                continue
            check.flag(
                "crash",
                f"{case.case}: leaf {leaf['node_id']} ({leaf['name']!r}) raised: {str(leaf['error'])[:300]}",
            )
        score = case.score if case.score is not None else 0.0
        if case.expect == "0" and score > EPS:
            check.flag("original>0", f"the unchanged original scores {score:.3f} (expected 0)")
        elif case.expect == "1" and score < 1.0 - EPS:
            failing = [leaf for leaf in case.leaves if (leaf.get("score") or 0.0) < 1.0 - EPS]
            names = ", ".join(f"{leaf['node_id']} ({leaf['name']!r}: {leaf['score']})" for leaf in failing)
            if failing and all(leaf in unscored for leaf in failing):
                check.notes.append(
                    f"target check inconclusive: only leaves that need a model score below 1 ({names})"
                )
            else:
                check.flag(
                    "target<1", f"the target scores {score:.3f} (expected 1.0); leaves below 1: {names}"
                )
        elif case.expect == "<1" and score >= 1.0 - EPS:
            check.flag("partial=1", f"{case.case} (a partial edit) scores 1.0")


def format_table(checks: Sequence[RubricCheck]) -> str:
    """The plain-text table ``arena author check`` prints, then one line per problem and note."""

    def cell(check: RubricCheck, name: str) -> str:
        case = check.case(name)
        if case is None:
            return "-"
        return "err" if case.error else f"{case.score:.2f}" if case.score is not None else "?"

    rows = [("task", "original", "target", "partials", "flags")]
    for c in checks:
        partials = [p for p in c.cases if p.case.startswith("partial:")]
        ptext = ",".join("err" if p.error else f"{p.score:.2f}" for p in partials) if partials else "-"
        verdict = " ".join(c.flags) or ("ok" if c.cases else "-")
        rows.append((c.task_id, cell(c, "original"), cell(c, "target"), ptext, verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for c in checks:
        for p in c.problems:
            lines.append(f"{c.task_id}: {p}")
        for n in c.notes:
            lines.append(f"{c.task_id}: note: {n}")
    flagged = sum(1 for c in checks if c.flagged)
    bare = sum(1 for c in checks if not c.cases and not c.flags)
    lines.append(
        f"{len(checks)} task(s): {len(checks) - bare} rubric(s) checked, {flagged} flagged"
        + (f", {bare} without a rubric" if bare else "")
    )
    return "\n".join(lines)
