"""The ``pptx_match`` judge: PPTC's PPTX-Match check (attributes + position relations).

A prediction passes (score 1.0) when

* its **attributes** equal the label deck's (``task.target``): per slide, in order, the
  background's solid RGB, the notes text, and every placeholder, picture, chart, table, text box
  and auto shape in shape-tree order with the features PPTC compares (text, first-run font style,
  fill, rotation, table cells, chart data; never positions or sizes); and
* every **position restriction** holds on the prediction: ``"<slide>, <A>, <B>, <relation>"``
  from the instruction's ``##`` suffixes (``task.metadata["pptc"]["restrictions"]``), checked with
  strict inequalities against the other object or the slide's midlines.

Semantics follow PPTC's ``src/evaluate.py calc_acc``, ``src/ppt_reader.py`` and
``src/pptx_check.py`` as described in ``../shared/reference/pptc-format.md`` §5;
``tests/test_pptc.py`` compares verdicts with PPTC's own check.
"""

from __future__ import annotations

from typing import Any

import pptarena
from pptarena.evidence import Evidence
from pptarena.types import Component, JudgeError, PptArenaError, Prediction, Task, Verdict
from pptarena.types import Options as BaseOptions

MID_X, MID_Y = 4_572_000, 3_429_000  # PPTC's fixed slide midlines (a 10 x 7.5 in slide)
_SHAPE_WORDS = {
    "rectangle": "Rectangle",
    "right_arrow": "Right Arrow",
    "arrow": "Right Arrow",
    "cloud": "Cloud",
    "rounded_rectangle": "Rounded Rectangle",
    "triangle": "Isosceles",
    "callout": "Callout",
    "star": "Star",
    "circle": "Oval",
}


def _kind(shape: Any) -> str:
    return str(shape.shape_type)


def _solid_rgb(fill_owner: Any) -> Any:
    fill = fill_owner.fill
    if fill.type == 1:
        try:
            return fill.fore_color.rgb
        except AttributeError:
            return None
    return None


def _font_features(shape: Any, textbox: bool) -> tuple[Any, ...]:
    paragraphs = shape.text_frame.paragraphs
    try:
        font = paragraphs[0].runs[0].font
    except IndexError:
        font = paragraphs[0].font
    size = font.size
    if textbox and size is None:
        size = paragraphs[0].font.size
    try:
        color = font.color.rgb
    except Exception:  # noqa: BLE001 - PPTC records no colour for anything unreadable
        color = None
    return (
        font.bold,
        font.italic,
        font.underline,
        size,
        color,
        _solid_rgb(shape),
        font.name,
        paragraphs[0].line_spacing,
        paragraphs[0].alignment,
    )


def _tag(shape: Any) -> str:
    first = shape.name.split(" ")[0]
    return first if first != "Google" else _kind(shape).split(" ")[0].strip()


def _shape_features(shape: Any, counters: dict[str, int]) -> tuple[Any, ...] | None:
    kind = _kind(shape)
    if "PLACEHOLDER" in kind:
        text = shape.text_frame.text  # a placeholder without a text frame fails, as in PPTC
        return ("placeholder", _tag(shape), text, _font_features(shape, textbox=False))
    if "PICTURE" in kind:
        counters["picture"] += 1
        return ("picture", counters["picture"] - 1, int(shape.rotation))
    if "CHART" in kind:
        chart = shape.chart
        data: list[Any] = []
        try:
            data = [(s.name, tuple(s.values)) for s in chart.series]
        except Exception:  # noqa: BLE001 - PPTC keeps what it read before the failure; we keep none
            data = ["unreadable"]
        return ("chart", chart.chart_title.text_frame.text, str(chart.chart_type).split(" ")[0], tuple(data))
    if "TABLE" in kind:
        table = shape.table
        cells = tuple(tuple(cell.text for cell in row.cells) for row in table.rows)
        return ("table", len(table.rows), len(table.columns), cells)
    if "TEXT_BOX" in kind:
        counters["textbox"] += 1
        return (
            "textbox",
            counters["textbox"] - 1,
            shape.text_frame.text,
            _font_features(shape, textbox=True),
        )
    if "AUTO_SHAPE" in kind:
        return ("autoshape", _tag(shape), shape.text_frame.text, _solid_rgb(shape))
    return None


def load_deck(path: Any) -> Any:
    """python-pptx's ``Presentation`` of ``path`` (PPTC reads decks with python-pptx as they are)."""
    from pptx import Presentation

    return Presentation(str(path))


def deck_features(prs: Any) -> list[tuple[Any, ...]]:
    """What PPTX-Match compares in a loaded deck, as tuples (slides in order, shapes in tree order)."""
    rows: list[tuple[Any, ...]] = []
    for number, slide in enumerate(prs.slides):
        notes = slide.notes_slide.notes_text_frame.text
        rows.append(("slide", number, _solid_rgb(slide.background), notes or None))
        counters = {"picture": 0, "textbox": 0}
        for shape in slide.shapes:
            features = _shape_features(shape, counters)
            if features is not None:
                rows.append((number, *features))
    return rows


def _nth(slide: Any, word: str, index: int) -> Any:
    seen = 0
    for shape in slide.shapes:
        if word in _kind(shape):
            if seen == index:
                return shape
            seen += 1
    return None


def find_object(slide: Any, name: str) -> Any:
    """The object a restriction names (first match in shape order), or None."""
    if name == "table":
        return _nth(slide, "TABLE", 0)
    if "chart" in name:
        return _nth(slide, "CHART", 0)
    if "textbox" in name:
        return _nth(slide, "TEXT_BOX", int(name[8:]) if name != "textbox" else 0)
    if name in ("content", "title"):
        word = name.capitalize()
        return next((s for s in slide.shapes if word in s.name), None)
    if "picture" in name:
        return _nth(slide, "PICTURE", int(name[8:]) if name != "picture" else 0)
    if name == "image":
        return _nth(slide, "PICTURE", 0)
    if name in _SHAPE_WORDS:
        word = _SHAPE_WORDS[name]
        for shape in slide.shapes:
            if word in shape.name and not (word == "Rectangle" and "Rounded Rectangle" in shape.name):
                return shape
    return None


def relation_holds(slide: Any, a_name: str, b_name: str, relation: str) -> bool:
    """Whether ``A`` is ``relation`` of ``B`` (or of the slide's midlines when B is ``slide``)."""
    a = find_object(slide, a_name)
    if a is None:
        return False
    right_a, bottom_a = a.left + a.width, a.top + a.height
    if b_name == "slide":
        tests = {
            "left": right_a < MID_X,
            "top": bottom_a < MID_Y,
            "right": a.left > MID_X,
            "bottom": a.top > MID_Y,
            "center": a.left < MID_X and a.top < MID_Y and right_a > MID_X and bottom_a > MID_Y,
        }
    else:
        b = find_object(slide, b_name)
        if b is None:
            return False
        tests = {
            "left": right_a < b.left,
            "top": bottom_a < b.top,
            "right": a.left > b.left + b.width,
            "bottom": a.top > b.top + b.height,
        }
    return all(ok for word, ok in tests.items() if word in relation)


def split_restriction(text: str) -> tuple[str, str, str, str]:
    """``"0, star, picture, right"`` → its four stripped fields (raises ValueError otherwise)."""
    parts = [p.strip(" ") for p in text.split(",")]
    if len(parts) != 4:
        raise ValueError(f"position restriction {text!r} does not have 4 comma-separated fields")
    return parts[0], parts[1], parts[2], parts[3]


def check_positions(prs: Any, restrictions: list[str]) -> tuple[bool, str]:
    """(all restrictions hold in the loaded deck, the first that fails)."""
    for text in restrictions:
        slide_no, a_name, b_name, relation = split_restriction(text)
        try:
            ok = relation_holds(prs.slides[int(slide_no)], a_name, b_name, relation)
        except Exception:  # noqa: BLE001 - as PPTC: a bad slide number or object index fails the restriction
            ok = False
        if not ok:
            return False, f"position restriction failed: {text.strip()}"
    return True, ""


def _first_difference(label: list[Any], pred: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(label, pred, strict=False)):
        if a != b:
            return f"attributes differ at item {i}: label {a!r} vs prediction {b!r}"[:400]
    return f"label has {len(label)} items, prediction {len(pred)}"


class PptxMatchJudge(Component):
    """PPTC's PPTX-Match: label-deck attributes equal and every position restriction holds."""

    class Options(BaseOptions):
        """No options."""

    def judge(self, task: Task, prediction: Prediction, evidence: Evidence) -> Verdict:
        """1.0 when the prediction matches the label deck and satisfies the restrictions, else 0.0."""
        if task.target is None:
            raise JudgeError(f"task {task.id}: pptx_match needs the label deck as the task's target")
        if prediction.path is None:
            raise JudgeError(f"task {task.id}: the prediction has no deck")
        restrictions = list(((task.metadata or {}).get("pptc") or {}).get("restrictions") or [])
        try:
            predicted = load_deck(prediction.path)  # read once for both checks
            positions_ok, why = check_positions(predicted, restrictions)
            label, pred = deck_features(load_deck(task.target)), deck_features(predicted)
        except ValueError as exc:
            raise JudgeError(f"task {task.id}: {exc}") from exc
        except (PptArenaError, KeyError, AttributeError) as exc:
            raise JudgeError(f"task {task.id}: cannot read a deck: {type(exc).__name__}: {exc}") from exc
        same = label == pred
        passed = same and positions_ok
        reason = "" if passed else (why or _first_difference(label, pred))
        if not same and why:
            reason = f"{_first_difference(label, pred)}; {why}"
        metrics = {
            "attributes_match": int(same),
            "pos_total": int(bool(restrictions)),
            "pos_correct": int(bool(restrictions) and positions_ok),
        }
        return Verdict(
            score=1.0 if passed else 0.0,
            metrics=metrics,
            explanation=reason or "attributes and positions match",
        )


@pptarena.hookimpl
def register_judges(register):
    """Register the ``pptx_match`` judge."""
    register("pptx_match", PptxMatchJudge)
