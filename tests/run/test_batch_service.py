"""The run's batch queue served to host agent workers (:mod:`pptarena.run.batch_service`).

A real :class:`~pptarena.run.batches.BatchQueue` (over an in-memory batch provider) behind a real
:class:`~pptarena.run.batch_service.BatchService` socket, called from real child processes through
:class:`~pptarena.run.batch_service.RemoteBatchQueue`. The attacks are written as clients that lie,
flood or die.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from pptarena.models import Message, ModelError
from pptarena.models.batch import custom_id_of
from pptarena.models.cache import request_key
from pptarena.run.batch_service import (
    ENV_VAR,
    MAX_REQUEST,
    BatchService,
    RemoteBatchQueue,
    remote_queue,
    serving,
)
from pptarena.run.batches import BatchQueue, BatchSettings, BatchWait
from pptarena.run.folder.rundir import BATCHES
from tests.run.test_batches import FakeBatchProvider

FAST = BatchSettings(quiet=0.05, max_wait=0.5, poll=0.05)

CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pptarena.models import Message
    from pptarena.models.batch import custom_id_of
    from pptarena.run.batch_service import remote_queue
    from pptarena.run.batches import BatchingModelClient

    # the agent's client as a host worker builds it, over the proxy to the host's queue
    client = BatchingModelClient(remote_queue(), None, "fake", "m")
    messages = [Message.user(sys.argv[1])]
    print("ready", flush=True)
    sys.stdin.readline()  # the test registers this pid (or not) before the call
    try:
        c = client.complete(messages)
        cid = custom_id_of(client.cache_key(messages, {}))
        print(json.dumps({"text": c.text, "batch_id": c.batch_id, "in": c.usage.input_tokens, "id": cid}))
    except Exception as exc:
        status = getattr(exc, "status", None)
        print(json.dumps({"error": type(exc).__name__, "status": status, "message": str(exc)}))
    """
)


@pytest.fixture
def served(tmp_path):
    provider = FakeBatchProvider()

    def backends(name):
        if name != "fake":
            raise KeyError(name)
        return provider

    queue = BatchQueue(tmp_path, FAST).start(backends)
    service = BatchService(queue, backends).start()
    try:
        yield provider, queue, service
    finally:
        service.stop()
        queue.close()


def host_id(text: str, salt: str = "") -> str:
    """The custom id the host files a pair's first one-message call under (derived from its content
    and the pair's :meth:`~pptarena.run.batches.BatchWait.salted`; the tests' waits have ``salt``)."""
    return custom_id_of(request_key("fake", "m", [Message.user(text)], {}, {}) + f"|{salt}|0")


def child(text: str) -> subprocess.Popen[str]:
    """A worker process that makes one call through ``$PPTARENA_BATCH_SERVICE``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, text],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def go(proc: subprocess.Popen[str]) -> dict:
    """Let the child make its call; its answer (or error) as it saw it."""
    out, _ = proc.communicate("go\n", timeout=60)
    return json.loads(out.strip().splitlines()[-1])


def held_call(provider, service, text: str, wait: BatchWait) -> subprocess.Popen[str]:
    """A child registered with ``wait`` whose call is submitted in a job the provider holds in
    progress (until ``provider.hold`` is set); returns once the job is submitted (or after 30 s)."""
    provider.hold.clear()
    proc = child(text)
    service.register(proc.pid, wait)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not provider.submitted and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def test_an_answer_round_trips_and_the_pairs_wait_counts_the_waiting(served, tmp_path):
    provider, _queue, service = served
    assert os.environ[ENV_VAR] == service.address and serving() is service
    # the service's own process never proxies to itself
    assert remote_queue() is None
    wait = BatchWait()
    proc = held_call(provider, service, "hello", wait)
    assert len(provider.submitted) == 1
    first = wait.seconds()
    time.sleep(0.3)
    assert wait.seconds() >= first + 0.3  # the pair's wait grows while its call waits
    provider.hold.set()
    out, _ = proc.communicate(timeout=60)
    answer = json.loads(out.strip().splitlines()[-1])
    # the worker's client derived its id from the content; the host filed the call under that content
    # made the pair's own (another epoch asking the same gets an answer of its own)
    assert answer == {
        "text": "answer to hello",
        "batch_id": "batch_1",
        "in": 10,
        "id": custom_id_of(request_key("fake", "m", [Message.user("hello")], {}, {})),
    }
    assert provider.submitted[0][0] == host_id("hello") != answer["id"]
    waited = wait.seconds()
    time.sleep(0.1)
    assert wait.seconds() == waited >= 0.3  # answered: the count stands still
    service.unregister(proc.pid)
    stored = [json.loads(line) for line in (tmp_path / BATCHES).read_text().splitlines()]
    assert [e["op"] for e in stored] == ["submitted", "result", "ended"]


def test_a_stored_failure_raises_the_same_error_with_its_status_in_the_worker(served):
    provider, _queue, service = served
    provider.fail[host_id("refused")] = 400
    proc = child("refused")
    with service.waiting(proc.pid, BatchWait()):
        answer = go(proc)
    assert answer["error"] == "BatchError" and answer["status"] == 400
    assert "errored" in answer["message"]
    # asked again by another worker: the stored failure, the same class, at once
    proc = child("refused")
    with service.waiting(proc.pid, BatchWait()):
        again = go(proc)
    assert again["error"] == "BatchError" and again["status"] == 400
    assert len(provider.submitted) == 1


def test_a_process_with_no_registered_pair_is_refused(served):
    provider, _queue, _service = served
    answer = go(child("who am i"))
    assert answer["error"] == "InfraError"
    assert "runs no batched pair" in answer["message"]
    assert provider.submitted == []


def raw_call(service: BatchService, line: bytes) -> dict:
    """One connection from this process sending ``line`` as is; the service's reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(service.address[5:])
        try:
            sock.sendall(line)
        except BrokenPipeError:  # the service answered and hung up before reading it all
            pass
        sock.shutdown(socket.SHUT_WR)
        data = sock.makefile("rb").readline()
    return json.loads(data)


def valid(text: str, **extra) -> bytes:
    msg = {
        "op": "call",
        "backend": "fake",
        "model": "m",
        "custom_id": custom_id_of(text),
        "messages": [{"role": "user", "content": text}],
        "params": {},
        **extra,
    }
    return json.dumps(msg).encode() + b"\n"


def test_attack_a_client_cannot_claim_another_pairs_wait(served):
    provider, _queue, service = served
    provider.hold.clear()
    victim = BatchWait()
    service.register(12345678, victim)  # another pair's worker
    mine = BatchWait()
    service.register(os.getpid(), mine)  # this test process is a registered worker too
    try:
        reply = raw_call(service, valid("steal", pid=12345678))
        assert reply["ok"] is False and reply["kind"] == "refused"
        assert "unknown field(s) in a batch call request: pid" in reply["error"]
        assert victim.seconds() == 0.0 and mine.seconds() == 0.0
        assert provider.submitted == []
    finally:
        service.unregister(12345678)
        service.unregister(os.getpid())


def test_attack_a_client_cannot_spoil_or_take_another_requests_answer_by_its_id(served):
    provider, queue, service = served
    with service.waiting(os.getpid(), BatchWait()):
        spoil = raw_call(service, valid("spoiler", custom_id=host_id("victim")))  # before the victim asks
        victim = raw_call(service, valid("victim"))
        take = raw_call(service, valid("taker", custom_id=host_id("victim")))  # after the victim's answer
    assert spoil["completion"]["text"] == "answer to spoiler"
    assert victim["completion"]["text"] == "answer to victim"
    assert take["completion"]["text"] == "answer to taker"
    assert queue.book.results[host_id("victim")]["completion"]["text"] == "answer to victim"
    assert sorted(cid for ids in provider.submitted for cid in ids) == sorted(
        host_id(t) for t in ("spoiler", "victim", "taker")
    )


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"this is not json\n", "must be JSON"),
        (b"[1, 2]\n", '"op": "call"'),
        (valid("x").replace(b'"fake"', b'"nobody"'), "backend 'nobody' is not configured"),
        (valid("x").replace(custom_id_of("x").encode(), b"../../etc"), "custom_id must be"),
        (valid("x").replace(b'"role": "user"', b'"role": "root"'), "malformed messages"),
        (valid("x").replace(b'"params": {}', b'"params": []'), "params must be an object"),
        (valid("x").replace(b'"model": "m"', b'"model": ' + json.dumps("m" * 300).encode()), "model must be"),
    ],
)
def test_attack_garbage_gets_a_clear_error_and_submits_nothing(served, line, says):
    provider, _queue, service = served
    with service.waiting(os.getpid(), BatchWait()):
        reply = raw_call(service, line)
    assert reply["ok"] is False and reply["kind"] == "refused"
    assert says in reply["error"]
    assert provider.submitted == []


def test_attack_a_huge_line_is_refused_without_being_read_whole(served):
    provider, _queue, service = served
    with service.waiting(os.getpid(), BatchWait()):
        reply = raw_call(service, b'{"op": "call", "messages": "' + b"a" * (MAX_REQUEST + 10) + b'"}\n')
    assert reply["ok"] is False and f"at most {MAX_REQUEST} bytes" in reply["error"]
    assert provider.submitted == []
    # the worker's side refuses to send one in the first place
    from pptarena.models.batch import BatchRequest

    big = BatchRequest(custom_id_of("big"), "m", [Message.user("a" * (MAX_REQUEST + 10))], {})
    with pytest.raises(ModelError, match="over"):
        RemoteBatchQueue(service.address).call("fake", None, big)


def test_a_worker_killed_mid_call_leaves_the_service_serving_others(served):
    provider, queue, service = served
    doomed_wait = BatchWait()
    doomed = held_call(provider, service, "doomed", doomed_wait)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(10)
    service.unregister(doomed.pid)
    doomed_wait.close()  # its pair ended (the host killed it)
    provider.hold.set()
    other = child("survivor")
    with service.waiting(other.pid, BatchWait()):
        answer = go(other)
    assert answer["text"] == "answer to survivor"
    # the dead worker's answer still landed in the run folder: its pair's next attempt gets it at once
    deadline = time.monotonic() + 30
    while host_id("doomed") not in queue.book.results and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_id("doomed") in queue.book.results


def test_stopping_removes_the_socket_its_folder_and_the_address(tmp_path):
    queue = BatchQueue(tmp_path, FAST)
    before = os.environ.get(ENV_VAR)
    service = BatchService(queue, lambda name: None).start()
    folder = os.path.dirname(service.address[5:])
    assert oct(os.stat(folder).st_mode & 0o777) == "0o700"
    service.stop()
    assert not os.path.exists(folder)
    assert os.environ.get(ENV_VAR) == before and serving() is None
    with pytest.raises(ValueError, match="unix:"):
        RemoteBatchQueue("tcp://127.0.0.1:1")
