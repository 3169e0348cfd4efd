"""Tests of the agent plugins (command, PPTPilot, the examples) through backends and the runner."""
