"""OSWorld's ``compare_pptx_files`` checker, re-implemented on python-pptx.

The checker walks the agent's deck (``result``) and the gold deck (``expected``) side by side and
fails (0.0) at the first difference it examines; nothing different → 1.0. What it examines, and in
which order, is described in ``../shared/reference/osworld-impress-format.md`` §4; the quirks of
OSWorld's version are kept on purpose so scores agree with OSWorld's own checker (the
differential test ``tests/judges/test_osworld_differential.py`` compares both on real decks):

* "approximately equal" is a relative tolerance: ``|a-b| / max(|a|,|b|) <= tol``, with exactly one
  zero failing;
* table cells compare run colour/bold/italic/underline whatever the ``examine_*`` options say;
* bullets are read from the slide's XML as python-pptx holds it *at that moment*: reading a
  paragraph's alignment or level makes python-pptx add an empty ``a:pPr``, so paragraphs already
  visited report level ``"0"`` where unvisited ones report ``"No Level"``. We visit paragraphs in
  the same order, so the same lists are compared.

Unknown option keys are an error (:class:`CheckerOptionError`): OSWorld silently ignores them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

#: ``examine_*`` switches and their defaults in OSWorld's checker.
EXAMINE_DEFAULTS: dict[str, bool] = {
    "number_of_slides": True,
    "shape": True,
    "text": True,
    "indent": True,
    "font_name": True,
    "font_size": True,
    "font_bold": True,
    "font_italic": True,
    "color_rgb": True,
    "font_underline": True,
    "strike_through": True,
    "alignment": True,
    "bullets": True,
    "background_color": True,
    "note": True,
    "title_bottom_position": False,
    "table_bottom_position": False,
    "right_position": False,
    "top_position": False,
    "shape_for_shift_size": False,
    "image_size": False,
    "modify_height": False,
}
#: Every option key the checker accepts.
OPTION_KEYS = frozenset(
    {f"examine_{k}" for k in EXAMINE_DEFAULTS} | {"approximately_tolerance", "enable_debug"}
)

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
PICTURE, TABLE, FREEFORM = 13, 19, 5  # MSO_SHAPE_TYPE values
SOLID, NO_FILL = 1, 5  # MSO_FILL values (python-pptx reports "no fill" as BACKGROUND = 5)


class CheckerOptionError(ValueError):
    """An option the checker does not know (OSWorld would ignore it silently)."""


@dataclass
class Outcome:
    """A checker's score and, when it is not 1, the first difference found."""

    score: float
    reason: str = ""


def option_problems(options: dict[str, Any]) -> list[str]:
    """Option keys of ``compare_pptx_files`` that are unknown or have the wrong type."""
    problems = []
    for key, value in options.items():
        if key not in OPTION_KEYS:
            problems.append(f"unknown option {key!r}")
        elif key == "approximately_tolerance":
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                problems.append(f"option {key!r} must be a non-negative number, got {value!r}")
        elif not isinstance(value, bool):
            problems.append(f"option {key!r} must be true or false, got {value!r}")
    return problems


def _close(a: float, b: float, tol: float) -> bool:
    if a == b:
        return True
    if a == 0 or b == 0:
        return False
    return abs(a - b) / max(abs(a), abs(b)) <= tol


def _box_close(s1: Any, s2: Any, tol: float) -> bool:
    return all(_close(getattr(s1, k), getattr(s2, k), tol) for k in ("left", "top", "width", "height"))


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


def _background_rgb(slide: Any) -> Any:
    """Solid fill colour of the slide, else of its master when the slide has no fill; else None."""
    fill = slide.background.fill
    if fill.type == SOLID:
        return fill.fore_color.rgb
    if fill.type == NO_FILL:
        master = slide.slide_layout.slide_master.background.fill
        return master.fore_color.rgb if master.type == SOLID else None
    return None


def _text_shapes(shapes: Any) -> list[Any]:
    """Shapes with a text frame, depth first through groups."""
    found: list[Any] = []
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            found.append(shape)
        if hasattr(shape, "shapes"):
            found.extend(_text_shapes(shape.shapes))
    return found


def _bullet_list(xml: bytes) -> list[tuple[Any, Any, str]]:
    """(level, bullet character, text) of every non-empty paragraph of a slide's XML.

    A paragraph without ``a:pPr`` has level ``"No Level"``; a ``pPr`` without ``lvl`` counts as
    ``"0"``. An empty ``a:t`` raises (TypeError), and the caller then skips the bullet check, as
    OSWorld does.
    """
    rows = []
    for para in ET.fromstring(xml.decode("utf-8")).iter(f"{_A}p"):
        level: str | None
        char: str | None
        ppr = para.find(f"{_A}pPr")
        if ppr is None:
            level, char = "No Level", "No Bullet"
        else:
            level = ppr.get("lvl")
            level = "0" if level is None else level
            bu = ppr.find(f"{_A}buChar")
            char = bu.get("char") if bu is not None else "No Bullet"
        text = "".join(t.text for t in para.iter(f"{_A}t"))  # type: ignore[misc]
        if text.strip():
            rows.append((level, str(char), text))
    return rows


def _alignment(para: Any) -> Any:
    from pptx.enum.text import PP_ALIGN

    value = para.alignment
    return PP_ALIGN.LEFT if value is None else value


def _flag(value: Any) -> bool:
    return bool(value)


def _underline_differs(u1: Any, u2: Any) -> bool:
    if u1 == u2:
        return False
    if u1 is not None and u2 is not None:
        return True
    return (u1 is None and u2 is True) or (u1 is True and u2 is None)


def _explicit_rgb(font: Any) -> tuple[bool, Any]:
    """(whether python-pptx exposes an ``rgb`` for the run colour, its value)."""
    try:
        return True, font.color.rgb
    except AttributeError:
        return False, None


class _Comparer:
    def __init__(self, options: dict[str, Any]):
        self.on = {k: bool(options.get(f"examine_{k}", d)) for k, d in EXAMINE_DEFAULTS.items()}
        self.tol = float(options.get("approximately_tolerance", 0.005))

    # each check returns a reason string when it fails, None when it passes

    def run(self, prs1: Any, prs2: Any) -> Outcome:
        on = self.on
        n1, n2 = len(prs1.slides), len(prs2.slides)
        if n1 != n2 and on["number_of_slides"]:
            return Outcome(0.0, f"slide count differs: {n1} in the result, {n2} expected")
        for number, (s1, s2) in enumerate(zip(prs1.slides, prs2.slides, strict=False), start=1):
            reason = self._slide(number, s1, s2)
            if reason:
                return Outcome(0.0, f"slide {number}: {reason}")
        return Outcome(1.0)

    def _slide(self, number: int, s1: Any, s2: Any) -> str | None:
        on = self.on
        bg1, bg2 = _background_rgb(s1), _background_rgb(s2)
        if bg1 != bg2 and on["background_color"]:
            return f"background colour {bg1} differs from {bg2}"
        notes1, notes2 = (
            s1.notes_slide.notes_text_frame.text.strip(),
            s2.notes_slide.notes_text_frame.text.strip(),
        )
        if notes1 != notes2 and on["note"]:
            return f"speaker notes differ ({notes1[:40]!r} vs {notes2[:40]!r})"
        texts1, texts2 = _text_shapes(s1.shapes), _text_shapes(s2.shapes)
        if len(s1.shapes) != len(s2.shapes):
            return f"{len(s1.shapes)} shapes in the result, {len(s2.shapes)} expected"
        for index, (sh1, sh2) in enumerate(zip(s1.shapes, s2.shapes, strict=False), start=1):
            reason = self._shape(number, sh1, sh2)
            if reason:
                return f"shape {index} ({sh2.name!r}): {reason}"
        if len(texts1) != len(texts2):
            return f"{len(texts1)} text shapes (groups included) in the result, {len(texts2)} expected"
        if on["alignment"]:
            for index, (t1, t2) in enumerate(zip(texts1, texts2, strict=False), start=1):
                if t1.text.strip() != t2.text.strip() and on["text"]:
                    return f"text shape {index}: text differs"
                p1, p2 = t1.text_frame.paragraphs, t2.text_frame.paragraphs
                if len(p1) != len(p2):
                    return f"text shape {index}: {len(p1)} paragraphs, {len(p2)} expected"
                for pi, (a, b) in enumerate(zip(p1, p2, strict=False), start=1):
                    if _alignment(a) != _alignment(b):
                        return f"text shape {index} paragraph {pi}: alignment differs"
        return None

    def _shape(self, slide_no: int, sh1: Any, sh2: Any) -> str | None:  # noqa: C901 - one pass, in OSWorld's order
        on, tol = self.on, self.tol
        both_text = _has_text(sh1) and _has_text(sh2)
        if on["title_bottom_position"]:
            if both_text and sh1.text == sh2.text:
                if sh1.text == "Product Comparison" and (sh1.top <= sh2.top or sh1.top < 3600000):
                    return "title is not moved below its expected position"
            elif not _box_close(sh1, sh2, tol):
                return "position or size differs"
        if on["table_bottom_position"]:
            if slide_no == 3 and sh1.shape_type == TABLE and sh2.shape_type == TABLE:
                if sh1.top <= sh2.top or sh1.top < 3600000:
                    return "table is not moved below its expected position"
            elif not _box_close(sh1, sh2, tol):
                return "position or size differs"
        if on["right_position"] and slide_no == 2 and not _has_text(sh1) and not _has_text(sh2):
            if sh1.left <= sh2.left or sh1.left < 4320000:
                return "shape is not moved right of its expected position"
        if on["top_position"] and slide_no == 2 and sh1.shape_type == PICTURE and sh2.shape_type == PICTURE:
            if sh1.top >= sh2.top or sh1.top > 1980000:
                return "picture is not moved above its expected position"
        if on["shape_for_shift_size"] and not _box_close(sh1, sh2, tol):
            if not (
                both_text and sh1.text == sh2.text and sh1.text == "Elaborate on what you want to discuss."
            ):
                return "position or size differs"
        if on["shape"] and not _box_close(sh1, sh2, tol):
            return (
                f"position/size ({sh1.left}, {sh1.top}, {sh1.width}, {sh1.height}) differs from "
                f"({sh2.left}, {sh2.top}, {sh2.width}, {sh2.height})"
            )
        if on["image_size"]:
            if sh1.shape_type == PICTURE and sh2.shape_type == PICTURE:
                if not (_close(sh1.width, sh2.width, tol) and _close(sh1.height, sh2.height, tol)):
                    return "picture size differs"
            elif not _box_close(sh1, sh2, tol):
                return "position or size differs"
        if on["modify_height"]:
            if (not _has_text(sh1) and not _has_text(sh2)) or (
                sh1.shape_type == FREEFORM and sh2.shape_type == FREEFORM
            ):
                if not _close(sh1.height, sh2.height, tol):
                    return "height differs"
            elif not _box_close(sh1, sh2, tol):
                return "position or size differs"
        if sh1.shape_type == TABLE:
            reason = self._table(sh1.table, sh2.table)
            if reason:
                return reason
        if both_text:
            return self._text(sh1, sh2)
        return None

    def _table(self, t1: Any, t2: Any) -> str | None:
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return f"table is {len(t1.rows)}x{len(t1.columns)}, expected {len(t2.rows)}x{len(t2.columns)}"
        for r in range(len(t1.rows)):
            for c in range(len(t1.columns)):
                p1, p2 = t1.cell(r, c).text_frame.paragraphs, t2.cell(r, c).text_frame.paragraphs
                where = f"table cell ({r + 1}, {c + 1})"
                if len(p1) != len(p2):
                    return f"{where}: {len(p1)} paragraphs, {len(p2)} expected"
                for a, b in zip(p1, p2, strict=False):
                    if len(a.runs) != len(b.runs):
                        return f"{where}: {len(a.runs)} runs in a paragraph, {len(b.runs)} expected"
                    for x, y in zip(a.runs, b.runs, strict=False):
                        has1, rgb1 = _explicit_rgb(x.font)
                        has2, rgb2 = _explicit_rgb(y.font)
                        if has1 and has2 and rgb1 != rgb2 and self.on["color_rgb"]:
                            return f"{where}: text colour {rgb1} differs from {rgb2}"
                        if _flag(x.font.bold) != _flag(y.font.bold):
                            return f"{where}: bold differs"
                        if _flag(x.font.italic) != _flag(y.font.italic):
                            return f"{where}: italic differs"
                        if _underline_differs(x.font.underline, y.font.underline):
                            return f"{where}: underline differs"
        return None

    def _text(self, sh1: Any, sh2: Any) -> str | None:  # noqa: C901 - one pass, in OSWorld's order
        on = self.on
        if sh1.text.strip() != sh2.text.strip() and on["text"]:
            return f"text {sh1.text.strip()[:60]!r} differs from {sh2.text.strip()[:60]!r}"
        p1, p2 = sh1.text_frame.paragraphs, sh2.text_frame.paragraphs
        if len(p1) != len(p2):
            return f"{len(p1)} paragraphs, {len(p2)} expected"
        for pi, (a, b) in enumerate(zip(p1, p2, strict=False), start=1):
            where = f"paragraph {pi}"
            if on["alignment"] and _alignment(a) != _alignment(b):
                return f"{where}: alignment {_alignment(a)} differs from {_alignment(b)}"
            if a.text != b.text and on["text"]:
                return f"{where}: text differs"
            if a.level != b.level and on["indent"]:
                return f"{where}: indent level {a.level} differs from {b.level}"
            if len(a.runs) != len(b.runs):
                return f"{where}: {len(a.runs)} runs, {len(b.runs)} expected"
            for ri, (x, y) in enumerate(zip(a.runs, b.runs, strict=False), start=1):
                reason = self._run(x, y)
                if reason:
                    return f"{where} run {ri}: {reason}"
                if on["bullets"]:
                    try:
                        same = _bullet_list(x.part.blob) == _bullet_list(y.part.blob)
                    except Exception:  # noqa: BLE001 - OSWorld skips the bullet check when it cannot read them
                        same = True
                    if not same:
                        return f"{where}: bullets of the slide differ"
        return None

    def _run(self, x: Any, y: Any) -> str | None:
        on, f1, f2 = self.on, x.font, y.font
        if f1.name != f2.name and on["font_name"]:
            return f"font {f1.name!r} differs from {f2.name!r}"
        if f1.size != f2.size and on["font_size"]:
            return f"font size {f1.size} differs from {f2.size}"
        if _flag(f1.bold) != _flag(f2.bold) and on["font_bold"]:
            return "bold differs"
        if _flag(f1.italic) != _flag(f2.italic) and on["font_italic"]:
            return "italic differs"
        has1, rgb1 = _explicit_rgb(f1)
        has2, rgb2 = _explicit_rgb(f2)
        if has1 and has2 and rgb1 != rgb2 and on["color_rgb"]:
            return f"text colour {rgb1} differs from {rgb2}"
        if on["font_underline"] and _underline_differs(f1.underline, f2.underline):
            return "underline differs"
        strike1 = f1._element.attrib.get("strike", "noStrike")
        strike2 = f2._element.attrib.get("strike", "noStrike")
        if strike1 != strike2 and on["strike_through"]:
            return f"strike-through {strike1} differs from {strike2}"
        return None


def compare_pptx_files(result: Any, expected: Any, **options: Any) -> Outcome:
    """Compare two decks (paths) like OSWorld's checker; unknown options raise :class:`CheckerOptionError`."""
    from pptx import Presentation

    problems = option_problems(options)
    if problems:
        raise CheckerOptionError("compare_pptx_files: " + "; ".join(problems))
    return _Comparer(options).run(Presentation(result), Presentation(expected))
