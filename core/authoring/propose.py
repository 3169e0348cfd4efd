"""``arena author propose``: a model proposes grounded edit tasks for a deck; we validate and write them.

The model sees the deck brief (:func:`pptarena.authoring.context.deck_brief`) and, unless switched
off, slide renders, and answers with JSON::

    {"tasks": [{"id": "recolour-titles", "instruction": "...", "difficulty": "easy",
                "category": ["Styling"], "edit_type": "Text & Typography",
                "slides": [2, 3], "shapes": ["Title 1"], "rationale": "..."}]}

Each proposal is validated (:func:`validate_proposal`): a non-empty instruction, a difficulty in
easy / medium / hard, categories among PPTArena's five, an edit type among PPTArena's sixteen,
slide numbers that exist and shape names that exist on those slides (or anywhere when no slide
is given). Valid proposals are kept; when fewer than ``n`` are valid the model is asked again
for the missing ones, with the problems fed back (bounded). :func:`write_proposals` writes a
``folder`` dataset: ``out/_decks/<deck>`` (hard link or copy) and ``out/<id>/task.toml`` with
TODO comments for the target deck, style target and rubric.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.authoring.context import deck_brief, slide_images
from pptarena.authoring.files import TASK_FILE, place_deck, write_json_file, write_new_task_toml
from pptarena.authoring.llm import AuthorError, ReplyParseError, extract_json, feedback_message
from pptarena.models import ImagePart, Message, ModelClient

CATEGORIES = ("Content", "Layout", "Styling", "Structure", "Interactivity")
DIFFICULTIES = ("easy", "medium", "hard")
EDIT_TYPES = (
    "Text & Typography",
    "Charts",
    "Images & Pictures",
    "Theme & Background",
    "Alignment, Distribution & Z-order",
    "Slide/Section Management & Footers",
    "Tables",
    "Shapes & Drawing",
    "SmartArt & Diagrams",
    "Slide Layout & Placeholders",
    "Accessibility & Semantics",
    "Slide Transitions",
    "Hyperlinks & Action Settings",
    "Template & Master-Level Edits",
    "Audio & Video",
    "Object Animations",
)
MAX_TASKS = 50
MAX_INSTRUCTION_CHARS = 2000
_ID_OK = re.compile(r"[^a-z0-9]+")

SYSTEM_PROMPT = (
    """\
You design evaluation tasks for agents that edit PowerPoint decks in place. Given one deck,
propose realistic edit requests a user of THIS deck would make. Every task must be:
- grounded: it names slides, shapes, text or values that exist in the deck as described;
- feasible: an expert could do it in PowerPoint and a checker could verify the result;
- specific: exact text, colours (#RRGGBB), positions or order where it matters, so that
  there is one clearly correct result;
- self-contained: the instruction alone says what to do (no references to "the task list").
Spread the tasks over categories and difficulties.

Reply with JSON only, in this shape:
{"tasks": [{"id": "short-kebab-case-id", "instruction": "...", "difficulty": "easy|medium|hard",
  "category": ["one or two of: Content, Layout, Styling, Structure, Interactivity"],
  "edit_type": "one of the edit types below", "slides": [slide numbers the edit touches],
  "shapes": ["exact shape names the edit touches, from the deck description"],
  "rationale": "why this is a realistic, checkable edit"}]}

Edit types: """
    + "; ".join(EDIT_TYPES)
    + "."
)


@dataclass
class Proposal:
    """One validated task proposal."""

    id: str
    instruction: str
    difficulty: str
    category: list[str]
    edit_type: str
    slides: list[int] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    rationale: str = ""


@dataclass
class ProposeResult:
    """What :func:`propose_tasks` produced: valid proposals, rejected ones and every reply."""

    proposals: list[Proposal]
    rejected: list[dict[str, Any]]  # {"proposal": raw, "problems": [...]}
    replies: list[str]
    requested: int

    @property
    def complete(self) -> bool:
        """True when ``requested`` valid proposals were found."""
        return len(self.proposals) >= self.requested


def slugify(text: str, limit: int = 48) -> str:
    """A lower-case ASCII id from free text (``"Fix typos!"`` → ``"fix-typos"``)."""
    slug = _ID_OK.sub("-", text.lower()).strip("-")
    if len(slug) > limit:
        cut = slug[: limit + 1]
        slug = cut[: cut.rfind("-")] if "-" in cut else slug[:limit]
    return slug.strip("-") or "task"


def _canonical(value: str, choices: tuple[str, ...]) -> str | None:
    key = re.sub(r"[^a-z0-9]", "", value.lower())
    for choice in choices:
        if re.sub(r"[^a-z0-9]", "", choice.lower()) == key:
            return choice
    return None


def _deck_shapes(summary: dict[str, Any]) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}

    def walk(shapes: list[dict[str, Any]], into: set[str]) -> None:
        for s in shapes:
            if s.get("name"):
                into.add(str(s["name"]))
            walk(s.get("shapes") or [], into)

    for slide in summary.get("slides") or []:
        names: set[str] = set()
        walk(slide.get("shapes") or [], names)
        out[int(slide["number"])] = names
    return out


def validate_proposal(raw: Any, summary: dict[str, Any]) -> tuple[Proposal | None, list[str]]:
    """A :class:`Proposal` from one raw JSON item, or None and the problems found."""
    if not isinstance(raw, dict):
        return None, [f"a task must be a JSON object, got {type(raw).__name__}"]
    problems: list[str] = []
    instruction = raw.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        problems.append("'instruction' must be a non-empty string")
        instruction = ""
    elif len(instruction) > MAX_INSTRUCTION_CHARS:
        problems.append(f"'instruction' has {len(instruction)} characters (limit {MAX_INSTRUCTION_CHARS})")
    difficulty = _canonical(str(raw.get("difficulty", "")), DIFFICULTIES)
    if difficulty is None:
        problems.append(f"'difficulty' {raw.get('difficulty')!r} is not one of {', '.join(DIFFICULTIES)}")
    cats = raw.get("category", [])
    cats = [cats] if isinstance(cats, str) else cats
    category: list[str] = []
    if not isinstance(cats, list) or not cats:
        problems.append(f"'category' must list one or two of {', '.join(CATEGORIES)}")
    else:
        for c in cats:
            canon = _canonical(str(c), CATEGORIES)
            if canon is None:
                problems.append(f"category {c!r} is not one of {', '.join(CATEGORIES)}")
            elif canon not in category:
                category.append(canon)
    edit_type = _canonical(str(raw.get("edit_type", "")), EDIT_TYPES)
    if edit_type is None:
        problems.append(f"'edit_type' {raw.get('edit_type')!r} is not one of PPTArena's edit types")
    shapes_by_slide = _deck_shapes(summary)
    slides = raw.get("slides", [])
    slides = [slides] if isinstance(slides, int) else slides
    numbers: list[int] = []
    if not isinstance(slides, list):
        problems.append("'slides' must be a list of slide numbers")
        slides = []
    for s in slides:
        if isinstance(s, bool) or not isinstance(s, int) or s not in shapes_by_slide:
            problems.append(f"slide {s!r} does not exist (the deck has slides 1-{len(shapes_by_slide)})")
        else:
            numbers.append(s)
    shapes = raw.get("shapes", [])
    shapes = [shapes] if isinstance(shapes, str) else shapes
    if not isinstance(shapes, list):
        problems.append("'shapes' must be a list of shape names")
        shapes = []
    pool = (
        set().union(*(shapes_by_slide[n] for n in numbers))
        if numbers
        else set().union(*shapes_by_slide.values())
    )
    where = f"slide(s) {numbers}" if numbers else "the deck"
    for name in shapes:
        if str(name) not in pool:
            problems.append(f"shape {name!r} does not exist on {where}")
    if problems:
        return None, problems
    given = raw.get("id")
    ident = given if isinstance(given, str) and given.strip() else instruction
    return Proposal(
        id=slugify(str(ident)),
        instruction=instruction.strip(),
        difficulty=difficulty or "",
        category=category,
        edit_type=edit_type or "",
        slides=numbers,
        shapes=[str(s) for s in shapes],
        rationale=str(raw.get("rationale") or "")[:2000],
    ), []


def parse_proposals(
    reply: str, summary: dict[str, Any]
) -> tuple[list[Proposal], list[dict[str, Any]], list[str]]:
    """``(valid, rejected, reply_problems)`` from one model reply."""
    try:
        data = extract_json(reply)
    except ReplyParseError as exc:
        return [], [], [str(exc)]
    items = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], [], ['the reply must be {"tasks": [...]} (a list of task objects)']
    valid: list[Proposal] = []
    rejected: list[dict[str, Any]] = []
    for i, raw in enumerate(items[:MAX_TASKS]):
        proposal, problems = validate_proposal(raw, summary)
        if proposal is not None:
            valid.append(proposal)
        else:
            rejected.append({"index": i, "proposal": raw, "problems": problems})
    return valid, rejected, []


def build_messages(
    summary: dict[str, Any], n: int, images: list[tuple[int, ImagePart]], brief_chars: int
) -> list[Message]:
    """The system and user messages of a proposal request."""
    parts: list[str | ImagePart] = [
        f"Propose {n} edit task(s) for this deck.\n\n{deck_brief(summary, max_chars=brief_chars)}"
    ]
    for number, image in images:
        parts += [f"Render of slide {number}:", image]
    return [Message.system(SYSTEM_PROMPT), Message.user(*parts)]


def propose_tasks(
    client: ModelClient,
    summary: dict[str, Any],
    n: int,
    *,
    images: list[tuple[int, ImagePart]] | None = None,
    attempts: int = 3,
    brief_chars: int = 24_000,
    params: dict[str, Any] | None = None,
) -> ProposeResult:
    """Ask for ``n`` tasks, keep the valid ones, ask again (with the problems) for the rest;
    at most ``attempts`` calls.
    """
    if not 1 <= n <= MAX_TASKS:
        raise AuthorError(f"--n must be between 1 and {MAX_TASKS}")
    history = build_messages(summary, n, images or [], brief_chars)
    result = ProposeResult([], [], [], n)
    for _ in range(attempts):
        reply = client.complete(history, **(params or {})).text
        result.replies.append(reply)
        valid, rejected, reply_problems = parse_proposals(reply, summary)
        seen = {p.instruction.lower() for p in result.proposals}
        for p in valid:
            if p.instruction.lower() not in seen and len(result.proposals) < n:
                result.proposals.append(p)
                seen.add(p.instruction.lower())
        result.rejected += [{**r, "reply": len(result.replies) - 1} for r in rejected]
        if result.complete:
            break
        problems = reply_problems + [f"task {r['index'] + 1}: {'; '.join(r['problems'])}" for r in rejected]
        missing = n - len(result.proposals)
        if not problems:
            problems = [f"only {len(result.proposals)} distinct valid task(s); {missing} more needed"]
        ask = (
            feedback_message(problems, "task list")
            + f"\nPropose {missing} NEW task(s) (not repeating accepted ones)."
        )
        history += [Message.assistant(reply), Message.user(ask)]
    return result


# --------------------------------------------------------------------------- writing


TODO_COMMENTS = [
    "TODO target: make the reference deck (do the edit by hand), save it as target.pptx here,",
    '     then add near the top:  target = "target.pptx"',
    "TODO style target:  arena author style-target --task <this folder> --model <backend/model>",
    "     (needs the target; writes style_target here)",
    "TODO rubric:        arena author rubric --task <this folder> --model <backend/model>",
    '     (writes rubric.json and sets rubric = "rubric.json")',
    "TODO check:         arena author check <this folder>",
]


def _unique_id(base: str, out: Path, taken: set[str]) -> str:
    ident, k = base, 2
    while ident in taken or (out / ident).exists():
        ident = f"{base}-{k}"
        k += 1
    taken.add(ident)
    return ident


def write_proposals(
    result: ProposeResult, deck: Path, out: Path, *, model: str, record: dict[str, Any] | None = None
) -> list[Path]:
    """Write the proposals as a ``folder`` dataset under ``out``; returns the task folders.

    The deck goes to ``out/_decks/<name>`` (reused when identical, renamed when a different
    file has that name); every task folder gets a task.toml. ``out/_author/propose-<deck>.json``
    keeps the replies and rejected proposals.
    """
    out.mkdir(parents=True, exist_ok=True)
    decks = out / "_decks"
    dest = decks / deck.name
    if dest.exists() and dest.read_bytes() != deck.read_bytes():
        k = 2
        while (decks / f"{deck.stem}-{k}{deck.suffix}").exists():
            k += 1
        dest = decks / f"{deck.stem}-{k}{deck.suffix}"
    how = "existing" if dest.exists() else place_deck(deck, dest)
    folders: list[Path] = []
    taken: set[str] = set()
    for p in result.proposals:
        ident = _unique_id(p.id, out, taken)
        folder = out / ident
        folder.mkdir()
        write_new_task_toml(
            folder / TASK_FILE,
            {"instruction": p.instruction, "original": f"../_decks/{dest.name}"},
            {
                "category": p.category,
                "edit_type": p.edit_type,
                "difficulty": p.difficulty,
                "source": "author-propose",
                "model": model,
                "slides": p.slides,
                "shapes": p.shapes,
                "rationale": p.rationale or None,
            },
            TODO_COMMENTS,
        )
        folders.append(folder)
    log_dir = out / "_author"
    log_dir.mkdir(exist_ok=True)
    write_json_file(
        log_dir / f"propose-{dest.stem}.json",
        {
            "deck": str(deck),
            "placed": how,
            "model": model,
            "requested": result.requested,
            "tasks": [f.name for f in folders],
            "rejected": result.rejected,
            "replies": result.replies,
            **(record or {}),
        },
    )
    return folders


def render_for_prompt(renderer: Any, deck: Path, work: Path, limit: int) -> list[tuple[int, ImagePart]]:
    """Slide images of ``deck`` for the prompt (the first ``limit`` slides), or [] without a renderer."""
    return slide_images(renderer, deck, work, limit=limit)


def proposals_json(result: ProposeResult) -> list[dict[str, Any]]:
    """The valid proposals as JSON-ready dicts."""
    return [json.loads(json.dumps(p.__dict__)) for p in result.proposals]
