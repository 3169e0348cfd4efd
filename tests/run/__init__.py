"""Tests of a run: runner, config, records, registry, epochs and cost, statistics."""
