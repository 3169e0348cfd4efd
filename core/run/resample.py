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
from pptarena.run.bootdraws import GATHER_MAX_VECTORS, gathered_exactly, resampled_means

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


def _interval_group(
    vectors: list[np.ndarray],
    n_boot: int,
    seed: int,
    levels: list[float],
    means: np.ndarray | None = None,
) -> list[list[float]]:
    """``[lo, hi]`` rounded to 4 decimals for each vector (all of one length) at its level; ``means``:
    their resampled means (``n_boot`` x k) from :func:`pptarena.run.bootdraws.resampled_means` if known."""
    n = len(vectors[0])
    columns = np.stack(vectors, axis=1)
    if means is None:
        means = resampled_means([columns], n_boot, seed)[0]
    exact = gathered_exactly(columns)  # the original computation's means: no check needed
    out = []
    for j, (a, level) in enumerate(zip(vectors, levels, strict=True)):
        lo, hi = percentile_interval(means[:, j], level)
        # counted means sum n values in [-M, M] in another order: each sum within (n + 1) eps n M of the
        # exact one, so the means differ by at most 2 (n + 2) eps M; the percentiles by at most 3 times that
        error = 6 * (n + 2) * _EPS * float(np.max(np.abs(a)))
        if not exact and not (safely_rounded(lo, error) and safely_rounded(hi, error)):
            lo, hi = percentile_interval(bootstrap_means(a, n_boot, seed), level)
        out.append([round(lo, 4), round(hi, 4)])
    return out


def _cost(n: int, k: int, n_boot: int) -> float:
    """Rough relative time of one length's resampled means (its draws, then gathers or counts)."""
    return n * n_boot * ((0.5 + 0.7 * k) if k <= GATHER_MAX_VECTORS else (2.0 + 0.15 * k))


def _shares(sizes: list[tuple[int, int, int]], parts: int) -> list[list[int]]:
    """Indices of ``sizes`` ((n, k, n_boot) each) split into ``parts`` lists of about equal cost."""
    loads = [0.0] * parts
    out: list[list[int]] = [[] for _ in range(parts)]
    for i in sorted(range(len(sizes)), key=lambda i: -_cost(*sizes[i])):
        p = loads.index(min(loads))
        out[p].append(i)
        loads[p] += _cost(*sizes[i])
    return [o for o in out if o]


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
        by_stream: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
        for n, n_boot, seed in groups:
            by_stream[(n_boot, seed)].append((n, n_boot, seed))

        def work(lengths: list[tuple[int, int, int]]) -> None:
            # one reading of the seeded draws serves every length of this share
            wanted = [groups[g] for g in lengths]
            vectors = [[values[k] for k in w] for w in wanted]
            n_boot, seed = lengths[0][1], lengths[0][2]
            means = resampled_means([np.stack(v, axis=1) for v in vectors], n_boot, seed)
            for w, v, m in zip(wanted, vectors, means, strict=True):
                found = _interval_group(v, n_boot, seed, [k[1] for k in w], m)
                for k, interval in zip(w, found, strict=True):
                    for out in w[k]:
                        out[:] = interval

        parallel = sum(k[0] * k[1] for k in groups) >= PARALLEL_ENTRIES
        workers = min(WORKERS, os.cpu_count() or 1) if parallel else 1
        shares = []
        for lengths in by_stream.values():
            sizes = [(n, len(groups[(n, b, s)]), b) for n, b, s in lengths]
            shares += [[lengths[i] for i in part] for part in _shares(sizes, workers)]
        with one_blas_thread():  # small products: BLAS threads would only wait for each other
            if len(shares) > 1 and parallel:
                # the draws, gathers and products release the GIL: two shares at a time on two cores
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    list(pool.map(work, shares))
            else:
                for share in shares:
                    work(share)


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
