"""``arena author rubric``: a model drafts a PPT-Eval rubric tree for a task; we validate it.

The prompt gives the instruction, a brief of the original deck, the edits from the original to
the target deck when there is one, and the context API a leaf runs with
(:func:`pptarena.authoring.primer.context_api_primer`). A draft passes when:

1. it is JSON in the rubric format and loads (:func:`pptarena.authoring.lint.lint_rubric`);
2. every function leaf compiles, defines ``compute_score()`` and reads no undefined name and
   no unknown ``ppt_diff`` attribute;
3. it has a critical leaf, only function leaves, some leaf reads the edited deck, and every
   leaf calling ``vlm_call`` mentions a screenshot list;
4. when the task's decks can be run (``checker`` given): ``arena author check``'s rules pass
   on the original, the target and any partial decks (no crash, target 1.0, original 0...).

Problems are fed back to the model for a bounded number of attempts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pptarena.authoring.check import RubricChecker
from pptarena.authoring.context import deck_brief, diff_brief
from pptarena.authoring.lint import PREDICTION_NAMES, lint_rubric
from pptarena.authoring.llm import DraftResult, ReplyParseError, draft_with_retries, extract_json
from pptarena.authoring.primer import RUBRIC_FORMAT, context_api_primer
from pptarena.models import Message, ModelClient
from pptarena.types import Task

SYSTEM_INTRO = """\
You write evaluation rubrics for PowerPoint editing tasks, in PPT-Eval's rubric-tree format.
An agent was asked to edit a deck; your rubric decides, by running Python leaf functions on
the agent's result, whether the edit was done exactly as asked. Write 2-6 leaves:
- CRITICAL leaves check each thing the instruction asks for, precisely (the exact text,
  colour, position, order, count...), on the slides and shapes concerned;
- NON-CRITICAL leaves check that nothing else changed (other slides, other shapes, text).
Each leaf checks one thing. Prefer python-pptx checks; use vlm_call with slide screenshots
only for properties python-pptx cannot decide.
Reply with the rubric JSON only (one object with "root" and "metadata").
"""


def system_prompt() -> str:
    """The system prompt: what a rubric is for, the context API and the JSON format."""
    return f"{SYSTEM_INTRO}\n{context_api_primer()}\n{RUBRIC_FORMAT}"


def build_messages(
    task: Task, original_summary: dict[str, Any], diff_text: str | None, *, brief_chars: int = 20_000
) -> list[Message]:
    """System and user messages asking for a rubric of ``task``."""
    parts = [f"Instruction given to the agent:\n{task.instruction}"]
    if task.style_target:
        parts.append(f"Detailed description of the intended result (style target):\n{task.style_target}")
    parts.append(f"The original deck:\n{deck_brief(original_summary, max_chars=brief_chars)}")
    if diff_text is not None:
        parts.append(
            "The reference solution (target deck) differs from the original by exactly these edits; "
            f"your rubric must score it 1.0:\n{diff_text}"
        )
    else:
        parts.append("There is no reference deck: derive the checks from the instruction.")
    return [Message.system(system_prompt()), Message.user("\n\n".join(parts))]


def _as_rubric(data: Any, instruction: str) -> Any:
    if isinstance(data, dict) and "root" not in data and ("children" in data or "scorer" in data):
        data = {"root": data}
    if isinstance(data, dict) and "root" in data:
        meta = data.get("metadata")
        data["metadata"] = meta if isinstance(meta, dict) else {}
        data["metadata"].setdefault("task", instruction)
    return data


def authoring_problems(rubric: dict[str, Any]) -> list[str]:
    """Schema/compile/name problems plus the drafting rules (3. in the module docstring)."""
    lint = lint_rubric(rubric)
    problems = lint.all_problems()
    if lint.problems:
        return problems
    if not any(leaf.is_critical for leaf in lint.leaves):
        problems.append(
            "no leaf is critical: mark the checks of what the instruction asks for is_critical=true"
        )
    for leaf in lint.leaves:
        if leaf.scorer != "function":
            problems.append(f"{leaf.label()}: use a function scorer (type 'function' with function_code)")
        elif "vlm_call" in leaf.code and not any(
            n in leaf.code for n in ("original_ppt_screenshots", "modified_ppt_screenshots")
        ):
            problems.append(
                f"{leaf.label()}: calls vlm_call but never reads "
                "original_ppt_screenshots / modified_ppt_screenshots"
            )
    unreadable = any(leaf.problems for leaf in lint.leaves)  # their names are unknown: judge the rest later
    if not unreadable and not any(set(leaf.context_names) & set(PREDICTION_NAMES) for leaf in lint.leaves):
        problems.append(
            "no leaf reads the edited deck (modified_ppt_path, ppt_diff or modified_ppt_screenshots)"
        )
    return problems


def parse_rubric_reply(reply: str, instruction: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The rubric in a reply and its static problems (:func:`authoring_problems`)."""
    try:
        data = _as_rubric(extract_json(reply), instruction)
    except ReplyParseError as exc:
        return None, [str(exc)]
    if not isinstance(data, dict):
        return None, [f"the reply must be a JSON object with 'root', got {type(data).__name__}"]
    return data, authoring_problems(data)


@dataclass
class RubricDraft:
    """A drafted rubric: the result of the drafting loop and, when run, the last check."""

    result: DraftResult
    check: Any = None  # pptarena.authoring.check.RubricCheck of the last draft, when decks were run

    @property
    def rubric(self) -> dict[str, Any] | None:
        """The last draft (valid or not), or None when no JSON could be parsed."""
        return self.result.value

    @property
    def ok(self) -> bool:
        """True when the last draft passed every check."""
        return self.result.ok


def draft_rubric(
    client: ModelClient,
    task: Task,
    *,
    checker: RubricChecker | None = None,
    folder: Any = None,
    attempts: int = 3,
    params: dict[str, Any] | None = None,
    brief_chars: int = 20_000,
) -> RubricDraft:
    """Draft, validate and (with ``checker``) run a rubric for ``task``; see the module docstring."""
    from pptarena.deck import diff_decks, summarize

    original = summarize(task.original)
    diff = diff_decks(original, task.target) if task.target is not None else None
    messages = build_messages(
        task, original, diff_brief(diff) if diff is not None else None, brief_chars=brief_chars
    )
    draft = RubricDraft(DraftResult(None, []))

    def validate(reply: str) -> tuple[Any, list[str]]:
        rubric, problems = parse_rubric_reply(reply, task.instruction)
        draft.check = None
        if rubric is None or problems or checker is None:
            return rubric, problems
        (check,) = checker.check([(dataclasses.replace(task, rubric=rubric), folder)])
        draft.check = check
        if "error" in check.flags:
            return rubric, []  # the check could not run (renderer/model): not the draft's fault; reported
        return rubric, list(check.problems)

    draft.result = draft_with_retries(
        client, messages, validate, what="rubric", attempts=attempts, params=params
    )
    return draft
