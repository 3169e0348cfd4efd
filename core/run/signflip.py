"""The Monte Carlo paired sign-flip test's random flips, drawn fast and exactly as before.

The test (:func:`pptarena.run.stats.paired_permutation_p`) draws its flips as
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

from pptarena.run.blas import default_threads, one_blas_thread

CHUNK_ENTRIES = 2_000_000  # flips per chunk (the chunk's shape is part of the test's definition)
BORDER = 4e-6  # flipped means this close to the threshold (times max |d|) are computed as before
_BLOCK_BYTES = 8 * 1024 * 1024


class FlipBits:
    """The 0/1 values of successive ``integers(0, 2, size=count, dtype=np.int8)`` calls on
    ``default_rng(seed)``."""

    def __init__(self, seed: int) -> None:
        self._gen = np.random.default_rng(seed).bit_generator
        self._buf = np.empty(0, dtype=np.uint8)
        self._pos = 0

    def take(self, count: int) -> np.ndarray:
        """The next call's ``count`` values (uint8, 0 or 1)."""
        used = -(-count // 4) * 4  # whole 32-bit draws
        if len(self._buf) - self._pos < used:
            rest = self._buf[self._pos :]
            more = max(used - len(rest), _BLOCK_BYTES)
            raw = self._gen.random_raw(-(-more // 8)).view(np.uint8)  # little-endian: low half first
            self._buf = np.concatenate([rest, raw]) if len(rest) else raw
            self._pos = 0
        out = self._buf[self._pos : self._pos + count] >> 7
        self._pos += used
        return out


def flip_hits(diffs: Sequence[np.ndarray], thresholds: Sequence[float], n_perm: int, seed: int) -> list[int]:
    """For each vector of differences (all of one length n), how many of ``n_perm`` seeded random sign
    flips give ``|mean| >= threshold``; the flips are shared, as every vector would draw the same.

    The float32 products run on one BLAS thread; a chunk where a flipped mean lies within
    :data:`BORDER` of the threshold is computed again with the library's own threads, as the test
    always computed it (the two differ in the last float32 bits: a few 1e-8 here), so no hit changes.
    """
    n = len(diffs[0])
    singles = [d.astype(np.float32) for d in diffs]
    totals = [d.sum() for d in diffs]
    borders = [BORDER * max(1.0, float(np.max(np.abs(d)))) for d in diffs]
    hits = [0] * len(diffs)
    bits = FlipBits(seed)
    chunk = max(1, CHUNK_ENTRIES // n)
    with one_blas_thread():
        for start in range(0, n_perm, chunk):
            m = min(chunk, n_perm - start)
            flips = bits.take(m * n).reshape(m, n).astype(np.float32)
            for i, (d32, total, threshold) in enumerate(zip(singles, totals, thresholds, strict=True)):
                # mean of the flipped differences = (2 * (bits @ d) - sum(d)) / n for bits in {0, 1}
                flipped = np.abs((2.0 * (flips @ d32) - total) / n)
                if np.any(np.abs(flipped - threshold) <= borders[i]):
                    with default_threads():
                        flipped = np.abs((2.0 * (flips @ d32) - total) / n)
                hits[i] += int(np.sum(flipped >= threshold))
    return hits
