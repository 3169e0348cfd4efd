"""Pytest fixtures for model-driven tests: a loopback LLM server and backend builders.

tests/conftest.py loads them as a plugin, so every test can ask for them::

    from tests.support.stub_llm_server import TEST_API_KEY, Fail, Hang, Reply

    def test_my_judge(openai_backend, llm_server):
        llm_server.enqueue(Reply('{"score": 4}'))
        client = ModelClient(openai_backend(), "openai", "gpt-4o")
        ...
        assert llm_server.requests[-1].images()

``openai_backend(**options)``, ``anthropic_backend(**options)`` and
``scripted_backend(**options)`` build real backend objects (test key
:data:`TEST_API_KEY`, short backoff, cache off unless asked) with a context
whose ``cache_dir`` is the test's tmp folder. ``model_context(**backends)``
returns a ``ComponentContext`` whose ``model(ref)`` resolves those backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from pptarena.models import ModelHub
from pptarena.types import ComponentContext
from tests.support.stub_llm_server import TEST_API_KEY, StubLLMServer

__all__ = [
    "TEST_API_KEY",
    "anthropic_backend",
    "llm_server",
    "model_context",
    "openai_backend",
    "scripted_backend",
]

FAST_RETRY = {"retry_base_delay": 0.01, "retry_max_delay": 0.05}


@pytest.fixture
def llm_server() -> Iterator[StubLLMServer]:
    """A started :class:`StubLLMServer` on 127.0.0.1, stopped after the test."""
    server = StubLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


def _context(tmp_path: Path) -> ComponentContext:
    def no_model(ref: str) -> Any:
        raise AssertionError(f"backends do not ask for models ({ref})")

    return ComponentContext(cache_dir=tmp_path / "cache", model=no_model, name="test", label="test")


@pytest.fixture
def openai_backend(llm_server: StubLLMServer, tmp_path: Path) -> Callable[..., Any]:
    """``openai_backend(**options)`` → an OpenAIBackend pointed at the stub server."""
    from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions

    built: list[Any] = []

    def make(**options: Any) -> Any:
        opts: dict[str, Any] = {"api_key": SecretStr(TEST_API_KEY), **FAST_RETRY, **options}
        if "azure_endpoint" not in opts and "base_url" not in opts:
            opts["base_url"] = llm_server.openai_base_url
        backend = OpenAIBackend(OpenAIOptions(**opts), _context(tmp_path))
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


@pytest.fixture
def anthropic_backend(llm_server: StubLLMServer, tmp_path: Path) -> Callable[..., Any]:
    """``anthropic_backend(**options)`` → an AnthropicBackend pointed at the stub server."""
    from pptarena.plugins.backends.anthropic import AnthropicBackend, AnthropicOptions

    built: list[Any] = []

    def make(**options: Any) -> Any:
        opts: dict[str, Any] = {
            "api_key": SecretStr(TEST_API_KEY),
            "base_url": llm_server.anthropic_base_url,
            **FAST_RETRY,
            **options,
        }
        backend = AnthropicBackend(AnthropicOptions(**opts), _context(tmp_path))
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


@pytest.fixture
def scripted_backend(tmp_path: Path) -> Callable[..., Any]:
    """``scripted_backend(responses=[...], rules=[...], ...)`` → a ScriptedBackend (no server needed)."""
    from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions

    def make(**options: Any) -> Any:
        return ScriptedBackend(ScriptedOptions(**options), _context(tmp_path))

    return make


@pytest.fixture
def model_context(tmp_path: Path) -> Callable[..., ComponentContext]:
    """``model_context(scripted=backend, ...)`` → a ComponentContext whose ``model(ref)`` uses
    those backends.
    """

    def make(**backends: Any) -> ComponentContext:
        hub = ModelHub(backends)
        return ComponentContext(cache_dir=tmp_path / "cache", model=hub.factory(), name="test", label="test")

    return make
