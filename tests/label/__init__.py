"""Tests of labelling campaigns and agreement figures (pptarena.label)."""
