"""The run's rate limiters on a Ray cluster: one actor holds them, every node draws from it.

The driver starts :class:`LimiterActor` (named per run) before the first pair; each node's worker
process finds it by name (:func:`use_actor`) and hands :class:`ActorLimiter` proxies to
:func:`pptarena.models.limiter_service.set_remote`, so every model call on every node takes its
lease from the same limiter. Leases carry a time to live: a node that dies mid-call gives its slot
back when the lease expires.
"""

from __future__ import annotations

import time
from typing import Any

from pptarena.models.ratelimit import LimitSettings, Outcome, RateLimiter

LEASE_TTL = 900.0
"""Seconds after which a lease whose holder never answered is given back."""


class LimiterActor:
    """The limiters of every account of a run (the body of a Ray actor)."""

    def __init__(self) -> None:
        self._limiters: dict[str, RateLimiter] = {}

    def _get(self, account: str, settings: dict[str, Any]) -> RateLimiter:
        limiter = self._limiters.get(account)
        if limiter is None:
            limiter = self._limiters[account] = RateLimiter(LimitSettings.from_dict(settings))
        return limiter

    def try_acquire(
        self, account: str, settings: dict[str, Any], tokens: int, ttl: float
    ) -> tuple[int | None, float]:
        """A lease now, or ``(None, seconds to wait)``."""
        return self._get(account, settings).try_acquire(tokens, ttl=ttl)

    def release(self, account: str, lease: int, outcome: dict[str, Any]) -> None:
        """Give a lease back with its call's outcome."""
        limiter = self._limiters.get(account)
        if limiter is not None:
            limiter.release(lease, Outcome.from_dict(outcome))

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every limiter's state by account."""
        return {account: limiter.snapshot() for account, limiter in self._limiters.items()}


def start_actor(ray: Any, name: str) -> Any:
    """Start the run's limiter actor on the cluster (it lives as long as the driver)."""
    return ray.remote(LimiterActor).options(name=name, max_concurrency=64, num_cpus=0).remote()


class ActorLimiter:
    """A node's proxy to the actor's limiter of one account."""

    def __init__(self, actor: Any, account: str, settings: LimitSettings, ttl: float = LEASE_TTL):
        self.actor, self.account, self.settings, self.ttl = actor, account, settings.as_dict(), ttl

    def acquire(self, tokens: int = 0, *, timeout: float | None = None) -> tuple[Any, float]:
        """Poll the actor until it grants a lease; returns ``(lease, seconds waited)``."""
        import ray

        started = time.monotonic()
        while True:
            asked = self.actor.try_acquire.remote(self.account, self.settings, tokens, self.ttl)
            lease, wait = ray.get(asked)
            if lease is not None:
                return lease, time.monotonic() - started
            if timeout is not None and time.monotonic() - started + wait > timeout:
                raise TimeoutError(f"no rate-limit slot within {timeout:g}s")
            time.sleep(min(max(wait, 0.005), 1.0))

    def release(self, lease: Any, outcome: Outcome | None = None) -> None:
        """Hand the lease back (fire and forget)."""
        if lease is not None:
            self.actor.release.remote(self.account, lease, (outcome or Outcome()).as_dict())


def use_actor(name: str) -> None:
    """Make this Ray worker process's model calls take their leases from the run's actor."""
    import ray

    from pptarena.models.limiter_service import set_remote

    actor = ray.get_actor(name)
    set_remote(lambda account, settings: ActorLimiter(actor, account, settings))
