"""Prompt text and evidence trimming for the ``dual`` judge (PPTArena's IF/VQ protocol).

PPTArena's own judge prompts were never published (see the format reference §3.4); these are
written for this harness, keeping what is known: a 0-5 integer scale per criterion with a reason,
the instruction plus the per-task *style target*, structural diffs for instruction following, and
slide renders for visual quality. The anchors follow the PPTPilot-era judge lineage.

Every call puts its task-stable part first (system prompt, then a user message holding what all
predictions of a task share: instruction, style target, the target's edits and the slides they
touch, for VQ the target's visibly changed slides), marked ``cache_prefix`` so providers can cache
it across the agents of a task; the prediction's part follows in a second user message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

EMU_PER_PT = 12700

PROMPT_VERSION = "2"
"""Version of the prompts' text and layout, recorded in the verdict's details.

1: one user message per call. 2: the task-stable part first, in its own user message marked
``cache_prefix``; VQ shows the target's visibly changed slides once in that part (issue 32).
The judge's fingerprint hashes this module's source, so any change here also changes it."""

IF_SYSTEM = """You are an exacting judge of PowerPoint edits. An agent was asked to edit a deck. You are \
given the instruction, a style target describing the intended result in detail, the structural edits the \
human reference (target) deck makes to the original, the edits the agent's prediction makes, the \
differences still remaining between prediction and target, and the relevant slides of the three decks.

Score INSTRUCTION FOLLOWING from 0 to 5 (integer):
5 = every requested change is made as specified (semantic equivalents and small layout tolerances are \
fine unless the instruction is exact), and nothing unrequested was changed
4 = the main goal is met; minor details are missed or slightly off
3 = partially done; some key elements are missing or wrong
2 = related to the request but misses its core
1 = attempted but fundamentally wrong, or the deck was damaged
0 = the instruction was ignored (no relevant change)

The target deck is one correct answer, not the only one: judge against the instruction and the style \
target, using the target's edits as strong guidance. Unrequested changes (collateral damage) lower the score.
Answer with only a JSON object: {"score": <integer 0-5>, "reason": "<one or two sentences>"}"""

VQ_SYSTEM = """You are an exacting judge of slide design. You see rendered slides of a PowerPoint deck \
after an agent edited it (labelled PREDICTION) and, when available, the same slides of a human reference \
edit (labelled TARGET) for comparison.

Score the VISUAL QUALITY of the PREDICTION slides from 0 to 5 (integer):
5 = polished and professional: clean layout and alignment, readable text, nothing overflows or overlaps, \
consistent fonts and colours, images undistorted
4 = good, with minor blemishes
3 = acceptable but with clear problems (crowding, misalignment, inconsistent styling)
2 = poor: overflow, overlap or distortion hurts readability
1 = badly broken: content unreadable, missing or garbled
0 = unusable or blank

Judge how the prediction looks, not whether it matches the target exactly.
Answer with only a JSON object: {"score": <integer 0-5>, "reason": "<one or two sentences>"}"""

RETRY_TEXT = """Your previous answer could not be read ({problem}). Reply again with only a JSON object \
of the form {{"score": <integer 0-5>, "reason": "<one or two sentences>"}} and nothing else."""


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (head and tail kept, with a marker saying how much was cut)."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 80)
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :] if keep // 3 else ""
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters omitted ...]\n{tail}"


def _pt(v: Any) -> Any:
    return round(v / EMU_PER_PT, 1) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def _color(c: Any) -> Any:
    if isinstance(c, dict):
        return c.get("rgb") or c.get("theme")
    return c


def _runs(paragraph: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in paragraph.get("runs") or []:
        if r.get("break"):
            continue
        item: dict[str, Any] = {"text": str(r.get("text", ""))[:120]}
        for key in ("font", "size", "bold", "italic", "underline"):
            if r.get(key) not in (None, False):
                item[key] = r[key]
        if r.get("color") is not None:
            item["color"] = _color(r["color"])
        if r.get("hyperlink"):
            item["hyperlink"] = r["hyperlink"]
        out.append(item)
    return out


def compact_shape(shape: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """The parts of a summary shape a judge needs: identity, box (pt), fill, text with run formatting."""
    out: dict[str, Any] = {"name": shape.get("name"), "kind": shape.get("kind")}
    for key in ("x", "y", "cx", "cy"):
        if shape.get(key) is not None:
            out[key + "_pt"] = _pt(shape[key])
    if shape.get("rot"):
        out["rot"] = shape["rot"]
    fill = shape.get("fill")
    if isinstance(fill, dict) and fill.get("type") not in (None, "none"):
        out["fill"] = {"type": fill.get("type"), "color": _color(fill.get("color"))}
    if shape.get("hidden"):
        out["hidden"] = True
    paras = shape.get("paragraphs") or []
    if any(p.get("text") for p in paras):
        out["paragraphs"] = [
            {
                k: v
                for k, v in (
                    ("level", p.get("level") or None),
                    ("align", p.get("align")),
                    ("text", str(p.get("text", ""))[:400]),
                    ("runs", _runs(p)),
                )
                if v
            }
            for p in paras[:40]
        ]
    for key in ("table", "chart", "picture", "smartart"):
        if shape.get(key):
            out[key] = shape[key]
    if shape.get("children") and depth < 4:
        out["children"] = [compact_shape(c, depth + 1) for c in shape["children"][:60]]
    return out


def compact_slides(summary: dict[str, Any], numbers: Iterable[int]) -> list[dict[str, Any]]:
    """Compact forms of the slides ``numbers`` (1-based) of a deck summary, in deck order."""
    slides = summary.get("slides") or []
    out = []
    for n in sorted(set(numbers)):
        if not 1 <= n <= len(slides):
            continue
        s = slides[n - 1]
        item: dict[str, Any] = {"slide": n, "title": s.get("title"), "layout": s.get("layout")}
        if s.get("hidden"):
            item["hidden"] = True
        bg = s.get("background")
        if isinstance(bg, dict):
            item["background"] = {"type": bg.get("type"), "color": _color(bg.get("color"))}
        for key in ("transition", "animations"):
            if s.get(key):
                item[key] = s[key]
        if s.get("notes"):
            item["notes"] = str(s["notes"])[:600]
        item["shapes"] = [compact_shape(sh) for sh in (s.get("shapes") or [])[:80]]
        out.append(item)
    return out


def summary_block(
    label: str, summary: dict[str, Any], numbers: Iterable[int], limit: int, note: str = ""
) -> str:
    """One deck's relevant slides as bounded JSON text under a heading (``note`` ends the heading)."""
    numbers = sorted(set(numbers))
    size = summary.get("slide_size") or {}
    head = (
        f"### {label} deck: {len(summary.get('slides') or [])} slides, "
        f"{_pt(size.get('cx'))}x{_pt(size.get('cy'))} pt; showing slides {numbers or 'none'}"
        + (f" ({note})" if note else "")
    )
    body = json.dumps(
        compact_slides(summary, numbers), ensure_ascii=False, separators=(",", ":"), default=str
    )
    return head + "\n" + bounded(body, limit)


IF_ANSWER = 'Score instruction following. Answer with only {"score": <0-5>, "reason": "..."}.'
"""The last line of an IF call's prediction message (scripted rules match "Score instruction following")."""

VQ_ANSWER = (
    'Score the visual quality of the PREDICTION slides. Answer with only {"score": <0-5>, "reason": "..."}.'
)
"""Ends the text opening a VQ call's prediction message (rules match "Score the visual quality")."""


def if_stable_prompt(
    instruction: str, style_target: str | None, target_edits: str | None, target_summaries: list[str]
) -> str:
    """The task-stable user message of the instruction-following call (the same for every prediction).

    Instruction, style target, the edits the target makes (``None``: the task has no target) and
    the summaries of the original and target slides those edits touch.
    """
    parts = [
        f"## Instruction\n{instruction.strip()}",
        f"## Style target\n{(style_target or '(none given)').strip()}",
    ]
    if target_edits is not None:
        parts.append("## Edits the TARGET (human reference) makes to the original\n" + target_edits)
        parts.append(
            "## Slides the TARGET's edits touch (compact summaries; positions in points)\n"
            + "\n\n".join(target_summaries)
        )
    else:
        parts.append(
            "## Edits the TARGET makes\n(no target deck for this task: judge against the instruction)"
        )
    return "\n\n".join(parts)


def if_prediction_prompt(prediction_edits: str, remaining: str | None, summaries: list[str]) -> str:
    """The prediction's user message of the instruction-following call (after the stable one).

    The prediction's edits, the differences remaining to the target (``None``: no target), the
    summaries of the slides the prediction's edits touch, and the request for a score.
    """
    parts = ["## Edits the PREDICTION (agent) makes to the original\n" + prediction_edits]
    if remaining is not None:
        parts.append("## Differences remaining from PREDICTION to TARGET\n" + remaining)
    parts.append(
        "## Slides the PREDICTION's edits touch, and the PREDICTION's versions of the slides shown above "
        "(compact summaries; positions in points)\n" + "\n\n".join(summaries)
    )
    parts.append(IF_ANSWER)
    return "\n\n".join(parts)


def vq_stable_intro(instruction: str, references: list[int]) -> str:
    """The text that opens the task-stable message of a visual-quality call.

    ``references``: the TARGET slides shown right after it (the slides the target changed
    visibly), each image preceded by its label; empty when none are shown.
    """
    lines = [f"The agent was asked: {instruction.strip()}"]
    if references:
        listed = ", ".join(str(n) for n in references)
        lines.append(
            f"For reference, these are the slides a human reference edit of the same deck (the TARGET) "
            f"changed visibly, as they look in the TARGET deck: slides {listed}. "
            "The PREDICTION slides to score follow."
        )
    return "\n".join(lines)


def vq_chunk_intro(chunk: int, chunks: int, slides: list[dict[str, Any]], with_reference: bool) -> str:
    """The text that opens the prediction's message of a visual-quality call (images follow, each
    preceded by its label).
    """
    listed = ", ".join(str(s["prediction"]) for s in slides)
    lines = [f"Below are PREDICTION slides {listed} (part {chunk} of {chunks} of the slides that changed)."]
    if with_reference:
        lines.append(
            "Each is followed by the same slide of the TARGET deck, when the target has it, unless that "
            "TARGET slide is among the reference slides above: the PREDICTION slide's label then names it."
        )
    lines.append(VQ_ANSWER)
    return "\n".join(lines)


def vq_prediction_label(number: int, target_above: int | None) -> str:
    """The label before a PREDICTION slide's image (``target_above``: its TARGET slide, shown above)."""
    if target_above is None:
        return f"PREDICTION slide {number}:"
    return f"PREDICTION slide {number} (its TARGET version is TARGET slide {target_above}, shown above):"


def target_label(number: int) -> str:
    """The label before a TARGET slide's image."""
    return f"TARGET slide {number} (reference):"


__all__ = [
    "IF_ANSWER",
    "IF_SYSTEM",
    "PROMPT_VERSION",
    "RETRY_TEXT",
    "VQ_ANSWER",
    "VQ_SYSTEM",
    "bounded",
    "compact_shape",
    "compact_slides",
    "if_prediction_prompt",
    "if_stable_prompt",
    "summary_block",
    "target_label",
    "vq_chunk_intro",
    "vq_prediction_label",
    "vq_stable_intro",
]
