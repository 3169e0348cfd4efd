"""The rubric judge's two semantics: PPT-Eval's published ones (``"ppteval"``) and pptarena's
(``"corrected"``).

``semantics = "ppteval"`` reproduces what PPT-Eval's grader does with a rubric (docs/judges-rubric.md
has the table, one row per difference):

* ``ppt_diff`` is :func:`pptarena.deck.ppteval_published.published_diff` (PPT-Eval's
  ``compare_files``, oddities included);
* screenshots exist only when some leaf's code contains ``vlm_call``; then a deck with no slide
  image (no slides, or unreadable) makes the whole task score 0, as PPT-Eval's
  ``ScreenshotsUnavailableError`` / conversion error does;
* the first raising leaf aborts the tree: the task scores 0.0 and fails, and later leaves do not run;
* an unreadable prediction deck is scored (its ``ppt_diff`` side is empty), not refused.

``"auto"`` (the option's default) picks ``"ppteval"`` for tasks whose metadata carries
``rubric_semantics = "ppteval"`` (the ``ppteval`` dataset tags its tasks so) and ``"corrected"`` otherwise.
"""

from __future__ import annotations

from typing import Any

TAG = "rubric_semantics"
SEMANTICS = ("ppteval", "corrected")


def resolve_semantics(option: str, task: Any) -> str:
    """The semantics to use for ``task`` given the judge option (``auto`` reads the task's tag)."""
    if option in SEMANTICS:
        return option
    tagged = (getattr(task, "metadata", None) or {}).get(TAG)
    return "ppteval" if tagged == "ppteval" else "corrected"


def screenshot_mode(option: str, semantics: str) -> str:
    """The screenshot gate: the option's value, or the semantics' own (``auto``)."""
    if option != "auto":
        return option
    return "ppteval" if semantics == "ppteval" else "referenced"


def unavailable_screenshots(evidence: Any, roles: list[str]) -> str | None:
    """Why PPT-Eval would have no slide images for one of ``roles`` (None when every deck has slides).

    PPT-Eval renders both decks once the gate opens and raises ``ScreenshotsUnavailableError``
    (or a conversion error for an unreadable deck) when a side has no image; its grader scores that 0.
    """
    from pptarena.deck import DeckError, slide_ids

    for role in roles:
        path = evidence.path(role)
        try:
            count = len(slide_ids(path)) if path is not None else 0
        except DeckError as exc:
            return f"the {role} deck cannot be rendered ({exc})"
        if count == 0:
            return (
                f"ScreenshotsUnavailableError: Visual rubric requires slide screenshots, but the {role} "
                "deck has no slides"
            )
    return None


def first_error(order: list[str], records: dict[str, dict[str, Any]]) -> str | None:
    """The first leaf (in tree order) whose record holds an error: the one that aborts the tree."""
    return next((lid for lid in order if records.get(lid, {}).get("error")), None)


def mark_not_run(order: list[str], records: dict[str, dict[str, Any]], culprit: str) -> None:
    """Give the leaves after ``culprit`` a 'not run' record (PPT-Eval never evaluates them)."""
    for lid in order:
        if lid not in records:
            records[lid] = {
                "score": 0.0,
                "reason": f"not run: leaf {culprit} raised and aborted the tree",
                "not_run": True,
            }
