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


RATE = {
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-input-tokens-remaining": "39000",
    "anthropic-ratelimit-input-tokens-reset": "2026-12-02T03:00:00Z",
    "x-unrelated": "kept out",
}
KEPT = {k: v for k, v in RATE.items() if k.startswith("anthropic-")}


def test_rate_limit_headers_come_back_from_messages_and_the_beta_endpoint(anthropic_backend, llm_server):
    llm_server.enqueue(Reply("plain", headers=RATE), Reply("beta", headers=RATE))
    backend = anthropic_backend()
    plain = client_for(backend).complete([Message.user("x")])
    beta = client_for(backend).complete([Message.user("x")], betas=["some-beta-2025-01-01"])
    assert llm_server.requests[-1].headers["anthropic-beta"] == "some-beta-2025-01-01"
    assert plain.rate_headers == KEPT and beta.rate_headers == KEPT


def test_a_429_carries_its_rate_headers(anthropic_backend, llm_server):
    llm_server.enqueue(Fail(429, "rate limited", retry_after=2, headers=RATE))
    with pytest.raises(TransientModelError) as info:
        anthropic_backend().complete([Message.user("x")], model="claude-test")
    assert info.value.status == 429 and info.value.retry_after == 2.0
    assert info.value.rate_headers == {**KEPT, "retry-after": "2"}


def test_cache_prefix_marks_the_last_block_of_a_user_message(anthropic_backend, llm_server):
    client = client_for(anthropic_backend())
    client.complete(
        [
            Message.system("You judge slides."),
            Message.user("Instruction", ImagePart(PNG), cache_prefix=True),
            Message.user("Prediction", ImagePart(PNG)),  # a second user message in a row stays apart
        ]
    )
    body = llm_server.requests[-1].body
    assert body["system"] == "You judge slides."  # no mark on it: a plain string as before
    first, second = body["messages"]
    assert [m["role"] for m in body["messages"]] == ["user", "user"]
    assert [b["type"] for b in first["content"]] == ["text", "image"]
    assert "cache_control" not in first["content"][0]
    assert first["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in b for b in second["content"])
    # plain text with the mark becomes a block list so the mark has a block to sit on
    client.complete([Message.user("just text", cache_prefix=True), Message.user("question")])
    body = llm_server.requests[-1].body
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "just text", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"][1]["content"] == "question"


def test_cache_prefix_on_a_system_message_makes_system_a_block_list(anthropic_backend, llm_server):
    client = client_for(anthropic_backend(prompt_cache_ttl="1h"))
    client.complete(
        [
            Message.system("You judge slides."),
            Message.system("Rubric: ...", cache_prefix=True),
            Message.system("Answer in JSON."),
            Message.user("deck"),
        ]
    )
    req = llm_server.requests[-1]
    assert req.body["system"] == [
        {"type": "text", "text": "You judge slides."},
        {"type": "text", "text": "Rubric: ...", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": "Answer in JSON."},
    ]
    assert req.body["messages"] == [{"role": "user", "content": "deck"}]
    assert req.system() == "You judge slides.\nRubric: ...\nAnswer in JSON."


def test_at_most_four_cache_marks_are_sent_the_last_ones(anthropic_backend, llm_server):
    from pptarena.plugins.backends.anthropic import to_anthropic_request

    messages = [Message.system("s", cache_prefix=True)] + [
        Message.user(f"turn {i}", cache_prefix=True) for i in range(5)
    ]
    system, wire = to_anthropic_request(messages, "5m")
    assert system == "s"  # its mark was among the dropped ones
    marked = [i for i, m in enumerate(wire) if "cache_control" in m["content"][-1]]
    assert marked == [1, 2, 3, 4]
    client_for(anthropic_backend()).complete(messages)
    sent = llm_server.requests[-1].body["messages"]
    assert sum("cache_control" in m["content"][-1] for m in sent) == 4


def test_cache_prefix_on_a_tool_result_message_marks_the_tool_result(anthropic_backend, llm_server):
    from pptarena.models import ToolCall, ToolResult

    client_for(anthropic_backend()).complete(
        [
            Message.user("start"),
            Message.assistant("", ToolCall("tu_1", "computer", {"action": "screenshot"})),
            Message.user(ToolResult("tu_1", (ImagePart(PNG),)), cache_prefix=True),
        ]
    )
    last = llm_server.requests[-1].body["messages"][-1]["content"]
    assert last[-1]["type"] == "tool_result" and last[-1]["cache_control"] == {"type": "ephemeral"}
