"""A graded set of near-miss attempts on real corpus decks, for the structural judge's tests and benchmark.

Each **task** asks for three sub-edits on three different objects of one corpus deck (a text
rewrite of a few words inside a long paragraph, a font size, a move, a fill colour, a speaker
note). Each task gets nine **attempts** (``KINDS``):

=============  ==================================================================  =============
kind           what the attempt does                                               label
=============  ==================================================================  =============
none           nothing                                                             0
one            the first sub-edit                                                  1/3
two            the first two sub-edits                                             2/3
complete       all three                                                           1
damage         all three, plus one unrelated object broken                        2/3
wrong_value    two right; the third object changed in the requested way, to a     2/3
               wrong value (other words, the other direction, another colour...)
wrong_object   two right; the third change made to a neighbouring object          1/3
overlay        two right; the third "done" by covering its shape with a new shape  1/3
               that shows the target content (the requested shape unchanged)
over_edit      all three, plus an unrequested formatting change on each           1 − k/12
               requested shape (bold, italic, rotation, outline)                   (k shapes)
=============  ==================================================================  =============

Labels follow one repair-cost model (justified in docs/judges.md): ``label = max(0, 1 − cost / 3)``
where a requested edit missing or wrong costs 1, an unrelated object broken or an unrequested
object added costs 1, and a requested object carrying an extra unrequested change costs ¼.

Decks are written with python-pptx through :func:`pptarena.deck.open_presentation` (which also
opens Strict and macro decks). :func:`build_set` is deterministic for a given corpus.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EMU_IN = 914400
KINDS = ("none", "one", "two", "complete", "damage", "wrong_value", "wrong_object", "overlay", "over_edit")
# per task, the three sub-edit types, rotated over the tasks
TRIPLES = (
    ("text", "size", "move"),
    ("text", "color", "note"),
    ("color", "move", "size"),
    ("text", "move", "color"),
    ("note", "size", "text"),
    ("move", "color", "note"),
)
TARGET_WORDS = "quarterly revenue targets"
WRONG_WORDS = "sunny weekend weather"
TARGET_NOTE = "Remind the audience that the budget review closes on Friday"
WRONG_NOTE = "Order lunch for the team: pizza and salad"
TARGET_RGB = (0xC0, 0x00, 0x00)
WRONG_RGB = (0x00, 0xB0, 0x50)
MOVE_IN = 1.0


@dataclass
class SubEdit:
    """One requested sub-edit: its type, the slide (0-based) and shape index it applies to, its neighbour."""

    kind: str
    slide: int
    shape: int | None  # index in slide.shapes; None for notes
    neighbour: tuple[int, int | None]  # (slide, shape) for the wrong-object attempt
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class GradedTask:
    """A task of the graded set: its deck, its three sub-edits and its attempts (kind -> path)."""

    task_id: str
    source: Path
    edits: list[SubEdit]
    damage: tuple[int, int]
    original: Path | None = None
    target: Path | None = None
    attempts: dict[str, Path] = field(default_factory=dict)


COSTS = {"missing": 1.0, "damage": 1.0, "wrong_value": 1.0, "added": 1.0, "over_edit": 0.25}
# other defensible cost models, to see how much the agreement depends on the chosen one
ALTERNATIVE_COSTS = {
    "damage worse than a miss (1.5)": {**COSTS, "damage": 1.5, "added": 1.5},
    "wrong value worse than none (1.2)": {**COSTS, "wrong_value": 1.2},
    "over-edit ½ per shape": {**COSTS, "over_edit": 0.5},
    "look-alike half a fix (0.5)": {**COSTS, "added": 0.5},
}


def label_of(kind: str, task: GradedTask, costs: dict[str, float] | None = None) -> float:
    """The repair-cost label of an attempt kind (see the module docstring); ``costs`` overrides
    :data:`COSTS`.
    """
    c = costs or COSTS
    n = len(task.edits)
    over = sum(1 for e in task.edits if e.kind != "note")
    miss = c["missing"]
    cost = {
        "none": 3 * miss,
        "one": 2 * miss,
        "two": miss,
        "complete": 0.0,
        "damage": c["damage"],
        "wrong_value": c["wrong_value"],
        "wrong_object": miss + c["damage"],
        "overlay": miss + c["added"],
        "over_edit": c["over_edit"] * over,
    }[kind]
    return round(max(0.0, 1.0 - cost / n), 4)


# ------------------------------------------------------------------ picking objects


def _open(path: Path) -> Any:
    from pptarena.deck import open_presentation

    return open_presentation(path)


def _has_xfrm(sh: Any) -> bool:
    return bool(sh._element.xpath("./p:spPr/a:xfrm/a:off") and sh._element.xpath("./p:spPr/a:xfrm/a:ext"))


def _is_autoshape(sh: Any) -> bool:
    from pptx.shapes.autoshape import Shape

    return isinstance(sh, Shape)


def _long_run(sh: Any) -> tuple[int, int] | None:
    """(paragraph, run) of the run with the most words (≥ 6), or None."""
    if not sh.has_text_frame:
        return None
    best, where = 5, None
    for pi, p in enumerate(sh.text_frame.paragraphs):
        for ri, r in enumerate(p.runs):
            n = len(r.text.split())
            if n > best:
                best, where = n, (pi, ri)
    return where


def _sized_text(sh: Any) -> bool:
    return sh.has_text_frame and any(r.text.strip() for p in sh.text_frame.paragraphs for r in p.runs)


def _fits(sh: Any, prs: Any) -> bool:
    return sh.width is not None and sh.left is not None and 0 < sh.width < prs.slide_width * 0.8


def _unique_names(prs: Any, slide: int) -> set[str]:
    """Names used once on the slide (the judge identifies shapes by name: duplicates are a known limit)."""
    names = [sh.name for sh in prs.slides[slide].shapes]
    return {n for n in names if names.count(n) == 1}


def _candidates(prs: Any, slide: int, kind: str, used: set[tuple[int, int]]) -> list[int]:
    out = []
    unique = _unique_names(prs, slide)
    for k, sh in enumerate(prs.slides[slide].shapes):
        if (slide, k) in used or not _has_xfrm(sh) or sh.name not in unique:
            continue
        ok = {
            "text": _is_autoshape(sh) and _long_run(sh) is not None,
            "size": _is_autoshape(sh) and _sized_text(sh),
            "move": _fits(sh, prs),
            "color": _is_autoshape(sh) and _fits(sh, prs),
        }[kind]
        if ok:
            out.append(k)
    return out


def plan_task(task_id: str, source: Path, triple: tuple[str, str, str]) -> GradedTask | None:
    """Pick objects for ``triple`` in ``source`` (None when the deck has no room for it)."""
    try:
        prs = _open(source)
    except Exception:  # noqa: BLE001 - decks the engine cannot open are simply not used
        return None
    n_slides = len(prs.slides)
    used: set[tuple[int, int]] = set()
    note_slides: set[int] = set()
    edits: list[SubEdit] = []
    for kind in triple:
        chosen = None
        for s in range(min(n_slides, 25)):
            if kind == "note":
                if (
                    s in note_slides
                    or prs.slides[s].has_notes_slide
                    and prs.slides[s].notes_slide.notes_text_frame
                    and prs.slides[s].notes_slide.notes_text_frame.text.strip()
                ):
                    continue
                other = next((o for o in range(n_slides) if o != s and o not in note_slides), None)
                if other is None:
                    continue
                chosen = SubEdit("note", s, None, (other, None))
                note_slides.update({s, other})
                break
            cands = _candidates(prs, s, kind, used)
            if len(cands) < 2:
                continue
            main, neighbour = cands[0], cands[1]
            chosen = SubEdit(kind, s, main, (s, neighbour))
            used.update({(s, main), (s, neighbour)})
            break
        if chosen is None:
            return None
        edits.append(chosen)
    damage = None
    for s in range(min(n_slides, 25)):
        unique = _unique_names(prs, s)
        for k, sh in enumerate(prs.slides[s].shapes):
            if (s, k) not in used and _has_xfrm(sh) and _fits(sh, prs) and sh.name in unique:
                damage = (s, k)
                break
        if damage:
            break
    if damage is None:
        return None
    return GradedTask(task_id, source, edits, damage)


# ------------------------------------------------------------------ applying edits


def _shape(prs: Any, where: tuple[int, int | None]) -> Any:
    return prs.slides[where[0]].shapes[where[1]]


def _replace_words(sh: Any, words: str) -> None:
    where = _long_run(sh)
    assert where is not None
    run = sh.text_frame.paragraphs[where[0]].runs[where[1]]
    parts = run.text.split(" ")
    k = max(1, len(parts) // 3)
    parts[k : k + 3] = words.split()
    run.text = " ".join(parts)


def _resolved_size(sh: Any) -> float:
    for p in sh.text_frame.paragraphs:
        for r in p.runs:
            if r.font.size is not None:
                return r.font.size.pt
    return 18.0


def _set_size(sh: Any, pt: float) -> None:
    from pptx.util import Pt

    for p in sh.text_frame.paragraphs:
        for r in p.runs:
            r.font.size = Pt(pt)


def _move(sh: Any, prs: Any, sign: int) -> None:
    dx = int(MOVE_IN * EMU_IN)
    right_room = prs.slide_width - (sh.left + sh.width)
    direction = 1 if right_room >= dx else -1
    sh.left = int(sh.left + sign * direction * dx)


def _fill(sh: Any, rgb: tuple[int, int, int]) -> None:
    from pptx.dml.color import RGBColor

    sh.fill.solid()
    sh.fill.fore_color.rgb = RGBColor(*rgb)


def _note(prs: Any, slide: int, text: str) -> None:
    prs.slides[slide].notes_slide.notes_text_frame.text = text


def apply_edit(
    prs: Any, e: SubEdit, variant: str = "right", where: tuple[int, int | None] | None = None
) -> None:
    """Apply sub-edit ``e`` (``variant`` right or wrong) to its object, or to ``where`` instead."""
    target = where or (e.slide, e.shape)
    if e.kind == "note":
        _note(prs, target[0], TARGET_NOTE if variant == "right" else WRONG_NOTE)
        return
    sh = _shape(prs, target)
    if e.kind == "text":
        _replace_words(sh, TARGET_WORDS if variant == "right" else WRONG_WORDS)
    elif e.kind == "size":
        base = _resolved_size(_shape(prs, (e.slide, e.shape)))
        _set_size(sh, round(base * 1.6) if variant == "right" else max(6.0, round(base * 0.6)))
    elif e.kind == "move":
        _move(sh, prs, 1 if variant == "right" else -1)
    elif e.kind == "color":
        _fill(sh, TARGET_RGB if variant == "right" else WRONG_RGB)


def _overlay(prs: Any, e: SubEdit) -> None:
    """Cover the requested shape with a new shape showing the target content; the shape itself
    is untouched.
    """
    sh = _shape(prs, (e.slide, e.shape))
    slide = prs.slides[e.slide]
    if e.kind == "text":
        tmp = _open_copy_text(sh)
        box = slide.shapes.add_textbox(sh.left, sh.top, sh.width, sh.height)
        box.text_frame.text = tmp
    elif e.kind == "color":
        box = slide.shapes.add_shape(1, sh.left, sh.top, sh.width, sh.height)
        _fill(box, TARGET_RGB)
    else:
        raise ValueError(f"no overlay for a {e.kind} edit")


def _open_copy_text(sh: Any) -> str:
    """The shape's text as it reads after the requested rewrite (computed on a throwaway copy)."""
    import copy

    from pptx.shapes.autoshape import Shape

    clone = Shape(copy.deepcopy(sh._element), None)
    _replace_words(clone, TARGET_WORDS)
    return clone.text_frame.text


def _over_edit(prs: Any, e: SubEdit) -> None:
    """An unrequested formatting change on the requested object."""
    from pptx.dml.color import RGBColor
    from pptx.util import Pt

    if e.kind == "note":
        return
    sh = _shape(prs, (e.slide, e.shape))
    if e.kind in (
        "text",
        "size",
    ):  # toggle bold (text) or italic (size) on every run, so it changes either way
        runs = [r for p in sh.text_frame.paragraphs for r in p.runs]
        attr = "bold" if e.kind == "text" else "italic"
        value = not all(getattr(r.font, attr) for r in runs)
        for r in runs:
            setattr(r.font, attr, value)
    elif e.kind == "move":
        sh.rotation = 12.0
    elif e.kind == "color":
        sh.line.color.rgb = RGBColor(0, 0, 0)
        sh.line.width = Pt(4)


def _damage(prs: Any, where: tuple[int, int]) -> None:
    sh = _shape(prs, where)
    if sh.has_text_frame and sh.text_frame.text.strip():
        sh.text_frame.text = "lorem ipsum"
    else:
        sh.left = int(sh.left + (EMU_IN if prs.slide_width - sh.left - sh.width > EMU_IN else -EMU_IN))


def attempt_edits(task: GradedTask, kind: str) -> list[Callable[[Any], None]]:
    """The python-pptx functions that make attempt ``kind`` of ``task``."""
    a, b, c = task.edits
    right = [lambda prs, e=e: apply_edit(prs, e) for e in (a, b, c)]
    two = right[:2]
    return {
        "none": [],
        "one": right[:1],
        "two": two,
        "complete": right,
        "damage": [*right, lambda prs: _damage(prs, task.damage)],
        "wrong_value": [*two, lambda prs: apply_edit(prs, c, "wrong")],
        "wrong_object": [*two, lambda prs: apply_edit(prs, c, "right", c.neighbour)],
        "overlay": [
            *[lambda prs, e=e: apply_edit(prs, e) for e in task.edits if e is not _overlay_edit(task)],
            lambda prs: _overlay(prs, _overlay_edit(task)),
        ],
        "over_edit": [*right, *[lambda prs, e=e: _over_edit(prs, e) for e in task.edits]],
    }[kind]


def _overlay_edit(task: GradedTask) -> SubEdit:
    return next(e for e in task.edits if e.kind in ("text", "color"))


# ------------------------------------------------------------------ building


def _write(src: Path, dst: Path, edits: list[Callable[[Any], None]]) -> Path:
    prs = _open(src)
    for fn in edits:
        fn(prs)
    prs.save(str(dst))
    return dst


def plan_set(corpus: Path, limit: int = 12, decks: list[str] | None = None) -> list[GradedTask]:
    """Plan up to ``limit`` tasks over the corpus decks (or the named ``decks``), rotating the
    sub-edit triples.
    """
    names = decks or sorted(p.name for p in corpus.glob("*.ppt*"))
    tasks: list[GradedTask] = []
    k = 0
    for name in names:
        if len(tasks) >= limit:
            break
        for shift in range(len(TRIPLES)):
            triple = TRIPLES[(k + shift) % len(TRIPLES)]
            if not any(t in ("text", "color") for t in triple):
                continue
            planned = plan_task(f"{Path(name).stem}-{'-'.join(triple)}", corpus / name, triple)
            if planned is not None:
                tasks.append(planned)
                k += 1
                break
    return tasks


def build_task(task: GradedTask, out: Path) -> GradedTask:
    """Write original, target and every attempt of ``task`` under ``out/<task_id>/``."""
    folder = out / task.task_id
    folder.mkdir(parents=True, exist_ok=True)
    task.original = _write(task.source, folder / "original.pptx", [])
    task.target = _write(task.source, folder / "target.pptx", attempt_edits(task, "complete"))
    for kind in KINDS:
        task.attempts[kind] = _write(task.source, folder / f"{kind}.pptx", attempt_edits(task, kind))
    return task


def build_set(corpus: Path, out: Path, limit: int = 12, decks: list[str] | None = None) -> list[GradedTask]:
    """Plan and write the graded set; returns the tasks with their deck paths."""
    return [build_task(t, out) for t in plan_set(corpus, limit, decks)]


def write_labels(tasks: list[GradedTask], path: Path) -> Path:
    """The labels as the CSV ``arena meta-eval --labels`` reads (``task_id, agent, label, kind``;
    agent = kind).
    """
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["task_id", "agent", "label", "kind"])
        for t in tasks:
            for kind in KINDS:
                w.writerow([t.task_id, kind, label_of(kind, t), kind])
    return path


def iter_attempts(tasks: list[GradedTask]) -> Iterator[tuple[GradedTask, str, Path]]:
    """(task, kind, deck) for every attempt."""
    for t in tasks:
        for kind in KINDS:
            yield t, kind, t.attempts[kind]
