"""Model prices and costs: per call, per pair (agent and each judge), per agent and per run.

Prices are US dollars per million tokens (``input``, ``output``, ``cached_input``). They come from
the backend's ``pricing`` option (``[backends.openai.pricing] "gpt-5.2" = {input = ..., ...}``),
else from the bundled table ``data/pricing.toml``, else from the backend's ``default_price``
(the offline ``scripted`` backend costs nothing), else, for a backend whose server is on this
machine or the local network (:func:`is_local_url` of its ``base_url`` / ``azure_endpoint``), the
:data:`LOCAL_FREE` price: 0, shown as "local (free)". A call whose model has no price has an
*unknown* cost (``None``), never 0; totals that include such a call are unknown too, and keep
the priced part as ``known_usd``.

Batch calls (the providers' batch APIs) are priced at the model's batch rates
(:meth:`ModelPrice.batch_price`: explicit ``batch_input`` / ``batch_output``, else the ``batch``
multiplier; the bundled table's default multiplier is 0.5 for OpenAI and Anthropic, every rate
cached reads included; Google's entries give ``batch_input`` / ``batch_output`` instead, since
Gemini's batch mode halves input and output but not cached reads).

Cost records (:func:`clients_cost`, :func:`merge_costs`, :func:`pair_cost`, :func:`cost_of_rows`) are
``{"usd", "known_usd", "unpriced_models"}``, plus ``local_models`` (models priced as local and
free) and ``cache_saved_usd`` (what providers' prompt caching saved, :func:`cache_savings_usd`)
when those are not empty / zero, so records without them (older lines) read the same.

Cost of one call = (input - cached - written) x input + cached x cached_input + written (five-minute
lifetime) x cache_write + written (one-hour lifetime) x cache_write_1h + output x output, divided by
10^6, where ``cached`` and ``written`` are the input tokens the provider read from and wrote to its
prompt cache; a response served from pptarena's own response cache costs 0.

Why it is long: the price lookup (option, bundled table, default, local-free rule), the per-call
formula with its prompt-cache terms and the cost records that sum calls into pairs, agents and runs
all follow the one rule that an unpriced call makes a total unknown, never 0; the formatters print
those same records.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
    batch: float | None = Field(
        None,
        gt=0,
        le=1,
        description="batch-API rates as a fraction of these (0.5: half price); default: no discount",
    )
    batch_input: float | None = Field(
        None,
        ge=0,
        le=10_000,
        description="USD per million input tokens of a batch call (default: input x batch)",
    )
    batch_output: float | None = Field(
        None,
        ge=0,
        le=10_000,
        description="USD per million output tokens of a batch call (default: output x batch)",
    )

    def batch_price(self) -> ModelPrice:
        """The rates of a batch call: ``batch_input`` / ``batch_output`` when given, every other rate
        (and those, when not given) times ``batch``; the standard rates (an upper bound) without
        either."""
        factor = 1.0 if self.batch is None else self.batch

        def scaled(rate: float | None) -> float | None:
            return None if rate is None else rate * factor

        return ModelPrice(
            input=self.batch_input if self.batch_input is not None else self.input * factor,
            output=self.batch_output if self.batch_output is not None else self.output * factor,
            cached_input=scaled(self.cached_input),
            cache_write=scaled(self.cache_write),
            cache_write_1h=scaled(self.cache_write_1h),
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


LOCAL_FREE = ModelPrice(input=0.0, output=0.0)
"""The price of a model without one on a backend whose server is local (:func:`is_local_url`)."""


def cache_savings_usd(usage: Any, price: ModelPrice | None) -> float:
    """What the provider's prompt caching saved on ``usage`` (a :class:`~pptarena.models.Usage` or
    its dict) at ``price``: the cached reads' discount minus what the cache writes cost above the
    input rate, in USD (negative when the writes cost more than the reads saved; 0 without a price).
    """
    if price is None:
        return 0.0

    def count(name: str) -> int:
        value = usage.get(name, 0) if isinstance(usage, dict) else getattr(usage, name, 0)
        return int(value or 0)

    tokens_in, tokens_out = count("input_tokens"), count("output_tokens")
    actual = price.cost(
        tokens_in,
        tokens_out,
        count("cached_input_tokens"),
        count("cache_write_input_tokens"),
        count("cache_write_1h_input_tokens"),
    )
    return price.cost(tokens_in, tokens_out) - actual


_LOCAL_NAMES = ("localhost", "host.docker.internal")
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT space: Tailscale and such VPNs
_LOCAL_SUFFIXES = (".localhost", ".local")


@lru_cache(maxsize=256)
def is_local_url(url: str | None) -> bool:
    """True when ``url``'s host is this machine or the local network: ``localhost`` (and
    ``*.localhost``), ``host.docker.internal``, mDNS ``*.local`` names, and loopback, private
    (10/8, 172.16/12, 192.168/16, fc00::/7 and the other ranges :mod:`ipaddress` calls private),
    shared (100.64/10: Tailscale and such VPNs) or link-local addresses. Names are never resolved."""
    if not url:
        return False
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    except ValueError:
        return False
    host = host.rstrip(".").lower()
    if host in _LOCAL_NAMES or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address in _SHARED


def backend_url(backend: Any) -> str | None:
    """The server a backend object talks to, from its options (``base_url``, ``azure_endpoint`` or
    ``endpoint``); None when it uses its provider's default."""
    options = getattr(backend, "options", None)
    for name in ("base_url", "azure_endpoint", "endpoint"):
        value = getattr(options, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def is_local_free(price: ModelPrice | None) -> bool:
    """True when ``price`` is the local-server rule's (:data:`LOCAL_FREE`), not a price given."""
    return price is LOCAL_FREE


@lru_cache(maxsize=1)
def _bundled() -> tuple[dict[str, ModelPrice], str]:
    data = tomllib.loads(DATA_FILE.read_text(encoding="utf-8"))
    batch = data.get("batch")
    prices = {}
    for name, p in (data.get("models") or {}).items():
        entry = dict(p)
        if batch is not None and not {"batch", "batch_input", "batch_output"} & set(entry):
            entry["batch"] = batch  # the table's default batch discount
        prices[name] = ModelPrice.model_validate(entry)
    return prices, str(data.get("as_of", "?"))


def bundled_prices() -> dict[str, ModelPrice]:
    """The bundled price table (model name → price; its default ``batch`` filled in)."""
    return _bundled()[0]


def bundled_as_of() -> str:
    """When the bundled table was last checked."""
    return _bundled()[1]


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
    its ``default_price``, then :data:`LOCAL_FREE` when its server is local (:func:`is_local_url`
    of :func:`backend_url`); None when unpriced.
    """
    overrides = getattr(getattr(backend, "options", None), "pricing", None) or {}
    if model in overrides:
        return overrides[model]
    found = _lookup(bundled_prices(), model)
    if found is not None:
        return found
    default = getattr(backend, "default_price", None)
    if isinstance(default, ModelPrice):
        return default
    return LOCAL_FREE if is_local_url(backend_url(backend)) else None


def call_cost(
    backend: Any, model: str, usage: Any, *, cached: bool = False, batch: bool = False
) -> float | None:
    """One call's cost in USD (0 for a response-cache hit or a call without tokens; None when unpriced);
    ``batch``: sent through the provider's batch API (:meth:`ModelPrice.batch_price`)."""
    tokens_in, tokens_out = int(getattr(usage, "input_tokens", 0)), int(getattr(usage, "output_tokens", 0))
    if cached or (tokens_in == 0 and tokens_out == 0):
        return 0.0
    price = price_for(backend, model)
    if price is None:
        return None
    if batch:
        price = price.batch_price()
    return price.cost(
        tokens_in,
        tokens_out,
        int(getattr(usage, "cached_input_tokens", 0)),
        int(getattr(usage, "cache_write_input_tokens", 0)),
        int(getattr(usage, "cache_write_1h_input_tokens", 0)),
    )


def _client_extras(c: Any) -> tuple[float, bool]:
    """``(what prompt caching saved, priced as local and free)`` of one model client.

    A client that keeps its own ``cache_saved_usd`` (per call) gives it; otherwise it is estimated
    from the client's summed usage, counting only the share of its calls not served from
    pptarena's response cache (those cost nothing and saved nothing this time).
    """
    usage = getattr(c, "usage", None)
    backend, model = getattr(c, "backend", None), getattr(c, "model", None)
    if usage is None or backend is None or not isinstance(model, str):
        return 0.0, False
    price = price_for(backend, model)
    spent = int(getattr(usage, "input_tokens", 0) or 0) + int(getattr(usage, "output_tokens", 0) or 0)
    local = is_local_free(price) and spent > 0
    own = getattr(c, "cache_saved_usd", None)
    if isinstance(own, int | float) and not isinstance(own, bool):
        return float(own), local
    calls = int(getattr(usage, "calls", 0) or 0)
    fresh = calls - int(getattr(usage, "cached_calls", 0) or 0)
    if calls <= 0 or fresh <= 0:
        return 0.0, local
    return cache_savings_usd(usage, price) * fresh / calls, local


def call_cache_savings(
    backend: Any, model: str, usage: Any, *, cached: bool = False, batch: bool = False
) -> float:
    """What the provider's prompt caching saved on one call (:func:`cache_savings_usd` at the price
    :func:`call_cost` uses); 0 for a response-cache hit or an unpriced model. For whoever keeps
    per-call totals (a model client's ``cache_saved_usd``, which :func:`clients_cost` then uses)."""
    if cached:
        return 0.0
    price = price_for(backend, model)
    if price is not None and batch:
        price = price.batch_price()
    return cache_savings_usd(usage, price)


def cost_record(
    known_usd: float,
    unpriced_models: Iterable[str] = (),
    *,
    unknown: bool = False,
    local_models: Iterable[str] = (),
    cache_saved_usd: float = 0.0,
) -> dict[str, Any]:
    """A cost record: ``{"usd", "known_usd", "unpriced_models"}`` (``usd`` None when a model was
    unpriced or ``unknown``), plus ``local_models`` and ``cache_saved_usd`` when not empty / zero."""
    unpriced = sorted(set(unpriced_models))
    record: dict[str, Any] = {
        "usd": None if unpriced or unknown else round(known_usd, 6),
        "known_usd": round(known_usd, 6),
        "unpriced_models": unpriced,
    }
    local = sorted(set(local_models))
    if local:
        record["local_models"] = local
    if round(cache_saved_usd, 6):
        record["cache_saved_usd"] = round(cache_saved_usd, 6)
    return record


def clients_cost(clients: Iterable[Any]) -> dict[str, Any]:
    """The summed cost of model clients (their ``cost_usd``, ``unpriced_calls``, ``ref``; ``usage``,
    ``backend`` and ``model`` for ``local_models`` and ``cache_saved_usd``)."""
    known, unpriced, local, saved = 0.0, set[str](), set[str](), 0.0
    for c in clients:
        known += float(getattr(c, "cost_usd", 0.0) or 0.0)
        if getattr(c, "unpriced_calls", 0):
            unpriced.add(str(getattr(c, "ref", "?")))
        c_saved, c_local = _client_extras(c)
        saved += c_saved
        if c_local:
            local.add(str(getattr(c, "ref", "?")))
    return cost_record(known, unpriced, local_models=local, cache_saved_usd=saved)


def merge_costs(parts: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Sum cost records ({usd, known_usd, unpriced_models}, and ``local_models`` / ``cache_saved_usd``
    when any part has them); ``usd`` is None when any part is unknown."""
    known, unpriced, unknown, local, saved = 0.0, set[str](), False, set[str](), 0.0
    for p in parts:
        if not p:
            continue
        known += float(p.get("known_usd") or 0.0)
        unpriced.update(p.get("unpriced_models") or [])
        unknown = unknown or p.get("usd") is None
        local.update(p.get("local_models") or [])
        saved += float(p.get("cache_saved_usd") or 0.0)
    return cost_record(known, unpriced, unknown=unknown, local_models=local, cache_saved_usd=saved)


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
    """Totals over result lines (:class:`pptarena.run.folder.records.ResultRow`: their ``cost`` and
    ``usage``):
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
    """``$1.2345``, ``local (free)`` (nothing spent, local models used), ``≥ $0.50 (unknown: model)``
    or ``unknown`` for display."""
    if not cost:
        return "$0"
    if cost.get("usd") is not None:
        if not cost["usd"] and cost.get("local_models"):
            return LOCAL_FREE_TEXT
        return f"${cost['usd']:.4f}" if cost["usd"] < 1 else f"${cost['usd']:.2f}"
    models = ", ".join(m.strip("()") for m in cost.get("unpriced_models") or []) or "?"  # no "((...))"
    known = float(cost.get("known_usd") or 0.0)
    return f"≥ ${known:.4f} (unknown: {models})" if known else f"unknown ({models})"


LOCAL_FREE_TEXT = "local (free)"
"""How a cost is shown when nothing was spent and local models (:data:`LOCAL_FREE`) were called."""


def cache_saved(cost: dict[str, Any] | None) -> float:
    """The ``cache_saved_usd`` of a cost record (0 when it has none: older records, no caching)."""
    value = (cost or {}).get("cache_saved_usd")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def fmt_cache_saved(cost: dict[str, Any] | None) -> str | None:
    """ "prompt caching saved $0.1234" (or "... cost $x more than it saved"); None when it is 0."""
    saved = cache_saved(cost)
    if not round(saved, 6):
        return None
    amount = abs(saved)
    text = f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"
    return f"prompt caching saved {text}" if saved > 0 else f"prompt caching cost {text} more than it saved"
