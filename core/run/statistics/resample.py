"""The bootstrap's resampled means (see :func:`pptarena.run.statistics.stats.bootstrap_mean_ci`).

Every interval over ``n`` values with a given seed uses the same seeded index draws: resample ``r``
takes ``idx[r]``, the ``r``-th row of ``default_rng(seed).integers(0, n, size=(n_boot, n))`` (drawn
chunk by chunk; the chunking does not change the draws). Two ways compute its resampled means:

* :func:`bootstrap_means`, one vector at a time, exactly as the bootstrap always did
  (``a[idx].mean(axis=1)``), the draws kept in a bounded cache and results memoized
  (:func:`memoized`);
* :class:`IntervalBatch`, every vector of a summary at once, in waves (:meth:`IntervalBatch.start`):
  :func:`intervals_of` makes the draws of every length of a unit of work from one reading of the
  generator (:mod:`pptarena.run.statistics.bootdraws`), gathers a length's few vectors exactly as above, or
  turns its draws into per-resample counts ``C`` (``C[r, i]`` = how often value ``i`` was drawn) so
  the means of its many vectors are one product ``C @ A / n``. Those sums are the same numbers added
  in another order, so they can differ in the last bits; such an interval is kept only when no such
  difference can change it after rounding to 4 decimals (the rounding error of both sums is bounded,
  :func:`safely_rounded`), else it is computed again the first way. Intervals are thus identical. A
  large wave runs in the summary's helper process (:mod:`.statsworker`), else on threads.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

from pptarena.run.statistics import statsworker
from pptarena.run.statistics.blas import one_blas_thread
from pptarena.run.statistics.bootdraws import GATHER_MAX_VECTORS, gathered_exactly, resampled_means
from pptarena.run.statistics.statsworker import StatsWorker

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
REMOTE_ENTRIES = 20_000_000  # draws in a wave (or flips in a test) above which the helper process computes it
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
    their resampled means (``n_boot`` x k) from :func:`.bootdraws.resampled_means` if known."""
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
        self._finally: list[Callable[[], None]] = []
        self._remote: list[tuple[list[tuple[np.ndarray, int, int, float, list[float]]], Future[Any]]] = []
        self._helper: StatsWorker | None = None
        self._helper_failed = False

    def add(self, a: np.ndarray, n_boot: int, seed: int, level: float) -> list[float]:
        """A placeholder for the interval of ``a`` (1-d, at least 2 values)."""
        out: list[float] = []
        self._requests.append((a, n_boot, seed, level, out))
        return out

    def when_resolved(self, finish: Callable[[], None]) -> None:
        """Call ``finish`` when the batch resolves, after its intervals (other placeholders of the
        summary, e.g. p-values computed on another thread, are filled there)."""
        self._finally.append(finish)

    def elsewhere(self, kind: str, args: Any, entries: int) -> Future[Any] | None:
        """Run a job of ``entries`` draws in the helper process (:mod:`.statsworker`) when
        it is large and the helper can run; None otherwise (the caller computes it itself)."""
        if entries < REMOTE_ENTRIES or self._helper_failed or not statsworker.enabled():
            return None
        if self._helper is None:
            try:
                self._helper = statsworker.StatsWorker()
            except OSError:
                self._helper_failed = True
                return None
        return self._helper.submit(kind, args)

    def close(self) -> None:
        """End the helper process, if one was started."""
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close()

    def start(self) -> None:
        """Begin computing the intervals asked for so far elsewhere (a large wave in the helper
        process, else on another thread: most of the work releases the GIL), while the caller does
        other work; :meth:`resolve` waits for them. Each start is a wave of its own (lengths are
        shared within a wave, not between waves)."""
        if self._requests:
            requests, self._requests = self._requests, []
            entries = sum(len(r[0]) * r[1] for r in requests)
            units = plan_units([r[:4] for r in requests], WORKERS)
            futures = [self.elsewhere("intervals", [requests[i][:4] for i in u], entries) for u in units]
            here = []  # units the helper does not take (a small wave, or it failed on the way)
            for unit, future in zip(units, futures, strict=True):
                if future is not None:
                    self._remote.append(([requests[i] for i in unit], future))
                else:
                    here += [requests[i] for i in unit]
            if here:
                thread = threading.Thread(target=self._background, args=(here,), daemon=True)
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
        if self._helper is not None:
            self._helper.widen()  # this thread only waits from here: the helper may use both cores
        for thread in self._threads:
            thread.join()
        self._threads = []
        if self._errors:
            raise self._errors[0]
        remote, self._remote = self._remote, []
        for requests, future in remote:
            try:
                found = future.result()
            except RuntimeError:  # the helper could not: the same numbers computed here
                found = intervals_of([r[:4] for r in requests])
            for r, interval in zip(requests, found, strict=True):
                r[4][:] = interval
        requests, self._requests = self._requests, []
        if requests:
            self._compute(requests)
        finish, self._finally = self._finally, []
        for f in finish:
            f()

    def _compute(self, requests: list[tuple[np.ndarray, int, int, float, list[float]]]) -> None:
        units = plan_units([r[:4] for r in requests], WORKERS)
        parallel = len(units) > 1 and sum(len(r[0]) * r[1] for r in requests) >= PARALLEL_ENTRIES

        def work(unit: list[int]) -> None:
            for i, interval in zip(unit, intervals_of([requests[i][:4] for i in unit]), strict=True):
                requests[i][4][:] = interval

        if parallel:  # the draws, gathers and products release the GIL: two units at a time on two cores
            with ThreadPoolExecutor(max_workers=min(WORKERS, os.cpu_count() or 1)) as pool:
                list(pool.map(work, units))
        else:
            for unit in units:
                work(unit)


Request = tuple[np.ndarray, int, int, float]
"""An interval asked for: values, resamples, seed, level."""


def intervals_of(requests: list[Request]) -> list[list[float]]:
    """``[lo, hi]`` of each request (vectors of one length, resamples and seed share their draws, which
    are read once for all lengths of one resamples and seed; equal vectors are computed once)."""
    groups: dict[tuple[int, int, int], dict[tuple[bytes, float], np.ndarray]] = defaultdict(dict)
    for a, n_boot, seed, level in requests:
        groups[(len(a), n_boot, seed)].setdefault((a.tobytes(), level), a)
    found: dict[tuple[int, int, int, bytes, float], list[float]] = {}
    by_stream: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    for key in groups:
        by_stream[key[1:]].append(key)
    with one_blas_thread():  # small products: BLAS threads would only wait for each other
        for (n_boot, seed), lengths in by_stream.items():
            vectors = [list(groups[g].values()) for g in lengths]
            means = resampled_means([np.stack(v, axis=1) for v in vectors], n_boot, seed)
            for g, v, m in zip(lengths, vectors, means, strict=True):
                levels = [k[1] for k in groups[g]]
                for k, interval in zip(groups[g], _interval_group(v, n_boot, seed, levels, m), strict=True):
                    found[(*g, *k)] = interval
    return [list(found[(len(a), n_boot, seed, a.tobytes(), level)]) for a, n_boot, seed, level in requests]


def plan_units(requests: list[Request], parts: int) -> list[list[int]]:
    """The requests (their indices) split into units of work of about equal cost: each unit has whole
    lengths (their draws are shared) of one resamples and seed; ``parts`` units per resamples and seed."""
    lengths: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    distinct: dict[tuple[int, int, int], set[bytes]] = defaultdict(set)
    for i, (a, n_boot, seed, _) in enumerate(requests):
        lengths[(len(a), n_boot, seed)].append(i)
        distinct[(len(a), n_boot, seed)].add(a.tobytes())
    streams: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    for key in lengths:
        streams[key[1:]].append(key)
    units = []
    for keys in streams.values():
        sizes = [(k[0], len(distinct[k]), k[1]) for k in keys]
        units += [[i for j in part for i in lengths[keys[j]]] for part in _shares(sizes, parts)]
    return units


def active_batch() -> IntervalBatch | None:
    """This thread's active batch, if any."""
    return getattr(_local, "batch", None)


SWITCH_INTERVAL = 1e-4  # s: how soon a thread waiting for the GIL gets it while a batch is active
_switching = [0, 0.005]  # active batches (all threads), the interval before the first


@contextmanager
def quick_switches() -> Iterator[None]:
    """Run the block with Python's thread switch interval at most :data:`SWITCH_INTERVAL`.

    The batch's threads (draws, products, sign flips) release the GIL for their numpy work but need it
    between calls; with the default 5 ms a thread returning from numpy waits that long whenever the
    caller's thread runs Python, which starves them while the summary's lines are walked. The
    interval is the interpreter's, so it is restored when the last active block ends."""
    with _lock:
        if _switching[0] == 0:
            _switching[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_switching[1], SWITCH_INTERVAL))
        _switching[0] += 1
    try:
        yield
    finally:
        with _lock:
            _switching[0] -= 1
            if _switching[0] == 0:
                sys.setswitchinterval(_switching[1])


@contextmanager
def batched() -> Iterator[IntervalBatch]:
    """Collect this thread's bootstrap intervals and compute them together on leaving the block."""
    outer = active_batch()
    batch = _local.batch = IntervalBatch()
    try:
        with quick_switches():
            yield batch
            batch.resolve()
    finally:
        _local.batch = outer
        batch.close()
