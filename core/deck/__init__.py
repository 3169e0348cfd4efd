"""The deck engine: safe reading, a deterministic JSON summary and a structural diff.

Public API (stable)::

    from pptarena.deck import DeckError, open_presentation, slide_ids, summarize, diff_decks

The names load on first use (PEP 562), so importing one light submodule (e.g. ``ppteval_items``,
which the rubric sandbox needs to rebuild ``ppt_diff``) does not load the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pptarena._imports import lazy_exports

_LAZY = {
    "DeckDiff": "diff",
    "diff_decks": "diff",
    "PowerPointDiff": "ppteval",
    "ppteval_diff": "ppteval",
    "DeckError": "read",
    "open_package": "read",
    "open_presentation": "read",
    "slide_ids": "read",
    "slide_flags": "summary",
    "summarize": "summary",
}

if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from .diff import DeckDiff, diff_decks
    from .ppteval import PowerPointDiff, ppteval_diff
    from .read import DeckError, open_package, open_presentation, slide_ids
    from .summary import slide_flags, summarize

__all__ = [
    "DeckDiff",
    "DeckError",
    "PowerPointDiff",
    "diff_decks",
    "open_package",
    "open_presentation",
    "ppteval_diff",
    "slide_ids",
    "slide_flags",
    "summarize",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
