"""Tests of the judges (dual, structural, osworld and pptc differentials)."""
