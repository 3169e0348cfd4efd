"""A fallback for changes the structural diff cannot see: compare the decks' XML parts.

The deck engine's diff covers what its summary records; a target can differ from its original in
XML the summary leaves out (a table cell's fill, say). When the diff sees no edit but the content
parts differ, the structural judge compares those parts instead: each part the target changed is a
unit, credited by how far the prediction's version of it moved from the original's toward the
target's (line similarity of canonical, one-element-per-line XML); parts the prediction changed and
the target did not are collateral damage.
"""

from __future__ import annotations

import re
from pathlib import Path

from lxml import etree

from pptarena.deck.align import ratio

CONTENT_PART_RE = re.compile(
    r"^ppt/(?:presentation\.xml|(?:slides|slideLayouts|slideMasters|theme|notesSlides|charts|diagrams|tables)"
    r"/[^/]+\.xml)$"
)
MAX_LINES = 20_000  # lines compared per part (bounded cost)


def canonical_parts(path: str | Path) -> dict[str, list[str]]:
    """Content parts of a deck as canonical XML lines (one element per line, blanks dropped)."""
    from pptarena.deck import open_package

    out: dict[str, list[str]] = {}
    with open_package(path) as pkg:
        for name in pkg.names():
            if not CONTENT_PART_RE.match(name):
                continue
            root = pkg.xml(name)
            for el in root.iter():
                if el.text is not None and not el.text.strip() and len(el):
                    el.text = None
                if el.tail is not None and not el.tail.strip():
                    el.tail = None
            text = etree.tostring(root, method="c14n").decode("utf-8")
            out[name] = re.sub(r">\s*<", ">\n<", text).splitlines()[:MAX_LINES]
    return out


def _similarity(a: list[str] | None, b: list[str] | None) -> float:
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return ratio(a, b)  # difflib's ratio, with a bounded cost (canonical XML lines repeat a lot)


def compare_parts(original: str | Path, target: str | Path, prediction: str | Path) -> dict[str, object]:
    """Per-part recall for parts the target changed, and the parts only the prediction changed.

    Returns ``{"recall": {part: credit}, "collateral": [part, ...], "prediction_changed": [part, ...]}``.
    """
    o, t, p = canonical_parts(original), canonical_parts(target), canonical_parts(prediction)
    changed_t = sorted(n for n in set(o) | set(t) if o.get(n) != t.get(n))
    changed_p = sorted(n for n in set(o) | set(p) if o.get(n) != p.get(n))
    recall: dict[str, float] = {}
    for name in changed_t:
        if p.get(name) == t.get(name):
            recall[name] = 1.0
            continue
        base = _similarity(o.get(name), t.get(name))
        got = _similarity(p.get(name), t.get(name))
        recall[name] = max(0.0, min(1.0, (got - base) / (1.0 - base))) if base < 1.0 else 0.0
    collateral = [n for n in changed_p if n not in recall]
    return {"recall": recall, "collateral": collateral, "prediction_changed": changed_p}


__all__ = ["canonical_parts", "compare_parts"]
