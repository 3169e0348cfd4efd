"""The anthropic backend through the real Anthropic SDK against the loopback stub server."""

from __future__ import annotations

import base64
import logging
import time
import traceback

import pytest

from pptarena.models import ImagePart, Message, ModelClient, ModelError, TransientModelError
from pptarena.types import ComponentContext, ComponentUnavailable
from tests.support.stub_llm_server import TEST_API_KEY, Fail, Hang, Reply

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(48))


def client_for(backend, model="claude-test"):
    return ModelClient(backend, "anthropic", model)


@pytest.mark.slow
def test_system_text_and_images_use_the_messages_wire_format(anthropic_backend, llm_server):
    llm_server.enqueue(Reply("done", input_tokens=120, output_tokens=1))
    client = client_for(anthropic_backend())
    completion = client.complete(
        [
            Message.system("You judge slides."),
            Message.system("Be strict."),
            Message.user(ImagePart(PNG), "Rate slide 1."),
            Message.assistant("Score: 3"),
            Message.user("Why?"),
        ],
        stop="END",
    )
    assert completion.text == "done" and completion.finish_reason == "end_turn"
    assert completion.usage.input_tokens == 120 and completion.usage.output_tokens == 1
    req = llm_server.requests[-1]
    assert req.path == "/v1/messages"
    assert req.headers.get("anthropic-version")  # set by the SDK
    assert req.api_key == TEST_API_KEY
    body = req.body
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 4096  # required by the API: always sent
    assert body["system"] == "You judge slides.\n\nBe strict."
    assert body["stop_sequences"] == ["END"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    image, text = body["messages"][0]["content"]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
    }
    assert text == {"type": "text", "text": "Rate slide 1."}
    assert body["messages"][1] == {"role": "assistant", "content": "Score: 3"}
    assert req.images() == [("image/png", PNG)]


def test_max_tokens_option_and_per_call_value(anthropic_backend, llm_server):
    client = client_for(anthropic_backend(max_tokens=256))
    client.complete([Message.user("a")])
    client.complete([Message.user("b")], max_tokens=12)
    assert llm_server.requests[0].body["max_tokens"] == 256
    assert llm_server.requests[1].body["max_tokens"] == 12


def test_sampling_parameters_follow_the_api_version(anthropic_backend, llm_server, caplog):
    backend = anthropic_backend()
    client_for(backend).complete([Message.user("a")], temperature=0.0, top_k=3)
    sent = llm_server.requests[-1]
    if backend._native_sampling:  # an SDK of the 2023-06-01 API takes them natively
        assert sent.body["temperature"] == 0.0 and sent.body["top_k"] == 3
    else:  # API 2026-10-21 rejects them: dropped, with one warning
        assert "temperature" not in sent.body and "top_k" not in sent.body
        assert "dropped" in caplog.text and "2023-06-01" in caplog.text

    legacy = anthropic_backend(api_version="2023-06-01")
    client_for(legacy).complete([Message.user("a")], temperature=0.5)
    sent = llm_server.requests[-1]
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body["temperature"] == 0.5


def test_unsupported_image_type_is_refused(anthropic_backend, llm_server):
    with pytest.raises(TypeError, match="unsupported image type"):
        client_for(anthropic_backend()).complete([Message.user("x", ImagePart(b"BM..", "image/bmp"))])
    assert llm_server.requests == []


@pytest.mark.parametrize("status", [429, 500, 529])
def test_transient_status_then_success(anthropic_backend, llm_server, status):
    llm_server.enqueue(Fail(status, "busy"), Reply("ok then"))
    client = client_for(anthropic_backend(max_retries=2))
    assert client.complete([Message.user("x")]).text == "ok then"
    assert len(llm_server.requests) == 2 and client.usage.retries == 1


def test_hang_times_out(anthropic_backend, llm_server):
    llm_server.enqueue(Hang(10))
    started = time.monotonic()
    with pytest.raises(TransientModelError, match="timed out"):
        client_for(anthropic_backend(timeout=0.4, max_retries=0)).complete([Message.user("x")])
    assert time.monotonic() - started < 5


def test_cache_hit_makes_no_request(anthropic_backend, llm_server, tmp_path):
    backend = anthropic_backend(cache=tmp_path / "c.sqlite")
    messages = [Message.system("s"), Message.user("x", ImagePart(PNG))]
    client_for(backend).complete(messages)
    hit = client_for(backend).complete(messages)
    assert hit.cached and len(llm_server.requests) == 1


def test_bad_key_is_not_retried_and_never_leaks(anthropic_backend, llm_server, caplog):
    caplog.set_level(logging.DEBUG)
    llm_server.enqueue(Fail(401, "invalid x-api-key {api_key}"))
    with pytest.raises(ModelError) as info:
        client_for(anthropic_backend(max_retries=3)).complete([Message.user("x")])
    assert not isinstance(info.value, TransientModelError) and info.value.status == 401
    assert len(llm_server.requests) == 1
    text = "".join(traceback.format_exception(info.value))
    assert "HTTP 401" in text and TEST_API_KEY not in text
    assert TEST_API_KEY not in caplog.text


def test_missing_key_is_a_clear_unavailability(monkeypatch, tmp_path):
    from pptarena.plugins.backends.anthropic import AnthropicBackend, AnthropicOptions

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ComponentUnavailable, match="ANTHROPIC_API_KEY"):
        AnthropicBackend(AnthropicOptions(), ComponentContext(cache_dir=tmp_path, model=lambda ref: None))
