"""Model prices and costs: per call, per pair (agent and each judge), per agent and per run.

Prices are US dollars per million tokens (``input``, ``output``, ``cached_input``). They come from
the backend's ``pricing`` option (``[backends.openai.pricing] "gpt-5.2" = {input = ..., ...}``),
else from the bundled table ``data/pricing.toml``, else from the backend's ``default_price``
(the offline ``scripted`` backend costs nothing). A call whose model has no price has an
*unknown* cost (``None``), never 0; totals that include such a call are unknown too, and keep
the priced part as ``known_usd``.

Cost of one call = (input - cached - written) x input + cached x cached_input + written (five-minute
lifetime) x cache_write + written (one-hour lifetime) x cache_write_1h + output x output, divided by
10^6, where ``cached`` and ``written`` are the input tokens the provider read from and wrote to its
prompt cache; a response served from pptarena's own response cache costs 0.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DATA_FILE = Path(__file__).with_name("data") / "pricing.toml"
_DATE_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")


class ModelPrice(BaseModel):
    """US dollars per million tokens; ``cached_input`` defaults to the input rate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, le=10_000, description="USD per million input tokens")
    output: float = Field(ge=0, le=10_000, description="USD per million output tokens")
    cached_input: float | None = Field(
        None, ge=0, le=10_000, description="USD per million cached input tokens"
    )
    cache_write: float | None = Field(
        None,
        ge=0,
        le=10_000,
        description="USD per million input tokens written to the prompt cache (default: input)",
    )
    cache_write_1h: float | None = Field(
        None, ge=0, le=10_000, description="the same for one-hour cache entries (default: cache_write)"
    )

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
        cache_write_1h_tokens: int = 0,
    ) -> float:
        """The dollar cost of one call's tokens (cache reads and writes are parts of ``input_tokens``)."""
        cached = max(0, min(cached_input_tokens, input_tokens))
        written = max(0, min(cache_write_tokens, input_tokens - cached))
        written_1h = max(0, min(cache_write_1h_tokens, written))
        read_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        write_1h_rate = write_rate if self.cache_write_1h is None else self.cache_write_1h
        return (
            (input_tokens - cached - written) * self.input
            + cached * read_rate
            + (written - written_1h) * write_rate
            + written_1h * write_1h_rate
            + output_tokens * self.output
        ) / 1e6


@lru_cache(maxsize=1)
def bundled_prices() -> dict[str, ModelPrice]:
    """The bundled price table (model name → price)."""
    data = tomllib.loads(DATA_FILE.read_text(encoding="utf-8"))
    return {name: ModelPrice.model_validate(p) for name, p in (data.get("models") or {}).items()}


def bundled_as_of() -> str:
    """When the bundled table was last checked."""
    return str(tomllib.loads(DATA_FILE.read_text(encoding="utf-8")).get("as_of", "?"))


def _lookup(table: dict[str, ModelPrice], model: str) -> ModelPrice | None:
    for name in (model, model.rpartition("/")[2]):
        if name in table:
            return table[name]
        stripped = _DATE_SUFFIX.sub("", name)
        if stripped in table:
            return table[stripped]
    return None


def price_for(backend: Any, model: str) -> ModelPrice | None:
    """The price of ``model`` on ``backend``: its ``pricing`` option, the bundled table,
    its ``default_price``.
    """
    overrides = getattr(getattr(backend, "options", None), "pricing", None) or {}
    if model in overrides:
        return overrides[model]
    found = _lookup(bundled_prices(), model)
    if found is not None:
        return found
    default = getattr(backend, "default_price", None)
    return default if isinstance(default, ModelPrice) else None


def call_cost(backend: Any, model: str, usage: Any, *, cached: bool = False) -> float | None:
    """One call's cost in USD (0 for a response-cache hit or a call without tokens; None when unpriced)."""
    tokens_in, tokens_out = int(getattr(usage, "input_tokens", 0)), int(getattr(usage, "output_tokens", 0))
    if cached or (tokens_in == 0 and tokens_out == 0):
        return 0.0
    price = price_for(backend, model)
    if price is None:
        return None
    return price.cost(
        tokens_in,
        tokens_out,
        int(getattr(usage, "cached_input_tokens", 0)),
        int(getattr(usage, "cache_write_input_tokens", 0)),
        int(getattr(usage, "cache_write_1h_input_tokens", 0)),
    )


def clients_cost(clients: Iterable[Any]) -> dict[str, Any]:
    """The summed cost of model clients (their ``cost_usd``, ``unpriced_calls``, ``ref``)."""
    known, unpriced = 0.0, set[str]()
    for c in clients:
        known += float(getattr(c, "cost_usd", 0.0) or 0.0)
        if getattr(c, "unpriced_calls", 0):
            unpriced.add(str(getattr(c, "ref", "?")))
    return {
        "usd": None if unpriced else round(known, 6),
        "known_usd": round(known, 6),
        "unpriced_models": sorted(unpriced),
    }


def merge_costs(parts: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Sum cost records ({usd, known_usd, unpriced_models}); ``usd`` is None when any part is unknown."""
    known, unpriced, unknown = 0.0, set[str](), False
    for p in parts:
        if not p:
            continue
        known += float(p.get("known_usd") or 0.0)
        unpriced.update(p.get("unpriced_models") or [])
        unknown = unknown or p.get("usd") is None
    return {
        "usd": None if unknown else round(known, 6),
        "known_usd": round(known, 6),
        "unpriced_models": sorted(unpriced),
    }


def pair_cost(agent: dict[str, Any] | None, judges: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """The ``cost`` field of a result line: agent, each judge and their total."""
    total = merge_costs([agent, *judges.values()])
    return {**total, "agent": agent, "judges": dict(judges)}


def _row_cost(row: Any) -> dict[str, Any] | None:
    """A result line's cost record; a line from before cost accounting that spent tokens is unknown."""
    cost = row.cost
    if isinstance(cost, dict):
        return cost
    usage = row.usage or {}
    spent = any(isinstance(v, int) and v > 0 for k, v in usage.items() if k.endswith("tokens"))
    return {"usd": None, "known_usd": 0.0, "unpriced_models": ["(not recorded)"]} if spent else None


def cost_of_rows(rows: Iterable[Any]) -> dict[str, Any]:
    """Totals over result lines (:class:`pptarena.run.records.ResultRow`: their ``cost`` and ``usage``):
    ``usd`` (None when unknown), ``known_usd``, ``agent`` and per-``judges`` parts.

    Lines from before cost accounting with token usage count as unknown.
    """
    rows = list(rows)
    total = merge_costs(_row_cost(r) for r in rows)
    agent = merge_costs((r.cost.get("agent") if isinstance(r.cost, dict) else _row_cost(r)) for r in rows)
    judges: dict[str, list[dict[str, Any] | None]] = {}
    for r in rows:
        for label, c in ((r.cost or {}).get("judges") or {}).items():
            judges.setdefault(label, []).append(c)
    return {**total, "agent": agent, "judges": {k: merge_costs(v) for k, v in sorted(judges.items())}}


def spent_usd(rows: Iterable[Any]) -> float:
    """Dollars known to be spent by result lines (the budget counts priced calls only)."""
    return sum(float((_row_cost(r) or {}).get("known_usd") or 0.0) for r in rows)


def fmt_usd(cost: dict[str, Any] | None) -> str:
    """``$1.2345``, ``≥ $0.50 (unknown: model)`` or ``unknown`` for display."""
    if not cost:
        return "$0"
    if cost.get("usd") is not None:
        return f"${cost['usd']:.4f}" if cost["usd"] < 1 else f"${cost['usd']:.2f}"
    models = ", ".join(m.strip("()") for m in cost.get("unpriced_models") or []) or "?"  # no "((...))"
    known = float(cost.get("known_usd") or 0.0)
    return f"≥ ${known:.4f} (unknown: {models})" if known else f"unknown ({models})"
