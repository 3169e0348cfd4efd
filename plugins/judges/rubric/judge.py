"""The ``rubric`` judge: runs PPT-Eval rubric trees unmodified (see docs/judges-rubric.md).

The task's ``rubric`` (PPT-Eval JSON) is loaded with ai-rubric's rules
(:mod:`rubric_tree`); every function leaf runs in the sandbox with exactly the seven names
PPT-Eval's verifier gives it (:mod:`.execute`, :mod:`.child`); ``llm`` leaves and
parent explanations use the judge's model (:mod:`rubric_llm`). Scores aggregate with the
default λ rule or mind2web2; success means a score of exactly 1.0.

Option ``semantics`` (:mod:`.semantics`): ``"ppteval"`` reproduces PPT-Eval's grader exactly
(its ``ppt_diff``, screenshot gate, first raising leaf aborting the tree, unreadable predictions
scored); ``"corrected"`` is pptarena's: the deck engine's corrected ``ppt_diff``, a raising leaf
scores 0 for that leaf only, screenshots rendered for the decks some leaf refers to. ``"auto"``
uses ``ppteval`` for tasks the ppteval dataset tags. Under both, a rendering failure or a backend
failure during a leaf's model call is an infrastructure error (:class:`pptarena.types.InfraError`),
not a score; under ``corrected`` so is a leaf raising ``ScreenshotsUnavailableError`` although
slides were rendered.

Why it is long: :meth:`RubricJudge.judge` is one pass over one tree that carries both semantics side
by side (ppteval's screenshot gate and abort at the first raising leaf, corrected's infrastructure
checks), and the steps around it (``llm`` leaves, aggregation, parent explanations,
``scored_rubric.json``) share that tree and its leaf records.
"""

from __future__ import annotations

import re
import time
import traceback
from typing import Any, Literal

from pydantic import Field

from pptarena.evidence import Evidence
from pptarena.models import ModelRef
from pptarena.plugins.judges.rubric import llm as rubric_llm
from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves
from pptarena.plugins.judges.rubric.llm import deterministic_reason, model_reason, score_llm_leaf
from pptarena.plugins.judges.rubric.semantics import (
    first_error,
    mark_not_run,
    resolve_semantics,
    screenshot_mode,
    unavailable_screenshots,
)
from pptarena.plugins.judges.rubric.tree import (
    FunctionScorer,
    LLMScorer,
    RubricNode,
    RubricTree,
    aggregate,
    load_rubric,
)
from pptarena.types import Component, InfraError, JudgeError, Prediction, Task, Verdict
from pptarena.types import Options as OptionsBase

#: Where the sandbox finds ``from_json`` to rebuild ``ppt_diff``: the item classes alone, not the deck
#: engine (``pptarena.deck`` loads its names lazily, so this import stays light).
DIFF_MODULE = "pptarena.deck.ppteval_items"
SCREENSHOT_NAMES = {"original": "original_ppt_screenshots", "prediction": "modified_ppt_screenshots"}
_SIDE_KEYS = {"original": "original", "prediction": "modified"}


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _leaf_text(leaf: RubricNode) -> str:
    if isinstance(leaf.scorer, FunctionScorer):
        return leaf.scorer.code
    if isinstance(leaf.scorer, LLMScorer):
        return leaf.scorer.system_prompt + "\n" + leaf.scorer.user_prompt
    return ""


def screenshot_sides(tree: RubricTree, mode: str) -> list[str]:
    """The deck roles (``"original"``, ``"prediction"``) whose slides must be rendered for ``tree``.

    ``"referenced"``: a side is rendered when some leaf mentions its screenshot list by name.
    ``"ppteval"``: PPT-Eval's gate on top of that: nothing is rendered unless some leaf's code
    contains ``vlm_call`` (otherwise both lists are empty, as in PPT-Eval).
    """
    texts = [_leaf_text(leaf) for leaf in tree.leaves()]
    if mode == "ppteval" and not any("vlm_call" in t for t in texts):
        return []
    return [side for side, name in SCREENSHOT_NAMES.items() if any(_mentions(t, name) for t in texts)]


class RubricJudge(Component):
    """Scores a prediction with the task's PPT-Eval rubric tree (function leaves run sandboxed)."""

    fingerprint_modules = (rubric_llm,)  # its LLM-leaf and explanation prompts are part of its fingerprint

    class Options(OptionsBase):
        """Options of the ``rubric`` judge."""

        model: ModelRef | None = Field(
            None, description="backs llm_call / vlm_call, llm leaves and explanations"
        )
        strategy: Literal["default", "mind2web2"] = Field(
            "default", description="how parents combine children"
        )
        lam: float = Field(
            0.3, ge=0.0, le=1.0, description="λ of the default rule (PPT-Eval's grader uses 0.3)"
        )
        semantics: Literal["auto", "ppteval", "corrected"] = Field(
            "auto",
            description="ppteval: PPT-Eval's published ppt_diff, screenshot gate and leaf-error rule "
            "(numbers comparable with the paper); corrected: pptarena's fixes; "
            "auto: ppteval for tasks the ppteval dataset tags, else corrected",
        )
        screenshots: Literal["auto", "referenced", "ppteval"] = Field(
            "auto",
            description="render a deck when a leaf names its screenshots "
            "(ppteval: and some leaf calls vlm_call); auto: ppteval under ppteval semantics, else referenced",
        )
        explain: Literal["auto", "deterministic", "model"] = Field(
            "auto",
            description="parent reasons: model-written when a model is configured (auto), "
            "or always deterministic",
        )
        leaf_timeout: float = Field(
            60.0, gt=0, le=3600, description="seconds per function leaf, not counting model replies"
        )
        model_wait: float = Field(
            600.0,
            ge=0,
            le=7200,
            description="extra seconds the sandbox may run per leaf that calls the model",
        )
        memory_mb: int = Field(
            2048, ge=256, le=65536, description="address-space limit of the sandboxed process"
        )

    options: Options

    def grades_invalid_decks(self, task: Any) -> bool:
        """True when this judge scores an unreadable prediction deck instead of refusing it
        (ppteval semantics).
        """
        return task.rubric is not None and resolve_semantics(self.options.semantics, task) == "ppteval"

    def _label(self) -> str:
        return getattr(self.context, "label", "") or getattr(self.context, "name", "") or "rubric"

    def judge(self, task: Task, prediction: Prediction, evidence: Evidence) -> Verdict:
        """Run the task's rubric against ``prediction`` and aggregate the leaf scores."""
        opts = self.options
        if task.rubric is None:
            raise JudgeError(
                f"task {task.id} has no rubric (the rubric judge needs PPT-Eval tasks or tasks with a rubric)"
            )
        tree = load_rubric(task.rubric, source=str(task.id))
        semantics = resolve_semantics(opts.semantics, task)
        shot_mode = screenshot_mode(opts.screenshots, semantics)
        original, modified = evidence.path("original"), evidence.path("prediction")
        if modified is None or not modified.exists():
            return Verdict(
                0.0,
                self._metrics(0.0, {}, tree, semantics),
                "Missing required files for verification (no prediction deck)",
            )
        client = evidence.model(opts.model) if opts.model else None
        started = time.monotonic()
        texts = [_leaf_text(leaf) for leaf in tree.leaves()]
        sides = screenshot_sides(tree, shot_mode)
        gate_open = any("vlm_call" in t for t in texts) if shot_mode == "ppteval" else bool(sides)
        if semantics == "ppteval" and gate_open:
            no_shots = unavailable_screenshots(evidence, ["original", "prediction"])
            if no_shots is not None:  # PPT-Eval's grader catches it and scores the task 0
                metrics = {**self._metrics(0.0, {}, tree, semantics), "tree_aborted": 1}
                return Verdict(
                    0.0,
                    metrics,
                    f"Verification error: {no_shots} (PPT-Eval semantics: the task scores 0)",
                    {"task_id": task.id, "semantics": semantics, "aborted": no_shots},
                )
        shots: dict[str, list[dict[str, Any]]] = {"original": [], "modified": []}
        for side in sides:
            shots[_SIDE_KEYS[side]] = self._screenshots(evidence, side)
        diff_obj = None
        diff_spec = None
        if any(_mentions(t, "ppt_diff") for t in texts):
            diff_obj = evidence.ppteval_diff("original", "prediction", semantics=semantics)
            diff_spec = {
                "module": DIFF_MODULE,
                "factory": "from_json",
                "data": diff_obj.to_json(),
            }

        bridge = ModelBridge(client, opts.model)
        run = LeafRun(
            leaf_timeout=opts.leaf_timeout,
            memory_mb=opts.memory_mb,
            model_wait=opts.model_wait if client else 0.0,
        )
        function_leaves = [
            {"id": n.node_id, "code": n.scorer.code}
            for n in tree.leaves()
            if isinstance(n.scorer, FunctionScorer)
        ]
        inputs = {
            "original_ppt_path": str(original),
            "modified_ppt_path": str(modified),
            "ppt_diff": diff_spec,
            "screenshots": shots,
            "stop_on_error": semantics == "ppteval",
        }
        records = run_function_leaves(function_leaves, inputs, bridge, run) if function_leaves else {}
        order = [leaf.node_id for leaf in tree.leaves()]
        for leaf in tree.leaves():
            if isinstance(leaf.scorer, LLMScorer) and not (
                semantics == "ppteval" and first_error(order, records)
            ):
                records[leaf.node_id] = self._llm_leaf(leaf, client, inputs, diff_obj)
        for call in bridge.calls:
            records.setdefault(call.leaf, {}).setdefault("model_calls", []).append(call.to_json())
        for leaf_id, refused in bridge.refused.items():  # calls over the per-leaf cap, refused by the bridge
            records.setdefault(leaf_id, {})["model_calls_refused"] = refused
        culprit = first_error(order, records) if semantics == "ppteval" else None
        if culprit is not None:
            mark_not_run(order, records, culprit)

        scored = self._score(tree.root, records, opts)
        problem = self._infra_problem(records, bridge, sides if semantics == "corrected" else [])
        # no explanation calls to a backend that just failed: the deterministic text is kept
        explain_calls = self._explain(scored, None if problem else client, opts)
        details = {
            "task_id": task.id,
            "semantics": semantics,
            "strategy": opts.strategy,
            "lam": opts.lam,
            "model": opts.model,
            "screenshots": {"mode": shot_mode, "rendered": sides},
            "duration_s": round(time.monotonic() - started, 3),
            "sandbox_processes": run.processes,
            "tree": scored,
            "explain_calls": explain_calls,
        }
        if culprit is not None:
            details["aborted"] = {
                "leaf": culprit,
                "error": records[culprit].get("error"),
                "tree_score_without_abort": scored["score"],
            }
        label = self._label()
        evidence.write_json(label, "rubric.json", details)
        evidence.write_json(label, "scored_rubric.json", self._ai_rubric_form(tree, scored))
        if problem is not None:
            raise problem
        score = min(1.0, max(0.0, float(scored["score"])))
        explanation = self._explanation(scored, records, client)
        if culprit is not None:  # PPT-Eval semantics: the grader catches the leaf's exception and scores 0
            score = 0.0
            explanation = (
                f"Verification error: Function scoring failed: {records[culprit].get('error')}\n"
                f"PPT-Eval semantics: leaf {culprit} raised, so the whole task scores 0 "
                "(the leaves after it were not run).\n" + explanation
            )
        metrics = {**self._metrics(score, records, tree, semantics), "tree_aborted": int(culprit is not None)}
        return Verdict(score, metrics, explanation, details)

    # ------------------------------------------------------------------ context

    def _screenshots(self, evidence: Any, role: str) -> list[dict[str, Any]]:
        images = evidence.renders(role)  # InfraError on failure: the runner records infra_error
        if not images:
            from pptarena.deck import slide_ids

            if slide_ids(evidence.path(role)):
                raise InfraError(f"the renderer produced no slide images for the {role} deck")
        return [
            {
                "slide_number": int(img.number),
                "image_path": str(img.path),
                "slide_id": str(img.sld_id) if img.sld_id is not None else f"slide{img.number}",
            }
            for img in images
        ]

    def _llm_leaf(
        self, leaf: RubricNode, client: Any, inputs: dict[str, Any], diff_obj: Any
    ) -> dict[str, Any]:
        from pptarena.plugins.judges.rubric.child import SlideScreenshot, llm_call, vlm_call

        shots = inputs["screenshots"]
        context = {
            "ppt_diff": diff_obj,
            "original_ppt_screenshots": [SlideScreenshot(**s) for s in shots["original"]],
            "modified_ppt_screenshots": [SlideScreenshot(**s) for s in shots["modified"]],
            "original_ppt_path": inputs["original_ppt_path"],
            "modified_ppt_path": inputs["modified_ppt_path"],
            "llm_call": llm_call,
            "vlm_call": vlm_call,
        }
        t0 = time.monotonic()
        assert isinstance(leaf.scorer, LLMScorer)
        try:
            score, reason, calls = score_llm_leaf(leaf.scorer, context, client)
            return {
                "leaf": leaf.node_id,
                "score": score,
                "reason": reason,
                "model_calls": calls,
                "duration_s": round(time.monotonic() - t0, 3),
            }
        except Exception as exc:  # noqa: BLE001 - recorded as this leaf's error
            message = f"{type(exc).__name__}: {exc}"
            return {
                "leaf": leaf.node_id,
                "score": 0.0,
                "reason": f"LLM scoring failed: {message}",
                "error": message,
                "error_type": type(exc).__name__,
                "traceback": traceback.format_exc(),
                "model_calls": getattr(exc, "rubric_calls", []),
                "infra": isinstance(exc, InfraError),
                "duration_s": round(time.monotonic() - t0, 3),
            }

    # ------------------------------------------------------------------ scoring

    def _score(self, node: RubricNode, records: dict[str, dict[str, Any]], opts: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "node_id": node.node_id,
            "name": node.name,
            "description": node.description,
            "is_critical": node.is_critical,
        }
        if node.is_leaf:
            rec = records.get(node.node_id) or {
                "score": 0.0,
                "reason": "leaf produced no result",
                "error": "no result",
            }
            out.update(
                kind="leaf",
                scorer=node.scorer.type if node.scorer else None,
                score=float(rec.get("score", 0.0)),
                reason=rec.get("reason", ""),
            )
            for key in (
                "error",
                "error_type",
                "traceback",
                "stdout",
                "duration_s",
                "model_calls",
                "model_calls_refused",
                "not_run",
            ):
                if rec.get(key):
                    out[key] = rec[key]
            return out
        children = [self._score(c, records, opts) for c in node.children]
        out.update(
            kind="parent",
            score=aggregate([(c["score"], c["is_critical"]) for c in children], opts.strategy, opts.lam),
            children=children,
        )
        return out

    def _explain(self, node: dict[str, Any], client: Any, opts: Any) -> list[dict[str, Any]]:
        """Fill ``reason`` of every parent, bottom-up; returns the explanation calls made."""
        if node["kind"] == "leaf":
            return []
        calls: list[dict[str, Any]] = []
        for child in node["children"]:
            calls += self._explain(child, client, opts)
        use_model = client is not None and opts.explain in ("auto", "model")
        node["reason"] = deterministic_reason(node["score"], node["children"])
        node["reason_source"] = "deterministic"
        if use_model:
            try:
                node["reason"], call = model_reason(client, node, node["children"], opts.strategy, opts.lam)
                node["reason_source"] = "model"
                calls.append(call)
            except Exception as exc:  # noqa: BLE001 - an explanation is optional: keep the deterministic one
                node["reason_error"] = f"{type(exc).__name__}: {exc}"
                calls.append({"kind": "explain", "node": node["node_id"], "error": node["reason_error"]})
        return calls

    @staticmethod
    def _infra_problem(
        records: dict[str, dict[str, Any]], bridge: ModelBridge, sides: list[str]
    ) -> Exception | None:
        """The error to raise instead of a verdict (infrastructure or harness failure), if any."""
        failed = [c for c in bridge.calls if c.infra]
        if failed:
            c = failed[0]
            return InfraError(
                f"the model backend failed during rubric leaf {c.leaf}'s {c.kind}_call: {c.error}"
            )
        for lid, rec in records.items():
            if rec.get("infra"):
                return InfraError(f"the model backend failed for llm rubric leaf {lid}: {rec.get('error')}")
            if rec.get("context_error"):
                return JudgeError(
                    f"rubric leaf {lid}: the PPT-Eval context could not be built: {rec.get('error')}"
                )
            if rec.get("error_type") == "sandbox" and "before running any leaf" in str(rec.get("error")):
                return InfraError(f"rubric leaf {lid}: {rec.get('error')}")
            if rec.get("screenshots_unavailable") and sides:
                return InfraError(
                    f"rubric leaf {lid} raised ScreenshotsUnavailableError although slides were rendered "
                    f"({rec.get('error')}): a slide image it needs is missing"
                )
        return None

    @staticmethod
    def _metrics(
        score: float, records: dict[str, dict[str, Any]], tree: RubricTree, semantics: str
    ) -> dict[str, Any]:
        leaves = tree.leaves()
        scores = [float(records.get(leaf.node_id, {}).get("score", 0.0)) for leaf in leaves]
        return {
            "semantics": semantics,
            "score": score,
            "success": score == 1.0,
            "leaves": len(leaves),
            "leaves_passed": sum(1 for s in scores if s >= 1.0),
            "leaves_failed": sum(1 for s in scores if s < 1.0),
            "leaf_errors": sum(1 for leaf in leaves if records.get(leaf.node_id, {}).get("error")),
            "model_calls": sum(len(records.get(leaf.node_id, {}).get("model_calls", [])) for leaf in leaves),
        }

    @staticmethod
    def _explanation(scored: dict[str, Any], records: dict[str, dict[str, Any]], client: Any) -> str:
        text = str(scored.get("reason", ""))
        errors = sorted(lid for lid, r in records.items() if r.get("error"))
        if errors:
            text += (
                f"\n{len(errors)} leaf(s) raised and scored 0: {', '.join(errors)} "
                "(tracebacks in rubric.json)."
            )
        refused = [
            lid
            for lid, r in records.items()
            if any("no model is configured" in str(c.get("error")) for c in r.get("model_calls", []))
        ]
        if client is None and refused:
            text += (
                f"\nLeaves {', '.join(sorted(refused))} called llm_call/vlm_call "
                "but the judge has no model configured."
            )
        return text

    @staticmethod
    def _ai_rubric_form(tree: RubricTree, scored: dict[str, Any]) -> dict[str, Any]:
        """The scored tree in ai-rubric's ``to_dict`` form (PPT-Eval's ``scored_rubric.json``)."""

        def convert(node: RubricNode, s: dict[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = {
                "name": node.name,
                "description": node.description,
                "is_critical": node.is_critical,
                "metadata": node.metadata,
            }
            if isinstance(node.scorer, FunctionScorer):
                out["scorer"] = {"type": "function", "function_code": node.scorer.code}
            elif isinstance(node.scorer, LLMScorer):
                out["scorer"] = {
                    "type": "llm",
                    "system_prompt": node.scorer.system_prompt,
                    "user_prompt": node.scorer.user_prompt,
                }
            else:
                out["children"] = [convert(c, sc) for c, sc in zip(node.children, s["children"], strict=True)]
            out["score"] = s["score"]
            out["reason"] = s.get("reason", "")
            return out

        return {"root": convert(tree.root, scored), "metadata": tree.metadata}
