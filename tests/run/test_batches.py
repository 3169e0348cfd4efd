"""The run's batch queue: judge calls collected into batch jobs, answers matched by custom id, and a
run started again after a crash polling the same jobs instead of submitting anything again.

The provider here is an in-process fake that keeps its jobs across "runs" (as a real provider does
while the harness is killed); the SDK-level tests against the provider simulator are in
tests/models/test_batch_backends.py.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pptarena.models import Completion, Message, ModelError, Usage
from pptarena.models.batch import BatchError, BatchRequest, BatchResult, BatchState, custom_id_of
from pptarena.run.batches import BatchingModelClient, BatchQueue, BatchSettings
from pptarena.run.folder.rundir import BATCHES

FAST = BatchSettings(quiet=0.1, max_wait=1.0, poll=0.05)


class FakeBatchProvider:
    """A provider whose jobs outlive the harness; ``hold`` keeps jobs in progress until released."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict] = {}
        self.submitted: list[list[str]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.expire_first = set()  # custom ids that expire the first time they are submitted
        self.fail = {}  # custom id -> status of an errored result
        self.direct_calls = 0

    def complete(self, messages, *, model, **params):
        self.direct_calls += 1
        return Completion("direct", model, Usage(1, 1, 1))

    def batch_submit(self, requests):
        bid = f"batch_{len(self.jobs) + 1}"
        self.jobs[bid] = {"requests": requests, "ended": False}
        self.submitted.append([r.custom_id for r in requests])
        return bid

    def batch_status(self, batch_id):
        job = self.jobs[batch_id]
        if not self.hold.is_set():
            return BatchState(batch_id, "in_progress")
        results = {}
        for r in job["requests"]:
            if r.custom_id in self.expire_first:
                self.expire_first.discard(r.custom_id)
                results[r.custom_id] = BatchResult(r.custom_id, kind="expired", error="expired")
            elif r.custom_id in self.fail:
                results[r.custom_id] = BatchResult(
                    r.custom_id, kind="errored", error="bad", status=self.fail[r.custom_id]
                )
            else:
                text = "answer to " + r.messages[-1].content
                results[r.custom_id] = BatchResult(r.custom_id, Completion(text, r.model, Usage(10, 2, 1)))
        return BatchState(batch_id, "ended", results=results)


def request(text: str) -> BatchRequest:
    return BatchRequest(custom_id_of(text), "m", [Message.user(text)], {})


def book(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / BATCHES).read_text().splitlines()]


def test_waiting_calls_go_out_as_one_batch_and_each_gets_its_own_answer(tmp_path):
    provider = FakeBatchProvider()
    queue = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        with ThreadPoolExecutor(6) as pool:
            answers = list(
                pool.map(lambda t: queue.call("p", provider, request(t)).text, [f"q{i}" for i in range(6)])
            )
    finally:
        queue.close()
    assert answers == [f"answer to q{i}" for i in range(6)]
    assert len(provider.submitted) == 1 and len(provider.submitted[0]) == 6
    ops = [e["op"] for e in book(tmp_path)]
    assert ops[0] == "submitted" and ops.count("result") == 6 and ops[-1] == "ended"


def test_the_same_request_twice_is_submitted_once(tmp_path):
    provider = FakeBatchProvider()
    queue = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: queue.call("p", provider, request("same")).text, range(3)))
    finally:
        queue.close()
    assert answers == ["answer to same"] * 3
    assert provider.submitted == [[custom_id_of("same")]]


def test_a_restarted_run_polls_the_pending_batch_and_submits_nothing_again(tmp_path):
    provider = FakeBatchProvider()
    provider.hold.clear()  # the job stays in progress: the first run is "killed" while it waits
    first = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    caller = threading.Thread(
        target=lambda: pytest.raises(ModelError, first.call, "p", provider, request("q"))
    )
    caller.start()
    deadline = time.monotonic() + 5
    while not provider.submitted and time.monotonic() < deadline:
        time.sleep(0.01)
    assert provider.submitted == [[custom_id_of("q")]]
    first.close()  # the process dies; its waiting caller is gone
    caller.join(5)
    # the same command again: the new queue reads the folder and polls batch_1 (still running)
    second = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(second.call, "p", provider, request("q"))
            time.sleep(10 * FAST.quiet)  # long past the moment a new request would be submitted
            assert len(provider.submitted) == 1, "the restarted run submitted the request again"
            provider.hold.set()
            assert answer.result(10).text == "answer to q"
    finally:
        second.close()
    assert len(provider.submitted) == 1
    # and a third start answers from the folder without asking the provider at all
    provider.jobs.clear()
    third = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        reply = third.call("p", provider, request("q"))
    finally:
        third.close()
    assert reply.text == "answer to q" and reply.batch_id == "batch_1"


def test_an_expired_request_is_submitted_once_more_then_a_second_failure_is_an_error(tmp_path):
    provider = FakeBatchProvider()
    provider.expire_first = {custom_id_of("late")}
    queue = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        assert queue.call("p", provider, request("late")).text == "answer to late"
        assert len(provider.submitted) == 2
        provider.fail = {custom_id_of("broken"): 500}
        with pytest.raises(BatchError, match="errored \\(after 2 submissions\\): bad"):
            queue.call("p", provider, request("broken"))
        provider.fail = {custom_id_of("refused"): 400}
        with pytest.raises(BatchError, match="errored: bad") as refused:
            queue.call("p", provider, request("refused"))
        assert refused.value.status == 400
    finally:
        queue.close()
    assert provider.submitted.count([custom_id_of("refused")]) == 1  # a 400 is not worth a second try


def test_the_client_prices_batch_answers_at_the_batch_rate_and_logs_the_batch(tmp_path):
    from pydantic import SecretStr  # noqa: F401 - the price comes from the backend's table

    from pptarena.models.pricing import ModelPrice

    provider = FakeBatchProvider()
    provider.options = type("O", (), {"pricing": {"m": ModelPrice(input=10.0, output=20.0, batch=0.5)}})()
    queue = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        client = BatchingModelClient(queue, provider, "p", "m")
        reply = client.complete([Message.user("priced")])
    finally:
        queue.close()
    assert reply.batch_id == "batch_1"
    assert client.cost_usd == pytest.approx((10 * 10.0 + 2 * 20.0) / 1e6 * 0.5)


def test_calls_for_two_models_go_out_as_two_jobs_and_an_unbatchable_call_goes_alone(tmp_path):
    provider = FakeBatchProvider()
    provider.batch_unsupported = lambda req: "beta flags" if req.params.get("betas") else None
    queue = BatchQueue(tmp_path, FAST).start(lambda name: provider)
    try:
        with ThreadPoolExecutor(4) as pool:
            reqs = [
                BatchRequest(custom_id_of(f"{m}{i}"), m, [Message.user(f"{m}{i}")])
                for m in "ab"
                for i in range(2)
            ]
            list(pool.map(lambda r: queue.call("p", provider, r), reqs))
        client = BatchingModelClient(queue, provider, "p", "a")
        direct = client.complete([Message.user("x")], betas=["b1"])
    finally:
        queue.close()
    assert sorted(len(ids) for ids in provider.submitted) == [2, 2]
    assert direct.text == "direct" and direct.batch_id is None and provider.direct_calls == 1
