"""The deck engine: safe reading, a deterministic JSON summary and a structural diff.

Public API (stable)::

    from pptarena.deck import DeckError, open_presentation, slide_ids, summarize, diff_decks
"""

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
