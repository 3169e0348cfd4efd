"""PPTC's judge, registered as ``pptx_match``: PPTC's PPTX-Match check (attributes + position relations).

:mod:`.plugin` registers it; :mod:`.judge` is the judge; :mod:`.serialise` writes a deck out as
PPTC's reader does; :mod:`.positions` checks the position restrictions.
"""

from .judge import (
    PptxMatchJudge,
    check_positions,
    deck_text,
    find_object,
    load_deck,
    relation_holds,
    split_restriction,
)

__all__ = [
    "PptxMatchJudge",
    "check_positions",
    "deck_text",
    "find_object",
    "load_deck",
    "relation_holds",
    "split_restriction",
]
