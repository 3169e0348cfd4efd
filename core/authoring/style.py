"""``arena author style-target``: a model drafts a PPTArena style target from original and target decks.

A style target is the reference answer in words, shown to judges (never to the agent) as
``Instruction: ...\\nStyle Target: ...``. It states the content and style constraints of the
requested change (which slides/objects, exact values, what must not change, tolerances) and
does not retell the slide.

The model gets the instruction, the structural edits original → target, briefs of the
changed slides, and renders of those slides before and after. A draft passes when
(:func:`style_target_problems`):

* it is 40-4000 characters of text (JSON ``{"style_target": "..."}``, or plain text);
* it is grounded in the edit: it mentions a value the edit introduced (new text, colour, number)
  or a key term of the instruction;
* it is not a restatement: at most 40% of its words sit in runs of 4+ words copied from either
  deck (runs holding a value the edit introduced do not count: quoting new values is wanted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptarena.authoring.context import changed_slide_numbers, deck_brief, diff_brief, key_terms, mentions_any
from pptarena.authoring.llm import DraftResult, ReplyParseError, draft_with_retries, extract_json
from pptarena.models import ImagePart, Message, ModelClient
from pptarena.types import Task

MIN_CHARS = 40
MAX_CHARS = 4000
MAX_RESTATED = 0.4
GRAM = 4
_WORDS = re.compile(r"[0-9A-Za-zÀ-ÿ#%$.]+")

SYSTEM_PROMPT = """\
You write the "style target" of a PowerPoint editing task, as in the PPTArena benchmark. A judge
will read "Instruction: <instruction>\\nStyle Target: <your text>" and compare an agent's edited
deck against it, so the style target is the reference answer in words:
- name the slides and objects the change concerns and the exact resulting values (text,
  colours as #RRGGBB, sizes, positions, order, counts);
- state the style constraints of the change (fonts, alignment, consistency with the rest);
- say what must NOT change (other slides, other objects, wording);
- state the tolerances you accept, if any.
Describe the requested change only. Do NOT describe or retell the slide's existing content.
Use 2-8 sentences or short bullet points. Reply with JSON only: {"style_target": "..."}
"""


def build_messages(
    task: Task, diff: Any, images: list[tuple[str, ImagePart]], *, brief_chars: int = 8000
) -> list[Message]:
    """System and user messages asking for the style target of ``task`` (``diff``: original → target)."""
    changed = set(changed_slide_numbers(diff))
    target_summary = dict(diff.summary_b)
    target_summary["slides"] = [s for s in diff.summary_b.get("slides") or [] if s.get("number") in changed]
    text = (
        f"Instruction given to the agent:\n{task.instruction}\n\n"
        f"The reference solution differs from the original by exactly these edits:\n{diff_brief(diff)}\n\n"
        f"The changed slides in the reference solution:\n{deck_brief(target_summary, max_chars=brief_chars)}"
    )
    parts: list[str | ImagePart] = [text]
    for caption, image in images:
        parts += [caption, image]
    return [Message.system(SYSTEM_PROMPT), Message.user(*parts)]


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, v in value.items():
            if key in ("rgb",) and isinstance(v, str):
                out.append(v)
            else:
                _strings(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _strings(v, out)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        out.append(str(value))


def _words(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        for word in _WORDS.findall(v):
            w = word.lower().strip(".")
            if (len(w) >= 4 or any(ch.isdigit() for ch in w)) and w not in out:
                out.append(w)
    return out


def edit_terms(diff: Any) -> list[str]:
    """Lower-case values the edits introduced: words (4+ letters), colours and numbers of each edit's new
    value that its old value did not have."""
    terms: list[str] = []
    for edit in diff.edits:
        new: list[str] = []
        old: list[str] = []
        _strings(edit.get("new"), new)
        _strings(edit.get("old"), old)
        before = set(_words(old))
        for w in _words(new):
            if w not in before and w not in terms:
                terms.append(w)
    return terms


def _deck_texts(summary: dict[str, Any]) -> set[str]:
    texts: set[str] = set()

    def walk(shapes: list[dict[str, Any]]) -> None:
        for s in shapes:
            if s.get("text"):
                texts.add(str(s["text"]))
            table = s.get("table")
            if isinstance(table, dict):
                for row in table.get("cells") or []:
                    texts.update(str(c.get("text", "")) for c in row if isinstance(c, dict))
            walk(s.get("shapes") or [])

    for slide in summary.get("slides") or []:
        walk(slide.get("shapes") or [])
        if slide.get("notes"):
            texts.add(str(slide["notes"]))
    return texts


def _tokens(text: str) -> list[str]:
    return [t for t in (w.lower().strip(".") for w in _WORDS.findall(text)) if t]


def _grams(words: list[str], n: int = GRAM) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def restated_share(text: str, diff: Any) -> float:
    """Share of ``text``'s words that sit in a run of 4+ words copied from either deck's text.

    Runs holding a value the edit introduced (:func:`edit_terms`) do not count: quoting the
    new values is wanted. Texts under 12 words score 0.
    """
    new_values = set(edit_terms(diff))
    pool: set[tuple[str, ...]] = set()
    for t in _deck_texts(diff.summary_a) | _deck_texts(diff.summary_b):
        pool.update(_grams(_tokens(t)))
    tokens = _tokens(text)
    if len(tokens) < 12:
        return 0.0
    covered = [False] * len(tokens)
    for i, gram in enumerate(_grams(tokens)):
        if gram in pool and not new_values & set(gram):
            covered[i : i + GRAM] = [True] * GRAM
    return sum(covered) / len(tokens)


def style_target_problems(text: str, task: Task, diff: Any) -> list[str]:
    """Why ``text`` is not an acceptable style target of ``task`` (empty when it is)."""
    problems: list[str] = []
    if len(text) < MIN_CHARS:
        problems.append(f"the style target has {len(text)} characters; write at least {MIN_CHARS}")
    if len(text) > MAX_CHARS:
        problems.append(f"the style target has {len(text)} characters; keep it under {MAX_CHARS}")
    terms = edit_terms(diff) + key_terms(task.instruction)
    if terms and not mentions_any(text, terms):
        problems.append(
            "it mentions nothing the edit changed: name the new values "
            f"(e.g. {', '.join(edit_terms(diff)[:6]) or ', '.join(terms[:6])})"
        )
    share = restated_share(text, diff)
    if share > MAX_RESTATED:
        problems.append(
            f"{share:.0%} of it repeats slide text word for word: describe the requested change and "
            "its constraints, not the slide"
        )
    return problems


def parse_style_reply(reply: str) -> tuple[str, list[str]]:
    """``(text, problems)`` from a reply: ``{"style_target": ...}`` JSON, or plain text when the
    reply holds no JSON.
    """
    try:
        data = extract_json(reply)
    except ReplyParseError:
        text = reply.strip()
        fence = re.match(r"^```[A-Za-z]*\n(.*)\n```$", text, re.S)
        return (fence.group(1) if fence else text).strip(), []
    if isinstance(data, dict) and isinstance(data.get("style_target"), str):
        return data["style_target"].strip(), []
    if isinstance(data, str):
        return data.strip(), []
    return "", ['the reply is JSON without a "style_target" string: reply {"style_target": "..."}']


@dataclass
class StyleDraft:
    """A drafted style target and the drafting loop's record."""

    result: DraftResult

    @property
    def text(self) -> str | None:
        """The last draft."""
        return self.result.value

    @property
    def ok(self) -> bool:
        """True when the last draft passed."""
        return self.result.ok


def changed_slide_images(
    renderer: Any, task: Task, diff: Any, work: Path, limit: int
) -> list[tuple[str, ImagePart]]:
    """Captioned before/after renders of the changed slides (at most ``limit`` images)."""
    if renderer is None or limit <= 0 or task.target is None:
        return []
    numbers = changed_slide_numbers(diff)
    before_of = {b: a for a, b in diff.slide_matches if b is not None}
    originals = {img.number: img for img in renderer.render(Path(task.original), work / "original")}
    targets = {img.number: img for img in renderer.render(Path(task.target), work / "target")}
    out: list[tuple[str, ImagePart]] = []
    for n in numbers:
        a = before_of.get(n)
        if a is not None and a in originals and len(out) < limit:
            out.append((f"Slide {a} BEFORE the edit:", ImagePart.from_path(originals[a].path)))
        if n in targets and len(out) < limit:
            out.append((f"Slide {n} AFTER the edit (reference):", ImagePart.from_path(targets[n].path)))
    return out


def draft_style_target(
    client: ModelClient,
    task: Task,
    *,
    renderer: Any = None,
    work: Path | None = None,
    max_images: int = 6,
    attempts: int = 3,
    params: dict[str, Any] | None = None,
) -> StyleDraft:
    """Draft and validate the style target of ``task`` (which needs a target deck)."""
    from pptarena.authoring.llm import AuthorError
    from pptarena.deck import diff_decks

    if task.target is None:
        raise AuthorError(
            f"task {task.id} has no target deck: a style target is drafted from the original and the target"
        )
    diff = diff_decks(task.original, task.target)
    if not diff.edits:
        raise AuthorError(f"task {task.id}: the target deck does not differ from the original")
    images = changed_slide_images(renderer, task, diff, work, max_images) if work is not None else []
    messages = build_messages(task, diff, images)

    def validate(reply: str) -> tuple[Any, list[str]]:
        text, problems = parse_style_reply(reply)
        return text, problems or style_target_problems(text, task, diff)

    return StyleDraft(
        draft_with_retries(client, messages, validate, what="style target", attempts=attempts, params=params)
    )
