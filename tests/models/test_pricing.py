"""Call costs through the real SDK backends against the loopback stub: the bundled table, per-backend
overrides, prompt-cache reads at the cached rate, response-cache hits free, unknown models unknown."""

from __future__ import annotations

import pytest

from pptarena.models import Message, ModelClient
from pptarena.models.pricing import ModelPrice, bundled_as_of, bundled_prices
from tests.support.stub_llm_server import Reply


def test_bundled_table_is_complete_and_dated():
    table = bundled_prices()
    assert {"gpt-4o", "gpt-5.2", "claude-sonnet-4-5", "gemini-2.5-pro"} <= set(table)
    assert all(p.output >= p.input > 0 for p in table.values())
    assert bundled_as_of() != "?"


def test_openai_cost_with_cached_prompt_tokens_and_override(openai_backend, llm_server):
    backend = openai_backend(pricing={"my-model": ModelPrice(input=2.0, output=8.0, cached_input=0.5)})
    llm_server.enqueue(
        Reply("a", input_tokens=1000, output_tokens=100, cached_input_tokens=400),
        Reply("b", input_tokens=1000, output_tokens=100),
    )
    client = ModelClient(backend, "openai", "my-model")
    client.complete([Message.user("x")])
    assert client.usage.cached_input_tokens == 400
    # (600 x 2 + 400 x 0.5 + 100 x 8) / 1e6
    assert client.cost_usd == pytest.approx(2.2e-3)
    gpt = ModelClient(backend, "openai", "gpt-4o-2024-08-06")  # bundled, date suffix ignored
    gpt.complete([Message.user("y")])
    assert gpt.cost_usd == pytest.approx((1000 * 2.5 + 100 * 10.0) / 1e6) and gpt.unpriced_calls == 0


def test_anthropic_cache_reads_count_as_cached_input(anthropic_backend, llm_server):
    llm_server.enqueue(Reply("a", input_tokens=1000, output_tokens=10, cached_input_tokens=800))
    client = ModelClient(anthropic_backend(), "anthropic", "claude-haiku-4-5-20251001")
    client.complete([Message.user("x")])
    assert client.usage.input_tokens == 1000 and client.usage.cached_input_tokens == 800
    assert client.cost_usd == pytest.approx((200 * 1.0 + 800 * 0.10 + 10 * 5.0) / 1e6)


def test_anthropic_cache_writes_cost_more_than_input_by_lifetime(anthropic_backend, llm_server):
    """Anthropic bills prompt-cache writes at 1.25x the input rate (five minutes) and 2x (one hour)."""
    llm_server.enqueue(
        Reply(
            "a",
            input_tokens=1000,
            output_tokens=10,
            cached_input_tokens=100,
            cache_write_5m_tokens=300,
            cache_write_1h_tokens=200,
        )
    )
    client = ModelClient(anthropic_backend(), "anthropic", "claude-haiku-4-5-20251001")
    client.complete([Message.user("x")])
    u = client.usage
    assert (
        u.input_tokens,
        u.cached_input_tokens,
        u.cache_write_input_tokens,
        u.cache_write_1h_input_tokens,
    ) == (
        1000,
        100,
        500,
        200,
    )
    # 400 plain x $1 + 100 read x $0.10 + 300 5-minute writes x $1.25 + 200 1-hour writes x $2 + 10 out x $5
    assert client.cost_usd == pytest.approx(
        (400 * 1.0 + 100 * 0.10 + 300 * 1.25 + 200 * 2.0 + 10 * 5.0) / 1e6
    )
    # without write rates (an override, or a provider that bills writes as input) writes cost the input rate
    plain = ModelPrice(input=1.0, output=5.0, cached_input=0.1)
    assert plain.cost(1000, 10, 100, 500, 200) == pytest.approx((900 * 1.0 + 100 * 0.1 + 10 * 5.0) / 1e6)


def test_unknown_model_is_unpriced_and_response_cache_hits_are_free(openai_backend, llm_server, tmp_path):
    backend = openai_backend(cache=tmp_path / "cache.sqlite")
    llm_server.enqueue(Reply("a", input_tokens=50, output_tokens=5))
    unknown = ModelClient(backend, "openai", "local-llama")
    unknown.complete([Message.user("same")])
    assert unknown.unpriced_calls == 1 and unknown.cost_usd == 0.0
    again = ModelClient(backend, "openai", "local-llama")
    again.complete([Message.user("same")])  # served by pptarena's response cache: nothing spent
    assert again.usage.cached_calls == 1 and again.unpriced_calls == 0 and again.cost_usd == 0.0
