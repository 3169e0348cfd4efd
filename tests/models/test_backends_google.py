"""The google backend through the real google-genai SDK against the loopback provider simulator.

A few tests at the end feed the mapping code objects of the SDK's own types (an ``APIError`` made
from an httpx response, a ``GenerateContentResponse``) for what the simulator does not send:
rate-limit headers (Gemini sends none), thought tokens, a blocked prompt, an echoed key.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from pptarena.models import (
    ImagePart,
    Message,
    ModelClient,
    ModelError,
    ToolCall,
    ToolResult,
    TransientModelError,
)
from pptarena.models.sim import ProviderSim, Rule, SimConfig
from pptarena.types import ComponentContext, ComponentUnavailable

pytest.importorskip("google.genai")

from pptarena.plugins.backends.google import (  # noqa: E402
    GoogleBackend,
    GoogleOptions,
    map_google_error,
    tool_calls,
)

KEY = "AIza-test-DO-NOT-LEAK-0123456789abcdef"
MODEL = "gemini-sim"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(1, 65))
"""Image bytes whose base64 has no '+' or '/' (URL-safe: '-', '_'): the simulator decodes only the
standard alphabet, while google-genai sends URL-safe base64 (see the xfail test below)."""
PNG_ALL_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
FAST = {"retry_base_delay": 0.01, "retry_max_delay": 0.05}
TOOL = {"name": "click", "description": "Click a point", "parameters": {"type": "object"}}


def context(tmp_path) -> ComponentContext:
    return ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: None, name="t", label="t")


@pytest.fixture
def start_sim() -> Iterator[Callable[..., ProviderSim]]:
    """``start_sim(**SimConfig fields)`` → a started simulator, stopped after the test."""
    started: list[ProviderSim] = []

    def start(**config: Any) -> ProviderSim:
        sim = ProviderSim(SimConfig(**{"seed": 1, "latency": "fixed:0", **config})).start()
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture
def backend_for(tmp_path) -> Iterator[Callable[..., GoogleBackend]]:
    """``backend_for(sim, **options)`` → a GoogleBackend pointed at ``sim`` (v1beta, fast backoff)."""
    built: list[GoogleBackend] = []

    def make(sim: ProviderSim, **options: Any) -> GoogleBackend:
        opts = {"api_key": SecretStr(KEY), "base_url": sim.url, "api_version": "v1beta", **FAST, **options}
        backend = GoogleBackend(GoogleOptions(**opts), context(tmp_path))
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


def recorded(sim: ProviderSim, count: int) -> list[Any]:
    """``sim.requests`` once it holds ``count`` requests: the simulator records a request after
    writing its answer, so the SDK may return before the record exists (bounded wait)."""
    for _ in range(500):
        if len(sim.requests) >= count:
            break
        time.sleep(0.01)
    return list(sim.requests)


def inline(part: dict[str, Any]) -> tuple[str, bytes]:
    """(MIME type, bytes) of an inline-data part as the SDK sends it: URL-safe base64, and
    snake_case names inside parts the SDK does not convert (the API reads both spellings)."""
    blob = part.get("inlineData") or part["inline_data"]
    return blob.get("mimeType") or blob.get("mime_type"), base64.urlsafe_b64decode(blob["data"])


# --------------------------------------------------------------------------- requests and replies


def test_text_reply_with_system_instruction_and_generation_config(start_sim, backend_for):
    sim = start_sim(rules=[Rule(match="Rate it", reply="Score: 4")])
    client = ModelClient(backend_for(sim), "google", MODEL)
    c = client.complete(
        [Message.system("You judge slides."), Message.system("Be strict."), Message.user("Rate it.")],
        temperature=0.2,
        max_tokens=50,
        top_p=0.9,
        top_k=3,
        stop="END",
        seed=7,
    )
    assert c.text == "Score: 4" and c.finish_reason == "STOP" and c.model == MODEL
    assert c.raw["candidates"][0]["content"]["parts"] == [{"text": "Score: 4"}]
    (req,) = recorded(sim, 1)
    assert req.method == "POST" and req.path == f"/v1beta/models/{MODEL}:generateContent"
    assert req.api_key == KEY and req.status == 200
    assert req.body["systemInstruction"]["parts"] == [{"text": "You judge slides.\n\nBe strict."}]
    assert req.body["contents"] == [{"role": "user", "parts": [{"text": "Rate it."}]}]
    assert req.body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 50,
        "topP": 0.9,
        "topK": 3,
        "stopSequences": ["END"],
        "seed": 7,
    }
    usage = c.raw["usage_metadata"]
    assert c.usage.input_tokens == usage["prompt_token_count"] > 0
    assert c.usage.output_tokens == usage["candidates_token_count"] > 0 and c.usage.calls == 1


def test_api_version_defaults_to_the_sdks(start_sim, backend_for):
    sim = start_sim()
    from google.genai import _api_client

    backend_for(sim, api_version=None).complete([Message.user("hi")], model=MODEL)
    assert (
        recorded(sim, 1)[-1].path
        == f"/{_api_client.GOOGLE_AI_API_DEFAULT_VERSION}/models/{MODEL}:generateContent"
    )


def test_image_goes_as_inline_bytes_and_assistant_turns_as_model(start_sim, backend_for):
    sim = start_sim()
    backend_for(sim).complete(
        [Message.user("Slide 1:", ImagePart(PNG)), Message.assistant("3"), Message.user("Why?")], model=MODEL
    )
    contents = recorded(sim, 1)[-1].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    text, image = contents[0]["parts"]
    assert text == {"text": "Slide 1:"} and inline(image) == ("image/png", PNG)
    assert contents[1]["parts"] == [{"text": "3"}]


def test_json_response_format_asks_for_json(start_sim, backend_for):
    sim = start_sim()
    backend = backend_for(sim)
    c = backend.complete([Message.user("Grade it.")], model=MODEL, response_format={"type": "json_object"})
    assert recorded(sim, 1)[-1].body["generationConfig"] == {"responseMimeType": "application/json"}
    assert isinstance(json.loads(c.text), dict)  # the simulator answers JSON mode with JSON

    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "grade", "schema": schema}}
    c = backend.complete([Message.user("Grade it.")], model=MODEL, response_format=fmt)
    config = recorded(sim, 2)[-1].body["generationConfig"]
    assert config == {"responseMimeType": "application/json", "responseJsonSchema": schema}
    assert isinstance(json.loads(c.text)["score"], int)


def test_usage_counts_implicitly_cached_prompt_tokens(start_sim, backend_for):
    sim = start_sim(gemini_cache_min=64, gemini_cache_step=32)
    client = ModelClient(backend_for(sim), "google", MODEL)
    messages = [Message.system("Grade slides by this rubric. " * 60), Message.user("Slide 1.")]
    first = client.complete(messages)
    second = client.complete(messages)  # same prefix: the implicit cache answers part of the prompt
    assert first.usage.cached_input_tokens == 0
    usage = second.raw["usage_metadata"]
    assert second.usage.cached_input_tokens == usage["cached_content_token_count"] > 0
    assert second.usage.input_tokens == usage["prompt_token_count"] > second.usage.cached_input_tokens
    assert client.usage.cached_input_tokens == second.usage.cached_input_tokens


def test_unknown_parameter_is_a_type_error_before_any_request(start_sim, backend_for):
    sim = start_sim()
    client = ModelClient(backend_for(sim), "google", MODEL)
    with pytest.raises(TypeError, match="frequency_penalti"):
        client.complete([Message.user("a")], frequency_penalti=1.0)
    with pytest.raises(TypeError, match="response_format"):
        client.complete([Message.user("a")], response_format={"type": "yaml"})
    with pytest.raises(TypeError, match="tool_choice"):
        client.complete([Message.user("a")], tools=[TOOL], tool_choice="sometimes")
    assert sim.requests == [] and sim.stats()["requests"] == 0


# --------------------------------------------------------------------------- tools


def test_tool_call_round_trip(start_sim, backend_for):
    sim = start_sim(rules=[Rule(match="Do it", reply="Clicking.", tool_call={"arguments": {"x": 3, "y": 4}})])
    backend = backend_for(sim)
    first = backend.complete(
        [Message.user("Do it.")], model=MODEL, tools=[TOOL], tool_choice={"name": "click"}
    )
    body = recorded(sim, 1)[-1].body
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "click" and declaration["parameters"]["type"].lower() == "object"
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["click"]}}
    assert first.text == "Clicking."
    (call,) = tool_calls(first.raw)
    assert (call.id, call.name, dict(call.input)) == ("call_0", "click", {"x": 3, "y": 4})

    # a replayed call keeps its native part, thought_signature included (bytes, base64 in raw)
    signed = ToolCall(call.id, call.name, call.input, {**call.native, "thought_signature": "c2ln_w=="})
    backend.complete(
        [
            Message.user("Do it."),
            Message.assistant("Clicking.", signed),
            Message.user(ToolResult(call.id, ("clicked", ImagePart(PNG))), "Go on."),
        ],
        model=MODEL,
        tools=[TOOL],
        tool_choice="auto",
    )
    body = recorded(sim, 2)[-1].body
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    model_turn, result_turn = body["contents"][1:]
    assert model_turn["role"] == "model" and model_turn["parts"][0] == {"text": "Clicking."}
    sent_call = model_turn["parts"][1]
    assert sent_call["functionCall"] == {"name": "click", "args": {"x": 3, "y": 4}}  # as it came: no id
    assert base64.urlsafe_b64decode(sent_call["thoughtSignature"]) == base64.urlsafe_b64decode("c2ln_w==")
    assert result_turn["role"] == "user"
    response = result_turn["parts"][0]["functionResponse"]
    assert response == {"name": "click", "response": {"output": "clicked"}, "parts": response["parts"]}
    assert inline(response["parts"][0]) == ("image/png", PNG)
    assert result_turn["parts"][1] == {"text": "Go on."}


def test_failed_tool_result_and_native_tools(start_sim, backend_for):
    sim = start_sim()
    backend_for(sim).complete(
        [
            Message.user("Search."),
            Message.assistant("", ToolCall("c1", "lookup", {"q": "x"})),
            Message.user(ToolResult("c1", ("no such page",), is_error=True)),
        ],
        model=MODEL,
        tools=[{"google_search": {}}, {"name": "lookup", "parameters": {"type": "object"}}],
    )
    body = recorded(sim, 1)[-1].body
    # the SDK merges every function declaration into one tool, placed last
    assert body["tools"] == [
        {"googleSearch": {}},
        {"functionDeclarations": [{"name": "lookup", "parameters": {"type": "OBJECT"}}]},
    ]
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"id": "c1", "name": "lookup", "args": {"q": "x"}}}
    ]
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response == {"id": "c1", "name": "lookup", "response": {"error": "no such page"}}


# --------------------------------------------------------------------------- errors


def test_rate_limit_is_transient_with_the_retry_delay(start_sim, backend_for):
    sim = start_sim(rpm=1)
    backend = backend_for(sim, max_retries=0)
    backend.complete([Message.user("a")], model=MODEL)
    with pytest.raises(TransientModelError) as info:
        backend.complete([Message.user("b")], model=MODEL)
    err = info.value
    assert err.status == 429 and "exceeded your current quota" in str(err)
    assert err.retry_after is not None and 0 < err.retry_after <= 60  # the RetryInfo retryDelay
    assert [r.status for r in recorded(sim, 2)] == [200, 429]


def test_rate_limit_is_retried_by_the_client(start_sim, backend_for):
    sim = start_sim(rpm=600, burst=1)  # one request at once, refilled every 0.1 s
    client = ModelClient(backend_for(sim, max_retries=6, retry_max_delay=1.0), "google", MODEL)
    client.complete([Message.user("a")])
    assert client.complete([Message.user("b")]).text
    statuses = [r.status for r in recorded(sim, 2 + client.usage.retries)]
    assert 429 in statuses and statuses[-1] == 200
    assert client.usage.retries == statuses.count(429) and client.usage.calls == 2


def test_refused_key_is_not_retried_and_never_leaks(start_sim, backend_for, caplog):
    caplog.set_level(logging.DEBUG)
    sim = start_sim(refused_keys=[KEY])
    with pytest.raises(ModelError) as info:
        ModelClient(backend_for(sim, max_retries=3), "google", MODEL).complete([Message.user("x")])
    assert not isinstance(info.value, TransientModelError) and info.value.status == 401
    assert len(recorded(sim, 1)) == 1
    text = "".join(traceback.format_exception(info.value))
    assert "HTTP 401" in text and "check the API key" in text
    assert KEY not in text and KEY not in caplog.text


def test_unknown_model_is_a_404_naming_model_and_server(start_sim, backend_for):
    sim = start_sim(models=[MODEL])
    with pytest.raises(ModelError) as info:
        ModelClient(backend_for(sim), "google", "gemini-nope").complete([Message.user("x")])
    err = info.value
    assert not isinstance(err, TransientModelError) and err.status == 404
    assert "'gemini-nope'" in str(err) and sim.url in str(err)


def test_server_errors_broken_answers_and_timeouts_are_transient(start_sim, backend_for):
    sim = start_sim(faults=1.0, fault_mix="500")
    with pytest.raises(TransientModelError) as info:
        backend_for(sim, max_retries=0).complete([Message.user("x")], model=MODEL)
    assert info.value.status == 500

    for kind in ("502", "503", "reset", "truncated", "malformed"):
        sim = start_sim(faults=1.0, fault_mix=kind)
        with pytest.raises(TransientModelError):
            backend_for(sim, max_retries=0).complete([Message.user("x")], model=MODEL)

    sim = start_sim(faults=1.0, fault_mix="timeout", hang_seconds=5)
    with pytest.raises(TransientModelError, match="timed out"):
        backend_for(sim, timeout=0.3, max_retries=0).complete([Message.user("x")], model=MODEL)


def test_any_image_bytes_reach_the_simulator(start_sim, backend_for):
    sim = start_sim()
    backend_for(sim).complete([Message.user("Slide:", ImagePart(PNG_ALL_BYTES))], model=MODEL)
    assert inline(recorded(sim, 1)[-1].body["contents"][0]["parts"][1]) == ("image/png", PNG_ALL_BYTES)


def test_connection_refused_is_transient(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = GoogleOptions(api_key=SecretStr(KEY), base_url=f"http://127.0.0.1:{port}")
    backend = GoogleBackend(options, context(tmp_path))
    try:
        with pytest.raises(TransientModelError, match="connection failed"):
            backend.complete([Message.user("a")], model=MODEL)
        with pytest.raises(
            TransientModelError, match=f"google backend: model '{MODEL}' at http://127.0.0.1:{port}"
        ):
            backend.check(MODEL)
    finally:
        backend.close()


# --------------------------------------------------------------------------- check, keys, registry


def test_check_finds_a_known_model_and_names_an_unknown_one(start_sim, backend_for):
    sim = start_sim(models=[MODEL])
    backend = backend_for(sim)
    assert backend.check(MODEL) is None
    (req,) = recorded(sim, 1)
    assert (req.method, req.path) == ("GET", f"/v1beta/models/{MODEL}")
    with pytest.raises(ModelError) as info:
        backend.check("gemini-nope")
    message = str(info.value)
    assert info.value.status == 404
    assert message.startswith("google backend") and "'gemini-nope'" in message and sim.url in message


def test_check_reports_a_refused_key(start_sim, backend_for):
    sim = start_sim(refused_keys=[KEY])
    with pytest.raises(ModelError, match="check the API key") as info:
        backend_for(sim).check(MODEL)
    assert info.value.status == 401 and KEY not in str(info.value)


def test_missing_key_is_a_clear_unavailability(monkeypatch, tmp_path):
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ComponentUnavailable, match="GEMINI_API_KEY") as info:
        GoogleBackend(GoogleOptions(), context(tmp_path))
    assert "GOOGLE_API_KEY" in str(info.value)


def test_key_falls_back_to_gemini_then_google_api_key(monkeypatch, start_sim, backend_for):
    sim = start_sim()
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-env")
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-env")
    backend_for(sim, api_key=None).complete([Message.user("a")], model=MODEL)
    monkeypatch.delenv("GEMINI_API_KEY")
    backend_for(sim, api_key=None).complete([Message.user("a")], model=MODEL)
    assert [r.api_key for r in recorded(sim, 2)] == ["from-gemini-env", "from-google-env"]


def test_project_without_vertexai_is_refused():
    with pytest.raises(ValueError, match="vertexai"):
        GoogleOptions(project="p")


def test_registered_as_the_google_backend(start_sim, tmp_path):
    from pptarena.run.configuration.registry import load_registry

    sim = start_sim()
    options = {"api_key": KEY, "base_url": sim.url, "api_version": "v1beta"}
    backend = load_registry().create("backends", "google", options, context(tmp_path))
    try:
        assert isinstance(backend, GoogleBackend)
        assert backend.cache_identity()["base_url"] == sim.url and KEY not in str(backend.cache_identity())
    finally:
        backend.close()


# --------------------------------------------------------------------------- what the simulator does not send


def _api_error(status: int, body: dict[str, Any], headers: dict[str, str]) -> Exception:
    """The exception google-genai raises for this HTTP answer."""
    import httpx
    from google.genai import errors

    response = httpx.Response(status, json=body, headers=headers, request=httpx.Request("POST", "http://x/"))
    try:
        errors.APIError.raise_for_response(response)
    except errors.APIError as exc:
        return exc
    raise AssertionError("no error raised")


def test_error_mapping_reads_retry_after_rate_headers_and_redacts_the_key():
    exc = _api_error(
        503,
        {"error": {"code": 503, "message": f"overloaded for key {KEY}", "status": "UNAVAILABLE"}},
        {"retry-after": "3", "x-goog-quota-remaining": "0", "x-other": "no"},
    )
    err = map_google_error(exc, [KEY], model=MODEL, base_url="http://x/")
    assert isinstance(err, TransientModelError) and err.status == 503 and err.retry_after == 3.0
    assert err.rate_headers == {"retry-after": "3", "x-goog-quota-remaining": "0"}
    assert KEY not in str(err) and KEY[:8] not in str(err)

    invalid = {
        "error": {
            "code": 400,
            "message": "API key not valid.",
            "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
        }
    }
    err = map_google_error(_api_error(400, invalid, {}), [KEY], model=MODEL, base_url="http://x/")
    assert type(err) is ModelError and err.status == 400 and "check the API key" in str(err)


def test_response_mapping_of_thoughts_tool_prompt_tokens_headers_and_blocks(start_sim, backend_for):
    from google.genai import types

    backend = backend_for(start_sim())
    answers: list[Any] = []
    backend._client.models.generate_content = lambda **kwargs: answers.pop(0)  # the SDK's parsed answer
    answer = types.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "hmm", "thought": True}, {"text": "4"}]},
                    "finishReason": "MAX_TOKENS",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 100,
                "toolUsePromptTokenCount": 20,
                "cachedContentTokenCount": 40,
                "candidatesTokenCount": 5,
                "thoughtsTokenCount": 30,
            },
        }
    )
    answer.sdk_http_response = types.HttpResponse(
        headers={"X-RateLimit-Remaining": "7", "Content-Type": "json"}
    )
    blocked = types.GenerateContentResponse.model_validate({"promptFeedback": {"blockReason": "SAFETY"}})
    answers += [answer, blocked]
    c = backend.complete([Message.user("a")], model=MODEL)
    assert c.text == "4" and c.finish_reason == "MAX_TOKENS"
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.cached_input_tokens) == (120, 35, 40)
    assert c.rate_headers == {"x-ratelimit-remaining": "7"}
    c = backend.complete([Message.user("a")], model=MODEL)
    assert c.text == "" and c.finish_reason == "blocked: SAFETY"


def test_a_call_with_an_id_is_answered_with_that_id():
    from pptarena.plugins.backends.google import to_gemini_request

    part = {"function_call": {"id": "fc-9", "name": "f", "args": {"a": 1}}, "thought_signature": "c2ln"}
    (call,) = tool_calls({"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}, part]}}]})
    assert (call.id, call.name, dict(call.input), call.native) == ("fc-9", "f", {"a": 1}, part)
    system, contents = to_gemini_request(
        [Message.system("s"), Message.assistant("", call), Message.user(ToolResult("fc-9", ("ok",)))]
    )
    assert system == "s" and contents[0] == {"role": "model", "parts": [part]}
    response = contents[1]["parts"][0]["function_response"]
    assert response == {"id": "fc-9", "name": "f", "response": {"output": "ok"}}


def test_id_less_calls_of_two_turns_are_answered_by_their_own_names():
    """Gemini sends calls without ids; each response numbers its own from call_0, so the ids of two
    turns repeat. Each result must carry the name of the call of its own turn (the simulator, like
    Gemini, refuses a function response named after another turn's call)."""
    from pptarena.plugins.backends.google import to_gemini_request

    def turn(name: str) -> ToolCall:
        part = {"function_call": {"name": name, "args": {}}}
        (call,) = tool_calls({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
        return call

    read, write = turn("read_part"), turn("write_part")
    assert read.id == write.id == "call_0"
    _, contents = to_gemini_request(
        [
            Message.user("fix the typo"),
            Message.assistant("", read),
            Message.user(ToolResult(read.id, ("<xml/>",))),
            Message.assistant("", write),
            Message.user(ToolResult(write.id, ("replaced",))),
        ]
    )
    names = [p["function_response"]["name"] for c in contents for p in c["parts"] if "function_response" in p]
    assert names == ["read_part", "write_part"]


def test_missing_sdk_is_an_unavailability_naming_the_extra(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "google.genai", None)  # import google.genai now fails
    with pytest.raises(
        ComponentUnavailable, match=r"google-genai SDK; install with: pip install 'pptarena\[google\]'"
    ):
        GoogleBackend(GoogleOptions(api_key=SecretStr(KEY)), context(tmp_path))
