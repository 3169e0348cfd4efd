"""The simulator's state and the pipeline every generation request goes through.

For a generation request (chat completion, response, message, generateContent) the
:class:`Engine` checks, in order: the model exists (``SimConfig.models``), the rate limits
(a 429 costs nothing), the fault draw, then waits the drawn latency and answers. Auth is
checked before, for every route, by the server.
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING

from pptarena.models.sim.batches import BatchStore
from pptarena.models.sim.caching import PromptCache
from pptarena.models.sim.completion import Answerer, Completion
from pptarena.models.sim.faults import STATUS_FAULTS, corrupt_json, pick_fault
from pptarena.models.sim.files import FileStore
from pptarena.models.sim.httpio import Incoming, Outgoing
from pptarena.models.sim.latency import parse_latency, request_rng
from pptarena.models.sim.limits import RateLimiter
from pptarena.models.sim.prompt import Prompt
from pptarena.models.sim.replies import Responder
from pptarena.models.sim.stats import SimRequest, SimStats

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.config import SimConfig
    from pptarena.models.sim.wire import Wire


class Engine:
    """Everything the simulator holds: limits, cache, replies, batches, files, stats, records."""

    def __init__(self, config: SimConfig):
        self.stop_event = threading.Event()
        self.stats = SimStats()
        self.requests: list[SimRequest] = []
        self.files = FileStore()
        self._lock = threading.Lock()
        self._sequence = itertools.count(1)
        self.batches = BatchStore(config, self.answer, self.stats)
        self.configure(config)

    def configure(self, config: SimConfig) -> None:
        """Use ``config`` from now on: buckets start full, the cache and rule counters anew
        (batches, files, stats and records stay)."""
        self.config = config
        self.latency = parse_latency(config.latency)
        self.limiter = RateLimiter(config)
        self.cache = PromptCache(config)
        self.responder = Responder(config.rules)
        self.answerer = Answerer(self.responder, self.cache)
        self.batches.config = config

    def answer(self, prompt: Prompt, api_key: str) -> Completion:
        """A completion without limits, faults or latency (batch requests)."""
        return self.answerer.answer(prompt, api_key)

    def record(self, request: SimRequest) -> None:
        """Keep a request record (when ``record_requests`` is on)."""
        if self.config.record_requests:
            with self._lock:
                self.requests.append(request)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when the simulator stops."""
        if seconds > 0:
            self.stop_event.wait(seconds)

    def generate(self, inc: Incoming, wire: Wire, prompt: Prompt) -> Outgoing:
        """Answer a generation request (see the module docstring)."""
        c = self.config
        key = inc.api_key or ""
        if c.models is not None and prompt.model not in c.models:
            return wire.model_not_found(prompt.model)
        cost = prompt.total_tokens + (prompt.max_tokens or c.default_max_tokens)
        decision = self.limiter.check(key, prompt.model, cost)
        headers = wire.limit_headers(decision)
        if not decision.ok:
            out = wire.rate_limited(decision, prompt.model)
            out.headers = {**headers, **out.headers}
            return out
        sequence = next(self._sequence)
        fault = pick_fault(c.seed, sequence, c.faults, c.mix, bool(prompt.tools))
        delay = self.latency.sample(request_rng(c.seed, "latency", sequence))
        if fault in ("reset", "timeout"):
            self.sleep(delay)
            return Outgoing(0, action=fault, fault=fault, model=prompt.model)
        if fault in STATUS_FAULTS:
            self.sleep(delay)
            out = wire.fault_error(fault)
            out.headers = {**headers, **out.headers}
            out.fault, out.model = fault, prompt.model
            return out
        completion = self.answerer.answer(prompt, key, bad_tool_args=fault == "bad_tool_args")
        self.sleep(delay + c.latency_per_token * completion.output_tokens)
        body = wire.render(prompt, completion)
        self.stats.tokens(
            completion.prompt_tokens,
            completion.output_tokens,
            completion.cache.read,
            completion.cache.written,
        )
        out = Outgoing.json(200, body, headers)
        out.fault, out.model = fault, prompt.model
        if fault == "malformed":
            out.body = corrupt_json(out.body)
        elif fault == "truncated":
            out.action = "truncated"
        return out


__all__ = ["Engine"]
