"""PPTC's position restrictions: ``"<slide>, <A>, <B>, <relation>"`` checked on the prediction.

As PPTC's ``src/pptx_check.py`` and ``calc_acc``: the text is split on ``,`` and each field
stripped of spaces; a restriction without exactly four fields raises (PPTC's evaluation aborts;
here :class:`ValueError`, which the judge reports as a judge error). A bad slide number, an object
index that is not a number, a missing object or a position that is not set fails the restriction.
``A`` and ``B`` name objects (first match in shape order); the relation holds when every one of the
words ``left``, ``top``, ``right``, ``bottom``, ``center`` it contains holds, with strict
inequalities in EMU against ``B`` or, when ``B`` is ``slide``, against PPTC's fixed midlines (a
10 x 7.5 in slide, also for other slide sizes). ``center`` is only checked against the slide, and a
relation without any of the words (``below``) holds.
"""

from __future__ import annotations

from typing import Any

MID_X, MID_Y = 4_572_000, 3_429_000  # PPTC's fixed slide midlines
RELATION_WORDS = ("left", "top", "right", "bottom", "center")
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


def _nth(slide: Any, word: str, index: int) -> Any:
    seen = 0
    for shape in slide.shapes:
        if word in str(shape.shape_type):
            if seen == index:
                return shape
            seen += 1
    return None


def _index(name: str, bare: str) -> int:
    """``"textbox 2"`` → 2 (PPTC reads the number from the 9th character on; ``"textbox"`` → 0)."""
    return int(name[8:]) if name != bare else 0


def find_object(slide: Any, name: str) -> Any:
    """The object a restriction names (first match in shape order), or None.

    Raises ValueError for a ``textbox``/``picture`` name whose index is not a number.
    """
    if name == "table":
        return _nth(slide, "TABLE", 0)
    if "chart" in name:
        return _nth(slide, "CHART", 0)
    if "textbox" in name:
        return _nth(slide, "TEXT_BOX", _index(name, "textbox"))
    if name in ("content", "title"):
        word = name.capitalize()
        return next((s for s in slide.shapes if word in s.name), None)
    if "picture" in name:
        return _nth(slide, "PICTURE", _index(name, "picture"))
    if name == "image":
        return _nth(slide, "PICTURE", 0)
    if name in _SHAPE_WORDS:
        word = _SHAPE_WORDS[name]
        for shape in slide.shapes:
            if word in shape.name and not (word == "Rectangle" and "Rounded Rectangle" in shape.name):
                return shape
    return None


def _slide_test(a: Any, word: str) -> bool:
    if word == "left":
        return a.left + a.width < MID_X
    if word == "top":
        return a.top + a.height < MID_Y
    if word == "right":
        return a.left > MID_X
    if word == "bottom":
        return a.top > MID_Y
    return a.left < MID_X and a.top < MID_Y and a.left + a.width > MID_X and a.top + a.height > MID_Y


def _object_test(a: Any, b: Any, word: str) -> bool:
    if word == "left":
        return a.left + a.width < b.left
    if word == "top":
        return a.top + a.height < b.top
    if word == "right":
        return a.left > b.left + b.width
    return a.top > b.top + b.height  # bottom


def relation_holds(slide: Any, a_name: str, b_name: str, relation: str) -> bool:
    """Whether ``A`` is ``relation`` of ``B`` (or of the slide's midlines when B is ``slide``).

    Only the words present are computed, in PPTC's order (a position that is not set raises
    TypeError, as in PPTC, and only when a word needs it).
    """
    a = find_object(slide, a_name)
    if b_name == "slide":
        if a is None:
            return False
        return all(_slide_test(a, w) for w in RELATION_WORDS if w in relation)
    b = find_object(slide, b_name)
    if a is None or b is None:
        return False
    return all(_object_test(a, b, w) for w in RELATION_WORDS[:4] if w in relation)


def split_restriction(text: str) -> tuple[str, str, str, str]:
    """``"0, star, picture, right"`` → its four fields stripped of spaces (raises ValueError otherwise)."""
    parts = [p.strip(" ") for p in text.split(",")]
    if len(parts) != 4:
        raise ValueError(f"position restriction {text.strip()!r} does not have 4 comma-separated fields")
    return parts[0], parts[1], parts[2], parts[3]


def check_positions(prs: Any, restrictions: list[str]) -> list[str]:
    """The restrictions that fail on the loaded deck (all are checked, in order).

    Raises ValueError for a restriction without four fields (where PPTC's evaluation raises).
    """
    failed = []
    for text in restrictions:
        slide_no, a_name, b_name, relation = split_restriction(text)
        try:
            ok = relation_holds(prs.slides[int(slide_no)], a_name, b_name, relation)
        except Exception:  # noqa: BLE001 - as PPTC: any failure while checking fails the restriction
            ok = False
        if not ok:
            failed.append(text.strip())
    return failed
