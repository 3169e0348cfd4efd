"""The shared client layer: retry policy, deadline, cache keys and files, usage books, logs."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from pptarena.models import (
    BackendOptions,
    CallPolicy,
    Completion,
    ImagePart,
    Message,
    ModelClient,
    ModelError,
    ModelHub,
    TransientModelError,
    Usage,
    UsageBook,
    redact_secrets,
    sum_usage,
)
from pptarena.models.cache import ResponseCache, request_key
from pptarena.models.retry import RetryPolicy
from pptarena.types import AgentLog


class PlainBackend:
    """A third-party backend that knows nothing of pptarena's base classes."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = 0

    def complete(self, messages, *, model, **params):
        self.calls += 1
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, float):
            time.sleep(item)
            return Completion("slow", model)
        return Completion(item, model, Usage(10, 2, 1))


def test_backoff_is_exponential_capped_and_jittered():
    policy = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=5.0)
    rng = random.Random(1)
    for retry, cap in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (5, 5.0)]:
        waits = [policy.delay(retry, rng=rng) for _ in range(200)]
        assert all(0 <= w <= cap for w in waits)
        assert max(waits) > cap * 0.8 and min(waits) < cap * 0.2  # spread over the whole range
    assert policy.delay(1, retry_after=3.0, rng=rng) >= 3.0
    assert policy.delay(1, retry_after=100.0, rng=rng) == 5.0  # capped


def test_the_client_sleeps_between_attempts_and_passes_other_errors_through():
    backend = PlainBackend([TransientModelError("a"), TransientModelError("b", retry_after=0.5), "ok"])
    client = ModelClient(backend, "plain", "m", policy=CallPolicy(retry=RetryPolicy(3, 0.1, 1.0)))
    reply = client.complete([Message.user("x")])
    assert reply.text == "ok" and reply.usage.retries == 2
    assert reply.usage.wait_ms >= 500  # the second wait honoured retry_after
    failing = ModelClient(PlainBackend([ValueError("no")]), "plain", "m")
    with pytest.raises(ValueError):
        failing.complete([Message.user("x")])
    assert failing.usage.retries == 0 and failing.usage.errors == 1


def test_a_plain_backend_gets_default_retries_and_its_policy_is_shared():
    backend = PlainBackend([TransientModelError("busy"), "fine"])
    a, b = ModelClient(backend, "plain", "m"), ModelClient(backend, "plain", "m2")
    assert a.policy is b.policy  # one semaphore per backend object
    a.policy.retry = RetryPolicy(2, 0.0, 0.0)
    assert a.complete([Message.user("x")]).text == "fine"
    assert a.usage.retries == 1 and backend.calls == 2


@pytest.mark.slow
def test_deadline_stops_waiting_for_a_backend_that_ignores_timeouts():
    backend = PlainBackend([5.0])
    policy = CallPolicy(retry=RetryPolicy(0), timeout=0.2)
    started = time.monotonic()
    with pytest.raises(TransientModelError, match="did not return within"):
        ModelClient(backend, "plain", "m", policy=policy).complete([Message.user("x")])
    assert time.monotonic() - started < 2


def test_option_defaults_fill_missing_params_only():
    seen = []

    class Recorder:
        def complete(self, messages, *, model, **params):
            seen.append(params)
            return Completion("x", model)

    policy = CallPolicy.from_options(BackendOptions(temperature=0.3, max_tokens=100))
    client = ModelClient(Recorder(), "r", "m", policy=policy)
    client.complete([Message.user("a")])
    client.complete([Message.user("a")], temperature=1.0)
    assert seen == [{"temperature": 0.3, "max_tokens": 100}, {"temperature": 1.0, "max_tokens": 100}]


def test_cache_key_covers_backend_model_messages_images_params_and_identity():
    msgs = [Message.system("s"), Message.user("t", ImagePart(b"img1"))]
    base = request_key("openai", "m", msgs, {"temperature": 0, "max_tokens": 5})
    assert base == request_key("openai", "m", list(msgs), {"max_tokens": 5, "temperature": 0})  # order-free
    variants = [
        request_key("anthropic", "m", msgs, {"temperature": 0, "max_tokens": 5}),
        request_key("openai", "m2", msgs, {"temperature": 0, "max_tokens": 5}),
        request_key(
            "openai",
            "m",
            [msgs[0], Message.user("t", ImagePart(b"img2"))],
            {"temperature": 0, "max_tokens": 5},
        ),
        request_key(
            "openai",
            "m",
            [msgs[0], Message.user("t", ImagePart(b"img1", "image/jpeg"))],
            {"temperature": 0, "max_tokens": 5},
        ),
        request_key("openai", "m", msgs, {"temperature": 0.1, "max_tokens": 5}),
        request_key("openai", "m", msgs, {"temperature": 0, "max_tokens": 5}, {"base_url": "http://other"}),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_cache_round_trip_and_concurrent_processes(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    cache.put("k", "openai", Completion("hello", "m", Usage(3, 1, 1), raw={"id": "x"}))
    hit = cache.get("k")
    assert (
        hit is not None
        and hit.cached
        and hit.text == "hello"
        and hit.usage.input_tokens == 3
        and hit.raw == {"id": "x"}
    )
    assert cache.get("missing") is None

    writer = textwrap.dedent(
        f"""
        import sys
        from pptarena.models.cache import ResponseCache
        from pptarena.models import Completion, Usage
        c = ResponseCache({str(path)!r})
        for i in range(150):
            c.put(f"{{sys.argv[1]}}-{{i}}", "b", Completion(str(i), "m", Usage(i, 1, 1)))
            assert c.get(f"{{sys.argv[1]}}-{{i}}").text == str(i)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", writer, tag]) for tag in ("p1", "p2", "p3")]

    def threads_writer(tag):
        for i in range(100):
            cache.put(f"{tag}-{i}", "b", Completion(str(i), "m"))

    threads = [threading.Thread(target=threads_writer, args=(f"t{n}",)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    assert len(cache) == 1 + 3 * 150 + 3 * 100
    cache.close()


def test_cache_true_without_a_dir_is_refused():
    with pytest.raises(ValueError, match="cache directory"):
        CallPolicy.from_options(BackendOptions(cache=True))


def test_usage_sums_books_and_round_trips():
    book = UsageBook()
    backend = PlainBackend(["a", "b", TransientModelError("x")])
    policy = CallPolicy(retry=RetryPolicy(0))
    c1 = ModelClient(backend, "p", "big", policy=policy, book=book)
    c2 = ModelClient(backend, "p", "small", policy=policy, book=book)
    c1.complete([Message.user("1")])
    c2.complete([Message.user("2")])
    with pytest.raises(TransientModelError):
        c2.complete([Message.user("3")])
    data = book.as_dict()
    assert (
        data["total"]["calls"] == 2 and data["total"]["errors"] == 1 and data["total"]["input_tokens"] == 20
    )
    assert set(data["by_model"]) == {"p/big", "p/small"}
    run = UsageBook()
    run.merge(book)
    run.merge(data["by_model"])
    assert run.total().calls == 4
    assert Usage.from_dict(Usage(1, 2, 3, 4, 5, 6).as_dict()) == Usage(1, 2, 3, 4, 5, 6)
    assert sum_usage([Usage(1, 1, 1), {"input_tokens": 2, "calls": 1, "unknown": 9}]) == Usage(3, 1, 2)
    assert (Usage(1, 2, 1) + Usage(1, 0, 1)).total_tokens == 4


def test_calls_are_logged_without_image_bytes(tmp_path):
    log = AgentLog(tmp_path / "agent.log.jsonl")
    backend = PlainBackend(["reply text", ModelError("bad request")])
    client = ModelClient(backend, "p", "m", log=log, policy=CallPolicy(retry=RetryPolicy(0)))
    client.complete([Message.user("prompt", ImagePart(b"\x89PNG-bytes"))])
    with pytest.raises(ModelError):
        client.complete([Message.user("again")])
    ok, failed = (json.loads(line) for line in (tmp_path / "agent.log.jsonl").read_text().splitlines())
    assert ok["event"] == "model_call" and ok["model"] == "p/m" and ok["reply"] == "reply text"
    assert ok["messages"][0]["content"][0] == "prompt" and "sha256" in ok["messages"][0]["content"][1]
    assert "PNG-bytes" not in json.dumps(ok)
    assert failed["error"] == "ModelError: bad request" and failed["usage"]["errors"] == 1


def test_hub_resolves_refs_and_names_known_backends():
    hub = ModelHub({"p": PlainBackend(["x"])})
    book = UsageBook()
    client = hub.factory(book=book)("p/some/model")
    assert client.model == "some/model"
    client.complete([Message.user("q")])
    assert book.total().calls == 1
    with pytest.raises(ValueError, match="no model backend named 'q'.*configured: p"):
        hub.client("q/m")


def test_redaction_covers_masked_forms():
    key = "sk-proj-ABCDEFGHIJKLMNOP1234"
    text = f"bad key {key}; shown as {key[:8]}...{key[-8:]}"
    assert key[:8] not in redact_secrets(text, [key]) and key[-8:] not in redact_secrets(text, [key, None])


def test_redaction_finds_a_key_encoded_inside_any_text():
    """Base64 (both alphabets), hex and percent forms of a key are masked wherever the key sits in
    the encoded text: 300 seeded keys with random text around them."""
    import base64
    import random
    import string
    from urllib.parse import quote

    from pptarena.trust.redact import encoded_forms, redact_text

    rng = random.Random(5)
    for _ in range(300):
        key = "sk-" + "".join(
            rng.choice(string.ascii_letters + string.digits + "/+_-") for _ in range(rng.randint(8, 40))
        )
        around = ["".join(rng.choice(string.printable) for _ in range(rng.randint(0, 7))) for _ in range(2)]
        blob = (around[0] + key + around[1]).encode()
        known = [key, *encoded_forms(key)]
        for text in (
            base64.b64encode(blob).decode(),
            base64.urlsafe_b64encode(blob).decode(),
            blob.hex(),
            blob.hex().upper(),
            quote(blob.decode(), safe=""),
        ):
            masked = redact_text(text, known)
            assert "***" in masked and len(masked) < len(text), (key, text)


def test_encoded_forms_leave_short_values_and_innocent_numbers_alone():
    """A 4-character URL password is a secret as itself only: its hex would be an 8-digit number
    that occurs in innocent text. Percent forms are found with either case of escapes."""
    from pptarena.trust.redact import encoded_forms, redact_text

    assert encoded_forms("1234") == frozenset()
    assert redact_text("job 31323334 done", ["1234", *encoded_forms("1234")]) == "job 31323334 done"
    key = "sk-a/b+c=d?e&f"
    lower = "token%3dsk-a%2fb%2bc%3dd%3fe%26f"  # quote() writes %2F; other encoders write %2f
    assert "***" in redact_text(lower, [key, *encoded_forms(key)])


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_200_whose_body_is_not_json_is_a_transient_error_naming_the_provider(
    kind, openai_backend, anthropic_backend
):
    """The provider simulator's ``malformed`` fault: before, the SDK's JSONDecodeError went through
    as the agent's or judge's error, unretried and naming nobody."""
    from pptarena.models import TransientModelError
    from pptarena.models.sim import ProviderSim, SimConfig

    with ProviderSim(SimConfig(faults=1.0, fault_mix="malformed=1")) as sim:
        make = openai_backend if kind == "openai" else anthropic_backend
        url = sim.openai_base_url if kind == "openai" else sim.anthropic_base_url
        client = ModelClient(make(base_url=url, max_retries=1), kind, "some-model")
        with pytest.raises(TransientModelError, match=f"{kind}: the server's answer is not valid JSON"):
            client.complete([Message.user("x")])
        assert client.usage.retries == 1 and sim.stats()["faults"].get("malformed") == 2
