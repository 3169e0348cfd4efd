"""The run's rate limiter: pacing, pauses on 429s, limits learned from headers, and one limiter for
every process of a run (a Unix-socket service on the host).

The cross-process tests are written as the problem the issue names: worker processes that each
had their own limit sent N times what the config allowed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from pptarena.models import Message, ModelClient
from pptarena.models.limiter_service import ENV_VAR, LimiterService, local_snapshots, reset_local
from pptarena.models.ratelimit import (
    LimitSettings,
    Outcome,
    RateLimiter,
    announced_limits,
    estimate_tokens,
    parse_reset,
    retry_after_of,
)
from tests.support.paths import ROOT
from tests.support.stub_llm_server import TEST_API_KEY, Fail, Reply


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def fresh_limiters():
    reset_local()
    yield
    reset_local()


# --------------------------------------------------------------------------- headers


def test_reset_times_in_every_providers_form():
    assert parse_reset("1s") == 1.0
    assert parse_reset("6m0s") == 360.0
    assert parse_reset("120ms") == pytest.approx(0.12)
    assert parse_reset("1m30.5s") == pytest.approx(90.5)
    assert parse_reset("2") == 2.0
    assert parse_reset("2026-12-02T10:00:05Z", now_wall=_wall("2026-12-02T10:00:00Z")) == pytest.approx(5.0)
    assert parse_reset("soon") is None and parse_reset(None) is None
    assert retry_after_of({"retry-after": "3", "retry-after-ms": "250"}) == pytest.approx(0.25)
    assert retry_after_of({"retry-after": "3"}) == 3.0


def _wall(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_openai_and_anthropic_headers_are_read():
    openai = announced_limits(
        {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "29000",
            "x-ratelimit-reset-tokens": "2s",
        }
    )
    assert (openai.request_limit, openai.requests_remaining, openai.token_limit) == (500, 499, 30000)
    assert openai.requests_reset == pytest.approx(0.12) and openai.tokens_reset == 2.0
    anthropic = announced_limits(
        {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0"}
    )
    assert anthropic.request_limit == 50 and anthropic.requests_remaining == 0


# --------------------------------------------------------------------------- one limiter's decisions


def test_requests_are_paced_at_the_configured_rpm():
    clock = Clock()
    limiter = RateLimiter(LimitSettings(rpm=60), clock=clock)  # one a second, burst of one
    lease, wait = limiter.try_acquire()
    assert lease is not None and wait == 0
    lease2, wait = limiter.try_acquire()
    assert lease2 is None and wait == pytest.approx(1.0)
    clock.now += 1.0
    assert limiter.try_acquire()[0] is not None


def test_tokens_are_paced_at_the_configured_tpm():
    clock = Clock()
    limiter = RateLimiter(LimitSettings(tpm=6000), clock=clock)  # 100 tokens/s, bucket of 600
    assert limiter.try_acquire(600)[0] is not None
    lease, wait = limiter.try_acquire(300)
    assert lease is None and wait == pytest.approx(3.0)


def test_a_429_pauses_every_caller_for_its_retry_after_and_halves_the_adaptive_cap():
    clock = Clock()
    limiter = RateLimiter(LimitSettings(), clock=clock)
    leases = [limiter.try_acquire()[0] for _ in range(8)]
    assert all(lease is not None for lease in leases) and limiter.try_acquire()[0] is None  # cap 8
    limiter.release(leases[0], Outcome("throttled", {"retry-after-ms": "1500"}, retry_after=1.5))
    lease, wait = limiter.try_acquire()
    assert lease is None and wait == pytest.approx(1.5)
    assert limiter.cap == 4
    limiter.release(leases[1], Outcome("throttled", {}, retry_after=1.5))  # same second: no second cut
    assert limiter.cap == 4
    clock.now += 1.6
    for lease in leases[2:]:
        limiter.release(lease, Outcome())
    assert limiter.try_acquire()[0] is not None


def test_limits_are_learned_from_headers_and_remaining_zero_pauses_until_reset():
    clock = Clock()
    limiter = RateLimiter(LimitSettings(), clock=clock)
    lease, _ = limiter.try_acquire()
    limiter.release(
        lease,
        Outcome(
            rate_headers={
                "x-ratelimit-limit-requests": "120",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "2s",
            }
        ),
    )
    assert limiter.snapshot()["rpm"] == 120
    lease, wait = limiter.try_acquire()
    assert lease is None and wait == pytest.approx(2.0)


def test_fixed_concurrency_is_never_adapted_and_not_adaptive_ignores_headers():
    clock = Clock()
    fixed = RateLimiter(LimitSettings(concurrency=2), clock=clock)
    a, _ = fixed.try_acquire()[0], fixed.try_acquire()[0]
    assert fixed.try_acquire()[0] is None
    fixed.release(a, Outcome("throttled", retry_after=0.1))
    assert fixed.cap == 2
    plain = RateLimiter(LimitSettings(concurrency=2, adaptive=False), clock=clock)
    lease = plain.try_acquire()[0]
    plain.release(lease, Outcome(rate_headers={"x-ratelimit-limit-requests": "5"}))
    assert plain.snapshot()["rpm"] is None


def test_a_lease_with_a_ttl_comes_back_by_itself():
    clock = Clock()
    limiter = RateLimiter(LimitSettings(concurrency=1), clock=clock)
    assert limiter.try_acquire(ttl=5)[0] is not None
    assert limiter.try_acquire()[0] is None
    clock.now += 5.1
    assert limiter.try_acquire()[0] is not None


def test_token_estimate_counts_text_images_and_the_output_asked_for():
    from pptarena.models import ImagePart

    msgs = [Message.system("x" * 400), Message.user("y" * 400, ImagePart(b"png"))]
    assert estimate_tokens(msgs, {"max_tokens": 50}) == 100 + 100 + 1000 + 50


# --------------------------------------------------------------------------- through the client


def test_client_waits_out_429s_and_counts_them(openai_backend, llm_server):
    llm_server.enqueue(Fail(429, retry_after=0.2), Fail(429, retry_after=0.2), Reply("fine"))
    backend = openai_backend(max_retries=0)  # 429s are not ordinary retries under an adaptive limiter
    client = ModelClient(backend, "openai", "gpt-4o")
    started = time.monotonic()
    reply = client.complete([Message.user("x")])
    assert reply.text == "fine"
    assert reply.usage.throttled == 2 and reply.usage.retries == 2
    assert reply.usage.wait_ms >= 300 and time.monotonic() - started >= 0.35


def test_not_adaptive_429s_use_the_ordinary_retry_budget(openai_backend, llm_server):
    llm_server.enqueue(Fail(429, retry_after=0.05), Fail(429, retry_after=0.05), Reply("fine"))
    client = ModelClient(openai_backend(max_retries=1, adaptive=False), "openai", "gpt-4o")
    with pytest.raises(Exception, match="gave up after 2 attempts, 2 rate-limited"):
        client.complete([Message.user("x")])
    assert client.usage.errors == 1 and client.usage.throttled == 2


def test_patience_bounds_how_long_429s_are_retried(openai_backend, llm_server):
    llm_server.default = Fail(429, retry_after=0.1)
    client = ModelClient(openai_backend(rate_limit_patience=0.3), "openai", "gpt-4o")
    with pytest.raises(Exception, match="rate-limited"):
        client.complete([Message.user("x")])
    assert 2 <= client.usage.throttled <= 6


# --------------------------------------------------------------------------- one limiter for every process

WORKER = textwrap.dedent(
    """
    import sys, threading
    from pydantic import SecretStr
    from pptarena.models import Message, ModelClient
    from pptarena.plugins.backends.openai import OpenAIBackend
    from pptarena.types import ComponentContext
    from pathlib import Path

    url, key, conc = sys.argv[1], sys.argv[2], int(sys.argv[3])
    opts = OpenAIBackend.Options.model_validate(
        {"api_key": SecretStr(key), "base_url": url, "concurrency": conc, "max_retries": 0}
    )
    backend = OpenAIBackend(opts, ComponentContext(Path("."), model=None, name="openai"))
    client = ModelClient(backend, "openai", "gpt-4o")
    threads = [threading.Thread(target=client.complete, args=([Message.user("x")],)) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    """
)


def _workers(llm_server, n: int, concurrency: int, env: dict) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, llm_server.openai_base_url, TEST_API_KEY, str(concurrency)],
            env=env,
            cwd=ROOT,
        )
        for _ in range(n)
    ]
    for p in procs:
        assert p.wait(60) == 0


@pytest.mark.slow
def test_worker_processes_share_one_limit_through_the_hosts_service(llm_server):
    llm_server.default = Reply("slow", delay=0.3)
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    # the attack on the old design: three processes, each with "concurrency = 2" of its own
    _workers(llm_server, 3, 2, env)
    assert llm_server.max_in_flight > 2
    llm_server.requests.clear()
    llm_server.max_in_flight = 0
    with LimiterService() as service:
        _workers(llm_server, 3, 2, {**env, ENV_VAR: service.address})
        snap = next(iter(local_snapshots().values()))
    assert len(llm_server.requests) == 12
    assert llm_server.max_in_flight == 2
    assert snap["granted"] == 12 and snap["max_in_flight"] == 2 and snap["in_flight"] == 0


def test_a_worker_killed_mid_call_gives_its_slot_back():
    with LimiterService() as service:
        code = textwrap.dedent(
            f"""
            import os
            from pptarena.models.limiter_service import SocketLimiter
            from pptarena.models.ratelimit import LimitSettings
            lease, _ = SocketLimiter({service.address[5:]!r}, "acct", LimitSettings(concurrency=1)).acquire()
            assert lease is not None
            os._exit(9)  # dies holding the lease
            """
        )
        assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60).returncode == 9
        from pptarena.models.limiter_service import local_limiter

        limiter = local_limiter("acct", LimitSettings(concurrency=1))
        deadline = time.monotonic() + 5
        while limiter.snapshot()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert limiter.snapshot()["in_flight"] == 0
        assert limiter.acquire(timeout=2)[0] is not None


def test_without_the_service_a_process_uses_its_own_limiter(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    from pptarena.models.limiter_service import limiter_for

    assert isinstance(limiter_for("a", LimitSettings()), RateLimiter)
    assert limiter_for("a", LimitSettings()) is limiter_for("a", LimitSettings())


def test_threads_of_one_process_share_the_accounts_limiter(openai_backend, llm_server):
    llm_server.default = Reply("slow", delay=0.2)
    backend_a = openai_backend(concurrency=2)
    backend_b = openai_backend(concurrency=2)  # same server, same key: the same account
    clients = [ModelClient(b, "openai", "gpt-4o") for b in (backend_a, backend_b) for _ in range(3)]
    threads = [threading.Thread(target=c.complete, args=([Message.user("x")],)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(llm_server.requests) == 6 and llm_server.max_in_flight == 2


def test_the_host_that_serves_the_limiters_uses_them_directly():
    from pptarena.models.limiter_service import limiter_for

    with LimiterService():
        assert isinstance(limiter_for("a", LimitSettings()), RateLimiter)  # no socket round trip


def test_the_output_asked_for_stays_counted_after_the_call(openai_backend, llm_server):
    """Providers count max_tokens at admission; refunding the unused part let a run through at 118 %
    of its token limit against the simulator (benchmarks/provider_bench.py, issue 32)."""
    from pptarena.models.limiter_service import local_snapshots

    llm_server.enqueue(Reply("short", input_tokens=10, output_tokens=2))
    client = ModelClient(openai_backend(tpm=6000), "openai", "gpt-4o")  # 100 tokens/s, bucket of 600
    client.complete([Message.user("x")], max_tokens=500)
    snap = next(iter(local_snapshots().values()))
    assert snap["tokens_available"] < 600 - 500 + 20  # the 500 asked for were not handed back
