"""The bootstrap's resampled means (see :func:`pptarena.run.stats.bootstrap_mean_ci`).

Every interval over ``n`` values with a given seed uses the same seeded index draws: resample ``r``
takes ``idx[r]``, the ``r``-th row of ``default_rng(seed).integers(0, n, size=(n_boot, n))`` (drawn
chunk by chunk; the chunking does not change the draws). Two ways compute its resampled means:

* :func:`bootstrap_means`, one vector at a time, exactly as the bootstrap always did
  (``a[idx].mean(axis=1)``), the draws kept in a bounded cache and results memoized
  (:func:`memoized`);
* :class:`IntervalBatch`, every vector of a summary at once: the draws of each length are made once
  and turned into per-resample counts ``C`` (``C[r, i]`` = how often value ``i`` was drawn), so the
  means of all vectors of that length are one product ``C @ A / n``. The sums are the same numbers
  added in another order, so they can differ in the last bits; an interval is kept only when no such
  difference can change it after rounding to 4 decimals (the rounding error of both sums is bounded,
  :func:`safely_rounded`), else it is computed again the first way. Intervals are thus identical.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from pptarena.run.blas import one_blas_thread

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


COUNT_ENTRIES = 200_000  # draws turned into counts per chunk (the counts stay in the CPU's cache)
PARALLEL_ENTRIES = 20_000_000  # draws in a batch above which its lengths are shared by WORKERS threads
WORKERS = 2
_EPS = 2.0**-53


def percentile_interval(means: np.ndarray, level: float) -> tuple[float, float]:
    """The unrounded percentile interval of resampled means (numpy's default, linear)."""
    lo, hi = np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def safely_rounded(x: float, error: float) -> bool:
    """True when every number within ``error`` of ``x`` rounds to 4 decimals as ``x`` does."""
    y = x * 1e4
    distance = abs((y - math.floor(y)) - 0.5) * 1e-4  # to the nearest rounding boundary (k + 0.5) / 1e4
    return distance > error + 16 * _EPS * (abs(x) + 1.0)


def _counts_means(columns: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The resampled means (``n_boot`` x k) of the k columns of ``columns`` (n x k) through counts."""
    n = columns.shape[0]
    rng = np.random.default_rng(seed)
    rows = max(1, min(n_boot, COUNT_ENTRIES // n))
    offsets = (np.arange(rows, dtype=np.intp) * n)[:, None]
    sums = np.empty((n_boot, columns.shape[1]))
    for start in range(0, n_boot, rows):
        m = min(rows, n_boot - start)
        idx = rng.integers(0, n, size=(m, n))  # the very draws of bootstrap_means, row by row
        idx += offsets[:m]
        counts = np.bincount(idx.ravel(), minlength=m * n).astype(np.float64)
        sums[start : start + m] = counts.reshape(m, n) @ columns
    return sums / n


def _interval_group(
    vectors: list[np.ndarray], n_boot: int, seed: int, levels: list[float]
) -> list[list[float]]:
    """``[lo, hi]`` rounded to 4 decimals for each vector (all of one length) at its level."""
    n = len(vectors[0])
    means = _counts_means(np.stack(vectors, axis=1), n_boot, seed)
    out = []
    for j, (a, level) in enumerate(zip(vectors, levels, strict=True)):
        lo, hi = percentile_interval(means[:, j], level)
        # both ways sum n values in [-M, M]: each within (n + 1) eps n M of the exact sum, so the means
        # differ by at most 2 (n + 2) eps M; the interpolated percentiles by at most 3 times that
        error = 6 * (n + 2) * _EPS * float(np.max(np.abs(a)))
        if not (safely_rounded(lo, error) and safely_rounded(hi, error)):
            lo, hi = percentile_interval(bootstrap_means(a, n_boot, seed), level)
        out.append([round(lo, 4), round(hi, 4)])
    return out


class IntervalBatch:
    """Bootstrap intervals asked for while the batch is active (:func:`batched`), computed together.

    :meth:`add` returns an empty list that :meth:`resolve` fills with ``[lo, hi]``: the caller puts
    it where the interval goes and must not read it before the batch is resolved.
    """

    def __init__(self) -> None:
        self._requests: list[tuple[np.ndarray, int, int, float, list[float]]] = []
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []

    def add(self, a: np.ndarray, n_boot: int, seed: int, level: float) -> list[float]:
        """A placeholder for the interval of ``a`` (1-d, at least 2 values)."""
        out: list[float] = []
        self._requests.append((a, n_boot, seed, level, out))
        return out

    def start(self) -> None:
        """Begin computing the intervals asked for so far on another thread (most of the work
        releases the GIL), while the caller does other work; :meth:`resolve` waits for them. Each
        start is a wave of its own (lengths are shared within a wave, not between waves)."""
        if self._requests:
            requests, self._requests = self._requests, []
            thread = threading.Thread(target=self._background, args=(requests,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _background(self, requests: list[tuple[np.ndarray, int, int, float, list[float]]]) -> None:
        try:
            self._compute(requests)
        except BaseException as exc:  # noqa: BLE001 - raised again by resolve(), in the caller's thread
            self._errors.append(exc)

    def resolve(self) -> None:
        """Fill every placeholder (vectors of one length, resamples and seed share their draws;
        equal vectors are computed once)."""
        for thread in self._threads:
            thread.join()
        self._threads = []
        if self._errors:
            raise self._errors[0]
        requests, self._requests = self._requests, []
        if requests:
            self._compute(requests)

    def _compute(self, requests: list[tuple[np.ndarray, int, int, float, list[float]]]) -> None:
        groups: dict[tuple[int, int, int], dict[tuple[bytes, float], list[list[float]]]] = defaultdict(dict)
        values: dict[tuple[bytes, float], np.ndarray] = {}
        for a, n_boot, seed, level, out in requests:
            key = (a.tobytes(), level)
            values[key] = a
            groups[(len(a), n_boot, seed)].setdefault(key, []).append(out)

        def work(group: tuple[tuple[int, int, int], dict[tuple[bytes, float], list[list[float]]]]) -> None:
            (_, n_boot, seed), wanted = group
            keys = list(wanted)
            found = _interval_group([values[k] for k in keys], n_boot, seed, [k[1] for k in keys])
            for k, interval in zip(keys, found, strict=True):
                for out in wanted[k]:
                    out[:] = interval

        largest_first = sorted(groups.items(), key=lambda g: -g[0][0] * g[0][1])
        with one_blas_thread():  # small products: BLAS threads would only wait for each other
            if len(largest_first) > 1 and sum(k[0] * k[1] for k in groups) >= PARALLEL_ENTRIES:
                # the draws and products release the GIL: two lengths at a time on two cores
                with ThreadPoolExecutor(max_workers=min(WORKERS, os.cpu_count() or 1)) as pool:
                    list(pool.map(work, largest_first))
            else:
                for group in largest_first:
                    work(group)


def active_batch() -> IntervalBatch | None:
    """This thread's active batch, if any."""
    return getattr(_local, "batch", None)


@contextmanager
def batched() -> Iterator[IntervalBatch]:
    """Collect this thread's bootstrap intervals and compute them together on leaving the block."""
    outer = active_batch()
    batch = _local.batch = IntervalBatch()
    try:
        yield batch
        batch.resolve()
    finally:
        _local.batch = outer
