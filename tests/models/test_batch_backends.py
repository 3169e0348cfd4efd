"""The openai, anthropic and google backends' batch mode through the real SDKs against the provider
simulator: what each submits (the very body complete() sends), the answers matched by custom id,
failed and expired requests, refused calls, endpoint errors, and the run's batch queue end to end.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import SecretStr

from pptarena.models import Completion, ImagePart, Message, ModelError, TransientModelError
from pptarena.models.batch import BatchRequest, BatchState, supports_batch
from pptarena.models.pricing import bundled_prices
from pptarena.models.sim import ProviderSim, Rule, SimConfig
from pptarena.run.batches import BatchingModelClient, BatchQueue, BatchSettings
from pptarena.run.folder.rundir import BATCHES
from pptarena.types import ComponentContext

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")

from pptarena.plugins.backends.anthropic import AnthropicBackend, AnthropicOptions  # noqa: E402
from pptarena.plugins.backends.google import GoogleBackend, GoogleOptions  # noqa: E402
from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions  # noqa: E402

KEY = "sk-batch-test-DO-NOT-LEAK-0123456789abcdef"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
"""Every byte value: its base64 has '+' and '/' (URL-safe: '-' and '_', as google-genai sends it)."""
RULES = [
    Rule(match="q1", reply="first answer"),
    Rule(match="q2", reply="second"),
    Rule(match="q3", reply="3"),
]


def context(tmp_path) -> ComponentContext:
    return ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: None, name="t", label="t")


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def last_post(sim: ProviderSim, suffix: str) -> Any:
    """The body of the last POST whose path ends with ``suffix``."""
    return [r for r in sim.requests if r.method == "POST" and r.path.endswith(suffix)][-1].body


def openai_submitted(sim: ProviderSim) -> dict[str, dict[str, Any]]:
    import openai

    file_id = last_post(sim, "/v1/batches")["input_file_id"]
    with openai.OpenAI(base_url=sim.url + "/v1", api_key=KEY) as client:
        lines = jsonl(client.files.content(file_id).text)
    assert {(line["method"], line["url"]) for line in lines} == {("POST", "/v1/chat/completions")}
    return {line["custom_id"]: line["body"] for line in lines}


def anthropic_submitted(sim: ProviderSim) -> dict[str, dict[str, Any]]:
    return {r["custom_id"]: r["params"] for r in last_post(sim, "/v1/messages/batches")["requests"]}


def google_submitted(sim: ProviderSim) -> dict[str, dict[str, Any]]:
    entries = last_post(sim, ":batchGenerateContent")["batch"]["inputConfig"]["requests"]["requests"]
    return {e["metadata"]["key"]: e["request"] for e in entries}


@dataclass
class Provider:
    """One backend under test: how to build it against the simulator and read what it submitted."""

    name: str
    model: str
    make: Callable[[str, ComponentContext], Any]
    submitted: Callable[[ProviderSim], dict[str, dict[str, Any]]]
    generate_path: str  # the path suffix of a direct complete() request

    def backend(self, url: str, tmp_path, **options: Any) -> Any:
        return self.make(url, context(tmp_path), **options)


PROVIDERS = [
    Provider(
        "openai",
        "gpt-4o",
        lambda url, ctx, **o: OpenAIBackend(
            OpenAIOptions(api_key=SecretStr(KEY), base_url=url + "/v1", **o), ctx
        ),
        openai_submitted,
        "/v1/chat/completions",
    ),
    Provider(
        "anthropic",
        "claude-sonnet-4-5",
        lambda url, ctx, **o: AnthropicBackend(
            AnthropicOptions(api_key=SecretStr(KEY), base_url=url, **o), ctx
        ),
        anthropic_submitted,
        "/v1/messages",
    ),
    Provider(
        "google",
        "gemini-2.5-flash",
        lambda url, ctx, **o: GoogleBackend(
            GoogleOptions(api_key=SecretStr(KEY), base_url=url, api_version="v1beta", **o), ctx
        ),
        google_submitted,
        ":generateContent",
    ),
]


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request) -> Provider:
    return request.param


@pytest.fixture
def start_sim() -> Iterator[Callable[..., ProviderSim]]:
    """``start_sim(**SimConfig fields)`` → a started simulator (batches end after 0.2 s), stopped after."""
    started: list[ProviderSim] = []

    def start(**config: Any) -> ProviderSim:
        fields = {"seed": 1, "latency": "fixed:0", "batch_delay": 0.2, "rules": RULES, **config}
        sim = ProviderSim(SimConfig(**fields)).start()
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture
def backends(tmp_path) -> Iterator[Callable[..., Any]]:
    """``backends(provider, url, **options)`` → the provider's backend at ``url``, closed after the test."""
    built: list[Any] = []

    def make(provider: Provider, url: str, **options: Any) -> Any:
        backend = provider.backend(url, tmp_path, **options)
        built.append(backend)
        return backend

    yield make
    for backend in built:
        backend.close()


def calls(model: str) -> list[BatchRequest]:
    """Three calls: a system prompt marked as a cache prefix, an image, a multi-turn exchange."""
    return [
        BatchRequest(
            "r1",
            model,
            [Message.system("You judge slides.", cache_prefix=True), Message.user("q1: rate the title")],
            {"max_tokens": 64, "stop": ["END"]},
        ),
        BatchRequest("r2", model, [Message.user("q2: and this slide?", ImagePart(PNG))], {}),
        BatchRequest(
            "r3",
            model,
            [
                Message.user("q3: one word"),
                Message.assistant("ok"),
                Message.user("q3 again", cache_prefix=True),
            ],
            {"max_tokens": 16},
        ),
    ]


def wait_finished(backend: Any, batch_id: str) -> BatchState:
    """Poll until the batch has finished (bounded; the simulator ends it after 0.2 s)."""
    end = time.monotonic() + 15
    while time.monotonic() < end:
        state = backend.batch_status(batch_id)
        if state.finished:
            return state
        time.sleep(0.05)
    raise AssertionError(f"batch {batch_id} never finished")


# --------------------------------------------------------------------------- answers and bodies


def test_every_call_is_answered_by_custom_id_with_the_body_complete_sends(provider, start_sim, backends):
    sim = start_sim()
    backend = backends(provider, sim.url)
    assert supports_batch(backend)
    requests = calls(provider.model)
    batch_id = backend.batch_submit(requests)
    submitted = provider.submitted(sim)
    first = backend.batch_status(batch_id)
    assert first.status == "in_progress" and first.results is None and not first.finished
    state = wait_finished(backend, batch_id)
    assert state.status == "ended" and state.error is None
    assert set(state.results or {}) == {"r1", "r2", "r3"}
    for req, reply in zip(requests, ["first answer", "second", "3"], strict=True):
        direct: Completion = backend.complete(req.messages, model=req.model, **req.params)
        sent = last_post(sim, provider.generate_path)
        result = state.results[req.custom_id]
        assert result.kind == "succeeded" and result.error is None and result.completion is not None
        answer = result.completion
        assert answer.text == direct.text == reply
        assert answer.usage == direct.usage and answer.usage.input_tokens > 0 and answer.usage.calls == 1
        assert answer.model == direct.model and answer.finish_reason == direct.finish_reason
        assert submitted[req.custom_id] == sent  # exactly the body complete() sends
    assert (
        state.results["r2"].completion.usage.input_tokens > state.results["r1"].completion.usage.input_tokens
    )


def test_what_each_provider_is_sent(start_sim, backends):
    sim = start_sim()
    openai_b, anthropic_b, google_b = (backends(p, sim.url) for p in PROVIDERS)
    openai_b.batch_submit(calls("gpt-4o"))
    body = openai_submitted(sim)["r1"]
    assert body["model"] == "gpt-4o" and body["max_tokens"] == 64 and body["stop"] == ["END"]
    assert body["messages"][0] == {"role": "system", "content": "You judge slides."}
    image = openai_submitted(sim)["r2"]["messages"][0]["content"][1]["image_url"]["url"]
    assert image.startswith("data:image/png;base64,")
    anthropic_b.batch_submit(calls("claude-sonnet-4-5"))
    params = anthropic_submitted(sim)
    mark = {"type": "ephemeral"}
    assert params["r1"]["model"] == "claude-sonnet-4-5" and params["r1"]["stop_sequences"] == ["END"]
    assert params["r1"]["system"] == [{"type": "text", "text": "You judge slides.", "cache_control": mark}]
    assert params["r3"]["messages"][-1]["content"][-1]["cache_control"] == mark
    assert params["r2"]["max_tokens"] == 4096  # the API requires one: the option's default, as complete()
    google_b.batch_submit(calls("gemini-2.5-flash"))
    assert last_post(sim, ":batchGenerateContent")["batch"]["displayName"].startswith("pptarena")
    assert [r.path for r in sim.requests if r.path.endswith(":batchGenerateContent")] == [
        "/v1beta/models/gemini-2.5-flash:batchGenerateContent"
    ]
    request = google_submitted(sim)["r1"]
    assert "model" not in request and request["generationConfig"]["maxOutputTokens"] == 64
    assert request["systemInstruction"]["parts"] == [{"text": "You judge slides."}]


def test_anthropic_extra_body_is_merged_into_the_params(start_sim, backends):
    sim = start_sim()
    backend = backends(PROVIDERS[1], sim.url, extra_body={"metadata": {"user_id": "arena"}})
    backend.batch_submit([BatchRequest("r1", "claude-sonnet-4-5", [Message.user("q1")], {})])
    params = anthropic_submitted(sim)["r1"]
    assert params["metadata"] == {"user_id": "arena"} and "extra_body" not in params


def test_azure_batch_lines_name_the_deployment(tmp_path):
    options = OpenAIOptions(
        api_key=SecretStr(KEY),
        azure_endpoint="http://127.0.0.1:9",
        api_version="2024-10-21",
        azure_deployment="judge-batch",
    )
    backend = OpenAIBackend(options, context(tmp_path))
    try:
        line = backend.batch_line(BatchRequest("r1", "gpt-4o", [Message.user("q1")], {"max_tokens": 5}))
    finally:
        backend.close()
    assert line["url"] == "/chat/completions" and line["body"]["model"] == "judge-batch"
    assert line["body"]["max_completion_tokens"] == 5  # Azure: as complete() sends it


# --------------------------------------------------------------------------- failures


def test_failed_requests_are_errored_with_their_status(provider, start_sim, backends):
    sim = start_sim(batch_fail=1.0, models=[provider.model])
    backend = backends(provider, sim.url)
    failing = backend.batch_submit([BatchRequest("r1", provider.model, [Message.user("q1")], {})])
    unknown = backend.batch_submit([BatchRequest("r2", "no-such-model", [Message.user("q2")], {})])
    server = wait_finished(backend, failing).results["r1"]
    refused = wait_finished(backend, unknown).results["r2"]
    assert (server.kind, server.status, server.completion) == ("errored", 500, None)
    assert server.error and server.retryable
    assert (refused.kind, refused.status) == ("errored", 404) and not refused.retryable
    assert "no-such-model" in (refused.error or "")


def test_an_expired_batch_expires_its_requests(provider, start_sim, backends):
    sim = start_sim(batch_expire=1.0)
    backend = backends(provider, sim.url)
    # one request: the simulator's expired batch runs a random number of requests before the cut, 0 here
    batch_id = backend.batch_submit([BatchRequest("r1", provider.model, [Message.user("q1")], {})])
    state = wait_finished(backend, batch_id)
    assert state.status == "expired"
    result = state.results["r1"]
    assert result.kind == "expired" and result.completion is None and result.retryable


def cancel(provider: Provider, sim: ProviderSim, batch_id: str) -> None:
    """Cancel a batch through the provider's own SDK (the backends have no cancel)."""
    if provider.name == "openai":
        import openai

        with openai.OpenAI(base_url=sim.url + "/v1", api_key=KEY) as client:
            client.batches.cancel(batch_id)
    elif provider.name == "anthropic":
        import anthropic

        with anthropic.Anthropic(base_url=sim.url, api_key=KEY) as client:
            client.messages.batches.cancel(batch_id)
    else:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url=sim.url, api_version="v1beta")
        with genai.Client(api_key=KEY, http_options=options) as client:
            client.batches.cancel(name=batch_id)


def test_a_canceled_batch_cancels_its_requests(provider, start_sim, backends):
    sim = start_sim(batch_delay=60)
    backend = backends(provider, sim.url)
    batch_id = backend.batch_submit([BatchRequest("r1", provider.model, [Message.user("q1")], {})])
    cancel(provider, sim, batch_id)
    state = wait_finished(backend, batch_id)
    assert state.status == "canceled"
    result = state.results["r1"]  # openai: in neither result file, its id read from the input file
    assert result.kind == "canceled" and result.completion is None and result.retryable


def test_calls_that_cannot_be_batched_are_refused_before_anything_is_sent(start_sim, backends):
    sim = start_sim()
    openai_b, anthropic_b, google_b = (backends(p, sim.url) for p in PROVIDERS)
    computer = {"tools": [{"type": "computer_use_preview", "display_width": 800, "display_height": 600}]}
    beta = {"betas": ["computer-use-2025-01-24"]}
    cases = [
        (openai_b, BatchRequest("r1", "gpt-4o", [Message.user("q1")], computer), "Responses API"),
        (
            openai_b,
            BatchRequest("r1", "gpt-4o", [Message.user("q1")], {"previous_response_id": "x"}),
            "complete",
        ),
        (anthropic_b, BatchRequest("r1", "claude-sonnet-4-5", [Message.user("q1")], beta), "beta"),
        (
            google_b,
            BatchRequest("r1", "gemini-2.5-flash", [Message.user("q1")], {"extra_body": {"a": 1}}),
            "extra_body",
        ),
    ]
    for backend, request, reason in cases:
        assert reason in (backend.batch_unsupported(request) or "")
        with pytest.raises(TypeError, match=reason):
            backend.batch_submit([BatchRequest("ok", request.model, [Message.user("q2")], {}), request])
    assert anthropic_b.batch_unsupported(BatchRequest("r", "m", [Message.user("q")], {})) is None
    with pytest.raises(ValueError, match="one model; these requests name 2"):
        google_b.batch_submit(
            [
                BatchRequest("r1", "gemini-2.5-flash", [Message.user("q1")], {}),
                BatchRequest("r2", "gemini-2.5-pro", [Message.user("q2")], {}),
            ]
        )
    assert sim.requests == []


def test_endpoint_errors_map_like_complete_and_never_show_the_key(provider, start_sim, backends):
    sim = start_sim(refused_keys=[KEY])
    backend = backends(provider, sim.url)
    with pytest.raises(ModelError) as refused:
        backend.batch_submit(calls(provider.model)[:1])
    assert refused.value.status == 401 and not isinstance(refused.value, TransientModelError)
    assert KEY not in str(refused.value) and refused.value.__cause__ is None
    open_sim = start_sim()
    with pytest.raises(ModelError) as unknown:
        backends(provider, open_sim.url).batch_status("batches/nope" if provider.name == "google" else "nope")
    assert unknown.value.status == 404 and KEY not in str(unknown.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    closed = backends(provider, f"http://127.0.0.1:{port}")
    with pytest.raises(TransientModelError):
        closed.batch_submit(calls(provider.model)[:1])
    with pytest.raises(TransientModelError):
        closed.batch_status("batches/x" if provider.name == "google" else "x")


# --------------------------------------------------------------------------- the run's queue


def test_the_run_queue_gets_batched_answers_priced_at_the_batch_rate(provider, start_sim, backends, tmp_path):
    sim = start_sim()
    backend = backends(provider, sim.url)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    queue = BatchQueue(run_dir, BatchSettings(quiet=0.05, max_wait=1.0, poll=0.05)).start(
        lambda name: backend
    )
    try:
        client = BatchingModelClient(queue, backend, provider.name, provider.model)
        reply = client.complete(
            [Message.system("You judge slides."), Message.user("q1: rate it")], max_tokens=20
        )
    finally:
        queue.close()
    assert reply.text == "first answer" and reply.batch_id
    book = jsonl((run_dir / BATCHES).read_text())
    assert [e["batch_id"] for e in book if e["op"] == "submitted"] == [reply.batch_id]
    assert [e["op"] for e in book] == ["submitted", "result", "ended"]
    usage = client.usage
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cached_input_tokens == 0
    price = bundled_prices()[provider.model]
    standard = (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6
    assert client.cost_usd == pytest.approx(standard * 0.5)
    assert sim.stats()["batches_submitted"] == 1
