"""The deck engine: safe reading, a deterministic JSON summary and a structural diff.

Public API (stable)::

    from pptarena.deck import DeckError, open_presentation, slide_ids, summarize
"""

from .read import DeckError, open_package, open_presentation, slide_ids
from .summary import summarize

__all__ = ["DeckError", "open_package", "open_presentation", "slide_ids", "summarize"]
