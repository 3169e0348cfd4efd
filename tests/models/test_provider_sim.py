"""The provider simulator (pptarena.models.sim) driven by the official OpenAI, Anthropic and google-genai
SDKs over loopback: wire formats, replies, rate limits and their headers, faults, prompt caching, the CLI.
Batch jobs are in test_provider_sim_batches.py."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes

from pptarena.models.sim import ProviderSim, Rule, SimConfig, SimConfigError, load_rules
from pptarena.models.sim.latency import parse_latency, request_rng
from pptarena.models.sim.limits import go_duration

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG).decode()
KEY = "sk-sim-test-0123456789"
LONG = "The quarterly review deck has twelve slides about revenue, hiring and plans. " * 64  # 5056 chars


def tokens(text: str) -> int:
    """The simulator's documented estimate: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def oai(sim: ProviderSim, key: str = KEY, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.url + "/v1", api_key=key, max_retries=0, **kw)


def ant(sim: ProviderSim, key: str = KEY, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.url, api_key=key, max_retries=0, **kw)


def gem(sim: ProviderSim, key: str = KEY, timeout_ms: int | None = None) -> genai.Client:
    return genai.Client(api_key=key, http_options=gtypes.HttpOptions(base_url=sim.url, timeout=timeout_ms))


def wait_until(probe, limit: float = 10.0):
    """Poll ``probe`` until it returns something truthy (bounded; not a timing assertion)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        value = probe()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("the condition never came true")


@pytest.fixture
def sim():
    with ProviderSim(SimConfig(rules=[Rule(match=r"^hello", reply="hi there")])) as s:
        yield s


# --------------------------------------------------------------------------- wire formats


def test_openai_chat_completion_with_text_and_image(sim):
    url = "data:image/png;base64," + PNG_B64
    reply = oai(sim).chat.completions.create(
        model="gpt-x",
        messages=[
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hello"},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            },
        ],
        max_tokens=50,
    )
    assert reply.choices[0].message.content == "hi there"
    assert reply.choices[0].finish_reason == "stop" and reply.model == "gpt-x"
    assert reply.usage.prompt_tokens == tokens("Be brief.") + tokens("hello") + 85
    assert reply.usage.completion_tokens == tokens("hi there")
    assert reply.usage.prompt_tokens_details.cached_tokens == 0
    rec = sim.requests[-1]
    assert (rec.wire, rec.route, rec.model, rec.api_key, rec.status) == (
        "openai",
        "/v1/chat/completions",
        "gpt-x",
        KEY,
        200,
    )
    assert rec.body["messages"][1]["content"][1]["image_url"]["url"] == url
    assert sim.stats()["by_path"] == {"/v1/chat/completions": 1}


def test_openai_responses_api_items_and_json_schema(sim):
    client = oai(sim)
    r = client.responses.create(
        model="gpt-x",
        instructions="Answer plainly.",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hello"},
                    {"type": "input_image", "image_url": "data:image/png;base64," + PNG_B64},
                ],
            }
        ],
    )
    assert r.output_text == "hi there" and r.status == "completed"
    assert r.output[0].type == "message"
    assert r.usage.input_tokens == tokens("Answer plainly.") + tokens("hello") + 85
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "count": {"type": "integer"}, "ok": {"type": "boolean"}},
        "required": ["title", "count", "ok"],
        "additionalProperties": False,
    }
    r = client.responses.create(
        model="gpt-x",
        input="Describe the deck.",
        text={"format": {"type": "json_schema", "name": "deck", "schema": schema, "strict": True}},
    )
    data = json.loads(r.output_text)
    assert set(data) == {"title", "count", "ok"} and isinstance(data["count"], int)


def test_anthropic_message_with_system_and_image(sim):
    m = ant(sim).messages.create(
        model="claude-x",
        max_tokens=64,
        system=[{"type": "text", "text": "You are terse."}],
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                    },
                    {"type": "text", "text": "hello"},
                ],
            }
        ],
    )
    assert m.content[0].type == "text" and m.content[0].text == "hi there"
    assert m.stop_reason == "end_turn" and m.model == "claude-x"
    assert m.usage.input_tokens == tokens("You are terse.") + 85 + tokens("hello")
    assert m.usage.cache_read_input_tokens == 0 and m.usage.cache_creation_input_tokens == 0
    assert sim.requests[-1].wire == "anthropic" and sim.requests[-1].api_key == KEY


def test_gemini_generate_content_text_image_and_json(sim):
    client = gem(sim)
    r = client.models.generate_content(
        model="gemini-x",
        contents=[gtypes.Part.from_bytes(data=PNG, mime_type="image/png"), "hello there"],
        config=gtypes.GenerateContentConfig(system_instruction="Be exact.", max_output_tokens=40),
    )
    assert r.text == "hi there"
    assert r.usage_metadata.prompt_token_count == tokens("Be exact.") + 85 + tokens("hello there")
    assert r.usage_metadata.cached_content_token_count is None
    assert r.candidates[0].finish_reason == gtypes.FinishReason.STOP
    r = client.models.generate_content(
        model="gemini-x",
        contents="List the slides.",
        config=gtypes.GenerateContentConfig(
            response_mime_type="application/json",
            response_schema={
                "type": "OBJECT",
                "properties": {"slides": {"type": "INTEGER"}, "title": {"type": "STRING"}},
            },
        ),
    )
    assert set(json.loads(r.text)) == {"slides", "title"}
    r = client.models.generate_content(
        model="gemini-x",
        contents="x",
        config=gtypes.GenerateContentConfig(response_mime_type="application/json"),
    )
    assert json.loads(r.text) == {"reply": "This is a simulated reply."}
    assert {q.route for q in sim.requests} == {"/{version}/models/{model}:generateContent"}
    assert all(q.wire == "gemini" and q.api_key == KEY for q in sim.requests)


def test_output_limit_cuts_the_reply_in_each_provider(sim):
    long_rule = SimConfig(rules=[Rule(match="essay", reply="word " * 100)])
    sim.reconfigure(long_rule)
    c = oai(sim).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "essay"}], max_tokens=5
    )
    assert c.choices[0].finish_reason == "length" and len(c.choices[0].message.content) == 20
    m = ant(sim).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "essay"}])
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 5
    gclient = gem(sim)
    g = gclient.models.generate_content(
        model="m", contents="essay", config=gtypes.GenerateContentConfig(max_output_tokens=5)
    )
    assert g.candidates[0].finish_reason == gtypes.FinishReason.MAX_TOKENS


def test_models_endpoints_and_unknown_models_in_each_form():
    with ProviderSim(SimConfig(models=["known-model"])) as sim:
        assert [m.id for m in oai(sim).models.list()] == ["known-model"]
        assert oai(sim).models.retrieve("known-model").id == "known-model"
        assert ant(sim).models.retrieve("known-model").type == "model"
        gclient = gem(sim)
        assert gclient.models.get(model="known-model").name == "models/known-model"
        with pytest.raises(openai.NotFoundError) as e1:
            oai(sim).chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
        assert e1.value.body["code"] == "model_not_found"
        with pytest.raises(anthropic.NotFoundError) as e2:
            ant(sim).messages.create(model="nope", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        assert e2.value.body["error"]["type"] == "not_found_error"
        with pytest.raises(genai_errors.ClientError) as e3:
            gclient.models.generate_content(model="nope", contents="x")
        assert e3.value.code == 404 and e3.value.status == "NOT_FOUND"
        with pytest.raises(anthropic.NotFoundError):
            ant(sim).models.retrieve("nope")


def test_refused_and_missing_keys_get_401_in_each_form():
    with ProviderSim(SimConfig(refused_keys=["sk-revoked-key-000000"])) as sim:
        bad = "sk-revoked-key-000000"
        with pytest.raises(openai.AuthenticationError) as e1:
            oai(sim, key=bad).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert e1.value.body["code"] == "invalid_api_key" and bad not in str(e1.value)
        with pytest.raises(anthropic.AuthenticationError) as e2:
            ant(sim, key=bad).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert e2.value.body["error"]["type"] == "authentication_error"
        gclient = gem(sim, key=bad)
        with pytest.raises(genai_errors.ClientError) as e3:
            gclient.models.generate_content(model="m", contents="x")
        assert e3.value.code == 401 and e3.value.status == "UNAUTHENTICATED"
        req = urllib.request.Request(sim.url + "/v1/chat/completions", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e4:
            urllib.request.urlopen(req, timeout=5)
        assert e4.value.code == 401
        assert oai(sim, key="sk-fine").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        assert [r.api_key for r in sim.requests] == [bad, bad, bad, None, "sk-fine"]


def test_streaming_is_refused_with_a_400(sim):
    with pytest.raises(openai.BadRequestError, match="streaming"):
        oai(sim).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)


# --------------------------------------------------------------------------- replies


def test_rules_in_order_with_lists_and_model_filters():
    rules = [
        Rule(match="count", reply=["one", "two"]),
        Rule(match="who", reply="the judge model", model="judge"),
        Rule(match="who", reply="someone else"),
    ]
    with ProviderSim(SimConfig(rules=rules)) as sim:
        client = oai(sim)

        def ask(text: str, model: str = "m") -> str:
            r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
            return r.choices[0].message.content

        assert [ask("count"), ask("count"), ask("count")] == ["one", "two", "two"]
        assert ask("who", model="gpt-judge") == "the judge model"
        assert ask("who", model="gpt-agent") == "someone else"
        assert ask("anything else") == "This is a simulated reply."


def test_rule_tool_calls_in_each_provider_format():
    rule = Rule(match="open", reply="", tool_call={"name": "open_deck", "arguments": {"path": "a.pptx"}})
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    with ProviderSim(SimConfig(rules=[rule])) as sim:
        c = oai(sim).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "open it"}],
            tools=[{"type": "function", "function": {"name": "open_deck", "parameters": schema}}],
        )
        call = c.choices[0].message.tool_calls[0]
        assert c.choices[0].finish_reason == "tool_calls"
        assert call.function.name == "open_deck" and json.loads(call.function.arguments) == {"path": "a.pptx"}
        r = oai(sim).responses.create(
            model="m",
            input="open it",
            tools=[{"type": "function", "name": "open_deck", "parameters": schema}],
        )
        item = next(o for o in r.output if o.type == "function_call")
        assert item.name == "open_deck" and json.loads(item.arguments) == {"path": "a.pptx"}
        m = ant(sim).messages.create(
            model="m",
            max_tokens=50,
            messages=[{"role": "user", "content": "open it"}],
            tools=[{"name": "open_deck", "input_schema": schema}],
        )
        assert m.stop_reason == "tool_use"
        assert m.content[0].type == "tool_use" and m.content[0].input == {"path": "a.pptx"}
        gclient = gem(sim)
        g = gclient.models.generate_content(
            model="m",
            contents="open it",
            config=gtypes.GenerateContentConfig(
                tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="open_deck")])],
                automatic_function_calling=gtypes.AutomaticFunctionCallingConfig(disable=True),
            ),
        )
        assert g.function_calls[0].name == "open_deck" and g.function_calls[0].args == {"path": "a.pptx"}
        plain = oai(sim).chat.completions.create(model="m", messages=[{"role": "user", "content": "open it"}])
        assert plain.choices[0].message.tool_calls is None  # no tools offered: the rule's text answers


def test_rules_file_loads_and_bad_rules_are_refused(tmp_path: Path):
    path = tmp_path / "rules.toml"
    path.write_text(
        '[[rules]]\nmatch = "ping"\nreply = "pong"\n\n'
        '[[rules]]\nmatch = "go"\nreply = ["a", "b"]\ntool_call = { name = "t", arguments = { x = 1 } }\n'
    )
    rules = load_rules(path)
    assert rules[0] == Rule(match="ping", reply="pong")
    assert rules[1].replies() == ("a", "b") and rules[1].tool_call == {"name": "t", "arguments": {"x": 1}}
    path.write_text('[[rules]]\nmatch = "("\nreply = "x"\n')
    with pytest.raises(SimConfigError, match="not a valid regex"):
        load_rules(path)
    path.write_text('[[rules]]\nmatch = "a"\nanswer = "x"\n')
    with pytest.raises(SimConfigError, match="unknown keys"):
        load_rules(path)


def _chat(sim: ProviderSim, system: str, *user: str) -> str:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": [{"type": "text", "text": u} for u in user]})
    r = oai(sim).chat.completions.create(model="m", messages=messages)
    return r.choices[0].message.content


def test_builtin_answers_parse_with_the_judges_own_parsers(sim):
    from pptarena.plugins.judges.dual.prompts import IF_SYSTEM, RETRY_TEXT, VQ_SYSTEM
    from pptarena.plugins.judges.dual.verdict_parse import parse_score
    from pptarena.plugins.judges.rubric.llm import explain_prompt, parse_llm_score

    stable = "## Instruction\nFix the typo.\n\n## Style target\n(none given)"
    prediction = "## Edits the PREDICTION (agent) makes\n- slide 2 text\n\nScore instruction following."
    assert parse_score(_chat(sim, IF_SYSTEM, stable, prediction)).score == 4
    assert (
        parse_score(_chat(sim, VQ_SYSTEM, "The agent was asked: Fix the typo.", "PREDICTION slide 2:")).score
        == 4
    )
    assert parse_score(_chat(sim, IF_SYSTEM, RETRY_TEXT.format(problem="no JSON"))).score == 4
    score, reason = parse_llm_score(
        _chat(sim, "You grade decks.", "Does slide 2 keep its title? Give a score of 0 or 1 with a reason.")
    )
    assert score == 1.0 and reason
    node = {"name": "Typos", "description": "typos fixed", "score": 0.5, "node_id": "n1"}
    child = {"name": "c", "description": "d", "score": 0.5, "is_critical": True, "reason": "r"}
    explanation = _chat(sim, "", explain_prompt(node, [child], "default", 0.5))
    assert explanation and not explanation.startswith("{")


def test_builtin_answers_drive_the_pptpilot_agents(sim, tmp_path: Path):
    from pptx import Presentation

    from pptarena.plugins.agents.pptpilot.agent import parse_route
    from pptarena.plugins.agents.pptpilot.code import extract_program
    from pptarena.plugins.agents.pptpilot.prompts import (
        CODE_SYSTEM,
        ROUTER_SYSTEM,
        VERIFY_SYSTEM,
        XML_EDIT_SYSTEM,
        XML_SELECT_SYSTEM,
    )
    from pptarena.plugins.agents.pptpilot.verify import parse_verdict
    from pptarena.plugins.agents.pptpilot.xml_branch import parse_xml_reply

    assert parse_route(_chat(sim, ROUTER_SYSTEM, "Request:\nFix the typo."))[0] == "code"
    program = extract_program(_chat(sim, CODE_SYSTEM, "Request:\nFix the typo.", "Deck summary (JSON):\n{}"))
    deck, out = tmp_path / "in.pptx", tmp_path / "out.pptx"
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = "Quarterly Review"
    prs.save(deck)
    exec(compile(program, "program.py", "exec"), {"INPUT_PATH": str(deck), "OUTPUT_PATH": str(out)})
    edited = Presentation(out)
    assert edited.slides[0].shapes.title.text == "Quarterly Review"
    assert edited.slides[0].notes_slide.notes_text_frame.text == "Checked by the provider simulator."
    manifest = (
        "Editable parts:\nppt/slides/slide1.xml  (slide 1: Quarterly Review; 900 chars)\nppt/theme/theme1.xml"
    )
    chosen = json.loads(_chat(sim, XML_SELECT_SYSTEM, "Request:\nFix it.\n\n" + manifest))
    assert chosen["parts"] == ["ppt/slides/slide1.xml"]
    xml = '<?xml version="1.0"?>\n<p:sld xmlns:p="urn:p"><p:cSld/></p:sld>'
    block = (
        f"Parts you may rewrite (current XML):\n\n=== ppt/slides/slide1.xml ===\nRelationships: none\n{xml}"
    )
    assert parse_xml_reply(_chat(sim, XML_EDIT_SYSTEM, "Request:\nFix it.", block)) == {
        "ppt/slides/slide1.xml": xml
    }
    verdict = parse_verdict(
        _chat(sim, VERIFY_SYSTEM, "Request:\nFix it.", "Edits made to the original deck:\n-")
    )
    assert verdict.done and verdict.parsed


# --------------------------------------------------------------------------- rate limits


def test_openai_rate_limit_headers_and_429():
    # slow refills (a request every 10 s, a token a second) behind full buckets: however loaded the machine,
    # the time between two requests refills less than one request or one request's tokens
    with ProviderSim(SimConfig(rpm=6, burst=2, tpm=60, token_burst=100_000)) as sim:
        client = oai(sim)
        msgs = [{"role": "user", "content": "hello"}]
        cost = tokens("hello") + 10
        seen = []
        for _ in range(2):
            raw = client.chat.completions.with_raw_response.create(model="m", messages=msgs, max_tokens=10)
            seen.append(raw.headers)
        assert [h["x-ratelimit-limit-requests"] for h in seen] == ["6", "6"]
        assert [h["x-ratelimit-remaining-requests"] for h in seen] == ["1", "0"]
        assert seen[0]["x-ratelimit-limit-tokens"] == "60"
        assert int(seen[0]["x-ratelimit-remaining-tokens"]) == 100_000 - cost
        # the bucket refills continuously (a token a second) between the two requests
        assert 100_000 - 2 * cost <= int(seen[1]["x-ratelimit-remaining-tokens"]) < 100_000 - cost
        for h in seen:
            assert re.fullmatch(r"(\d+h)?(\d+m)?\d+(\.\d+)?s|\d+ms", h["x-ratelimit-reset-requests"])
            assert re.fullmatch(r"(\d+h)?(\d+m)?\d+(\.\d+)?s|\d+ms", h["x-ratelimit-reset-tokens"])
        with pytest.raises(openai.RateLimitError) as exc:
            client.chat.completions.create(model="m", messages=msgs, max_tokens=10)
        headers = exc.value.response.headers
        assert exc.value.status_code == 429 and exc.value.body["code"] == "rate_limit_exceeded"
        assert 1 <= int(headers["retry-after-ms"]) <= 10_000
        assert headers["retry-after"] == str(math.ceil(int(headers["retry-after-ms"]) / 1000))
        assert headers["x-ratelimit-remaining-requests"] == "0"
        assert sim.stats()["by_status"] == {200: 2, 429: 1} and sim.stats()["rate_limited"] == 1
        # another key has its own buckets
        assert oai(sim, key="sk-other").chat.completions.create(model="m", messages=msgs, max_tokens=10)


def test_token_limit_and_too_large_requests():
    with ProviderSim(SimConfig(tpm=600, default_max_tokens=100)) as sim:
        client = oai(sim)
        msgs = [{"role": "user", "content": "x" * 800}]  # 200 tokens + 100 asked = 300 per request
        client.chat.completions.create(model="m", messages=msgs)
        client.chat.completions.create(model="m", messages=msgs)
        with pytest.raises(openai.RateLimitError) as exc:
            client.chat.completions.create(model="m", messages=msgs)
        assert exc.value.body["type"] == "tokens" and "tokens per min" in exc.value.message
        assert 0 < int(exc.value.response.headers["retry-after-ms"]) <= 30_000
        with pytest.raises(openai.RateLimitError, match="Request too large") as big:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x" * 4000}])
        assert "retry-after" not in big.value.response.headers


def test_anthropic_rate_limit_headers_and_429():
    with ProviderSim(SimConfig(rpm=60, burst=1, tpm=50_000)) as sim:
        client = ant(sim)
        raw = client.messages.with_raw_response.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hello"}]
        )
        h = raw.headers
        assert (
            h["anthropic-ratelimit-requests-limit"] == "60"
            and h["anthropic-ratelimit-requests-remaining"] == "0"
        )
        for name in ("tokens", "input-tokens", "output-tokens"):
            assert h[f"anthropic-ratelimit-{name}-limit"] == "50000"
            assert int(h[f"anthropic-ratelimit-{name}-remaining"]) == 50_000 - tokens("hello") - 10
        reset = datetime.strptime(h["anthropic-ratelimit-requests-reset"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=UTC
        )
        assert 0 <= reset.timestamp() - time.time() <= 3
        with pytest.raises(anthropic.RateLimitError) as exc:
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hello"}])
        assert exc.value.body["type"] == "error" and exc.value.body["error"]["type"] == "rate_limit_error"
        assert exc.value.response.headers["retry-after"] == "1"
        assert exc.value.response.headers["anthropic-ratelimit-requests-remaining"] == "0"


def test_gemini_rate_limit_is_resource_exhausted_with_retry_info():
    with ProviderSim(SimConfig(rpm=30, burst=1)) as sim:
        client = gem(sim)
        client.models.generate_content(model="gemini-x", contents="hello")
        with pytest.raises(genai_errors.ClientError) as exc:
            client.models.generate_content(model="gemini-x", contents="hello")
        assert exc.value.code == 429 and exc.value.status == "RESOURCE_EXHAUSTED"
        details = exc.value.details["error"]["details"]
        retry = next(d for d in details if d["@type"].endswith("google.rpc.RetryInfo"))
        assert 0 < float(retry["retryDelay"].removesuffix("s")) <= 2.0  # one request per 2 s
        quota = next(d for d in details if d["@type"].endswith("google.rpc.QuotaFailure"))
        assert quota["violations"][0]["quotaValue"] == "30"


def test_limit_by_model_gives_each_model_its_own_bucket():
    with ProviderSim(SimConfig(rpm=60, burst=1, limit_by_model=True)) as sim:
        client = oai(sim)
        msgs = [{"role": "user", "content": "x"}]
        client.chat.completions.create(model="a", messages=msgs)
        client.chat.completions.create(model="b", messages=msgs)
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="a", messages=msgs)


def test_durations_in_openai_form():
    assert [go_duration(s) for s in (0, 0.12, 1, 8.64, 360, 3723.5)] == [
        "0s",
        "120ms",
        "1s",
        "8.64s",
        "6m0s",
        "1h2m3.5s",
    ]


# --------------------------------------------------------------------------- faults


TOOL_OAI = [
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
]
TOOL_ANT = [{"name": "f", "input_schema": {"type": "object", "properties": {}}}]


def _call_all(sim: ProviderSim):
    """One call through each SDK, offering a tool; each result or exception, by provider."""
    o = oai(sim, timeout=0.6)
    a = ant(sim, timeout=0.6)
    g = gem(sim, timeout_ms=600)
    gconfig = gtypes.GenerateContentConfig(
        tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="f")])],
        automatic_function_calling=gtypes.AutomaticFunctionCallingConfig(disable=True),
    )
    calls = {
        "openai": lambda: o.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=TOOL_OAI
        ),
        "anthropic": lambda: a.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}], tools=TOOL_ANT
        ),
        "gemini": lambda: g.models.generate_content(model="m", contents="x", config=gconfig),
    }
    out = {}
    for name, call in calls.items():
        try:
            out[name] = call()
        except Exception as exc:  # noqa: BLE001 - the test inspects which exception each SDK raised
            out[name] = exc
    return out


@pytest.mark.parametrize(
    ("kind", "expect"),
    [
        (
            "500",
            {"openai": openai.InternalServerError, "anthropic": anthropic.InternalServerError, "gemini": 500},
        ),
        (
            "502",
            {"openai": openai.InternalServerError, "anthropic": anthropic.InternalServerError, "gemini": 502},
        ),
        (
            "503",
            {"openai": openai.InternalServerError, "anthropic": anthropic.InternalServerError, "gemini": 503},
        ),
        (
            "529",
            {"openai": openai.InternalServerError, "anthropic": anthropic.OverloadedError, "gemini": 503},
        ),
        (
            "reset",
            {
                "openai": openai.APIConnectionError,
                "anthropic": anthropic.APIConnectionError,
                "gemini": OSError,
            },
        ),
        (
            "timeout",
            {"openai": openai.APITimeoutError, "anthropic": anthropic.APITimeoutError, "gemini": OSError},
        ),
        (
            "truncated",
            {
                "openai": openai.APIConnectionError,
                "anthropic": anthropic.APIConnectionError,
                "gemini": OSError,
            },
        ),
        ("malformed", {"openai": ValueError, "anthropic": ValueError, "gemini": ValueError}),
    ],
)
def test_each_fault_kind_makes_each_sdk_raise(kind, expect):
    import httpx2

    with ProviderSim(SimConfig(faults=1.0, fault_mix={kind: 1}, hang_seconds=1.0)) as sim:
        got = _call_all(sim)
        for provider, wanted in expect.items():
            exc = got[provider]
            if provider == "gemini" and isinstance(wanted, int):
                assert isinstance(exc, genai_errors.ServerError) and exc.code == wanted, (provider, exc)
            elif wanted is OSError:  # google-genai lets the transport's errors through
                assert isinstance(exc, (httpx2.TransportError,)), (provider, exc)
            else:
                assert isinstance(exc, wanted), (provider, exc)
        if kind == "529":
            assert (
                got["anthropic"].status_code == 529
                and got["anthropic"].body["error"]["type"] == "overloaded_error"
            )
        wait_until(lambda: sim.stats()["faults"].get(kind) == 3)
        assert sim.stats()["in_flight"] == 0


def test_bad_tool_arguments_reach_the_caller_in_each_form():
    with ProviderSim(SimConfig(faults=1.0, fault_mix={"bad_tool_args": 1})) as sim:
        got = _call_all(sim)
        call = got["openai"].choices[0].message.tool_calls[0]
        with pytest.raises(json.JSONDecodeError):
            json.loads(call.function.arguments)
        block = got["anthropic"].content[0]
        assert block.type == "tool_use" and not isinstance(block.input, dict)
        assert got["gemini"].candidates[0].finish_reason == gtypes.FinishReason.MALFORMED_FUNCTION_CALL
        # without tools the fault is never drawn
        plain = oai(sim).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert plain.choices[0].message.content == "This is a simulated reply."


def test_fault_draws_repeat_with_the_seed():
    def statuses(seed: int) -> list[int]:
        with ProviderSim(SimConfig(faults=0.5, fault_mix="500=1,503=1", seed=seed)) as sim:
            client = oai(sim)
            for _ in range(12):
                try:
                    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
                except openai.InternalServerError:
                    pass
            return [r.status for r in sim.requests]

    first = statuses(7)
    assert first == statuses(7)
    assert 200 in first and {500, 503} & set(first)
    assert first != statuses(8)


def test_config_checks_its_values():
    with pytest.raises(SimConfigError, match="unknown fault kind"):
        SimConfig(fault_mix="500=1,explode=2")
    with pytest.raises(SimConfigError, match="probability"):
        SimConfig(faults=1.5)
    with pytest.raises(SimConfigError, match="burst needs rpm"):
        SimConfig(burst=2)
    with pytest.raises(SimConfigError, match="latency"):
        SimConfig(latency="gamma:1,2")


def test_latency_distributions_are_seeded():
    spec = parse_latency("lognormal:0.4,0.3")
    a = [spec.sample(request_rng(1, "latency", n)) for n in range(5)]
    assert a == [spec.sample(request_rng(1, "latency", n)) for n in range(5)]
    assert all(x > 0 for x in a) and len(set(a)) == 5
    assert parse_latency("fixed:0.25").sample(request_rng(1, "latency", 1)) == 0.25
    u = parse_latency("uniform:0.1,0.2")
    assert all(0.1 <= u.sample(request_rng(3, "latency", n)) <= 0.2 for n in range(20))


# --------------------------------------------------------------------------- prompt caching


def test_openai_automatic_caching_in_128_token_steps(sim):
    client = oai(sim)
    long_msgs = [{"role": "system", "content": LONG}, {"role": "user", "content": "Summarize."}]
    total = tokens(LONG) + tokens("Summarize.")
    first = client.chat.completions.create(model="m", messages=long_msgs)
    second = client.chat.completions.create(model="m", messages=long_msgs)
    assert first.usage.prompt_tokens == second.usage.prompt_tokens == total
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    expected = 1024 + (total - 1024) // 128 * 128
    assert second.usage.prompt_tokens_details.cached_tokens == expected
    changed = [{"role": "system", "content": LONG}, {"role": "user", "content": "Something else entirely."}]
    third = client.chat.completions.create(model="m", messages=changed)
    assert third.usage.prompt_tokens_details.cached_tokens == 1024 + (tokens(LONG) - 1024) // 128 * 128
    short = [{"role": "user", "content": "Short prompt."}]
    client.chat.completions.create(model="m", messages=short)
    assert (
        client.chat.completions.create(model="m", messages=short).usage.prompt_tokens_details.cached_tokens
        == 0
    )
    r1 = client.responses.create(model="m", instructions=LONG, input="Go.")
    r2 = client.responses.create(model="m", instructions=LONG, input="Go.")
    assert (
        r1.usage.input_tokens_details.cached_tokens == 0
        and r2.usage.input_tokens_details.cached_tokens > 1024
    )
    other = oai(sim, key="sk-someone-else").chat.completions.create(model="m", messages=long_msgs)
    assert other.usage.prompt_tokens_details.cached_tokens == 0  # the cache is per API key
    assert sim.stats()["cached_tokens"] > 0


def test_anthropic_caching_writes_then_reads_up_to_the_breakpoint(sim):
    client = ant(sim)

    def send(ttl: str | None = None, text: str = LONG, question: str = "Summarize."):
        block = {"type": "text", "text": text}
        if ttl:
            block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
        return client.messages.create(
            model="claude-x", max_tokens=20, system=[block], messages=[{"role": "user", "content": question}]
        ).usage

    cached, total = tokens(LONG), tokens(LONG) + tokens("Summarize.")
    none = send(None)
    assert none.cache_creation_input_tokens == 0 and none.input_tokens == total
    w = send("5m")
    assert w.cache_creation_input_tokens == cached and w.cache_read_input_tokens == 0
    assert (
        w.cache_creation.ephemeral_5m_input_tokens == cached
        and w.cache_creation.ephemeral_1h_input_tokens == 0
    )
    assert w.input_tokens == total - cached
    r = send("5m", question="Another question.")
    assert r.cache_read_input_tokens == cached and r.cache_creation_input_tokens == 0
    assert r.input_tokens == tokens("Another question.")
    h = send("1h", text=LONG + " Appendix.")
    assert h.cache_creation.ephemeral_1h_input_tokens == tokens(LONG + " Appendix.")
    short = send("5m", text="A short system prompt.")
    assert short.cache_creation_input_tokens == 0 and short.cache_read_input_tokens == 0  # below 1024 tokens


def test_anthropic_cache_lifetime_and_breakpoint_limit():
    with ProviderSim(SimConfig(cache_ttl=0.3, anthropic_cache_min=10)) as sim:
        client = ant(sim)
        system = [{"type": "text", "text": "x" * 400, "cache_control": {"type": "ephemeral"}}]
        msgs = [{"role": "user", "content": "hi"}]
        assert (
            client.messages.create(
                model="m", max_tokens=5, system=system, messages=msgs
            ).usage.cache_creation_input_tokens
            == 100
        )
        assert (
            client.messages.create(
                model="m", max_tokens=5, system=system, messages=msgs
            ).usage.cache_read_input_tokens
            == 100
        )
        time.sleep(0.45)  # past the lifetime: the entry is gone, written again
        assert (
            client.messages.create(
                model="m", max_tokens=5, system=system, messages=msgs
            ).usage.cache_creation_input_tokens
            == 100
        )
        marked = [{"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
            client.messages.create(model="m", max_tokens=5, system=marked, messages=msgs)


def test_gemini_implicit_caching(sim):
    client = gem(sim)
    config = gtypes.GenerateContentConfig(system_instruction=LONG)
    first = client.models.generate_content(model="gemini-x", contents="Summarize.", config=config)
    second = client.models.generate_content(model="gemini-x", contents="Summarize.", config=config)
    assert first.usage_metadata.cached_content_token_count is None
    total = tokens(LONG) + tokens("Summarize.")
    assert second.usage_metadata.prompt_token_count == total
    assert second.usage_metadata.cached_content_token_count == 1024 + (total - 1024) // 128 * 128
    short = client.models.generate_content(model="gemini-x", contents="Hi.")
    assert short.usage_metadata.cached_content_token_count is None


def test_the_harness_backends_read_usage_and_headers_from_the_sim(tmp_path: Path):
    from pydantic import SecretStr

    from pptarena.models import Message, ModelClient
    from pptarena.plugins.backends.anthropic import AnthropicBackend, AnthropicOptions
    from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions
    from pptarena.types import ComponentContext

    def no_model(ref: str):
        raise AssertionError(ref)

    context = ComponentContext(cache_dir=tmp_path, model=no_model, name="test", label="test")
    common = {"api_key": SecretStr(KEY), "cache": False, "max_retries": 0}
    with ProviderSim(SimConfig(rpm=600, tpm=1_000_000)) as sim:
        backend = AnthropicBackend(AnthropicOptions(base_url=sim.url, **common), context)
        try:
            client = ModelClient(backend, "anthropic", "claude-x")
            messages = [Message.system(LONG, cache_prefix=True), Message.user("Summarize.")]
            first = client.complete(messages)
            second = client.complete(messages)
        finally:
            backend.close()
        assert first.usage.cache_write_input_tokens == tokens(LONG) and first.usage.cached_input_tokens == 0
        assert second.usage.cached_input_tokens == tokens(LONG)
        assert second.usage.input_tokens == tokens(LONG) + tokens("Summarize.")
        assert second.rate_headers["anthropic-ratelimit-requests-limit"] == "600"
        backend = OpenAIBackend(OpenAIOptions(base_url=sim.url + "/v1", **common), context)
        try:
            done = ModelClient(backend, "openai", "gpt-x").complete([Message.user("hello")])
        finally:
            backend.close()
        assert done.text == "This is a simulated reply."
        assert done.rate_headers["x-ratelimit-limit-tokens"] == "1000000"


# --------------------------------------------------------------------------- stats, CLI


def test_stats_endpoint_matches_and_reset_clears(sim):
    oai(sim).chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
    with urllib.request.urlopen(sim.url + "/sim/stats", timeout=5) as resp:
        remote = json.load(resp)
    local = sim.stats()
    assert remote["requests"] == local["requests"] == 1
    assert remote["by_status"] == {"200": 1} and local["by_status"] == {200: 1}
    assert remote["output_tokens"] == local["output_tokens"] == tokens("hi there")
    sim.reset_stats()
    assert sim.stats()["requests"] == 0 and sim.requests == []
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}).encode()
    url = sim.url + "/v1beta/models/gemini-x:generateContent?key=query-key"
    with urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=5) as resp:
        assert json.load(resp)["candidates"][0]["content"]["parts"][0]["text"] == "hi there"
    assert sim.requests[-1].api_key == "query-key" and sim.requests[-1].wire == "gemini"
    reset = urllib.request.Request(sim.url + "/sim/reset", data=b"", method="POST")
    with urllib.request.urlopen(reset, timeout=5) as resp:
        assert json.load(resp) == {"reset": True}
    assert sim.stats()["requests"] == 0


def test_only_loopback_addresses_are_bound():
    with pytest.raises(ValueError, match="loopback"):
        ProviderSim(SimConfig(), host="0.0.0.0")


def test_arena_provider_sim_serves_until_interrupted(tmp_path: Path):
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\nmatch = "ping"\nreply = "pong from the cli"\n')
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pptarena.cli",
            "provider-sim",
            "--port",
            "0",
            "--rpm",
            "600",
            "--rules",
            str(rules),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("OpenAI") and "/v1" in first, first + proc.stderr.read()
        base = first.split("base_url:")[1].strip()
        assert "Anthropic" in proc.stdout.readline() and "Gemini" in proc.stdout.readline()
        client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "ping"}]
        )
        assert raw.parse().choices[0].message.content == "pong from the cli"
        assert raw.headers["x-ratelimit-limit-requests"] == "600"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "1 requests (status 200: 1)" in out


def test_arena_provider_sim_refuses_bad_options():
    from click.testing import CliRunner

    from pptarena.cli.provider_sim import provider_sim_command

    result = CliRunner().invoke(provider_sim_command, ["--port", "0", "--fault-mix", "boom=1"])
    assert result.exit_code != 0 and "unknown fault kind" in result.output
    result = CliRunner().invoke(provider_sim_command, ["--port", "0", "--duration", "0.05", "--seed", "3"])
    assert result.exit_code == 0 and "0 requests" in result.output and "/v1" in result.output
