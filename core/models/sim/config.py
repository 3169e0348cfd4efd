"""The simulator's settings: :class:`SimConfig` and reply :class:`Rule` objects (and their TOML form).

Every setting has a default that simulates a fast, unlimited, fault-free provider, so
``ProviderSim()`` answers at once; switch on what a test needs (``rpm``, ``faults``, ...).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.models.sim.errors import SimConfigError
from pptarena.models.sim.latency import parse_latency

FAULT_KINDS = ("500", "502", "503", "529", "reset", "timeout", "truncated", "malformed", "bad_tool_args")
"""Every fault the simulator can inject (see :mod:`pptarena.models.sim.faults`)."""

MAX_RULES_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Rule:
    """A canned answer: ``match`` (a regex searched in the last user text) → ``reply``.

    ``reply`` may be a list: successive matching requests get successive items (the last one
    repeats). ``model``, when given, is a regex the request's model name must contain a match
    of. ``tool_call`` (``{"name": ..., "arguments": {...}}``; ``name`` defaults to the first
    tool offered) makes the answer a tool call when the request offers tools.
    """

    match: str
    reply: str | Sequence[str] = ""
    model: str | None = None
    tool_call: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("match", "model"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise SimConfigError(f"rule {name} must be a string, got {type(value).__name__}")
            try:
                re.compile(value)
            except re.error as exc:
                raise SimConfigError(f"rule {name} {value!r} is not a valid regex: {exc}") from None
        if isinstance(self.reply, str):
            pass
        elif isinstance(self.reply, Sequence) and self.reply and all(isinstance(r, str) for r in self.reply):
            object.__setattr__(self, "reply", tuple(self.reply))
        else:
            raise SimConfigError("rule reply must be a string or a non-empty list of strings")
        if self.tool_call is not None:
            if not isinstance(self.tool_call, Mapping):
                raise SimConfigError("rule tool_call must be a table {name = ..., arguments = {...}}")
            unknown = set(self.tool_call) - {"name", "arguments"}
            if unknown:
                raise SimConfigError(f"rule tool_call has unknown keys {sorted(unknown)}")
            if not isinstance(self.tool_call.get("arguments", {}), Mapping):
                raise SimConfigError("rule tool_call arguments must be a table")

    def replies(self) -> tuple[str, ...]:
        """The reply items, in order (one item for a plain string)."""
        return (self.reply,) if isinstance(self.reply, str) else tuple(self.reply)


def parse_fault_mix(mix: Mapping[str, float] | str | None) -> dict[str, float]:
    """Fault kind → weight from ``{"500": 1, ...}`` or ``"500=1,reset=2"``; None: every kind, weight 1."""
    if mix is None:
        return dict.fromkeys(FAULT_KINDS, 1.0)
    if isinstance(mix, str):
        pairs: dict[str, float] = {}
        for item in (x.strip() for x in mix.split(",")):
            if not item:
                continue
            name, eq, weight = item.partition("=")
            try:
                pairs[name.strip()] = float(weight) if eq else 1.0
            except ValueError:
                raise SimConfigError(f"fault mix item {item!r}: the weight is not a number") from None
        mix = pairs
    out: dict[str, float] = {}
    for name, weight in mix.items():
        name = str(name)
        if name not in FAULT_KINDS:
            raise SimConfigError(f"unknown fault kind {name!r} (known: {', '.join(FAULT_KINDS)})")
        weight = float(weight)
        if not math.isfinite(weight) or weight < 0:
            raise SimConfigError(f"fault kind {name!r}: weight {weight} must be a number >= 0")
        out[name] = weight
    if not any(out.values()):
        raise SimConfigError("the fault mix gives every kind weight 0")
    return out


@dataclass(frozen=True)
class SimConfig:
    """How the simulated provider behaves. Times are seconds; ``None`` limits mean unlimited.

    Limits (per API key, and per model too with ``limit_by_model``): ``rpm`` requests and
    ``tpm`` tokens per minute, refilled continuously; ``burst`` is the request bucket's
    capacity (default: ``rpm``, a full minute's worth) and ``token_burst`` the token bucket's
    (default: ``tpm``). A request costs its estimated prompt tokens plus the output tokens it
    asks for (``default_max_tokens`` when it names none).

    ``latency`` is ``"fixed:S"``, ``"uniform:A,B"`` or ``"lognormal:MEDIAN,SIGMA"``, plus
    ``latency_per_token`` seconds per output token. ``faults`` is the share of generation
    requests that fail, drawn from ``fault_mix`` (kind → weight, or ``"500=1,reset=2"``);
    a ``timeout`` fault hangs ``hang_seconds``. Batches end ``batch_delay`` after they are
    created; each request fails with probability ``batch_fail`` and a whole batch expires
    with probability ``batch_expire``. ``seed`` makes every draw repeatable.

    ``models``: the model names that exist (None: any name is accepted). ``refused_keys``:
    API keys answered with 401. Prompt caching follows each provider's rules with the
    minimum lengths below and ``cache_ttl`` (the 5-minute lifetime; Anthropic's ``1h``
    breakpoints live ``cache_ttl_long``).

    ``mix`` (set from ``fault_mix``, not an argument) is the fault mix as kind → weight.
    """

    rpm: float | None = None
    tpm: float | None = None
    burst: float | None = None
    token_burst: float | None = None
    limit_by_model: bool = False
    latency: str = "fixed:0"
    latency_per_token: float = 0.0
    faults: float = 0.0
    fault_mix: Mapping[str, float] | str | None = None
    hang_seconds: float = 30.0
    batch_delay: float = 30.0
    batch_fail: float = 0.0
    batch_expire: float = 0.0
    rules: Sequence[Rule] = ()
    seed: int = 0
    models: Sequence[str] | None = None
    refused_keys: Sequence[str] = ()
    image_tokens: int = 85
    default_max_tokens: int = 1024
    caching: bool = True
    openai_cache_min: int = 1024
    openai_cache_step: int = 128
    anthropic_cache_min: int = 1024
    gemini_cache_min: int = 1024
    gemini_cache_step: int = 128
    cache_ttl: float = 300.0
    cache_ttl_long: float = 3600.0
    record_requests: bool = True
    max_body_bytes: int = 64 * 1024 * 1024
    mix: dict[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm", "burst", "token_burst"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise SimConfigError(f"{name} must be a number > 0 (or None for no limit), got {value}")
        if self.burst is not None and self.rpm is None:
            raise SimConfigError("burst needs rpm (it is the capacity of the request bucket)")
        if self.token_burst is not None and self.tpm is None:
            raise SimConfigError("token_burst needs tpm (it is the capacity of the token bucket)")
        for name in ("faults", "batch_fail", "batch_expire"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise SimConfigError(f"{name} must be a probability in [0, 1], got {value}")
        for name in ("latency_per_token", "hang_seconds", "batch_delay", "cache_ttl", "cache_ttl_long"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise SimConfigError(f"{name} must be a number of seconds >= 0, got {value}")
        for name in (
            "image_tokens",
            "default_max_tokens",
            "openai_cache_min",
            "openai_cache_step",
            "anthropic_cache_min",
            "gemini_cache_min",
            "gemini_cache_step",
            "max_body_bytes",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise SimConfigError(f"{name} must be an integer >= 1, got {value!r}")
        parse_latency(self.latency)
        object.__setattr__(self, "mix", parse_fault_mix(self.fault_mix))
        rules = tuple(self.rules)
        if not all(isinstance(r, Rule) for r in rules):
            raise SimConfigError("rules must be Rule objects (see load_rules for a TOML file)")
        object.__setattr__(self, "rules", rules)
        if self.models is not None:
            object.__setattr__(self, "models", tuple(str(m) for m in self.models))
        object.__setattr__(self, "refused_keys", tuple(str(k) for k in self.refused_keys))

    @property
    def request_capacity(self) -> float | None:
        """The request bucket's capacity (``burst``, else ``rpm``); None without a request limit."""
        return None if self.rpm is None else (self.burst if self.burst is not None else self.rpm)

    @property
    def token_capacity(self) -> float | None:
        """The token bucket's capacity (``token_burst``, else ``tpm``); None without a token limit."""
        return None if self.tpm is None else (self.token_burst if self.token_burst is not None else self.tpm)


def rules_from_data(data: Mapping[str, Any], where: str = "rules") -> list[Rule]:
    """Rules from a parsed TOML/JSON document's ``rules`` list; errors name ``where`` and the rule."""
    raw = data.get("rules", [])
    if not isinstance(raw, list):
        raise SimConfigError(f"{where}: 'rules' must be a list of tables ([[rules]])")
    rules = []
    for i, item in enumerate(raw, 1):
        if not isinstance(item, Mapping):
            raise SimConfigError(f"{where}: rule {i} is not a table")
        unknown = set(item) - {"match", "reply", "model", "tool_call"}
        if unknown:
            raise SimConfigError(f"{where}: rule {i} has unknown keys {sorted(unknown)}")
        if "match" not in item:
            raise SimConfigError(f"{where}: rule {i} has no 'match'")
        try:
            rules.append(Rule(**item))
        except (SimConfigError, TypeError) as exc:
            raise SimConfigError(f"{where}: rule {i}: {exc}") from None
    return rules


def load_rules(path: str | Path) -> list[Rule]:
    """The ``[[rules]]`` of a TOML file (``match``, ``reply``, optional ``model`` and ``tool_call``)."""
    import tomllib

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SimConfigError(f"{path}: cannot read the rules file: {exc.strerror or exc}") from None
    if len(raw) > MAX_RULES_FILE_BYTES:
        raise SimConfigError(f"{path}: the rules file is over {MAX_RULES_FILE_BYTES} bytes")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SimConfigError(f"{path}: not valid TOML: {exc}") from None
    return rules_from_data(data, str(path))


__all__ = [
    "FAULT_KINDS",
    "Rule",
    "SimConfig",
    "SimConfigError",
    "load_rules",
    "parse_fault_mix",
    "rules_from_data",
]
