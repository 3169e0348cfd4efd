"""Shared by the LibreOffice renderer tests: the corpus decks they render and the soffice skip mark."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.paths import CORPUS

HIDDEN_DECK = "shapecrawler_autoshape-case017_sections_hidden.pptx"  # 1 slide, hidden, 4:3
WIDE_DECK = "unstructured_sample-presentation_google.pptx"  # 4 slides, 16:9
SMALL_DECK = "docling_powerpoint_comments.pptx"  # 3 slides, 4:3

needs_soffice = pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed"
)


def corpus(name: str) -> Path:
    """A deck of ../shared/corpus, or skip the test when it is not there."""
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"corpus deck {name} is not available")
    return path
