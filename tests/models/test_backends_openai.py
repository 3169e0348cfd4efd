"""The openai backend through the real OpenAI SDK against the loopback stub server."""

from __future__ import annotations

import logging
import threading
import time
import traceback

import pytest

from pptarena.models import (
    ImagePart,
    Message,
    ModelClient,
    ModelError,
    ToolCall,
    ToolResult,
    TransientModelError,
)
from pptarena.types import ComponentContext, ComponentUnavailable
from tests.support.stub_llm_server import TEST_API_KEY, Fail, Hang, Native, Reply

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(32))


def client_for(backend, model="gpt-test"):
    return ModelClient(backend, "openai", model)


def test_text_and_images_use_the_chat_completions_wire_format(openai_backend, llm_server):
    llm_server.enqueue(Reply("the answer", input_tokens=40, output_tokens=2))
    client = client_for(openai_backend(temperature=0.2))
    completion = client.complete(
        [
            Message.system("You edit decks."),
            Message.user("Slide 1 and 2:", ImagePart(PNG), ImagePart(JPEG, "image/jpeg")),
        ],
        max_tokens=50,
    )
    assert completion.text == "the answer"
    assert completion.usage.input_tokens == 40 and completion.usage.output_tokens == 2
    assert completion.finish_reason == "stop"
    req = llm_server.requests[-1]
    assert req.path == "/v1/chat/completions"
    assert req.api_key == TEST_API_KEY
    body = req.body
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0.2  # option default applied
    assert body["max_tokens"] == 50  # base_url server: plain max_tokens
    assert body["messages"][0] == {"role": "system", "content": "You edit decks."}
    parts = body["messages"][1]["content"]
    assert parts[0] == {"type": "text", "text": "Slide 1 and 2:"}
    assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    assert req.images() == [("image/png", PNG), ("image/jpeg", JPEG)]
    usage = client.usage.as_dict()
    assert (usage.pop("input_tokens"), usage.pop("output_tokens"), usage.pop("calls")) == (40, 2, 1)
    named = {"cached_calls", "retries", "errors", "cached_input_tokens", "cache_write_input_tokens"}
    assert named <= set(usage) and set(usage.values()) == {0}  # so is any newer count


def test_plain_user_text_is_a_string_and_assistant_turns_pass_through(openai_backend, llm_server):
    client = client_for(openai_backend())
    client.complete(
        [Message.user("hi"), Message.assistant("hello"), Message.user("again")], stop=["END"], seed=7
    )
    body = llm_server.requests[-1].body
    assert body["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "again"},
    ]
    assert body["stop"] == ["END"] and body["seed"] == 7


def test_headers_extra_body_and_max_completion_tokens_option(openai_backend, llm_server):
    backend = openai_backend(
        default_headers={"X-Team": "arena"},
        extra_body={"top_k": 5},
        max_tokens_param="max_completion_tokens",
        organization="org-1",
        image_detail="low",
    )
    client_for(backend).complete([Message.user("x", ImagePart(PNG))], max_tokens=9)
    req = llm_server.requests[-1]
    assert req.headers["x-team"] == "arena"
    assert req.headers["openai-organization"] == "org-1"
    assert req.body["top_k"] == 5
    assert req.body["max_completion_tokens"] == 9 and "max_tokens" not in req.body
    assert req.body["messages"][0]["content"][1]["image_url"]["detail"] == "low"


def test_unknown_parameters_are_refused_before_any_request(openai_backend, llm_server):
    with pytest.raises(TypeError, match="unknown parameter"):
        client_for(openai_backend()).complete([Message.user("x")], temprature=0.1)
    assert llm_server.requests == []


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_status_then_success_is_retried_and_counted(openai_backend, llm_server, status):
    llm_server.enqueue(Fail(status, "try later"), Reply("fine"))
    client = client_for(openai_backend(max_retries=3))
    assert client.complete([Message.user("x")]).text == "fine"
    assert len(llm_server.requests) == 2
    assert client.usage.retries == 1 and client.usage.calls == 1 and client.usage.errors == 0


def test_retry_after_header_is_honoured(openai_backend, llm_server):
    llm_server.enqueue(Fail(429, retry_after=0.3), Reply("fine"))
    client = client_for(openai_backend(max_retries=2, retry_max_delay=1.0))
    client.complete([Message.user("x")])
    first, second = llm_server.requests
    assert second.time - first.time >= 0.28


def test_retries_are_bounded(openai_backend, llm_server):
    llm_server.enqueue(*[Fail(500, "down")] * 5)
    client = client_for(openai_backend(max_retries=2))
    with pytest.raises(TransientModelError, match="gave up after 3 attempts") as info:
        client.complete([Message.user("x")])
    assert info.value.status == 500
    assert len(llm_server.requests) == 3
    assert client.usage.errors == 1 and client.usage.retries == 2 and client.usage.calls == 0
    assert llm_server.requests[0].headers["x-stainless-retry-count"] == "0"  # the SDK itself never retries


def test_client_errors_are_not_retried(openai_backend, llm_server):
    llm_server.enqueue(Fail(400, "messages: bad shape"))
    with pytest.raises(ModelError, match="HTTP 400: messages: bad shape") as info:
        client_for(openai_backend(max_retries=3)).complete([Message.user("x")])
    assert not isinstance(info.value, TransientModelError)
    assert len(llm_server.requests) == 1


def test_a_hanging_server_times_out_then_the_retry_succeeds(openai_backend, llm_server):
    llm_server.enqueue(Hang(10), Reply("late but fine"))
    client = client_for(openai_backend(timeout=0.5, max_retries=1))
    started = time.monotonic()
    assert client.complete([Message.user("x")]).text == "late but fine"
    assert time.monotonic() - started < 5
    assert client.usage.retries == 1


def test_a_hang_without_retries_raises_a_timeout(openai_backend, llm_server):
    llm_server.enqueue(Hang(10))
    started = time.monotonic()
    with pytest.raises(TransientModelError, match="timed out"):
        client_for(openai_backend(timeout=0.4, max_retries=0)).complete([Message.user("x")])
    assert time.monotonic() - started < 5


def test_cache_hit_makes_no_request_and_survives_a_new_backend(openai_backend, llm_server, tmp_path):
    cache_file = tmp_path / "responses.sqlite"
    llm_server.enqueue(Reply("first answer", input_tokens=11, output_tokens=2))
    messages = [Message.user("describe", ImagePart(PNG))]
    first = client_for(openai_backend(cache=cache_file)).complete(messages, max_tokens=5)
    assert not first.cached and len(llm_server.requests) == 1

    again = client_for(openai_backend(cache=cache_file))  # a new backend object, same sqlite file
    hit = again.complete(messages, max_tokens=5)
    assert hit.cached and hit.text == "first answer"
    assert len(llm_server.requests) == 1
    assert again.usage.cached_calls == 1 and again.usage.input_tokens == 11

    # a different image, parameter or model is a different request
    again.complete([Message.user("describe", ImagePart(PNG + b"x"))], max_tokens=5)
    again.complete(messages, max_tokens=6)
    client_for(openai_backend(cache=cache_file), "other-model").complete(messages, max_tokens=5)
    assert len(llm_server.requests) == 4


def test_cache_true_uses_the_context_cache_dir(openai_backend, llm_server, tmp_path):
    backend = openai_backend(cache=True)
    client_for(backend).complete([Message.user("x")])
    assert (tmp_path / "cache" / "model-cache.sqlite").is_file()
    client_for(backend).complete([Message.user("x")])
    assert len(llm_server.requests) == 1


def test_failures_are_not_cached(openai_backend, llm_server, tmp_path):
    llm_server.enqueue(Fail(400, "nope"), Reply("ok now"))
    backend = openai_backend(cache=tmp_path / "c.sqlite")
    with pytest.raises(ModelError):
        client_for(backend).complete([Message.user("x")])
    assert client_for(backend).complete([Message.user("x")]).text == "ok now"


@pytest.mark.slow
def test_concurrency_limit_is_honoured(openai_backend, llm_server):
    llm_server.default = Reply("slow", delay=0.25)
    backend = openai_backend(concurrency=2)
    clients = [client_for(backend) for _ in range(6)]  # clients share the backend's limit
    errors: list[BaseException] = []

    def call(c):
        try:
            c.complete([Message.user("x")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors
    assert len(llm_server.requests) == 6
    assert llm_server.max_in_flight == 2


def test_without_a_limit_calls_do_overlap(openai_backend, llm_server):
    """Control for the test above: the server does see parallel calls when allowed."""
    llm_server.default = Reply("slow", delay=0.25)
    backend = openai_backend(concurrency=6)
    threads = [
        threading.Thread(target=client_for(backend).complete, args=([Message.user("x")],)) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert llm_server.max_in_flight > 2


def test_api_key_never_leaks_into_errors_or_logs(openai_backend, llm_server, caplog):
    caplog.set_level(logging.DEBUG)
    llm_server.enqueue(Fail(401, "Incorrect API key provided: {api_key}"), Fail(500, "boom for {api_key}"))
    client = client_for(openai_backend(max_retries=0))
    with pytest.raises(ModelError) as auth:
        client.complete([Message.user("x")])
    with pytest.raises(TransientModelError) as server:
        client.complete([Message.user("x")])
    assert llm_server.requests[0].api_key == TEST_API_KEY  # the stub did echo it back
    for info in (auth, server):
        exc = info.value
        assert exc.__cause__ is None and exc.__suppress_context__
        text = "".join(traceback.format_exception(exc)) + repr(exc)
        assert TEST_API_KEY not in text and TEST_API_KEY[:8] not in text and TEST_API_KEY[-8:] not in text
    assert "HTTP 401" in str(auth.value) and "API key" in str(auth.value)
    assert TEST_API_KEY not in caplog.text
    assert TEST_API_KEY not in repr(openai_backend().options)


def test_key_falls_back_to_the_environment(llm_server, monkeypatch, tmp_path):
    from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123")
    ctx = ComponentContext(cache_dir=tmp_path, model=lambda ref: None)
    backend = OpenAIBackend(OpenAIOptions(base_url=llm_server.openai_base_url), ctx)
    client_for(backend).complete([Message.user("x")])
    assert llm_server.requests[-1].api_key == "sk-from-env-123"
    backend.close()


def test_missing_key_for_the_official_api_is_a_clear_unavailability(monkeypatch, tmp_path):
    from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ComponentUnavailable, match="OPENAI_API_KEY"):
        OpenAIBackend(OpenAIOptions(), ComponentContext(cache_dir=tmp_path, model=lambda ref: None))


def test_azure_deployment_path_api_version_and_key_header(openai_backend, llm_server):
    backend = openai_backend(
        azure_endpoint=llm_server.azure_endpoint, api_version="2024-10-21", azure_deployment="dep-4o"
    )
    client = ModelClient(backend, "openai", "gpt-4o")
    llm_server.enqueue(Reply("from azure"))
    assert client.complete([Message.user("x", ImagePart(PNG))], max_tokens=4).text == "from azure"
    req = llm_server.requests[-1]
    assert req.path == "/openai/deployments/dep-4o/chat/completions"
    assert req.deployment == "dep-4o" and req.query == {"api-version": "2024-10-21"}
    assert req.headers["api-key"] == TEST_API_KEY
    assert req.body["max_completion_tokens"] == 4
    assert req.images() == [("image/png", PNG)]


def test_azure_model_name_as_deployment(openai_backend, llm_server):
    backend = openai_backend(azure_endpoint=llm_server.azure_endpoint, api_version="2024-10-21")
    ModelClient(backend, "openai", "my-deployment").complete([Message.user("x")])
    assert llm_server.requests[-1].path == "/openai/deployments/my-deployment/chat/completions"


def test_azure_options_are_checked():
    from pydantic import ValidationError

    from pptarena.plugins.backends.openai import OpenAIOptions

    with pytest.raises(ValidationError, match="needs api_version"):
        OpenAIOptions(azure_endpoint="https://x.openai.azure.com")
    with pytest.raises(ValidationError, match="need azure_endpoint"):
        OpenAIOptions(azure_deployment="d")
    with pytest.raises(ValidationError, match="extra"):
        OpenAIOptions(base_urll="http://x")


RATE = {
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "499",
    "x-ratelimit-reset-tokens": "6ms",
    "x-unrelated": "kept out",
}


def test_rate_limit_headers_come_back_on_chat_and_responses_completions(openai_backend, llm_server):
    llm_server.enqueue(Reply("chat", headers=RATE), Reply("resp", headers=RATE))
    backend = openai_backend()
    chat = client_for(backend).complete([Message.user("x")])
    responses = client_for(backend).complete([Message.user("x")], truncation="auto")
    assert llm_server.requests[-1].responses_api
    for completion in (chat, responses):
        assert completion.rate_headers == {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-tokens": "6ms",
        }


def test_a_429_carries_its_rate_headers_and_retry_after_ms_wins(openai_backend, llm_server):
    llm_server.enqueue(
        Fail(429, "slow down", retry_after=7, headers={"retry-after-ms": "250", **RATE}),
        Fail(429, "slow down", retry_after=3),
    )
    backend = openai_backend(max_retries=0)
    with pytest.raises(TransientModelError) as first:
        backend.complete([Message.user("x")], model="gpt-test")
    assert first.value.status == 429 and first.value.retry_after == 0.25
    assert first.value.rate_headers["retry-after"] == "7"
    assert first.value.rate_headers["retry-after-ms"] == "250"
    assert first.value.rate_headers["x-ratelimit-remaining-requests"] == "499"
    assert "x-unrelated" not in first.value.rate_headers
    with pytest.raises(TransientModelError) as second:
        backend.complete([Message.user("x")], model="gpt-test")
    assert second.value.retry_after == 3.0


def test_prompt_cache_key_goes_through_extra_body_and_cache_prefix_sends_nothing(openai_backend, llm_server):
    """OpenAI caches prompts by itself: a cache_prefix mark changes nothing on the wire; a
    prompt_cache_key is an extra_body field (option or call parameter), not a parameter of its own."""
    backend = openai_backend()
    client_for(backend).complete(
        [Message.system("rules", cache_prefix=True), Message.user("deck", cache_prefix=True)],
        extra_body={"prompt_cache_key": "task-7"},
    )
    body = llm_server.requests[-1].body
    assert body["prompt_cache_key"] == "task-7"
    assert body["messages"] == [{"role": "system", "content": "rules"}, {"role": "user", "content": "deck"}]
    with pytest.raises(TypeError, match="unknown parameter"):
        client_for(backend).complete([Message.user("x")], prompt_cache_key="task-7")


# ----------------------------------------------------------------------------- tool calls and results

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_part",
        "description": "Read one XML part of the deck.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}


def png_url(data: bytes = PNG) -> str:
    return ImagePart(data).data_url()


def jpeg_url() -> str:
    return ImagePart(JPEG, "image/jpeg").data_url()


def tool_conversation() -> list[Message]:
    """Task, a turn with two calls, and their results: one with text and an image, one failed."""
    return [
        Message.system("You edit decks."),
        Message.user("Fix slide 2."),
        Message.assistant(
            "Reading both.",
            ToolCall("call_a", "read_part", {"name": "ppt/slides/slide2.xml"}),
            ToolCall("call_b", "render", {"slide": 2, "note": "é"}),
        ),
        Message.user(
            ToolResult("call_a", ("<p:sld>", "</p:sld>")),
            ToolResult("call_b", ("no renderer", ImagePart(JPEG, "image/jpeg")), is_error=True),
            "Go on.",
        ),
    ]


def test_tool_calls_and_results_use_the_chat_completions_wire_format(openai_backend, llm_server):
    client = client_for(openai_backend(image_detail="high"))
    client.complete(tool_conversation(), tools=[READ_TOOL], tool_choice="auto")
    body = llm_server.requests[-1].body
    assert llm_server.requests[-1].path == "/v1/chat/completions"
    assert body["tools"] == [READ_TOOL] and body["tool_choice"] == "auto"
    assert body["messages"] == [
        {"role": "system", "content": "You edit decks."},
        {"role": "user", "content": "Fix slide 2."},
        {
            "role": "assistant",
            "content": "Reading both.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read_part", "arguments": '{"name": "ppt/slides/slide2.xml"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "render", "arguments": '{"slide": 2, "note": "é"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "<p:sld>\n</p:sld>"},
        {"role": "tool", "tool_call_id": "call_b", "content": "ERROR: no renderer"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[images of tool call call_b]"},
                {
                    "type": "image_url",
                    "image_url": {"url": jpeg_url(), "detail": "high"},
                },
                {"type": "text", "text": "Go on."},
            ],
        },
    ]
    assert llm_server.requests[-1].images() == [("image/jpeg", JPEG)]


def test_a_turn_of_calls_alone_has_null_content_and_results_alone_add_no_user_message(
    openai_backend, llm_server
):
    client = client_for(openai_backend())
    call = ToolCall("c1", "list_parts")
    client.complete(
        [Message.user("go"), Message.assistant("", call), Message.user(ToolResult("c1", ("[]",)))]
    )
    assert llm_server.requests[-1].body["messages"] == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "list_parts", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "[]"},
    ]


def test_every_results_images_follow_the_tool_messages_named_by_call(openai_backend, llm_server):
    client = client_for(openai_backend())
    shot1, shot2, shot3 = ImagePart(PNG), ImagePart(PNG + b"2"), ImagePart(PNG + b"3")
    client.complete(
        [
            Message.user("go"),
            Message.assistant("", ToolCall("c1", "render"), ToolCall("c2", "render")),
            Message.user(
                ToolResult("c1", (shot1, shot2)), ToolResult("c2", (shot3,)), ImagePart(JPEG, "image/jpeg")
            ),
        ]
    )
    messages = llm_server.requests[-1].body["messages"]
    assert messages[2:4] == [
        {"role": "tool", "tool_call_id": "c1", "content": ""},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
    ]
    assert messages[4]["role"] == "user" and len(messages) == 5
    texts = [p.get("text") for p in messages[4]["content"] if p["type"] == "text"]
    assert texts == ["[images of tool call c1]", "[images of tool call c2]"]
    assert llm_server.requests[-1].images() == [
        ("image/png", PNG),
        ("image/png", PNG + b"2"),
        ("image/png", PNG + b"3"),
        ("image/jpeg", JPEG),
    ]


def test_calls_read_from_the_answer_go_back_as_the_server_sent_them(openai_backend, llm_server):
    from pptarena.plugins.agents.tools.schemas import read_tool_calls

    sent = {
        "id": "call_Xy9",
        "type": "function",
        "function": {"name": "read_part", "arguments": '{"name": "a.xml"}'},
    }
    llm_server.enqueue(
        Native(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-test",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": [sent]},
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
            }
        ),
        Reply("done"),
    )
    client = client_for(openai_backend())
    history = [Message.user("Read a.xml.")]
    answer = client.complete(history, tools=[READ_TOOL])
    assert answer.finish_reason == "tool_calls"
    (read,) = read_tool_calls(answer)
    history += [Message.assistant(answer.text, read.call), Message.user(ToolResult(read.call.id, ("<a/>",)))]
    assert client.complete(history, tools=[READ_TOOL]).text == "done"
    second = llm_server.requests[-1].body["messages"]
    assert second[1] == {"role": "assistant", "content": None, "tool_calls": [sent]}
    assert second[2] == {"role": "tool", "tool_call_id": "call_Xy9", "content": "<a/>"}


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([Message.user(ToolResult("nowhere", ("x",)))], "answers no tool call"),
        (
            [Message.assistant("", ToolCall("c1", "t")), Message.user(ToolResult("c2", ("x",)))],
            "answers no tool call",
        ),
        ([Message.user("go", ToolCall("c1", "t"))], "tool calls belong in assistant messages"),
        ([Message("assistant", (ToolResult("c1", ("x",)),))], "tool results belong in user messages"),
        ([Message("system", (ToolCall("c1", "t"),))], "tool calls belong in assistant messages"),
        ([Message("assistant", ("look", ImagePart(PNG)))], "images are only allowed in user messages"),
    ],
)
def test_misplaced_tool_parts_are_refused_before_any_request(openai_backend, llm_server, messages, error):
    with pytest.raises(TypeError, match=error):
        client_for(openai_backend()).complete(messages)
    assert llm_server.requests == []


def test_a_batched_tool_conversation_sends_the_body_complete_sends(openai_backend, llm_server):
    from pptarena.models.batch import BatchRequest

    backend = openai_backend(image_detail="low", extra_body={"user": "u1"})
    params = {"tools": [READ_TOOL], "max_tokens": 20}
    client_for(backend).complete(tool_conversation(), **params)
    line = backend.batch_line(BatchRequest("r1", "gpt-test", tool_conversation(), params))
    assert line["url"] == "/v1/chat/completions"
    assert line["body"] == llm_server.requests[-1].body
    assert [m["role"] for m in line["body"]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]


def test_the_cache_key_follows_every_field_of_the_tool_traffic(openai_backend, llm_server):
    client = client_for(openai_backend(cache=True))
    client.complete(tool_conversation(), tools=[READ_TOOL])
    client.complete(tool_conversation(), tools=[READ_TOOL])
    assert len(llm_server.requests) == 1 and client.usage.cached_calls == 1

    def changed(result: ToolResult) -> list[Message]:
        messages = tool_conversation()
        return [*messages[:3], Message.user(result, *messages[3].parts()[1:])]

    for variant in (
        changed(ToolResult("call_a", ("<p:sld/>",))),  # other text
        changed(ToolResult("call_a", ("<p:sld>", "</p:sld>"), is_error=True)),  # now an error
    ):
        client.complete(variant, tools=[READ_TOOL])
    assert len(llm_server.requests) == 3
    assert llm_server.requests[-1].body["messages"][3]["content"] == "ERROR: <p:sld>\n</p:sld>"


# ----------------------------------------------------------------------------- the Responses API path


def test_function_calls_and_outputs_on_the_responses_path(openai_backend, llm_server):
    client = client_for(openai_backend())
    client.complete(tool_conversation(), tools=[{"type": "function", "name": "read_part"}], truncation="auto")
    req = llm_server.requests[-1]
    assert req.path == "/v1/responses"
    assert req.body["instructions"] == "You edit decks."
    assert req.body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Fix slide 2."}]},
        {"role": "assistant", "content": "Reading both."},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "read_part",
            "arguments": '{"name": "ppt/slides/slide2.xml"}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "render",
            "arguments": '{"slide": 2, "note": "é"}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "<p:sld>\n</p:sld>"},
        {"type": "function_call_output", "call_id": "call_b", "output": "ERROR: no renderer"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "[images of tool call call_b]"},
                {"type": "input_image", "image_url": jpeg_url(), "detail": "auto"},
                {"type": "input_text", "text": "Go on."},
            ],
        },
    ]


def test_responses_output_items_are_replayed_and_answered_by_their_kind(openai_backend, llm_server):
    function_item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_f",
        "name": "read_part",
        "arguments": "{}",
    }
    computer_item = {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_c",
        "action": {"type": "screenshot"},
    }
    client = client_for(openai_backend())
    client.complete(
        [
            Message.user("go"),
            Message.assistant(
                "",
                ToolCall("call_f", "read_part", native=function_item),
                ToolCall("call_c", "computer", native=computer_item),
            ),
            Message.user(ToolResult("call_f", ("<a/>",)), ToolResult("call_c", (ImagePart(PNG),))),
        ],
        truncation="auto",
    )
    assert llm_server.requests[-1].body["input"][1:] == [
        function_item,
        computer_item,
        {"type": "function_call_output", "call_id": "call_f", "output": "<a/>"},
        {
            "type": "computer_call_output",
            "call_id": "call_c",
            "output": {"type": "computer_screenshot", "image_url": png_url()},
        },
    ]
