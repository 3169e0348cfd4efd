"""Shared fixtures: paths to ../shared, hermetic caches, and the fake plugins."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.paths import CORPUS, PLUGIN_MODULES

# The loopback LLM server and backend builders (llm_server, openai_backend, ...), for every test.
pytest_plugins = ["tests.support.llm_fixtures"]

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
def fake_plugins(monkeypatch, plugin_modules):
    """Registers tests/plugin_modules/fakeplugins.py (PPTARENA_PLUGINS) and resets the process registry."""
    from pptarena.run.configuration.registry import reset_registry

    monkeypatch.setenv("PPTARENA_PLUGINS", "fakeplugins")
    reset_registry()
    yield
    reset_registry()


@pytest.fixture
def plugin_modules(monkeypatch) -> Path:
    """tests/plugin_modules on this test's import path and on its children's ``PYTHONPATH``.

    ``PPTARENA_PLUGINS`` names plugin modules imported by name, as a user's own module on the path;
    both are undone after the test (``monkeypatch``)."""
    monkeypatch.syspath_prepend(str(PLUGIN_MODULES))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN_MODULES), os.environ.get("PYTHONPATH", "")]))
    return PLUGIN_MODULES


@pytest.fixture
def run_config(tmp_path) -> Callable[..., Path]:
    """``run_config(name="run.toml", text=None, **parts)``: writes a run config into the test's tmp
    folder, ``text`` as given or built by :func:`tests.support.config.run_toml` from ``parts``."""
    from tests.support.config import write_run_config

    def write(name: str = "run.toml", text: str | None = None, **parts) -> Path:
        return write_run_config(tmp_path / name, text, **parts)

    return write


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> Path:
    """A finished demo run (3 tasks, noop + oracle, real LibreOffice, rubric + structural judges),
    built once per session: read it, or copy it (``copy_run``) before writing into it."""
    from tests.support.report_fixtures import build_demo_run

    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")
    return build_demo_run(tmp_path_factory)


@pytest.fixture
def fake_run(tmp_path, fake_plugins) -> Callable[..., Path]:
    """``fake_run(count=2)``: a finished run of fakeplugins' retitle, noop and crash agents in
    ``tmp_path/run`` (the title judge, the dummy renderer)."""
    from tests.support.report_fixtures import build_fake_run

    return lambda count=2: build_fake_run(tmp_path, count)
