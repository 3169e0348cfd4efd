"""OOXML part handling for the ``xml`` branch: the guard lives in the deck engine
(:mod:`pptarena.deck.parts`, shared with ``arena mcp``'s ``write_part`` tool); this module
re-exports its public names for the branch and its tests.
"""

from __future__ import annotations

from pptarena.deck.parts import (
    EDITABLE,
    MAX_MEMBER_BYTES,
    MAX_PART_BYTES,
    MAX_TOTAL_BYTES,
    MC_NS,
    R_NS,
    DeckParts,
    PartError,
    PartRel,
    check_part,
    hardened_parser,
    parse_part,
    referenced_rids,
    rels_name,
    write_package,
)

__all__ = [
    "EDITABLE",
    "MAX_MEMBER_BYTES",
    "MAX_PART_BYTES",
    "MAX_TOTAL_BYTES",
    "MC_NS",
    "R_NS",
    "DeckParts",
    "PartError",
    "PartRel",
    "check_part",
    "hardened_parser",
    "parse_part",
    "referenced_rids",
    "rels_name",
    "write_package",
]
