"""The provider simulator refuses tool-call conversations the real providers refuse (tool results that
answer no call, calls left unanswered, non-string OpenAI arguments), driven by the official SDKs over
loopback: each SDK raises its own 400 error carrying the provider's error body."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes

from pptarena.models.sim import ProviderSim, SimConfig

KEY = "sk-sim-test-0123456789"
TOOL_OAI = [{"type": "function", "function": {"name": "open_deck", "parameters": {"type": "object"}}}]
TOOL_RESP = [{"type": "function", "name": "open_deck", "parameters": {"type": "object"}}]
TOOL_ANT = [{"name": "open_deck", "input_schema": {"type": "object"}}]


@pytest.fixture(scope="module")
def sim():
    with ProviderSim(SimConfig()) as s:
        yield s


def oai(sim: ProviderSim) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.openai_base_url, api_key=KEY, max_retries=0)


def ant(sim: ProviderSim) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key=KEY, max_retries=0)


def gem(sim: ProviderSim) -> genai.Client:
    return genai.Client(api_key=KEY, http_options=gtypes.HttpOptions(base_url=sim.gemini_base_url))


# -- OpenAI chat completions ---------------------------------------------------------------------


def _call(call_id: str, arguments: object = '{"path": "a.pptx"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "open_deck", "arguments": arguments}}


def _assistant(*calls: dict) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def _tool(call_id: str, content: str = "opened") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


USER = {"role": "user", "content": "open a.pptx and b.pptx"}


def _chat_refusal(sim: ProviderSim, messages: list[dict]) -> openai.BadRequestError:
    with pytest.raises(openai.BadRequestError) as caught:
        oai(sim).chat.completions.create(model="gpt-sim", messages=messages, tools=TOOL_OAI)
    err = caught.value
    assert err.status_code == 400 and err.type == "invalid_request_error"
    assert set(err.response.json()["error"]) == {"message", "type", "param", "code"}
    return err


def test_openai_chat_accepts_answered_parallel_tool_calls(sim):
    messages = [
        USER,
        _assistant(_call("call_a"), _call("call_b", '{"path": "b.pptx"}')),
        _tool("call_b"),  # any order among the tool messages
        _tool("call_a"),
        {"role": "user", "content": "now close them"},
        _assistant(_call("call_c", "{}")),
        _tool("call_c"),
    ]
    reply = oai(sim).chat.completions.create(model="gpt-sim", messages=messages, tools=TOOL_OAI)
    assert reply.choices[0].message.role == "assistant"
    assert sim.requests[-1].status == 200


def test_openai_chat_refuses_a_tool_message_after_no_tool_calls(sim):
    err = _chat_refusal(sim, [USER, {"role": "assistant", "content": "sure"}, _tool("call_a")])
    assert "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'" in (
        err.message
    )
    assert err.param == "messages.[2].role" and err.code is None


def test_openai_chat_refuses_a_tool_message_first_and_after_a_user_turn(sim):
    assert _chat_refusal(sim, [_tool("call_a"), USER]).param == "messages.[0].role"
    late = [USER, _assistant(_call("call_a")), _tool("call_a"), USER, _tool("call_a")]
    assert _chat_refusal(sim, late).param == "messages.[4].role"


def test_openai_chat_refuses_a_tool_call_id_of_another_call(sim):
    err = _chat_refusal(sim, [USER, _assistant(_call("call_a")), _tool("call_zzz")])
    assert "'tool_call_id' of 'call_zzz' not found in 'tool_calls' of previous message" in err.message
    assert err.param == "messages.[2].tool_call_id"


def test_openai_chat_refuses_unanswered_tool_calls(sim):
    messages = [USER, _assistant(_call("call_a"), _call("call_b")), _tool("call_a"), USER]
    err = _chat_refusal(sim, messages)
    assert "An assistant message with 'tool_calls' must be followed by tool messages" in err.message
    assert err.message.endswith("did not have response messages: call_b")
    assert err.param == "messages.[3].role"
    trailing = _chat_refusal(sim, [USER, _assistant(_call("call_a"))])
    assert trailing.message.endswith("call_a")


def test_openai_chat_refuses_arguments_that_are_not_a_string(sim):
    err = _chat_refusal(sim, [USER, _assistant(_call("call_a", {"path": "a.pptx"})), _tool("call_a")])
    assert err.body["message"] == (
        "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, "
        "but got an object instead."
    )
    assert err.param == "messages[1].tool_calls[0].function.arguments" and err.code == "invalid_type"


# -- OpenAI Responses ------------------------------------------------------------------------------


def _function_call(call_id: str) -> dict:
    return {"type": "function_call", "call_id": call_id, "name": "open_deck", "arguments": "{}"}


def _output(call_id: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": "opened"}


def test_openai_responses_accepts_outputs_of_earlier_calls_or_a_stored_response(sim):
    user = {"role": "user", "content": "open it"}
    items = [user, _function_call("call_1"), _function_call("call_2"), _output("call_2"), _output("call_1")]
    reply = oai(sim).responses.create(model="gpt-sim", input=items, tools=TOOL_RESP)
    assert reply.status == "completed"
    continued = oai(sim).responses.create(
        model="gpt-sim", previous_response_id="resp_stored", input=[_output("call_9")], tools=TOOL_RESP
    )
    assert continued.previous_response_id == "resp_stored"


def test_openai_responses_refuses_an_output_of_no_call(sim):
    items = [{"role": "user", "content": "open it"}, _output("call_9")]
    with pytest.raises(openai.BadRequestError) as caught:
        oai(sim).responses.create(model="gpt-sim", input=items, tools=TOOL_RESP)
    err = caught.value
    assert err.status_code == 400 and err.type == "invalid_request_error"
    assert err.body["message"] == "No tool call found for function call output with call_id call_9."
    assert err.param == "input"
    # a call that comes after its output does not answer it either
    with pytest.raises(openai.BadRequestError):
        oai(sim).responses.create(model="gpt-sim", input=[_output("call_1"), _function_call("call_1")])


# -- Anthropic messages ----------------------------------------------------------------------------


def _tool_use(tool_id: str) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": "open_deck", "input": {"path": "a.pptx"}}


def _tool_result(tool_id: str) -> dict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "opened"}


def _ant_refusal(sim: ProviderSim, messages: list[dict]) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        ant(sim).messages.create(model="claude-sim", max_tokens=50, messages=messages, tools=TOOL_ANT)
    err = caught.value
    assert err.status_code == 400
    body = err.response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    return body["error"]["message"]


def test_anthropic_accepts_tool_results_answering_the_previous_turn(sim):
    messages = [
        {"role": "user", "content": "open both"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}, _tool_use("toolu_1"), _tool_use("toolu_2")],
        },
        {
            "role": "user",
            "content": [_tool_result("toolu_2"), _tool_result("toolu_1"), {"type": "text", "text": "go"}],
        },
    ]
    reply = ant(sim).messages.create(model="claude-sim", max_tokens=50, messages=messages, tools=TOOL_ANT)
    assert reply.role == "assistant"


def test_anthropic_refuses_a_tool_result_of_no_tool_use(sim):
    messages = [
        {"role": "user", "content": "open it"},
        {"role": "assistant", "content": [_tool_use("toolu_1")]},
        {"role": "user", "content": [_tool_result("toolu_1"), _tool_result("toolu_x")]},
    ]
    message = _ant_refusal(sim, messages)
    assert message.startswith(
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x."
    )
    assert "must have a corresponding `tool_use` block in the previous message" in message
    first = [{"role": "user", "content": [_tool_result("toolu_1")]}]
    assert _ant_refusal(sim, first).startswith("messages.0.content.0: unexpected `tool_use_id`")


def test_anthropic_refuses_a_tool_use_left_unanswered(sim):
    messages = [
        {"role": "user", "content": "open it"},
        {"role": "assistant", "content": [_tool_use("toolu_1"), _tool_use("toolu_2")]},
        {"role": "user", "content": [_tool_result("toolu_1")]},
    ]
    message = _ant_refusal(sim, messages)
    assert message == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )
    later = [
        {"role": "user", "content": "open it"},
        {"role": "assistant", "content": [_tool_use("toolu_1")]},
        {"role": "user", "content": "never mind"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [_tool_result("toolu_1")]},
    ]
    assert _ant_refusal(sim, later).startswith("messages.1: `tool_use` ids were found without")


# -- Gemini generateContent ------------------------------------------------------------------------


def _model_calls(*names: str) -> gtypes.Content:
    return gtypes.Content(
        role="model", parts=[gtypes.Part.from_function_call(name=n, args={"path": "a.pptx"}) for n in names]
    )


def _responses(*names: str) -> gtypes.Content:
    parts = [gtypes.Part.from_function_response(name=n, response={"result": "opened"}) for n in names]
    return gtypes.Content(role="user", parts=parts)


GEM_TOOLS = gtypes.GenerateContentConfig(
    tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="open_deck")])]
)


def _gem_refusal(sim: ProviderSim, contents: list) -> genai_errors.ClientError:
    client = gem(sim)
    with pytest.raises(genai_errors.ClientError) as caught:
        client.models.generate_content(model="gemini-sim", contents=contents, config=GEM_TOOLS)
    err = caught.value
    assert err.code == 400 and err.status == "INVALID_ARGUMENT"
    assert set(err.details["error"]) == {"code", "message", "status"}
    return err


def test_gemini_accepts_function_responses_after_the_call_turn(sim):
    user = gtypes.Content(role="user", parts=[gtypes.Part.from_text(text="open both")])
    contents = [user, _model_calls("open_deck", "close_deck"), _responses("close_deck", "open_deck")]
    client = gem(sim)
    reply = client.models.generate_content(model="gemini-sim", contents=contents, config=GEM_TOOLS)
    assert reply.candidates and reply.candidates[0].content.role == "model"


def test_gemini_refuses_function_responses_out_of_turn(sim):
    user = gtypes.Content(role="user", parts=[gtypes.Part.from_text(text="open it")])
    said = gtypes.Content(role="model", parts=[gtypes.Part.from_text(text="sure")])
    err = _gem_refusal(sim, [user, said, _responses("open_deck")])
    assert (
        err.message
        == "Please ensure that function response turn comes immediately after a function call turn."
    )
    assert _gem_refusal(sim, [_responses("open_deck")]).message == err.message


def test_gemini_refuses_a_response_of_another_function_or_a_missing_one(sim):
    user = gtypes.Content(role="user", parts=[gtypes.Part.from_text(text="open it")])
    wrong = _gem_refusal(sim, [user, _model_calls("open_deck"), _responses("close_deck")])
    assert "'close_deck' does not match any function call" in wrong.message
    short = _gem_refusal(sim, [user, _model_calls("open_deck", "open_deck"), _responses("open_deck")])
    assert short.message.startswith("Please ensure that the number of function response parts is equal")


def test_openai_batch_line_with_an_orphan_tool_message_lands_in_the_error_file():
    good = {"model": "gpt-sim", "messages": [USER, _assistant(_call("call_a")), _tool("call_a")]}
    bad = {"model": "gpt-sim", "messages": [USER, _tool("call_a")]}
    lines = [
        {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}
        for cid, body in (("good", good), ("bad", bad))
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    with ProviderSim(SimConfig(batch_delay=0.0)) as batch_sim:
        client = oai(batch_sim)
        uploaded = client.files.create(file=("in.jsonl", data), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        end = time.monotonic() + 10
        while batch.status not in ("completed", "failed", "expired") and time.monotonic() < end:
            time.sleep(0.02)
            batch = client.batches.retrieve(batch.id)
        assert batch.status == "completed" and batch.request_counts.failed == 1
        assert batch.error_file_id is not None
        (line,) = [json.loads(x) for x in client.files.content(batch.error_file_id).text.splitlines()]
    assert line["custom_id"] == "bad" and line["response"]["status_code"] == 400
    error = line["response"]["body"]["error"]
    assert error["param"] == "messages.[1].role" and error["type"] == "invalid_request_error"
    assert "must be a response to a preceeding message with 'tool_calls'" in error["message"]
