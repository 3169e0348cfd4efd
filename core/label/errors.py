"""The labelling package's error."""

from __future__ import annotations

from pptarena.types import PptArenaError


class CampaignError(PptArenaError):
    """The campaign file is missing, not a campaign, or a label is invalid."""
