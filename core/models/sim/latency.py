"""Response latency: a seeded distribution (``fixed:S``, ``uniform:A,B``, ``lognormal:MEDIAN,SIGMA``).

Each request draws from its own random stream (the seed and the request's sequence number), so
a run of sequential requests sees the same delays every time, whatever else happens.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from pptarena.models.sim.errors import SimConfigError


@dataclass(frozen=True)
class Latency:
    """A latency distribution in seconds; :meth:`sample` draws one value (never negative)."""

    kind: str  # "fixed" | "uniform" | "lognormal"
    a: float
    b: float = 0.0

    def sample(self, rng: random.Random) -> float:
        """One delay drawn with ``rng``."""
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        return self.a * math.exp(self.b * rng.gauss(0.0, 1.0))


def parse_latency(spec: str | float | int) -> Latency:
    """A :class:`Latency` from ``"fixed:0.2"``, ``"uniform:0.1,0.5"``, ``"lognormal:0.4,0.3"`` or a number."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        spec = f"fixed:{spec}"
    if not isinstance(spec, str):
        raise SimConfigError(f"latency must be a string like 'fixed:0.2', got {spec!r}")
    kind, _, args = spec.strip().partition(":")
    kind = kind.strip().lower()
    if not args and kind:
        kind, args = "fixed", kind
    try:
        values = [float(x) for x in args.split(",")] if args else []
    except ValueError:
        raise SimConfigError(f"latency {spec!r}: the parameters are not numbers") from None
    if any(not math.isfinite(v) for v in values):
        raise SimConfigError(f"latency {spec!r}: the parameters must be finite")
    if kind == "fixed" and len(values) == 1 and values[0] >= 0:
        return Latency("fixed", values[0])
    if kind == "uniform" and len(values) == 2 and 0 <= values[0] <= values[1]:
        return Latency("uniform", values[0], values[1])
    if kind == "lognormal" and len(values) == 2 and values[0] >= 0 and values[1] >= 0:
        return Latency("lognormal", values[0], values[1])
    raise SimConfigError(
        f"latency {spec!r} is not one of fixed:S, uniform:A,B (0 <= A <= B) or "
        "lognormal:MEDIAN,SIGMA (both >= 0)"
    )


def request_rng(seed: int, purpose: str, sequence: int) -> random.Random:
    """The random stream of one request for one purpose (latency, faults, ...): repeatable."""
    return random.Random(f"{seed}:{purpose}:{sequence}")


__all__ = ["Latency", "parse_latency", "request_rng"]
