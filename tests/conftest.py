"""Shared fixtures: paths to ../shared, hermetic caches, and the fake plugins."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
PPTEVAL = SHARED / "ppteval"
TESTS = Path(__file__).resolve().parent

if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# A suite started in the background by a non-interactive shell (`cmd &` in a CI script) inherits
# SIGINT ignored, and so would every `arena run` a test starts (an ignored signal stays ignored across
# exec, by design: `nohup`): the Ctrl-C tests would then see runs that never stop. Take Ctrl-C back.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _hermetic_cache(tmp_path_factory, monkeypatch):
    """Each test session uses its own cache folder unless PPTARENA_CACHE is set by the caller."""
    if "PPTARENA_TEST_KEEP_CACHE" not in os.environ:
        monkeypatch.setenv("PPTARENA_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def corpus_dir() -> Path:
    """../shared/corpus, or skip."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available")
    return CORPUS


@pytest.fixture
def fake_plugins(monkeypatch):
    """Registers tests/fakeplugins.py through PPTARENA_PLUGINS and resets the process registry."""
    from pptarena.run.registry import reset_registry

    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    reset_registry()
    yield
    reset_registry()
