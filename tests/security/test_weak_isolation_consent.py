"""The run's consent to weak isolation reaches the harness's worker processes, and only for the run."""

from __future__ import annotations

import os
import subprocess
import sys

from pptarena.run.jail.boundary import WEAK_ISOLATION_ENV, weak_isolation_allowed, weak_isolation_consent


def _child_sees() -> str:
    code = f"import os; print(os.environ.get({WEAK_ISOLATION_ENV!r}, '-'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_consent_is_given_for_the_block_and_to_children_then_taken_back(monkeypatch):
    monkeypatch.delenv(WEAK_ISOLATION_ENV, raising=False)
    assert not weak_isolation_allowed()
    with weak_isolation_consent(True):
        assert weak_isolation_allowed() and _child_sees() == "1"
    assert not weak_isolation_allowed() and _child_sees() == "-"


def test_a_run_that_does_not_allow_it_withdraws_a_value_left_in_the_environment(monkeypatch):
    """A stray ``PPTARENA_ALLOW_WEAK_ISOLATION=1`` in the user's shell is not the run's consent."""
    monkeypatch.setenv(WEAK_ISOLATION_ENV, "1")
    with weak_isolation_consent(False):
        assert not weak_isolation_allowed() and _child_sees() == "-"
    assert os.environ[WEAK_ISOLATION_ENV] == "1"  # restored for whoever set it
