"""The bootstrap's seeded index draws, made from the generator's raw output, and the resampled means of
many vectors computed from one reading of it (:mod:`pptarena.run.statistics.resample` uses them).

``default_rng(seed).integers(0, n, size)`` (int64, ``2 <= n < 2**32``) makes each index from one 32-bit
output of PCG64 (the low half of a 64-bit output first, then the high half, which is kept for the next
call) by Lemire's method: with ``m = x * n``, the index is ``m >> 32``, unless ``m mod 2**32`` is below
``2**32 mod n``, in which case ``x`` is dropped and the next output is tried. :func:`accepted` does the
same on an array of raw outputs, so the indices are numpy's, in numpy's order, whatever the calls'
sizes (``tests/test_stats_engine.py`` checks them against ``integers``).

Every length drawn with one seed reads the same raw outputs (only the mapping to ``[0, n)`` differs), so
:func:`resampled_means` reads them once for several lengths and feeds each length its draws in turn:
resample ``r`` of length ``n`` is its draws ``r * n`` to ``(r + 1) * n - 1``, exactly as in
``integers(0, n, size=(n_boot, n))``. Two ways turn a resample's indices into means:

* *gather* (a length with few vectors): ``a[idx].sum(axis=1) / n``, the original bootstrap's own
  computation (``a[idx].mean(axis=1)``), so the very same numbers;
* *counts* (many vectors): the draws become per-resample counts ``C`` (``C[r, i]`` = how often value
  ``i`` was drawn) and the means of all vectors are one product ``C @ A / n``: the same sums added in
  another order (the caller checks that this cannot change a rounded interval, see
  :func:`pptarena.run.statistics.resample.safely_rounded`).

All work arrays are allocated once per call and reused: fresh multi-megabyte arrays for every block
would cost their page faults each time (several times the arithmetic).
"""

from __future__ import annotations

import numpy as np

RAW_BLOCK = 1 << 17  # 64-bit outputs read per block (262,144 draws for every length)
CHUNK_ENTRIES = 200_000  # draws turned into sums at once (counts or gathered values stay in cache)
GATHER_MAX_VECTORS = 3  # above this many vectors of one length, counting is cheaper than gathering
_SHIFT = np.uint64(32)


class _Work:
    """Work arrays of one :func:`resampled_means` (or :func:`accepted`) call."""

    def __init__(self, draws: int, chunk: int) -> None:
        self.high = np.empty(draws, dtype=np.uint64)
        self.low = np.empty(draws, dtype=np.uint32)
        self.rejected = np.empty(draws, dtype=bool)
        self.kept = np.empty(draws, dtype=np.uint64)
        self.index = np.empty(chunk, dtype=np.int64)
        self.values = np.empty(chunk)


def accepted(raw32: np.ndarray, n: int, work: _Work | None = None) -> np.ndarray:
    """The indices in ``[0, n)`` (int64) that ``integers(0, n)`` makes from these successive 32-bit
    outputs: one per output, except the rare outputs Lemire's method rejects. With ``work`` the result
    is a view of its arrays (valid until the next call)."""
    size = len(raw32)
    work = work or _Work(size, 0)
    high = work.high[:size]
    np.multiply(raw32, np.uint64(n), out=high)
    np.right_shift(high, _SHIFT, out=high)
    threshold = (1 << 32) % n
    if threshold:
        low, rejected = work.low[:size], work.rejected[:size]
        np.multiply(raw32, np.uint32(n), out=low)  # the low half of x * n (wraps at 2**32)
        np.less(low, threshold, out=rejected)
        if rejected.any():
            kept, start, filled = work.kept, 0, 0
            for r in np.flatnonzero(rejected).tolist():
                kept[filled : filled + r - start] = high[start:r]
                filled += r - start
                start = r + 1
            kept[filled : filled + size - start] = high[start:]
            high = kept[: filled + size - start]
    return high.view(np.int64)


class IndexDraws:
    """The successive values of ``integers(0, n)`` calls (int64) on ``default_rng(seed)``."""

    def __init__(self, n: int, seed: int) -> None:
        self._gen = np.random.default_rng(seed).bit_generator
        self._n = n
        self._ready = np.empty(0, dtype=np.int64)

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` draws."""
        parts, have = [self._ready], len(self._ready)
        while have < count:
            raw = self._gen.random_raw(max(RAW_BLOCK, (count - have) // 2 + 1)).view(np.uint32)
            parts.append(accepted(raw, self._n))
            have += len(parts[-1])
        found = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self._ready = found[count:]
        return found[:count]


class _Resamples:
    """The resampled sums (``n_boot`` x k) of the k columns of ``values`` (n x k), fed the length's
    draws in order, ``rows`` resamples at a time (a chunk)."""

    def __init__(self, values: np.ndarray, n_boot: int) -> None:
        self.n, k = values.shape
        self.n_boot = n_boot
        self.sums = np.empty((n_boot, k))
        self.row = 0
        self.gather = k <= GATHER_MAX_VECTORS
        self.rows = max(1, CHUNK_ENTRIES // self.n)
        if self.gather:
            self._columns = [np.ascontiguousarray(values[:, j]) for j in range(k)]
        else:
            self._values = np.ascontiguousarray(values)
            self._offsets = (np.arange(self.rows, dtype=np.int64) * self.n)[:, None]
        self._pending = np.empty(min(self.rows, n_boot) * self.n, dtype=np.uint32)  # a chunk begun
        self._held = 0

    @property
    def done(self) -> bool:
        """True when every resample has its sums."""
        return self.row >= self.n_boot

    def _next_chunk(self) -> int:
        return min(self.rows, self.n_boot - self.row) * self.n

    def feed(self, draws: np.ndarray, work: _Work) -> None:
        """The length's next draws (any number; those past the last resample are ignored)."""
        at = 0
        if self._held:  # complete the chunk begun in earlier draws
            size = self._next_chunk()
            want = size - self._held
            if len(draws) < want:
                self._pending[self._held : self._held + len(draws)] = draws
                self._held += len(draws)
                return
            chunk = work.index[:size]
            chunk[: self._held] = self._pending[: self._held]
            chunk[self._held :] = draws[:want]
            self._add(chunk, work)
            at, self._held = want, 0
        while not self.done:
            size = self._next_chunk()
            if len(draws) - at < size:
                rest = len(draws) - at
                self._pending[:rest] = draws[at:]
                self._held = rest
                break
            self._add(draws[at : at + size], work)
            at += size

    def _add(self, idx: np.ndarray, work: _Work) -> None:
        n = self.n
        m = len(idx) // n
        out = self.sums[self.row : self.row + m]
        if self.gather:
            gathered = work.values[: m * n]
            for j, column in enumerate(self._columns):
                np.take(column, idx, out=gathered, mode="wrap")  # indices in range: wrap never applies
                out[:, j] = gathered.reshape(m, n).sum(axis=1)  # as a[idx].mean(axis=1) sums each row
        else:
            flat = work.index[: m * n]
            np.add(idx.reshape(m, n), self._offsets[:m], out=flat.reshape(m, n))
            counts = work.values[: m * n]
            counts[:] = np.bincount(flat, minlength=m * n)
            np.matmul(counts.reshape(m, n), self._values, out=out)
        self.row += m


def resampled_means(groups: list[np.ndarray], n_boot: int, seed: int) -> list[np.ndarray]:
    """For each ``values`` (n x k, n >= 2) the ``n_boot`` x k resampled means of its columns, each length
    drawn as ``default_rng(seed).integers(0, n, size=(n_boot, n))`` would, from one reading of the
    generator's output. Gathered lengths (:func:`gathered_exactly`) are the original computation's
    numbers."""
    jobs = [_Resamples(v, n_boot) for v in groups]
    if not jobs:
        return []
    need = max(j.n for j in jobs) * n_boot
    block = max(1, min(RAW_BLOCK, need // 2 + 1))
    work = _Work(2 * block, max(j.rows * j.n for j in jobs))
    gen = np.random.default_rng(seed).bit_generator
    active = jobs
    while active:
        raw = gen.random_raw(block).view(np.uint32)
        for job in active:
            job.feed(accepted(raw, job.n, work), work)
        active = [j for j in active if not j.done]
    return [j.sums / j.n for j in jobs]


def gathered_exactly(values: np.ndarray) -> bool:
    """True when :func:`resampled_means` gathers the means of ``values`` (n x k): the original
    computation's numbers, no check needed."""
    return values.shape[1] <= GATHER_MAX_VECTORS
