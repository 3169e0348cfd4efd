"""The worker lifecycle both agent pools share (:mod:`pptarena.run.worker_pool`).

The workers are real processes (``sleep``), so "killed" and "retired" are what the process table
says, not a flag: threads check them out and back, the pool is closed and killed while some are out.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from pptarena.errors import InfraError
from pptarena.run.worker_pool import WorkerPool

JOIN = 60  # seconds a thread may take before the test calls it hung


class SleepWorker:
    """A real child process standing in for an agent worker; records how it ended."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        self.pairs = 0
        self.ended: list[str] = []
        self.in_use = threading.Lock()  # held while a caller has it: never two at once

    def kill(self) -> None:
        self.ended.append("killed")
        self.proc.kill()
        self.proc.wait()

    def retire(self) -> None:
        self.ended.append("retired")
        self.proc.terminate()
        self.proc.wait()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class Spawner:
    """``spawn`` for the pool, keeping every worker it made."""

    def __init__(self) -> None:
        self.made: list[SleepWorker] = []
        self.lock = threading.Lock()

    def __call__(self) -> SleepWorker:
        worker = SleepWorker()
        with self.lock:
            self.made.append(worker)
        return worker


@pytest.fixture
def spawner():
    made = Spawner()
    yield made
    for w in made.made:
        if w.alive:
            w.proc.kill()
            w.proc.wait()


def run_threads(target, n: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN)
        assert not t.is_alive(), "a thread hung in the pool"
    return errors


def test_threads_share_at_most_size_workers_one_caller_at_a_time(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=3, recycle_after=1000)
    out_now, most_out = [0], [0]
    count_lock = threading.Lock()

    def job(i: int) -> None:
        for _ in range(20):
            worker = pool.checkout(spawner)
            assert worker.in_use.acquire(blocking=False), "a worker was handed to two callers"
            with count_lock:
                out_now[0] += 1
                most_out[0] = max(most_out[0], out_now[0])
            worker.pairs += 1
            with count_lock:
                out_now[0] -= 1
            worker.in_use.release()
            pool.checkin(worker, healthy=True)

    assert run_threads(job, 8) == []
    assert most_out[0] <= 3
    assert pool.spawned == len(spawner.made) <= 3
    assert sum(w.pairs for w in spawner.made) == 8 * 20
    assert sorted(pool.workers(), key=id) == sorted(spawner.made, key=id)
    assert all(w.alive and w.ended == [] for w in spawner.made)  # kept warm
    pool.close()
    assert all(w.ended == ["retired"] and not w.alive for w in spawner.made)


def test_each_key_has_its_own_cap(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=1, recycle_after=10)
    a = pool.checkout(spawner, "a")
    b = pool.checkout(spawner, "b")  # "a" is at its cap; "b" is not
    assert a is not b and pool.spawned == 2
    pool.checkin(a, healthy=True)
    assert pool.checkout(spawner, "a") is a  # the idle worker of its key, not a new one
    pool.checkin(a, healthy=True)
    pool.checkin(b, healthy=True)
    pool.close()


def test_a_worn_out_worker_is_retired_and_a_dead_one_killed_then_replaced(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=1, recycle_after=2)
    first = pool.checkout(spawner)
    first.pairs = 2  # recycle_after reached
    pool.checkin(first, healthy=True)
    assert first.ended == ["retired"] and not first.alive and pool.workers() == []

    second = pool.checkout(spawner)
    assert second is not first and pool.spawned == 2
    second.pairs = 1
    pool.checkin(second, healthy=False)  # crashed, timed out or broke the protocol
    assert second.ended == ["killed"] and not second.alive

    third = pool.checkout(spawner)  # its slot was freed: a replacement, not a wait
    assert third not in (first, second) and pool.spawned == 3
    pool.checkin(third, healthy=True)
    pool.close()


def test_a_waiter_gets_the_worker_given_back(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=1, recycle_after=10)
    held = pool.checkout(spawner)
    got: list[SleepWorker] = []
    waiter = threading.Thread(target=lambda: got.append(pool.checkout(spawner)))
    waiter.start()
    pool.checkin(held, healthy=True)
    waiter.join(JOIN)
    assert got == [held] and pool.spawned == 1
    pool.checkin(held, healthy=True)
    pool.close()


def test_a_failed_spawn_frees_its_slot(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=1, recycle_after=10)

    def broken() -> SleepWorker:
        raise InfraError("the worker did not start")

    with pytest.raises(InfraError, match="did not start"):
        pool.checkout(broken)
    worker = pool.checkout(spawner)  # the slot is free again: no wait for a worker that never came
    assert pool.spawned == 1
    pool.checkin(worker, healthy=True)
    pool.close()


def test_close_while_workers_are_checked_out(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=1, recycle_after=10, name="test pool")
    idle = pool.checkout(spawner, "idle")
    pool.checkin(idle, healthy=True)
    busy = pool.checkout(spawner, "busy")

    waiting: list[BaseException] = []

    def wait_for_busy() -> None:  # "busy" is at its cap: this waits until the worker comes back
        try:
            pool.checkout(spawner, "busy")
        except InfraError as exc:
            waiting.append(exc)

    waiter = threading.Thread(target=wait_for_busy)
    waiter.start()
    pool.close()
    waiter.join(JOIN)
    assert not waiter.is_alive()
    assert [str(e) for e in waiting] == ["the test pool is closed"]
    assert pool.closed
    assert idle.ended == ["retired"] and not idle.alive
    assert busy.ended == ["killed"] and not busy.alive
    pool.checkin(busy, healthy=True)  # the caller hands it back after close: not kept, not reused
    assert pool.workers() == []
    with pytest.raises(InfraError, match="the test pool is closed"):
        pool.checkout(spawner, "idle")
    assert pool.spawned == 2


def test_kill_all_kills_idle_and_busy_workers_at_once(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=3, recycle_after=10)
    workers = [pool.checkout(spawner, key) for key in ("a", "a", "b")]
    pool.checkin(workers[0], healthy=True)
    pool.kill_all()
    assert all(w.ended == ["killed"] and not w.alive for w in workers)
    for w in workers[1:]:
        pool.checkin(w, healthy=False)  # kill is safe twice
    with pytest.raises(InfraError, match="the worker pool is closed"):
        pool.checkout(spawner, "a")


def test_a_worker_started_while_the_pool_closes_is_killed(spawner):
    pool: WorkerPool[SleepWorker] = WorkerPool(size=1, recycle_after=10)
    started, go_on = threading.Event(), threading.Event()

    def slow_spawn() -> SleepWorker:
        worker = spawner()
        started.set()
        go_on.wait(JOIN)
        return worker

    errors: list[BaseException] = []
    spawning = threading.Thread(
        target=lambda: errors.extend(run_threads(lambda _: pool.checkout(slow_spawn), 1))
    )
    spawning.start()
    assert started.wait(JOIN)
    pool.kill_all()  # while the spawn is under way
    go_on.set()
    spawning.join(JOIN)
    assert [str(e) for e in errors] == ["the worker pool is closed"]
    (late,) = spawner.made
    assert late.ended == ["killed"] and not late.alive and pool.workers() == []
