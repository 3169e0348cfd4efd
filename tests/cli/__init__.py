"""Tests of the `arena` command line: surface, imports, polish, `arena init`."""
