"""What the authoring prompts show a model about decks: trimmed summaries, edits, slide images.

Everything is bounded: :func:`deck_brief` keeps the slide list, shapes, text, tables and charts
of the deck engine's summary (:func:`pptarena.deck.summarize`) within a character budget;
:func:`diff_brief` is the structural diff's text form, cut at a budget; :func:`slide_images`
renders a deck through the configured renderer and returns at most ``limit`` images.
Also here: :func:`key_terms`, the words of an instruction that a rubric or style target
should mention (used by ``arena author check`` and the style-target validation).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pptarena.deck import slide_flags
from pptarena.models import ImagePart

EMU_PER_INCH = 914400
DEFAULT_BRIEF_CHARS = 24_000
DEFAULT_DIFF_CHARS = 12_000
MAX_TEXT_PER_SHAPE = 300
MAX_TABLE_ROWS = 8

STOPWORDS = frozenset(
    """a about above after all also an and any are as at be because been before below between both but by can
    change changed changes could deck do does each every few first for from have into is it its keep last like
    make makes more most must new next not of on only or other others our out over own please presentation
    same set should slide slides so some such than that the their them then there these they this those to
    under up use using very was were what when where which while will with within would you your add adds
    added apply ensure""".split()
)


def _inches(value: Any) -> str:
    return f"{value / EMU_PER_INCH:.2f}" if isinstance(value, int | float) else "?"


def _clip(text: str, limit: int) -> str:
    text = " / ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shape_lines(shape: dict[str, Any], indent: str) -> list[str]:
    kind = shape.get("kind", "shape")
    head = f"{indent}- {kind} {shape.get('name')!r} (id {shape.get('id')})"
    if shape.get("x") is not None:
        head += (
            f" at x={_inches(shape.get('x'))} y={_inches(shape.get('y'))} "
            f"w={_inches(shape.get('cx'))} h={_inches(shape.get('cy'))} in"
        )
    fill = (shape.get("fill") or {}).get("color") if isinstance(shape.get("fill"), dict) else None
    if isinstance(fill, dict) and fill.get("rgb"):
        head += f" fill #{fill['rgb']}"
    lines = [head]
    text = shape.get("text")
    if text:
        lines.append(f"{indent}    text: {_clip(text, MAX_TEXT_PER_SHAPE)}")
    table = shape.get("table")
    if isinstance(table, dict):
        rows = table.get("cells") or []
        for row in rows[:MAX_TABLE_ROWS]:
            cells = [c.get("text", "") if isinstance(c, dict) else str(c) for c in row]
            lines.append(f"{indent}    | " + " | ".join(_clip(c, 40) for c in cells))
        if len(rows) > MAX_TABLE_ROWS:
            lines.append(f"{indent}    ({len(rows) - MAX_TABLE_ROWS} more rows)")
    chart = shape.get("chart")
    if isinstance(chart, dict):
        series = [
            f"{s.get('name')}={s.get('values')}" for s in chart.get("series") or [] if isinstance(s, dict)
        ]
        cats = next((s.get("categories") for s in chart.get("series") or [] if isinstance(s, dict)), None)
        lines.append(
            f"{indent}    chart {chart.get('types')} title={chart.get('title')!r} categories={cats} "
            f"series: {_clip('; '.join(series), MAX_TEXT_PER_SHAPE)}"
        )
    for child in shape.get("shapes") or []:
        lines += _shape_lines(child, indent + "  ")
    return lines


def deck_brief(summary: dict[str, Any], *, max_chars: int = DEFAULT_BRIEF_CHARS) -> str:
    """A compact text description of a deck summary, at most ``max_chars`` characters.

    One block per slide (number, sld_id, title, layout, hidden, transition, animations, notes)
    with its shapes (kind, name, id, position, text, table rows, chart series). When the
    budget runs out, the remaining slides are listed by title only.
    """
    size = summary.get("slide_size") or {}
    slides = summary.get("slides") or []
    header = (
        f"Deck {summary.get('file')}: {len(slides)} slides, "
        f"{_inches(size.get('cx'))} x {_inches(size.get('cy'))} in"
    )
    out = [header]
    used = len(header)
    for index, slide in enumerate(slides):
        flags = slide_flags(slide)
        block = [
            f"Slide {slide.get('number')} (sld_id {slide.get('sld_id')}, layout {slide.get('layout')!r})"
            f" title={slide.get('title')!r}" + (f" [{', '.join(flags)}]" if flags else "")
        ]
        for shape in slide.get("shapes") or []:
            block += _shape_lines(shape, "  ")
        if slide.get("notes"):
            block.append(f"  notes: {_clip(slide['notes'], 200)}")
        text = "\n".join(block)
        if used + len(text) + 1 > max_chars:
            rest = ", ".join(f"{s.get('number')}: {s.get('title')!r}" for s in slides[index:])
            out.append(
                _clip(f"[budget reached; remaining slides by title: {rest}]", max(200, max_chars - used))
            )
            break
        out.append(text)
        used += len(text) + 1
    return "\n".join(out)


def diff_brief(diff: Any, *, max_chars: int = DEFAULT_DIFF_CHARS) -> str:
    """The text form of a :class:`pptarena.deck.DeckDiff`, cut at ``max_chars``."""
    text = diff.to_text()
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 60] + f"\n[... diff cut: {len(text) - max_chars + 60} more characters]"


def changed_slide_numbers(diff: Any) -> list[int]:
    """Slide numbers in the *after* deck that the diff touches (added, moved or edited)."""
    numbers: list[int] = []
    for edit in diff.edits:
        n = edit.get("slide")
        if n is not None and edit.get("kind") != "slide_removed" and n not in numbers:
            numbers.append(int(n))
    return sorted(numbers)


def slide_images(
    renderer: Any, deck: Path, out_dir: Path, *, numbers: list[int] | None = None, limit: int = 8
) -> list[tuple[int, ImagePart]]:
    """``(slide number, image)`` for the chosen slides of ``deck`` (all when ``numbers`` is None),
    at most ``limit``.
    """
    if renderer is None or limit <= 0:
        return []
    images = renderer.render(Path(deck), Path(out_dir))
    chosen = [img for img in images if numbers is None or img.number in numbers][:limit]
    return [(img.number, ImagePart.from_path(img.path)) for img in chosen]


# --------------------------------------------------------------------------- instruction terms

_QUOTED = re.compile(r"[\"“'‘]([^\"”'’]{2,80})[\"”'’]")
_HEX = re.compile(r"#?\b([0-9A-Fa-f]{6})\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?%?")
_WORD = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'-]{3,}")


def stem(word: str) -> str:
    """A crude stem: the word without its last three letters, keeping at least four."""
    word = word.lower()
    return word[: max(4, len(word) - 3)]


def key_terms(instruction: str) -> list[str]:
    """Lower-case terms a check of ``instruction`` should mention: quoted text, hex colours, numbers,
    stems of content words.
    """
    terms: list[str] = []

    def add(term: str) -> None:
        term = term.strip().lower()
        if term and term not in terms:
            terms.append(term)

    for quoted in _QUOTED.findall(instruction):
        add(quoted)
    for colour in _HEX.findall(instruction):
        if any(c.isalpha() for c in colour) or instruction.count("#"):
            add(colour)
    for word in _WORD.findall(instruction):
        if word.lower() not in STOPWORDS:
            add(stem(word))
    for number in _NUMBER.findall(instruction):
        if len(number) > 1 or "%" in number:
            add(number)
    return terms


def mentions_any(text: str, terms: list[str]) -> list[str]:
    """The ``terms`` found (case-insensitively) in ``text``."""
    low = text.lower()
    return [t for t in terms if t in low]
