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


def test_unknown_model_is_unpriced_and_response_cache_hits_are_free(
    openai_backend, llm_server, tmp_path, monkeypatch
):
    from pptarena.models import pricing

    monkeypatch.setattr(pricing, "is_local_url", lambda url: False)  # the stub stands for a remote server
    backend = openai_backend(cache=tmp_path / "cache.sqlite")
    llm_server.enqueue(Reply("a", input_tokens=50, output_tokens=5))
    unknown = ModelClient(backend, "openai", "local-llama")
    unknown.complete([Message.user("same")])
    assert unknown.unpriced_calls == 1 and unknown.cost_usd == 0.0
    again = ModelClient(backend, "openai", "local-llama")
    again.complete([Message.user("same")])  # served by pptarena's response cache: nothing spent
    assert again.usage.cached_calls == 1 and again.unpriced_calls == 0 and again.cost_usd == 0.0


def test_batch_rates_are_half_price_in_the_bundled_table_and_explicit_rates_win():
    from pptarena.models import Usage
    from pptarena.models.pricing import call_cost

    table = bundled_prices()
    for name in ("gpt-5.2", "claude-sonnet-4-5", "gemini-2.5-pro"):
        standard, batch = table[name], table[name].batch_price()
        assert (batch.input, batch.output) == (standard.input / 2, standard.output / 2)
    for name in ("gpt-5.2", "claude-sonnet-4-5"):  # OpenAI and Anthropic halve cache reads too
        assert table[name].batch_price().cached_input == pytest.approx(table[name].cached_input / 2)
    # Google's Batch tables list the standard context caching price: cached reads are not halved
    for name in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview"):
        assert table[name].batch_price().cached_input == table[name].cached_input
    flash = table["gemini-2.5-flash"].batch_price()
    assert (flash.input, flash.output, flash.cached_input) == (0.15, 1.25, 0.03)
    sonnet = table["claude-sonnet-4-5"].batch_price()
    assert (sonnet.cache_write, sonnet.cache_write_1h) == (3.75 / 2, 6.0 / 2)  # cache rates stack with batch

    class Backend:
        class options:  # noqa: N801 - a stand-in for a backend's options
            pricing = {
                "explicit": ModelPrice(input=2.0, output=8.0, batch_input=0.5, batch_output=6.0),
                "plain": ModelPrice(input=2.0, output=8.0),
            }

    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert call_cost(Backend, "explicit", usage) == pytest.approx(10.0)
    assert call_cost(Backend, "explicit", usage, batch=True) == pytest.approx(6.5)
    assert call_cost(Backend, "plain", usage, batch=True) == pytest.approx(10.0)  # no discount known
    assert call_cost(Backend, "gpt-4o", usage, batch=True) == pytest.approx((2.5 + 10.0) / 2)
    assert call_cost(Backend, "gpt-4o", usage, batch=True, cached=True) == 0.0
    with pytest.raises(ValueError):
        ModelPrice(input=1.0, output=1.0, batch=1.5)


def test_gemini_models_have_cached_input_rates():
    table = bundled_prices()
    for name in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview"):
        price = table[name]
        assert price.cached_input is not None and price.cached_input < price.input < price.output
    assert table["gemini-2.5-flash"].cost(1000, 100, 600) == pytest.approx(
        (400 * 0.30 + 600 * 0.03 + 100 * 2.5) / 1e6
    )


def test_cache_savings_are_the_read_discount_minus_the_write_premium():
    from pptarena.models import Usage
    from pptarena.models.pricing import cache_savings_usd

    haiku = bundled_prices()["claude-haiku-4-5"]  # input 1.00, reads 0.10, writes 1.25 / 2.00
    reads = Usage(input_tokens=1000, output_tokens=10, cached_input_tokens=800)
    assert cache_savings_usd(reads, haiku) == pytest.approx(800 * (1.0 - 0.10) / 1e6)
    writes = Usage(input_tokens=1000, cache_write_input_tokens=500, cache_write_1h_input_tokens=200)
    assert cache_savings_usd(writes, haiku) == pytest.approx(-(300 * 0.25 + 200 * 1.0) / 1e6)
    both = {"input_tokens": 1000, "cached_input_tokens": 800, "cache_write_input_tokens": 200}
    assert cache_savings_usd(both, haiku) == pytest.approx((800 * 0.9 - 200 * 0.25) / 1e6)
    assert cache_savings_usd(reads, None) == 0.0
    assert cache_savings_usd(Usage(input_tokens=1000), haiku) == 0.0


@pytest.mark.parametrize(
    "url, local",
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://10.0.0.5/v1", True),
        ("http://172.20.0.3:8000", True),
        ("http://gpu-box.local:8000/v1", True),
        ("http://host.docker.internal:11434/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://myres.openai.azure.com", False),
        ("http://8.8.8.8/v1", False),
        ("http://100.101.2.3:8000/v1", True),
        ("http://localhost.example.com/v1", False),
        (None, False),
        ("", False),
    ],
)
def test_local_urls(url, local):
    from pptarena.models.pricing import is_local_url

    assert is_local_url(url) is local


def test_a_local_server_without_a_price_is_free_and_shown_so(openai_backend, llm_server, tmp_path):
    from pptarena.models.pricing import LOCAL_FREE, clients_cost, fmt_usd, merge_costs, price_for

    local = openai_backend()  # the stub listens on 127.0.0.1
    assert price_for(local, "llama3") is LOCAL_FREE
    assert price_for(local, "gpt-4o") is bundled_prices()["gpt-4o"]  # a known model keeps its price
    priced = openai_backend(pricing={"llama3": ModelPrice(input=0.1, output=0.2)})
    assert price_for(priced, "llama3").input == 0.1  # a price given wins
    remote = openai_backend(base_url="https://llm.example.com/v1")
    assert price_for(remote, "llama3") is None

    llm_server.enqueue(Reply("a", input_tokens=50, output_tokens=5))
    client = ModelClient(local, "openai", "llama3")
    client.complete([Message.user("x")])
    assert client.cost_usd == 0.0 and client.unpriced_calls == 0
    cost = clients_cost([client])
    assert cost == {"usd": 0.0, "known_usd": 0.0, "unpriced_models": [], "local_models": ["openai/llama3"]}
    assert fmt_usd(cost) == "local (free)"
    idle = ModelClient(local, "openai", "llama3")  # no call made: nothing to say
    assert "local_models" not in clients_cost([idle])
    paid = {"usd": 0.5, "known_usd": 0.5, "unpriced_models": []}
    assert merge_costs([cost, paid]) == {**paid, "local_models": ["openai/llama3"]}
    assert fmt_usd(merge_costs([cost, paid])) == "$0.5000"
    unknown = {"usd": None, "known_usd": 0.0, "unpriced_models": ["openai/x"]}
    assert fmt_usd(merge_costs([cost, unknown])) == "unknown (openai/x)"


def test_clients_cost_counts_what_prompt_caching_saved_but_not_response_cache_hits(
    anthropic_backend, llm_server, tmp_path
):
    from pptarena.models.pricing import cache_saved, clients_cost, fmt_cache_saved, merge_costs

    backend = anthropic_backend(cache=tmp_path / "responses.sqlite")
    llm_server.enqueue(Reply("a", input_tokens=1000, output_tokens=10, cached_input_tokens=800))
    client = ModelClient(backend, "anthropic", "claude-haiku-4-5")
    client.complete([Message.user("x")])
    cost = clients_cost([client])
    assert cost["cache_saved_usd"] == pytest.approx(800 * 0.9 / 1e6)
    assert cost["usd"] == pytest.approx((200 * 1.0 + 800 * 0.1 + 10 * 5.0) / 1e6)
    hit = ModelClient(backend, "anthropic", "claude-haiku-4-5")
    hit.complete([Message.user("x")])  # pptarena's response cache: free, saved nothing this time
    assert hit.usage.cached_calls == 1 and "cache_saved_usd" not in clients_cost([hit])
    assert clients_cost([client, hit])["cache_saved_usd"] == cost["cache_saved_usd"]
    total = merge_costs([cost, cost, None, {"usd": 0.0, "known_usd": 0.0, "unpriced_models": []}])
    assert cache_saved(total) == pytest.approx(2 * 800 * 0.9 / 1e6)
    assert fmt_cache_saved(total) == "prompt caching saved $0.0014"
    assert fmt_cache_saved({"cache_saved_usd": -0.25}) == "prompt caching cost $0.2500 more than it saved"
    assert fmt_cache_saved({"usd": 1.0}) is None and fmt_cache_saved(None) is None


def test_per_call_savings_and_a_client_keeping_its_own_total():
    from types import SimpleNamespace

    from pptarena.models import Usage
    from pptarena.models.pricing import call_cache_savings, clients_cost, cost_record

    backend = SimpleNamespace(options=SimpleNamespace(pricing={}))
    usage = Usage(input_tokens=1000, output_tokens=10, cached_input_tokens=800, calls=1)
    full = call_cache_savings(backend, "claude-haiku-4-5", usage)
    assert full == pytest.approx(800 * 0.9 / 1e6)
    assert call_cache_savings(backend, "claude-haiku-4-5", usage, batch=True) == pytest.approx(full / 2)
    assert call_cache_savings(backend, "claude-haiku-4-5", usage, cached=True) == 0.0
    assert call_cache_savings(backend, "no-such-model", usage) == 0.0
    # a client that keeps its own per-call total is taken at its word (no estimate from its usage)
    client = SimpleNamespace(
        backend=backend,
        model="claude-haiku-4-5",
        ref="anthropic/claude-haiku-4-5",
        usage=usage,
        cost_usd=0.001,
        unpriced_calls=0,
        cache_saved_usd=0.25,
    )
    assert clients_cost([client])["cache_saved_usd"] == 0.25
    assert cost_record(0.1, ["b/x", "a/y"]) == {
        "usd": None,
        "known_usd": 0.1,
        "unpriced_models": ["a/y", "b/x"],
    }
    assert cost_record(0.1, unknown=True)["usd"] is None
    assert cost_record(0.1234567, local_models=["l/m", "l/m"], cache_saved_usd=1e-9) == {
        "usd": 0.123457,
        "known_usd": 0.123457,
        "unpriced_models": [],
        "local_models": ["l/m"],
    }


def test_an_agents_usage_book_says_local_and_what_caching_saved(openai_backend, llm_server):
    """The agent side's cost (a usage book) carries what the judges' records carry."""
    from pptarena.models import UsageBook

    book = UsageBook()
    llm_server.enqueue(Reply("a", input_tokens=50, output_tokens=5))
    ModelClient(openai_backend(), "openai", "llama3", book=book).complete([Message.user("x")])
    assert book.cost()["local_models"] == ["openai/llama3"] and book.cost()["usd"] == 0.0
    priced = openai_backend(pricing={"m": ModelPrice(input=2.0, output=8.0, cached_input=0.5)})
    llm_server.enqueue(Reply("b", input_tokens=1000, output_tokens=10, cached_input_tokens=800))
    client = ModelClient(priced, "openai", "m", book=book)
    client.complete([Message.user("y")])
    saved = 800 * (2.0 - 0.5) / 1e6
    assert client.cache_saved_usd == pytest.approx(saved)
    assert book.cost()["cache_saved_usd"] == pytest.approx(saved, abs=1e-6)
    merged = UsageBook()
    merged.merge(book)
    assert merged.cost()["local_models"] == ["openai/llama3"]
    assert merged.cost()["cache_saved_usd"] == pytest.approx(saved, abs=1e-6)
