"""Tests of deck reading, alignment, diffing and summaries (pptarena.deck)."""
