"""The lifecycle of warm worker processes handed out one job at a time, shared by the agent pools.

Both the jailed pool (:class:`pptarena.run.jail.jail_pool.JailPool`) and the ``local`` executor's warm
pool (``pptarena.plugins.executors.local.pool``) keep long-lived workers and hand each to one pair at
a time; what they share lives here, in :class:`WorkerPool`:

* **check-out** (:meth:`WorkerPool.checkout`): an idle worker of the key when there is one, else a new
  one from the caller's ``spawn`` while the key has fewer than ``size`` workers (idle, busy or
  starting), else wait under the pool's :class:`threading.Condition` until one comes back;
* **return** (:meth:`WorkerPool.checkin`): a healthy worker that has run fewer than ``recycle_after``
  jobs goes back to the idle list; one that is worn out is retired (asked to exit), and a dead or
  misbehaving one (``healthy=False``) is killed. Either frees its slot, so the next check-out spawns
  the replacement;
* **the end**: :meth:`WorkerPool.close` retires idle workers and kills busy ones,
  :meth:`WorkerPool.kill_all` kills every worker at once. After either, a check-out (and a spawn that
  was under way) raises :class:`~pptarena.errors.InfraError`.

A worker is anything with a ``pairs`` count (jobs it has run; the pool reads it, the caller counts
it up) and ``kill()`` / ``retire()`` methods (:class:`PooledWorker`); ``kill`` must be safe to call
twice. The pools keep what differs to themselves: how a worker is started, its protocol, what a job is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from pptarena.errors import InfraError


class PooledWorker(Protocol):
    """What :class:`WorkerPool` needs of a worker."""

    pairs: int
    """Jobs the worker has been given (compared with ``recycle_after`` when it comes back)."""

    def kill(self) -> None:
        """End the worker and everything it started at once (safe to call twice)."""

    def retire(self) -> None:
        """Ask the worker to exit, then make sure it is gone."""


W = TypeVar("W", bound=PooledWorker)


class WorkerPool(Generic[W]):
    """Up to ``size`` workers per key, each checked out by one caller at a time (see the module doc).

    ``name`` says what the pool is in the error raised once it is closed (``"the <name> is closed"``).
    :attr:`spawned` counts the workers started so far.
    """

    def __init__(self, size: int, recycle_after: int, name: str = "worker pool"):
        self.size = max(1, size)
        self.recycle_after = max(1, recycle_after)
        self.name = name
        self.spawned = 0
        self._idle: dict[Hashable, list[W]] = {}
        self._busy: dict[W, Hashable] = {}
        self._count: dict[Hashable, int] = {}  # per key: idle + busy + starting
        self._cond = threading.Condition()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` or :meth:`kill_all` was called."""
        return self._closed

    def _refuse(self) -> InfraError:
        return InfraError(f"the {self.name} is closed")

    def checkout(self, spawn: Callable[[], W], key: Hashable = None) -> W:
        """A worker of ``key`` for the caller alone: an idle one, or a new one from ``spawn()`` (called
        outside the lock) while ``key`` has fewer than ``size`` workers; otherwise waits for one to come
        back. Raises :class:`~pptarena.errors.InfraError` once the pool is closed, and whatever
        ``spawn`` raises (its slot is freed)."""
        with self._cond:
            while True:
                if self._closed:
                    raise self._refuse()
                idle = self._idle.get(key)
                if idle:
                    worker = idle.pop()
                    self._busy[worker] = key
                    return worker
                if self._count.get(key, 0) < self.size:
                    self._count[key] = self._count.get(key, 0) + 1
                    break
                self._cond.wait()
        try:
            worker = spawn()
        except BaseException:
            self._free(key)
            raise
        with self._cond:
            self.spawned += 1
            if not self._closed:
                self._busy[worker] = key
                return worker
        self._free(key)
        worker.kill()
        raise self._refuse()

    def _free(self, key: Hashable) -> None:
        with self._cond:
            self._count[key] -= 1
            self._cond.notify_all()

    def checkin(self, worker: W, healthy: bool) -> None:
        """Give back a checked-out worker: kept warm when ``healthy`` and not worn out (``pairs`` below
        ``recycle_after``) and the pool is open; else its slot is freed and it is retired (healthy)
        or killed (not), outside the lock."""
        keep = healthy and worker.pairs < self.recycle_after
        with self._cond:
            key = self._busy.pop(worker, None)
            if keep and not self._closed:
                self._idle.setdefault(key, []).append(worker)
            else:
                self._count[key] = self._count.get(key, 1) - 1
            self._cond.notify_all()
        if not keep:
            (worker.retire if healthy else worker.kill)()

    def workers(self) -> list[W]:
        """The live workers, idle and busy."""
        with self._cond:
            return [w for ws in self._idle.values() for w in ws] + list(self._busy)

    def _shut(self) -> tuple[list[W], list[W]]:
        """Close the pool and wake its waiters; ``(idle, busy)`` workers at that moment."""
        with self._cond:
            self._closed = True
            idle = [w for ws in self._idle.values() for w in ws]
            busy = list(self._busy)
            self._idle.clear()
            self._cond.notify_all()
        return idle, busy

    def kill_all(self) -> None:
        """Stop at once: close the pool and kill every worker (busy ones included)."""
        idle, busy = self._shut()
        for w in [*idle, *busy]:
            w.kill()

    def close(self) -> None:
        """Close the pool: retire idle workers and kill busy ones."""
        idle, busy = self._shut()
        for w in idle:
            w.retire()
        for w in busy:
            w.kill()


class PoolOwner(Generic[W]):
    """Base of a pool that keeps its workers in a :class:`WorkerPool` (``self._workers``): the
    figures and the end, forwarded, so each pool writes only how its workers start and talk."""

    _workers: WorkerPool[W]

    @property
    def size(self) -> int:
        """Most workers alive at once (per key)."""
        return self._workers.size

    @property
    def recycle_after(self) -> int:
        """Jobs a worker runs before it is replaced."""
        return self._workers.recycle_after

    @property
    def spawned(self) -> int:
        """Workers started so far."""
        return self._workers.spawned

    def kill_all(self) -> None:
        """Stop at once: kill every worker (busy ones included)."""
        self._workers.kill_all()

    def close(self) -> None:
        """Retire idle workers and kill busy ones."""
        self._workers.close()
