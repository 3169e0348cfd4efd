"""Prompt-cache simulation, following each provider's documented rules.

The cache is keyed by provider, API key and model, on the exact content of a prompt prefix
(text as written, images by their bytes, tool definitions by their JSON): a prefix is the
hash of the prompt's blocks read in order up to a point.

* **OpenAI** (automatic): a prompt of at least ``openai_cache_min`` (1024) tokens caches its
  prefixes at 1024, 1152, 1280, ... tokens (steps of ``openai_cache_step``, 128). A request
  reads the longest of its step prefixes seen before; it reports them as
  ``cached_tokens`` (part of the prompt tokens).
* **Gemini** (implicit caching): the same scheme with ``gemini_cache_min`` and
  ``gemini_cache_step`` (Google documents the minimum, not the granularity; 128 is the
  simulator's choice); reported as ``cachedContentTokenCount``.
* **Anthropic** (explicit): only prefixes ending at a ``cache_control`` breakpoint are
  written, and only when at least ``anthropic_cache_min`` tokens long. A request reads the
  longest cached prefix ending at a breakpoint or at one of the 19 block boundaries before
  each breakpoint (Anthropic's lookback), and writes the tokens from there to its last
  breakpoint, split by the lifetime of the breakpoint closing each stretch (``5m`` or
  ``1h``). Reads refresh the lifetime. ``input_tokens`` excludes both reads and writes.

OpenAI and Gemini entries live ``cache_ttl`` seconds from their last use.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pptarena.models.sim.prompt import CHARS_PER_TOKEN, Block, Prompt

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.config import SimConfig

LOOKBACK_BLOCKS = 20
MAX_ENTRIES_PER_SCOPE = 200_000


@dataclass(frozen=True)
class CacheUsage:
    """Prompt tokens read from the cache and written to it (by lifetime)."""

    read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def written(self) -> int:
        """Every token written, whatever its lifetime."""
        return self.write_5m + self.write_1h


def _block_header(block: Block) -> bytes:
    return b"\x1e" + f"{block.kind}\x1f{block.role}\x1f{block.message}".encode() + b"\x1f"


def step_prefix_hashes(blocks: list[Block], boundaries: list[int]) -> dict[int, str]:
    """Hash of the prompt's first ``n`` tokens for each ``n`` in ``boundaries`` (ascending).

    A text block's token ``t`` covers characters ``4t .. 4t+3``; a prefix that ends inside an
    image includes the whole image's bytes.
    """
    out: dict[int, str] = {}
    if not boundaries:
        return out
    h = hashlib.sha256()
    pos = 0
    todo = iter(boundaries)
    target = next(todo, None)
    for block in blocks:
        if target is None:
            break
        h.update(_block_header(block))
        if block.kind == "image":
            h.update(hashlib.sha256(block.data).digest())
        start, done = pos, 0
        pos += block.tokens
        while target is not None and target <= pos:
            if block.kind != "image":  # feed the text up to the boundary: linear in the prompt's length
                cut = (target - start) * CHARS_PER_TOKEN
                h.update(block.text[done:cut].encode("utf-8"))
                done = max(done, cut)
            out[target] = h.hexdigest()
            target = next(todo, None)
        if block.kind != "image":
            h.update(block.text[done:].encode("utf-8"))
    return out


def block_end_hashes(blocks: list[Block]) -> Iterator[tuple[int, str]]:
    """``(tokens so far, prefix hash)`` at the end of each block, in order."""
    h = hashlib.sha256()
    pos = 0
    for block in blocks:
        h.update(_block_header(block))
        h.update(hashlib.sha256(block.data).digest() if block.kind == "image" else block.text.encode("utf-8"))
        pos += block.tokens
        yield pos, h.hexdigest()


class PromptCache:
    """Cache entries (prefix hash → expiry and lifetime) per provider, API key and model."""

    def __init__(self, config: SimConfig, clock=time.monotonic):
        self.config = config
        self.clock = clock
        self._lock = threading.Lock()
        self._scopes: dict[tuple[str, str, str], dict[str, tuple[float, float]]] = {}

    def usage(self, prompt: Prompt, api_key: str) -> CacheUsage:
        """Read and write the cache for ``prompt``; what it reports in its usage."""
        c = self.config
        if not c.caching:
            return CacheUsage()
        if prompt.wire == "anthropic":
            return self._breakpoints(prompt, api_key)
        if prompt.wire == "gemini":
            return self._stepped(prompt, api_key, c.gemini_cache_min, c.gemini_cache_step)
        return self._stepped(prompt, api_key, c.openai_cache_min, c.openai_cache_step)

    def _scope(self, prompt: Prompt, api_key: str) -> dict[str, tuple[float, float]]:
        key = (prompt.wire, api_key, prompt.model)
        scope = self._scopes.setdefault(key, {})
        if len(scope) > MAX_ENTRIES_PER_SCOPE:
            now = self.clock()
            for h in [h for h, (exp, _) in scope.items() if exp <= now]:
                del scope[h]
            if len(scope) > MAX_ENTRIES_PER_SCOPE:
                scope.clear()
        return scope

    def _stepped(self, prompt: Prompt, api_key: str, minimum: int, step: int) -> CacheUsage:
        total = prompt.total_tokens
        if total < minimum:
            return CacheUsage()
        boundaries = list(range(minimum, total + 1, step))
        hashes = step_prefix_hashes(prompt.blocks, boundaries)
        ttl = self.config.cache_ttl
        with self._lock:
            now = self.clock()
            scope = self._scope(prompt, api_key)
            read = 0
            for n in reversed(boundaries):
                entry = scope.get(hashes[n])
                if entry is not None and entry[0] > now:
                    read = n
                    break
            for n in boundaries:
                scope[hashes[n]] = (now + ttl, ttl)
        return CacheUsage(read=read)

    def _breakpoints(self, prompt: Prompt, api_key: str) -> CacheUsage:
        blocks = prompt.blocks
        marks = [i for i, b in enumerate(blocks) if b.cache_ttl]
        if not marks:
            return CacheUsage()
        ends = list(block_end_hashes(blocks))
        minimum = self.config.anthropic_cache_min
        lifetimes = {"5m": self.config.cache_ttl, "1h": self.config.cache_ttl_long}
        with self._lock:
            now = self.clock()
            scope = self._scope(prompt, api_key)
            read = 0
            for mark in marks:
                for i in range(mark, max(-1, mark - LOOKBACK_BLOCKS), -1):
                    tokens, digest = ends[i]
                    entry = scope.get(digest)
                    if entry is not None and entry[0] > now and tokens >= minimum:
                        if tokens > read:
                            read = tokens
                        scope[digest] = (now + entry[1], entry[1])
                        break
            last_end = ends[marks[-1]][0]
            write = {"5m": 0, "1h": 0}
            if last_end >= minimum and last_end > read:
                start = 0
                for mark in marks:
                    end = ends[mark][0]
                    ttl = blocks[mark].cache_ttl or "5m"
                    stretch = end - max(start, read)
                    if stretch > 0:
                        write[ttl if ttl in write else "5m"] += stretch
                    start = max(start, end)
                    if end >= minimum:
                        life = lifetimes.get(ttl, self.config.cache_ttl)
                        scope[ends[mark][1]] = (now + life, life)
        return CacheUsage(read=read, write_5m=write["5m"], write_1h=write["1h"])

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._scopes.clear()


__all__ = ["CacheUsage", "PromptCache", "block_end_hashes", "step_prefix_hashes"]
