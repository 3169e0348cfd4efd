"""The objects of a ``ppt_diff``: PPT-Eval's ``Slide``, ``AnimationEffect``,
``SlideTransition`` and ``PowerPointDiff``.

Shared by both semantics (:mod:`pptarena.deck.ppteval` builds the corrected view,
:mod:`pptarena.deck.ppteval_published` PPT-Eval's own); attribute names, field order, ``to_dict``
and ``Slide.__repr__`` are PPT-Eval's. ``PowerPointDiff.to_json()`` is plain JSON and
``from_json`` rebuilds the objects (``modified_*`` as tuples), e.g. inside the rubric sandbox.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class Slide:
    """One slide as PPT-Eval describes it."""

    slide_id: str
    slide_number: int
    title: str | None = None
    layout_type: str | None = None
    element_count: int = 0
    notes: str | None = None
    content_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """All seven fields."""
        return asdict(self)

    def __repr__(self) -> str:  # PPT-Eval's repr, character for character: no slide_id, values unquoted
        return (
            f"Slide(slide_number={self.slide_number}, title={self.title}, layout_type={self.layout_type}, "
            f"element_count={self.element_count}, notes={self.notes}, content_hash={self.content_hash})"
        )


@dataclass
class AnimationEffect:
    """One animation effect as PPT-Eval describes it (times in seconds)."""

    slide_id: str
    element_id: str
    effect_type: str
    trigger: str
    delay: float
    duration: float
    order: int
    element_text: str | None = None
    element_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """All nine fields."""
        return asdict(self)


@dataclass
class SlideTransition:
    """One slide transition as PPT-Eval describes it (duration in seconds)."""

    slide_id: str
    transition_type: str
    duration: float
    direction: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """All four fields."""
        return asdict(self)


_LISTS = {
    "added_animations": AnimationEffect,
    "removed_animations": AnimationEffect,
    "modified_animations": AnimationEffect,
    "added_transitions": SlideTransition,
    "removed_transitions": SlideTransition,
    "modified_transitions": SlideTransition,
    "added_slides": Slide,
    "removed_slides": Slide,
    "modified_slides": Slide,
}


@dataclass
class PowerPointDiff:
    """The nine lists rubric code reads; ``modified_*`` hold (old, new) tuples."""

    added_animations: list[AnimationEffect] = field(default_factory=list)
    removed_animations: list[AnimationEffect] = field(default_factory=list)
    modified_animations: list[tuple[AnimationEffect, AnimationEffect]] = field(default_factory=list)
    added_transitions: list[SlideTransition] = field(default_factory=list)
    removed_transitions: list[SlideTransition] = field(default_factory=list)
    modified_transitions: list[tuple[SlideTransition, SlideTransition]] = field(default_factory=list)
    added_slides: list[Slide] = field(default_factory=list)
    removed_slides: list[Slide] = field(default_factory=list)
    modified_slides: list[tuple[Slide, Slide]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """PPT-Eval's ``to_dict``: items as dicts, tuples as 2-element lists."""
        out: dict[str, Any] = {}
        for f in fields(self):
            items = getattr(self, f.name)
            if f.name.startswith("modified_"):
                out[f.name] = [[old.to_dict(), new.to_dict()] for old, new in items]
            else:
                out[f.name] = [item.to_dict() for item in items]
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (same as :meth:`to_dict`)."""
        return self.to_dict()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PowerPointDiff:
        """Rebuild the attribute-access objects from :meth:`to_json` output."""
        kwargs: dict[str, Any] = {}
        for name, item_cls in _LISTS.items():
            raw = data.get(name) or []
            if name.startswith("modified_"):
                kwargs[name] = [(item_cls(**old), item_cls(**new)) for old, new in raw]
            else:
                kwargs[name] = [item_cls(**item) for item in raw]
        return cls(**kwargs)


def from_json(data: dict[str, Any]) -> PowerPointDiff:
    """Module-level alias of :meth:`PowerPointDiff.from_json`."""
    return PowerPointDiff.from_json(data)
