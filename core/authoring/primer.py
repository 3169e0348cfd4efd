"""The rubric-leaf context API, as taught to a model drafting a rubric (``arena author rubric``).

The text restates what docs/datasets.md ("Writing a rubric") and the rubric judge
(plugins/judges/rubric*.py) define. Field lists of the ``ppt_diff`` items are read from
:mod:`pptarena.deck.ppteval` when the primer is built, so they cannot drift; the rest
(context names, screenshot fields, helper signatures) is checked against the rubric judge by
``tests/authoring/test_author_primer.py``.
"""

from __future__ import annotations

from dataclasses import fields

from pptarena.authoring.lint import CONTEXT_NAMES, PPT_DIFF_ATTRIBUTES

#: Fields of the screenshot items (the rubric judge's ``SlideScreenshot``).
SCREENSHOT_FIELDS: tuple[str, ...] = ("slide_number", "image_path", "slide_id")


def _field_list(cls: type) -> str:
    return ", ".join(f"{f.name}" for f in fields(cls))


def context_api_primer() -> str:
    """The context API text (names, types, semantics, rules) for rubric-drafting prompts."""
    from pptarena.deck.ppteval import AnimationEffect, Slide, SlideTransition

    lists = ", ".join(PPT_DIFF_ATTRIBUTES[:9])
    return f"""\
# How a rubric leaf runs

A function leaf is Python source defining `def compute_score() -> tuple[str, float]` with NO
parameters. The judge runs `exec(code, context, namespace)` and then calls `compute_score()`.
The context holds exactly these seven names, readable as globals inside compute_score:
{", ".join(CONTEXT_NAMES)}.

- `original_ppt_path`, `modified_ppt_path`: str paths of the original deck and of the edited deck
  being judged. Open them INSIDE compute_score: `from pptx import Presentation;
  prs = Presentation(modified_ppt_path)`. python-pptx 1.0 is installed; so are re, math,
  difflib, zipfile, lxml, PIL.
- `ppt_diff`: the slide/animation/transition diff from the original to the edited deck. It has
  exactly nine list attributes: {lists}. Items of added_*/removed_* are objects; items of
  modified_* are `(old, new)` tuples.
  * slide items (Slide): {_field_list(Slide)}. `slide_id` is the slide's p:sldId as a STRING
    (e.g. "256"), stable across edits; `slide_number` is the 1-based position in its own deck.
    A slide is "modified" when anything on it changed (text, shapes, notes, layout, position).
  * animation items (AnimationEffect): {_field_list(AnimationEffect)}. `slide_id` is the
    slide's sldId string; times are seconds; effect_type is e.g. "fade_in", "fly_in_from_left",
    "appear", "wipe_from_left", "zoom_in" (entrance), "fade_out", "disappear" (exit), emphasis
    effects keep their own name; trigger is "click", "with_previous" or "after_previous".
  * transition items (SlideTransition): {_field_list(SlideTransition)}. transition_type is the
    OOXML element name, e.g. "fade", "push", "wipe", "none".
  ppt_diff has NO other attributes and no methods except to_dict(); to find what changed
  inside a slide, open both decks with python-pptx and compare shapes.
- `original_ppt_screenshots`, `modified_ppt_screenshots`: lists of slide images, one per slide,
  in slide order, each with attributes {", ".join(SCREENSHOT_FIELDS)} (slide_number is 1-based,
  image_path is a PNG file path). A list is filled only when some leaf of the rubric mentions
  its name; otherwise it is empty.
- `llm_call(prompt, temperature=0.7, max_tokens=None) -> str` and
  `vlm_call(prompt, images, temperature=0.7, max_tokens=None) -> str` ask the judge's model;
  `images` is a list of image_path strings. Ask for a one-word answer (YES/NO) and parse it
  with `.strip().upper().startswith("YES")`. Use vlm_call only for what python-pptx cannot
  check (overlap, legibility, visual balance); wrap it in try/except and return a low score
  with a reason if it fails.
- `from ppteval.verify.ppt.verifier import ScreenshotsUnavailableError` is importable; raise it
  only when a slide image you need is missing.

# Rules for leaf code

- Put every import and helper INSIDE compute_score: names defined at the top level of the code
  are invisible to it. Use no other global names than the seven above.
- Return `(reason: str, score: float)` with 0 <= score <= 1 (reason first).
- Catch the failures you expect (missing slide, shape without text frame) and return a score
  of 0.0 with a reason: a leaf that raises scores 0 and is reported as a crash.
- Identify slides and shapes robustly: by title text, slide_id or shape name rather than by
  a position that the edit itself may change.
- Compare with tolerances where the instruction is not exact (positions within ~0.05 inch,
  case-insensitive text, colours as 6-digit uppercase hex like "1F3864").

# How scores combine

A parent whose children mix critical and non-critical nodes scores
max(0, mean(critical) - 0.3 * (1 - mean(non_critical))); otherwise the plain mean of its
children. A task succeeds only with a root score of exactly 1.0. Make the checks of what the
instruction asks for CRITICAL, and the "nothing else changed" checks NON-CRITICAL. A good
rubric scores the reference (target) deck 1.0 on every leaf and the unchanged original deck
0 on every critical leaf.
"""


RUBRIC_FORMAT = (
    """\
# Rubric JSON format (PPT-Eval / ai-rubric)

{"root": NODE, "metadata": {"task": "<the instruction>"}}
NODE (parent) = {"name": str (unique in the tree), "description": str, "is_critical": bool,
                 "metadata": {}, "children": [NODE, ...] (non-empty)}
NODE (leaf)   = {"name": str, "description": str, "is_critical": bool, "metadata": {},
                 "scorer": {"type": "function", "function_code": "<python source>"}}

Example leaf (critical):
{"name": "title_is_dark_blue", "description": "Every title run on slide 2 is #1F3864.",
 "is_critical": true, "metadata": {},
"""
    ' "scorer": {"type": "function", "function_code": "def compute_score() -> tuple[str, float]:\\n'
    "    from pptx import Presentation\\n"
    "    prs = Presentation(modified_ppt_path)\\n"
    "    if len(prs.slides) < 2 or prs.slides[1].shapes.title is None:\\n"
    "        return ('slide 2 has no title', 0.0)\\n"
    "    runs = [r for p in prs.slides[1].shapes.title.text_frame.paragraphs "
    "for r in p.runs if r.text.strip()]\\n"
    "    try:\\n"
    "        ok = bool(runs) and all(str(r.font.color.rgb) == '1F3864' for r in runs)\\n"
    "    except AttributeError:\\n"
    "        ok = False\\n"
    "    return ('title is #1F3864', 1.0) if ok else ('title is not #1F3864', 0.0)\\n"
    '"}}\n'
)
