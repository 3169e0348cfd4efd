"""Slide images and edit lists for the HTML report: which slides changed, and their renders.

For one (agent, task) pair the report shows the original, the prediction and
the target side by side for every slide that an edit touched (original →
prediction or original → target, from the structural diff). Renders the judges
already made (``tasks/<agent>/<task>/renders/<role>/slide-NNN.png``) are reused;
missing ones are made with the run's renderer (built from the manifest's
config) into the same folders, so ``report.html`` refers to them relatively.

A pair's folder holds what its agent wrote: the decks and renders are taken only when they are
regular files reached without following a link (:mod:`pptarena.report.fileio`), and a render
folder that is a link the agent planted is never rendered into (:func:`pptarena.trust.safeio.ensure_dir`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.render import slide_file_name
from pptarena.report.fileio import is_regular
from pptarena.report.pairfiles import PairFiles, mark_volatile
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.rundir import INPUT, RENDERS

MAX_CHANGED_ROWS = 8
MAX_DIFF_CHARS = 20_000


@dataclass
class PairDecks:
    """The three decks of one pair (None when unknown) and the pair's folder."""

    folder: Path
    original: Path | None
    prediction: Path | None
    target: Path | None


@dataclass
class SlideRow:
    """One changed slide: its number in each deck (None: absent there)."""

    original: int | None
    prediction: int | None
    target: int | None


@dataclass
class PairView:
    """What the report shows about a pair's decks: edits as text, changed slides, image paths, problems."""

    prediction_edits: str = ""
    target_edits: str = ""
    rows: list[SlideRow] = field(default_factory=list)
    more_rows: int = 0
    images: dict[str, dict[int, Path]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def pair_decks(
    run_dir: Path, folder: Path, row: ResultRow, task: Any, files: PairFiles | None = None
) -> PairDecks:
    """Locate the pair's decks: the input copy, the prediction named in the result line, the task's target.

    :param files: ``folder`` held open (:class:`pptarena.report.pairfiles.PairFiles`): its input
        copy and an in-folder prediction are checked through it.
    """
    if files is not None:
        names = files.names(INPUT) if files.is_dir(INPUT) else []
        inputs = [folder / INPUT / n for n in names]
        inputs = [p for p in inputs if files.is_regular(f"input/{p.name}")]
    else:
        inputs = sorted((folder / INPUT).glob("*")) if os.path.isdir(os.path.join(folder, INPUT)) else []
        inputs = [p for p in inputs if is_regular(p, folder)]
    original = inputs[0] if inputs else (Path(task.original) if task is not None else None)
    pred = row.prediction
    prediction = None
    if pred:
        p = Path(pred)
        prediction = p if p.is_absolute() else Path(run_dir) / p
        inside = os.path.abspath(prediction).startswith(os.path.abspath(folder) + os.sep)
        if files is not None and inside:
            regular = files.is_regular(os.path.relpath(os.path.abspath(prediction), os.path.abspath(folder)))
        else:
            regular = is_regular(prediction, folder if inside else None)
        if not regular:
            prediction = None
    target = Path(task.target) if task is not None and task.target else None
    return PairDecks(folder, original, prediction, target)


def _clip(text: str) -> str:
    return (
        text
        if len(text) <= MAX_DIFF_CHARS
        else text[:MAX_DIFF_CHARS] + f"\n… ({len(text) - MAX_DIFF_CHARS} more characters)"
    )


def changed_rows(pred_diff: Any, target_diff: Any) -> list[SlideRow]:
    """Changed slides from the two diffs (original → prediction, original → target), in original order."""
    o2p: dict[int, int | None] = {}
    p2o: dict[int, int | None] = {}
    o2t: dict[int, int | None] = {}
    t2o: dict[int, int | None] = {}
    if pred_diff is not None:
        for a, b in pred_diff.slide_matches:
            if a is not None:
                o2p[a] = b
            if b is not None:
                p2o[b] = a
    if target_diff is not None:
        for a, b in target_diff.slide_matches:
            if a is not None:
                o2t[a] = b
            if b is not None:
                t2o[b] = a
    originals: set[int] = set()
    extra: list[SlideRow] = []
    for diff, back, side in ((pred_diff, p2o, "prediction"), (target_diff, t2o, "target")):
        for e in diff.edits if diff is not None else []:
            n = e.get("slide")
            if n is None:
                continue
            if e.get("kind") == "slide_removed":
                originals.add(n)
                continue
            a = back.get(n)
            if a is not None:
                originals.add(a)
            else:
                r = SlideRow(None, n, None) if side == "prediction" else SlideRow(None, None, n)
                if r not in extra:
                    extra.append(r)
    rows = [SlideRow(a, o2p.get(a), o2t.get(a)) for a in sorted(originals)]
    return rows + extra


class RenderBudget:
    """Renders decks with the run's renderer on demand, at most ``limit`` decks, remembering failures."""

    def __init__(self, make_renderer: Any, limit: int):
        self._make = make_renderer
        self._renderer: Any = None
        self.limit = limit
        self.used = 0
        self.problem: str | None = None

    def render(self, deck: Path, out_dir: Path) -> dict[int, Path] | str:
        """``{slide number: png}`` or a reason why not."""
        if self.problem:
            return self.problem
        if self.used >= self.limit:
            return (
                f"not rendered: the report's render limit ({self.limit} decks) was reached "
                "(arena report --max-renders N)"
            )
        try:
            if self._renderer is None:
                if self._make is None:
                    raise RuntimeError("the run's renderer could not be built from its manifest")
                self._renderer = self._make()
            self.used += 1
            images = self._renderer.render(deck, out_dir)
        except Exception as exc:  # noqa: BLE001 - shown in the page instead of images
            self.problem = f"rendering is impossible here: {type(exc).__name__}: {exc}"
            return self.problem
        return {int(img.number): Path(img.path) for img in images}


def existing_renders(out_dir: Path, numbers: list[int], root: Path | None = None) -> dict[int, Path] | None:
    """The wanted ``slide-NNN.png`` files in ``out_dir`` when every one is a regular file (reached
    without following a link below ``root``, the pair's folder), else None."""
    if not numbers or not out_dir.is_dir():
        return None
    found = {n: out_dir / slide_file_name(n) for n in numbers}
    return found if all(is_regular(p, root) for p in found.values()) else None


def pair_view(decks: PairDecks, budget: RenderBudget | None) -> PairView:
    """Diffs as text, changed slides and their images for one pair (problems noted, never raised)."""
    from pptarena.deck import diff_decks
    from pptarena.trust.safeio import UnsafeFileError, ensure_dir

    view = PairView()
    pred_diff = target_diff = None
    if decks.original is None:
        view.notes.append("the original deck is not available")
        return view
    mark_volatile()  # decks and renders are read by path, not noted: a report page showing them is rebuilt
    if decks.prediction is not None:
        try:
            pred_diff = diff_decks(decks.original, decks.prediction)
            view.prediction_edits = _clip(pred_diff.to_text())
        except Exception as exc:  # noqa: BLE001 - untrusted prediction deck
            view.notes.append(f"diff original → prediction failed: {type(exc).__name__}: {exc}")
    else:
        view.notes.append("no prediction deck")
    if decks.target is not None and decks.target.is_file():
        try:
            target_diff = diff_decks(decks.original, decks.target)
            view.target_edits = _clip(target_diff.to_text())
        except Exception as exc:  # noqa: BLE001
            view.notes.append(f"diff original → target failed: {type(exc).__name__}: {exc}")
    elif decks.target is not None:
        view.notes.append(f"the target deck {decks.target} is missing")
    rows = changed_rows(pred_diff, target_diff)
    view.rows, view.more_rows = rows[:MAX_CHANGED_ROWS], max(0, len(rows) - MAX_CHANGED_ROWS)
    for role in ("original", "prediction", "target"):
        deck = getattr(decks, role)
        numbers = sorted({n for r in view.rows if (n := getattr(r, role)) is not None})
        if deck is None or not numbers:
            continue
        out_dir = decks.folder / RENDERS / role
        found = existing_renders(out_dir, numbers, decks.folder)
        if found is None and budget is not None:
            try:
                ensure_dir(out_dir, decks.folder)
            except (OSError, UnsafeFileError) as exc:
                view.notes.append(f"{role}: not rendered ({exc})")
                continue
            got = budget.render(deck, out_dir)
            if isinstance(got, str):
                if got not in view.notes:
                    view.notes.append(got)
                continue
            found = got
        elif found is None:
            view.notes.append(f"{role}: not rendered (rendering disabled)")
            continue
        view.images[role] = found
    return view
