"""The bootstrap's resampled means, computed once per distinct input (see
:func:`pptarena.run.stats.bootstrap_mean_ci`).

A summary asks for dozens of intervals, most of them over the same number of tasks with the same
seed, and several of them over the very same values (a run of one epoch has the same success rate,
pass@1 and pass^1 per task). Both facts are used here without changing a single number:

* the seeded index draws of ``n`` tasks are the same for every interval over ``n`` tasks, so they
  are drawn once, in the same chunks as before, and kept (compactly, in a bounded cache);
* an interval of values already seen (same bytes, resamples, seed and level) is looked up.

The means are gathered into reused buffers (the same values as ``a[idx].mean(axis=1)``; fresh
buffers per chunk cost more page faults than gathering).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

CHUNK_ENTRIES = 2_000_000  # indices drawn per chunk (the chunking is part of the draws' definition)
MAX_CACHED_ENTRIES = 24_000_000  # indices kept over all cached draws (2 bytes each up to 65,536 tasks)
MAX_CACHED_RESULTS = 4096

_lock = threading.Lock()
_local = threading.local()
_draws: OrderedDict[tuple[int, int, int], list[np.ndarray]] = OrderedDict()
_results: OrderedDict[tuple[bytes, int, int, int, float], list[float] | None] = OrderedDict()


def chunk_rows(n: int) -> int:
    """Resamples drawn per chunk for ``n`` values."""
    return max(1, CHUNK_ENTRIES // n)


def _draw(n: int, n_boot: int, seed: int) -> list[np.ndarray]:
    """The index draws as the bootstrap always made them: ``default_rng(seed)``, chunk by chunk."""
    rng = np.random.default_rng(seed)
    chunk = chunk_rows(n)
    dtype = np.uint16 if n <= 1 << 16 else np.int32
    return [
        rng.integers(0, n, size=(min(n_boot, start + chunk) - start, n)).astype(dtype)
        for start in range(0, n_boot, chunk)
    ]


def _cached_draws(n: int, n_boot: int, seed: int) -> list[np.ndarray] | None:
    """The draws of ``n`` values, from the cache (None when they are too large to keep)."""
    if n * n_boot > MAX_CACHED_ENTRIES:
        return None
    key = (n, n_boot, seed)
    with _lock:
        found = _draws.get(key)
        if found is not None:
            _draws.move_to_end(key)
            return found
    draws = _draw(n, n_boot, seed)
    with _lock:
        _draws[key] = draws
        while sum(k[0] * k[1] for k in _draws) > MAX_CACHED_ENTRIES:
            _draws.popitem(last=False)
    return draws


def _buffers(size: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's gather buffers (values, positions) of at least ``size`` entries, reused between
    calls: fresh 16 MB buffers cost their page faults every time (at most 2M entries each, as chunks).
    """
    found = getattr(_local, "buffers", None)
    if found is None or found[0].size < size:
        found = _local.buffers = (np.empty(size), np.empty(size, dtype=np.intp))
    return found


def bootstrap_means(a: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The ``n_boot`` resampled means of ``a`` (1-d, at least one value), resampled with replacement."""
    n = len(a)
    means = np.empty(n_boot)
    draws = _cached_draws(n, n_boot, seed)
    if draws is None:  # too large to keep: draw chunk by chunk as we go
        rng = np.random.default_rng(seed)
        chunk = chunk_rows(n)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            idx = rng.integers(0, n, size=(stop - start, n))
            means[start:stop] = a[idx].mean(axis=1)
        return means
    values, index = _buffers(len(draws[0]) * n)
    start = 0
    for idx in draws:
        size = idx.size
        positions = index[:size].reshape(idx.shape)
        np.copyto(positions, idx)
        gathered = values[:size].reshape(idx.shape)
        np.take(a, positions, out=gathered)
        means[start : start + len(idx)] = gathered.mean(axis=1)
        start += len(idx)
    return means


def memoized(
    a: np.ndarray, n_boot: int, seed: int, level: float, compute: Callable[[], list[float] | None]
) -> list[float] | None:
    """``compute()``, or its earlier result for the same values, resamples, seed and level."""
    key = (hashlib.blake2b(a.tobytes(), digest_size=16).digest(), len(a), n_boot, seed, level)
    with _lock:
        if key in _results:
            _results.move_to_end(key)
            found = _results[key]
            return None if found is None else list(found)
    result = compute()
    with _lock:
        _results[key] = None if result is None else list(result)
        while len(_results) > MAX_CACHED_RESULTS:
            _results.popitem(last=False)
    return result
