"""The Monte Carlo paired sign-flip test's random flips, drawn fast and exactly as before.

The test (:func:`pptarena.run.statistics.stats.paired_permutation_p`) draws its flips as
``default_rng(seed).integers(0, 2, size=(m, n), dtype=np.int8)``, chunk after chunk. numpy makes each
such 0/1 value from one byte of a 32-bit draw (bytes used from the lowest up, a call's unused bytes
dropped; Lemire's method on a range of 2 keeps the byte's top bit), and each 32-bit draw is one half of
the generator's 64-bit output (the low half first). :class:`FlipBits` reads the same bytes straight
from ``bit_generator.random_raw`` and keeps their top bits: the same flips, ten times faster.
``tests/run/test_stats.py`` checks them against ``integers`` for many shapes and seeds.

The flipped means are then computed as before (float32 flips times float32 differences, one matrix
product per chunk of the same shape; see :func:`flip_hits` for the threads), so every p-value is the
same number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pptarena.run.statistics.blas import default_threads, one_blas_thread

CHUNK_ENTRIES = 2_000_000  # flips per chunk (the chunk's shape is part of the test's definition)
BORDER = 4e-6  # flipped means this close to the threshold (times max |d|) are computed as before
_BLOCK_BYTES = 8 * 1024 * 1024


class FlipBits:
    """The 0/1 values of successive ``integers(0, 2, size=count, dtype=np.int8)`` calls on
    ``default_rng(seed)``."""

    def __init__(self, seed: int, skip: int = 0) -> None:
        """``skip``: start that many bytes into the stream (a multiple of 4: after whole calls)."""
        self._gen = np.random.default_rng(seed).bit_generator
        self._gen.advance(skip // 8)  # as if skip // 8 outputs of 64 bits had been drawn
        self._buf = np.empty(0, dtype=np.uint8)
        self._pos = skip % 8

    def take(self, count: int) -> np.ndarray:
        """The next call's ``count`` values (uint8, 0 or 1)."""
        out = np.empty(count, dtype=np.uint8)
        self.take_into(out)
        return out

    def take_into(self, out: np.ndarray) -> None:
        """The next call's ``len(out)`` values written into ``out`` (uint8, 0 or 1), without joining
        blocks of the generator's output into a new array."""
        count, filled = len(out), 0
        while filled < count:
            if self._pos >= len(self._buf):  # the next block of the stream (bytes already skipped kept)
                self._pos -= len(self._buf)
                self._buf = self._gen.random_raw(max(1, _BLOCK_BYTES // 8)).view(np.uint8)  # low half first
            k = min(count - filled, len(self._buf) - self._pos)
            np.right_shift(self._buf[self._pos : self._pos + k], 7, out=out[filled : filled + k])
            filled += k
            self._pos += k
        self._pos += -count % 4  # the last 32-bit draw's unused bytes are dropped


def flip_hits(diffs: Sequence[np.ndarray], thresholds: Sequence[float], n_perm: int, seed: int) -> list[int]:
    """For each vector of differences (all of one length n), how many of ``n_perm`` seeded random sign
    flips give ``|mean| >= threshold``; the flips are shared, as every vector would draw the same.

    The float32 products run on one BLAS thread; a chunk where a flipped mean lies within
    :data:`BORDER` of the threshold is computed again with the library's own threads, as the test
    always computed it (the two differ in the last float32 bits: a few 1e-8 here), so no hit changes.
    Those chunks are computed again at the end, all in one block on the library's threads (their flips
    drawn again from their place in the generator's stream): switching the threads for each would
    wake the library's threads every time, and change them under other threads' products.
    """
    n = len(diffs[0])
    singles = [d.astype(np.float32) for d in diffs]
    totals = [d.sum() for d in diffs]
    borders = [BORDER * max(1.0, float(np.max(np.abs(d)))) for d in diffs]
    hits = [0] * len(diffs)
    bits = FlipBits(seed)
    chunk = max(1, CHUNK_ENTRIES // n)
    raw = np.empty(min(chunk, n_perm) * n, dtype=np.uint8)  # reused: no fresh arrays per chunk
    as_float = np.empty(len(raw), dtype=np.float32)
    near: dict[int, list[int]] = {}  # chunk start -> the vectors to compute again there

    def flips_of(m: int) -> np.ndarray:
        flips = as_float[: m * n].reshape(m, n)
        np.copyto(flips, raw[: m * n].reshape(m, n))  # the 0/1 values as float32, as before
        return flips

    def flipped(flips: np.ndarray, i: int) -> np.ndarray:
        # mean of the flipped differences = (2 * (bits @ d) - sum(d)) / n for bits in {0, 1}
        return np.abs((2.0 * (flips @ singles[i]) - totals[i]) / n)

    with one_blas_thread():
        for start in range(0, n_perm, chunk):
            m = min(chunk, n_perm - start)
            bits.take_into(raw[: m * n])
            flips = flips_of(m)
            for i, threshold in enumerate(thresholds):
                means = flipped(flips, i)
                if np.any(np.abs(means - threshold) <= borders[i]):
                    near.setdefault(start, []).append(i)
                else:
                    hits[i] += int(np.sum(means >= threshold))
        if near:  # those chunks' flips drawn again (from their place in the stream), on the threads
            used = -(-chunk * n // 4) * 4  # bytes of the stream each full chunk took
            with default_threads():
                for start, which in near.items():
                    m = min(chunk, n_perm - start)
                    FlipBits(seed, skip=start // chunk * used).take_into(raw[: m * n])
                    flips = flips_of(m)
                    for i in which:
                        hits[i] += int(np.sum(flipped(flips, i) >= thresholds[i]))
    return hits
