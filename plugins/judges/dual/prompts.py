"""Prompt text and evidence trimming for the ``dual`` judge (PPTArena's IF/VQ protocol).

PPTArena's own judge prompts were never published (see the format reference §3.4); these are
written for this harness, keeping what is known: a 0-5 integer scale per criterion with a reason,
the instruction plus the per-task *style target*, structural diffs for instruction following, and
slide renders for visual quality. The anchors follow the PPTPilot-era judge lineage.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

EMU_PER_PT = 12700

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


def summary_block(label: str, summary: dict[str, Any], numbers: Iterable[int], limit: int) -> str:
    """One deck's relevant slides as bounded JSON text under a heading."""
    numbers = sorted(set(numbers))
    size = summary.get("slide_size") or {}
    head = (
        f"### {label} deck: {len(summary.get('slides') or [])} slides, "
        f"{_pt(size.get('cx'))}x{_pt(size.get('cy'))} pt; showing slides {numbers or 'none'}"
    )
    body = json.dumps(
        compact_slides(summary, numbers), ensure_ascii=False, separators=(",", ":"), default=str
    )
    return head + "\n" + bounded(body, limit)


def if_prompt(
    instruction: str,
    style_target: str | None,
    target_edits: str | None,
    prediction_edits: str,
    remaining: str | None,
    summaries: list[str],
) -> str:
    """The user message of the instruction-following call."""
    parts = [
        f"## Instruction\n{instruction.strip()}",
        f"## Style target\n{(style_target or '(none given)').strip()}",
    ]
    if target_edits is not None:
        parts.append("## Edits the TARGET (human reference) makes to the original\n" + target_edits)
    else:
        parts.append(
            "## Edits the TARGET makes\n(no target deck for this task: judge against the instruction)"
        )
    parts.append("## Edits the PREDICTION (agent) makes to the original\n" + prediction_edits)
    if remaining is not None:
        parts.append("## Differences remaining from PREDICTION to TARGET\n" + remaining)
    parts.append("## Relevant slides (compact summaries; positions in points)\n" + "\n\n".join(summaries))
    parts.append('Score instruction following. Answer with only {"score": <0-5>, "reason": "..."}.')
    return "\n\n".join(parts)


def vq_intro(
    instruction: str, chunk: int, chunks: int, slides: list[dict[str, Any]], with_reference: bool
) -> str:
    """The text that opens a visual-quality call (images follow, each preceded by its label)."""
    listed = ", ".join(str(s["prediction"]) for s in slides)
    lines = [
        f"The agent was asked: {instruction.strip()}",
        f"Below are PREDICTION slides {listed} (part {chunk} of {chunks} of the slides that changed).",
    ]
    if with_reference:
        lines.append("Each is followed by the same slide of the TARGET deck, when the target has it.")
    lines.append(
        "Score the visual quality of the PREDICTION slides. "
        'Answer with only {"score": <0-5>, "reason": "..."}.'
    )
    return "\n".join(lines)


__all__ = [
    "IF_SYSTEM",
    "RETRY_TEXT",
    "VQ_SYSTEM",
    "bounded",
    "compact_shape",
    "compact_slides",
    "if_prompt",
    "summary_block",
    "vq_intro",
]
