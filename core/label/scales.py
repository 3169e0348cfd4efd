"""What annotators answer: the scales of each protocol, their anchored descriptions and validation.

*absolute*: ``if`` (instruction following, 0-4), ``vq`` (visual quality, 0-4), ``damage`` (did the
edit damage something that was not asked: ``yes``/``no``, with ``damage_slide`` when yes) and an
optional ``comment``. *pairwise*: ``choice`` — ``a`` or ``b`` (which prediction better does what
was asked; stored for the campaign's A and B, whatever order the annotator saw) or ``tie``.
"""

from __future__ import annotations

from typing import Any

from pptarena.label.errors import CampaignError
from pptarena.types import PptArenaError

MAX_COMMENT = 2000

IF_ANCHORS = (
    "0 — nothing asked was done (or the deck was left unchanged)",
    "1 — a small part of the request was done; most is missing or wrong",
    "2 — about half the request was done correctly",
    "3 — the request was mostly done; a detail is missing or slightly off",
    "4 — the request was done completely and exactly",
)
VQ_ANCHORS = (
    "0 — the slides are broken or unreadable (overlaps, text out of boxes, garbage)",
    "1 — serious visual faults a viewer would notice at once",
    "2 — visibly worse than the original in places (misalignment, clashing styles)",
    "3 — clean, with a minor blemish",
    "4 — looks as a careful person would have made it",
)
PAIRWISE_CHOICES = ("a", "b", "tie")

ABSOLUTE_SCALES = {"if": IF_ANCHORS, "vq": VQ_ANCHORS}
"""The ordinal 0-4 scales of the absolute protocol, each with its anchored level descriptions."""


def validate_fields(protocol: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The label's fields, checked and normalised (unknown keys dropped).

    :raises PptArenaError: naming the field that is missing or out of range.
    """
    if not isinstance(fields, dict):
        raise CampaignError("a label is an object of fields")
    if protocol == "pairwise":
        choice = fields.get("choice")
        if choice not in PAIRWISE_CHOICES:
            raise CampaignError(f"choice must be one of {', '.join(PAIRWISE_CHOICES)}")
        out: dict[str, Any] = {"choice": choice}
    elif protocol == "absolute":
        out = {}
        for key in ABSOLUTE_SCALES:
            value = fields.get(key)
            if type(value) is not int or not 0 <= value <= 4:
                raise CampaignError(f"{key} must be a whole number from 0 to 4")
            out[key] = value
        damage = fields.get("damage")
        if damage not in ("yes", "no"):
            raise CampaignError("damage must be yes or no")
        out["damage"] = damage
        slide = fields.get("damage_slide")
        if damage == "yes" and slide not in (None, ""):
            if type(slide) is not int or not 1 <= slide <= 10_000:
                raise CampaignError("damage_slide must be a slide number")
            out["damage_slide"] = slide
    else:
        raise PptArenaError(f"unknown protocol {protocol!r}")
    comment = fields.get("comment")
    if comment not in (None, ""):
        if not isinstance(comment, str):
            raise CampaignError("comment must be text")
        out["comment"] = comment[:MAX_COMMENT]
    return out
