"""Where things are: the repository, ../shared and its data sets, the tests' own folders.

Import the constants (``from tests.support.paths import CORPUS``); tests that need a folder to
exist take the ``corpus_dir`` fixture of tests/conftest.py, which skips when it is absent.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
PPTEVAL = SHARED / "ppteval"
FIXTURES = TESTS / "fixtures"
# Test-only plugin modules registered by name through PPTARENA_PLUGINS (fakeplugins, ...): a plain
# folder (no __init__.py) that tests put on the import path and on a child's PYTHONPATH, as a user would.
PLUGIN_MODULES = TESTS / "plugin_modules"
BENCHMARKS = ROOT / "benchmarks"
