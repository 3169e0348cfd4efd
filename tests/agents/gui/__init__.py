"""Tests of the gui agent: adapters, its environment, native computer use, end to end."""
