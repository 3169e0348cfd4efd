"""Batch jobs of the provider simulator through the official SDKs: OpenAI (files + batches), Anthropic
Message Batches and Gemini batch mode, with failed requests, expired batches and cancellation."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as gtypes

from pptarena.models.sim import ProviderSim, Rule, SimConfig

KEY = "sk-sim-batch-0123456789"
RULES = [Rule(match=r"^q(\d+)$", reply="answer")]


def wait_until(probe, limit: float = 10.0):
    """Poll ``probe`` until it returns something truthy (bounded; not a timing assertion)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        value = probe()
        if value:
            return value
        time.sleep(0.03)
    raise AssertionError("the condition never came true")


def oai(sim: ProviderSim) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.url + "/v1", api_key=KEY, max_retries=0)


def ant(sim: ProviderSim) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.url, api_key=KEY, max_retries=0)


def gem(sim: ProviderSim) -> genai.Client:
    return genai.Client(api_key=KEY, http_options=gtypes.HttpOptions(base_url=sim.url))


def openai_input(n: int, endpoint: str = "/v1/chat/completions") -> bytes:
    lines = []
    for i in range(n):
        if endpoint == "/v1/responses":
            body = {"model": "gpt-x", "input": f"q{i}"}
        else:
            body = {"model": "gpt-x", "messages": [{"role": "user", "content": f"q{i}"}]}
        lines.append(json.dumps({"custom_id": f"req-{i}", "method": "POST", "url": endpoint, "body": body}))
    return ("\n".join(lines) + "\n").encode()


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------- OpenAI


def test_openai_batch_end_to_end_with_a_failed_request():
    with ProviderSim(SimConfig(batch_delay=0.2, batch_fail=0.4, seed=5, rules=RULES)) as sim:
        client = oai(sim)
        upload = client.files.create(file=("in.jsonl", openai_input(6)), purpose="batch")
        assert upload.purpose == "batch" and upload.bytes == len(openai_input(6))
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert batch.status == "validating" and batch.request_counts.total == 0
        done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b)
        counts = done.request_counts
        assert counts.total == 6 and counts.completed + counts.failed == 6
        assert counts.completed >= 1 and counts.failed >= 1  # seed 5 gives both
        output = jsonl(client.files.content(done.output_file_id).text)
        errors = jsonl(client.files.content(done.error_file_id).text)
        assert len(output) == counts.completed and len(errors) == counts.failed
        assert {r["custom_id"] for r in output} | {r["custom_id"] for r in errors} == {
            f"req-{i}" for i in range(6)
        }
        for row in output:
            assert row["error"] is None and row["response"]["status_code"] == 200
            body = row["response"]["body"]
            assert (
                body["object"] == "chat.completion" and body["choices"][0]["message"]["content"] == "answer"
            )
        for row in errors:
            assert row["response"]["status_code"] == 500 and row["response"]["body"]["error"]["message"]
        stats = sim.stats()
        assert stats["batches_submitted"] == stats["batches_ended"] == 1 and stats["batch_requests"] == 6


def test_openai_batch_expires_and_cancels():
    with ProviderSim(SimConfig(batch_delay=0.2, batch_expire=1.0, seed=1)) as sim:
        client = oai(sim)
        upload = client.files.create(file=("in.jsonl", openai_input(5, "/v1/responses")), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/responses", completion_window="24h"
        )
        ended = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "expired" and b)
        assert ended.expired_at is not None and ended.request_counts.total == 5
        errors = jsonl(client.files.content(ended.error_file_id).text)
        expired = [r for r in errors if r["error"] and r["error"]["code"] == "batch_expired"]
        assert expired and all(r["response"] is None for r in expired)
        done = jsonl(client.files.content(ended.output_file_id).text) if ended.output_file_id else []
        assert len(done) + len(expired) == 5
        assert all(r["response"]["body"]["object"] == "response" for r in done)
    with ProviderSim(SimConfig(batch_delay=30)) as sim:
        client = oai(sim)
        upload = client.files.create(file=("in.jsonl", openai_input(3)), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert client.batches.cancel(batch.id).status == "cancelling"
        cancelled = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "cancelled" and b)
        assert cancelled.cancelled_at is not None and cancelled.output_file_id is None


def test_openai_batch_with_a_bad_line_fails_validation():
    with ProviderSim(SimConfig(batch_delay=0.1)) as sim:
        client = oai(sim)
        data = openai_input(2) + b"not json\n"
        upload = client.files.create(file=("in.jsonl", data), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert batch.status == "failed"
        assert batch.errors.data[0].line == 3 and batch.errors.data[0].code == "invalid_json_line"
        assert client.batches.retrieve(batch.id).status == "failed"
        with pytest.raises(openai.BadRequestError, match="completion_window"):
            client.batches.create(
                input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="1h"
            )
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_missing")


def test_batch_requests_skip_the_rate_limits():
    with ProviderSim(SimConfig(rpm=60, burst=1, batch_delay=0.1)) as sim:
        client = oai(sim)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        upload = client.files.create(file=("in.jsonl", openai_input(4)), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = wait_until(lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b)
        assert done.request_counts.completed == 4
        assert sim.stats()["by_status"].get(429) == 1


# --------------------------------------------------------------------------- Anthropic


def _anthropic_requests(n: int) -> list[dict]:
    return [
        {
            "custom_id": f"req-{i}",
            "params": {
                "model": "claude-x",
                "max_tokens": 20,
                "messages": [{"role": "user", "content": f"q{i}"}],
            },
        }
        for i in range(n)
    ]


def test_anthropic_message_batch_end_to_end_with_a_failed_request():
    with ProviderSim(SimConfig(batch_delay=0.2, batch_fail=0.4, seed=5, rules=RULES)) as sim:
        client = ant(sim)
        requests = _anthropic_requests(5)
        requests.append({"custom_id": "bad-params", "params": {"model": "claude-x", "messages": []}})
        batch = client.messages.batches.create(requests=requests)
        assert batch.processing_status == "in_progress" and batch.request_counts.processing == 6
        assert batch.results_url is None
        ended = wait_until(
            lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b
        )
        counts = ended.request_counts
        assert counts.succeeded + counts.errored == 6 and counts.succeeded >= 1 and counts.errored >= 2
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert set(results) == {f"req-{i}" for i in range(5)} | {"bad-params"}
        assert results["bad-params"].type == "errored"
        assert results["bad-params"].error.error.type == "invalid_request_error"
        succeeded = [r for r in results.values() if r.type == "succeeded"]
        assert len(succeeded) == counts.succeeded
        assert all(
            r.message.content[0].text == "answer" and r.message.usage.input_tokens > 0 for r in succeeded
        )


def test_anthropic_message_batch_expires_and_cancels():
    with ProviderSim(SimConfig(batch_delay=0.2, batch_expire=1.0, seed=2)) as sim:
        client = ant(sim)
        batch = client.messages.batches.create(requests=_anthropic_requests(4))
        ended = wait_until(
            lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b
        )
        assert ended.request_counts.expired >= 1
        assert ended.request_counts.expired + ended.request_counts.succeeded == 4
        kinds = [r.result.type for r in client.messages.batches.results(batch.id)]
        assert kinds.count("expired") == ended.request_counts.expired
    with ProviderSim(SimConfig(batch_delay=30)) as sim:
        client = ant(sim)
        batch = client.messages.batches.create(requests=_anthropic_requests(3))
        assert client.messages.batches.cancel(batch.id).processing_status == "canceling"
        ended = wait_until(
            lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended" and b
        )
        assert ended.request_counts.canceled == 3 and ended.cancel_initiated_at is not None
        assert [r.result.type for r in client.messages.batches.results(batch.id)] == ["canceled"] * 3
        assert client.messages.batches.delete(batch.id).type == "message_batch_deleted"
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.retrieve(batch.id)


def test_anthropic_batch_refuses_duplicate_ids():
    with ProviderSim(SimConfig(batch_delay=0.1)) as sim:
        requests = _anthropic_requests(2)
        requests[1]["custom_id"] = requests[0]["custom_id"]
        with pytest.raises(anthropic.BadRequestError, match="Duplicate custom_id"):
            ant(sim).messages.batches.create(requests=requests)


# --------------------------------------------------------------------------- Gemini


def _gemini_requests(n: int) -> list[dict]:
    return [{"contents": [{"parts": [{"text": f"q{i}"}], "role": "user"}]} for i in range(n)]


def test_gemini_batch_end_to_end_with_a_failed_request():
    with ProviderSim(SimConfig(batch_delay=0.2, batch_fail=0.4, seed=5, rules=RULES)) as sim:
        client = gem(sim)
        job = client.batches.create(
            model="gemini-x", src=_gemini_requests(5), config={"display_name": "nightly"}
        )
        assert job.name.startswith("batches/") and job.state == gtypes.JobState.JOB_STATE_PENDING
        assert job.display_name == "nightly" and job.model == "models/gemini-x"
        done = wait_until(lambda: (j := client.batches.get(name=job.name)).done and j)
        assert done.state == gtypes.JobState.JOB_STATE_SUCCEEDED and done.end_time is not None
        responses = done.dest.inlined_responses
        assert len(responses) == 5
        ok = [r for r in responses if r.response is not None]
        failed = [r for r in responses if r.error is not None]
        assert ok and failed and len(ok) + len(failed) == 5
        assert all(r.response.text == "answer" for r in ok)
        assert all(r.error.code == 500 for r in failed)
        assert [j.name for j in client.batches.list()] == [job.name]


def test_gemini_batch_expires_and_cancels():
    with ProviderSim(SimConfig(batch_delay=0.2, batch_expire=1.0, seed=5)) as sim:
        client = gem(sim)
        job = client.batches.create(model="gemini-x", src=_gemini_requests(4))
        done = wait_until(lambda: (j := client.batches.get(name=job.name)).done and j)
        assert done.state == gtypes.JobState.JOB_STATE_EXPIRED
        expired = [r for r in done.dest.inlined_responses if r.error is not None]
        assert expired and all(r.error.code == 504 for r in expired)
    with ProviderSim(SimConfig(batch_delay=30)) as sim:
        client = gem(sim)
        job = client.batches.create(model="gemini-x", src=_gemini_requests(2))
        client.batches.cancel(name=job.name)
        done = wait_until(lambda: (j := client.batches.get(name=job.name)).done and j)
        assert done.state == gtypes.JobState.JOB_STATE_CANCELLED
        client.batches.delete(name=job.name)
        assert list(client.batches.list()) == []
