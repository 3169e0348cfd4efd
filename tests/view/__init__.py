"""Tests of `arena view` in process and in a real browser."""
