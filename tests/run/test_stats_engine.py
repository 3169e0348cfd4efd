"""The fast statistics engine gives the numbers of the original computations (issue 25): the sign-flip
test's flips are numpy's int8 draws, the flipped means and p-values are the original code's, batched
bootstrap intervals equal one-at-a-time ones (also when the rounding check sends them back), and
nothing depends on threadpoolctl being there. tests/run/test_summary_pins.py checks whole summaries.
"""

from __future__ import annotations

import json
from concurrent.futures import Future

import numpy as np
import pytest

from pptarena.run.statistics import blas, bootdraws, resample, signflip, statsjobs, statsworker
from pptarena.run.statistics.stats import bootstrap_mean_ci, paired_p_values, paired_permutation_p
from tests.support.summary_pin_rows import PINS, cases, summary_of


def original_permutation_p(diffs, n_perm=20_000, seed=0):
    """The Monte Carlo sign-flip test as fb660a0 computed it (numpy's int8 draws, float32 products)."""
    d = np.asarray(diffs, dtype=float)
    observed = abs(float(d.mean()))
    tol = 1e-12 * max(1.0, observed)
    rng = np.random.default_rng(seed)
    hits = 0
    chunk = max(1, 2_000_000 // len(d))
    for start in range(0, n_perm, chunk):
        m = min(chunk, n_perm - start)
        bits = rng.integers(0, 2, size=(m, len(d)), dtype=np.int8).astype(np.float32)
        flipped = (2.0 * (bits @ d.astype(np.float32)) - d.sum()) / len(d)
        hits += int(np.sum(np.abs(flipped) >= observed - max(tol, 1e-6)))
    return (1 + hits) / (1 + n_perm)


def original_interval(values, n_boot=2000, seed=0, level=0.95):
    """The percentile bootstrap interval as the original code computed it."""
    a = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // len(a))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        means[start:stop] = a[rng.integers(0, len(a), size=(stop - start, len(a)))].mean(axis=1)
    lo, hi = np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return [round(float(lo), 4), round(float(hi), 4)]


@pytest.mark.parametrize("block", [signflip._BLOCK_BYTES, 64])
def test_flip_bits_are_numpys_int8_draws(monkeypatch, block):
    monkeypatch.setattr(signflip, "_BLOCK_BYTES", block)  # 64: a refill inside almost every call
    for seed in (0, 7, 123):
        rng = np.random.default_rng(seed)
        bits = signflip.FlipBits(seed)
        for m, n in [(3, 17), (1, 1), (2, 3), (5, 50), (7, 33), (117, 17), (1, 4001), (40, 50_000)]:
            want = rng.integers(0, 2, size=(m, n), dtype=np.int8)
            assert np.array_equal(bits.take(m * n).reshape(m, n), want), (seed, m, n)


@pytest.mark.slow
@pytest.mark.parametrize("border", [signflip.BORDER, 1.0])
def test_sign_flip_p_values_are_the_original_ones(monkeypatch, border):
    """Near 0.5 (many flipped means close to the observed one), in the tail, several lengths, shared
    flips; ``border`` 1.0 recomputes every chunk on the library's threads."""
    monkeypatch.setattr(signflip, "BORDER", border)
    rng = np.random.default_rng(4)
    vectors = [rng.normal(0.0, 0.3, 17), rng.normal(0.002, 0.3, 999), rng.normal(0.0, 0.4, 12_345)]
    vectors += [rng.normal(0.05, 0.3, 999), rng.uniform(-1, 1, 2_001)]
    want = [[original_permutation_p(v, n_perm=3000, seed=s) for v in vectors] for s in (0, 5)]
    assert [paired_p_values(vectors, n_perm=3000, seed=s) for s in (0, 5)] == want
    assert paired_permutation_p(vectors[1], n_perm=3000, seed=5) == want[1][1]
    flat = want[0] + want[1]
    assert any(0.2 < p < 0.9 for p in flat) and any(p < 0.01 for p in flat)  # near 0.5, in the tail


def test_batched_intervals_equal_one_at_a_time():
    rng = np.random.default_rng(9)
    vectors = [rng.random(n).round(3) for n in (2, 37, 37, 500, 2_000, 13_001)]
    vectors.append(vectors[1].copy())  # a repeated vector: computed once, both filled
    vectors.append(rng.normal(5, 40, 800))  # values far from 0-1
    want = [original_interval(v, 700, 3) for v in vectors] + [original_interval(vectors[3], 700, 3, 0.9)]
    with resample.batched():
        got = [bootstrap_mean_ci(v, n_boot=700, seed=3) for v in vectors]
        got.append(bootstrap_mean_ci(vectors[3], n_boot=700, seed=3, level=0.9))
        assert got[0] == [] and bootstrap_mean_ci([1.0], n_boot=700) is None  # placeholders until the end
    assert got == want


def test_intervals_the_rounding_check_rejects_are_computed_the_original_way(monkeypatch):
    monkeypatch.setattr(resample, "safely_rounded", lambda x, error: False)
    rng = np.random.default_rng(2)
    vectors = [rng.random(n).round(2) for n in (3, 300, 300)]
    with resample.batched():
        got = [bootstrap_mean_ci(v, n_boot=500, seed=1) for v in vectors]
    assert got == [original_interval(v, 500, 1) for v in vectors]


def test_rounding_check_knows_the_rounding_boundaries():
    assert resample.safely_rounded(0.1234, 1e-12) and resample.safely_rounded(-0.98761, 1e-10)
    assert not resample.safely_rounded(0.12345, 1e-12)  # on the boundary between 0.1234 and 0.1235
    assert not resample.safely_rounded(0.123449999999, 1e-11) and resample.safely_rounded(0.1234499, 1e-11)


def test_summary_is_the_same_without_threadpoolctl(monkeypatch):
    monkeypatch.setattr(blas, "_found", [])  # as if threadpoolctl were not installed
    monkeypatch.setattr(blas, "_defaults", [])
    assert not blas.available()
    make, opts = cases()["close_900_pairs"]
    assert summary_of(make(), **opts) == json.loads(PINS.read_text(encoding="utf-8"))["close_900_pairs"]


def test_one_blas_thread_restores_the_threads():
    if not blas.available():
        pytest.skip("threadpoolctl cannot set this platform's BLAS threads")
    before = [lib.get_num_threads() for lib in blas._libraries()]
    with blas.one_blas_thread():
        assert all(lib.get_num_threads() == 1 for lib in blas._libraries())
        with blas.default_threads():
            assert [lib.get_num_threads() for lib in blas._libraries()] == before
        assert all(lib.get_num_threads() == 1 for lib in blas._libraries())
    assert [lib.get_num_threads() for lib in blas._libraries()] == before


def test_a_batch_started_early_gives_the_same_intervals_and_its_errors(monkeypatch):
    rng = np.random.default_rng(6)
    vectors = [rng.random(n).round(3) for n in (40, 40, 900)]
    with resample.batched() as batch:
        got = [bootstrap_mean_ci(v, n_boot=300, seed=2) for v in vectors]
        batch.start()  # computed on another thread from here
        late = bootstrap_mean_ci(vectors[2], n_boot=300, seed=4)  # asked for after the start
    assert got + [late] == [original_interval(v, 300, 2) for v in vectors] + [
        original_interval(vectors[2], 300, 4)
    ]

    def broken(*args):
        raise RuntimeError("no intervals today")

    monkeypatch.setattr(resample, "_interval_group", broken)
    batch = resample.IntervalBatch()
    batch.add(vectors[0], 300, 2, 0.95)
    batch.start()
    with pytest.raises(RuntimeError, match="no intervals today"):
        batch.resolve()


def test_the_helper_process_gives_the_pinned_figures(monkeypatch):
    """Every wave of intervals and every sign-flip test sent to the helper process (as a large summary
    does): the figures are the pinned ones, and the helper is gone afterwards."""
    monkeypatch.setattr(resample, "REMOTE_ENTRIES", 0)
    started = []
    real = statsworker.StatsWorker

    class Counting(real):
        def __init__(self):
            super().__init__()
            started.append(self)

    monkeypatch.setattr(statsworker, "StatsWorker", Counting)
    monkeypatch.setattr(resample, "StatsWorker", Counting)
    make, opts = cases()["close_900_pairs"]
    assert summary_of(make(), **opts) == json.loads(PINS.read_text(encoding="utf-8"))["close_900_pairs"]
    assert len(started) == 1 and started[0]._proc.poll() == 0  # one helper per summary, ended


@pytest.mark.parametrize("failure", ["cannot start", "fails a job", "dies"])
def test_without_a_working_helper_the_figures_are_computed_here(monkeypatch, failure):
    monkeypatch.setattr(resample, "REMOTE_ENTRIES", 0)
    if failure == "cannot start":
        monkeypatch.setattr(statsworker.sys, "executable", "/nonexistent/python")
    elif failure == "fails a job":
        monkeypatch.setattr(statsworker.StatsWorker, "submit", _failing_submit)
    else:
        monkeypatch.setattr(statsworker.StatsWorker, "widen", lambda self: self._proc.kill())
    make, opts = cases()["close_900_pairs"]
    assert summary_of(make(), **opts) == json.loads(PINS.read_text(encoding="utf-8"))["close_900_pairs"]


def _failing_submit(self, kind, args):
    future = Future()
    future.set_exception(RuntimeError("statistics helper: ZeroDivisionError"))
    return future


def test_the_helper_answers_jobs_in_a_pipe():
    """The child's loop on its own: jobs answered by id, an unknown job reported, the end of input
    ends it and drops jobs nobody waits for any more."""
    import os
    import pickle
    import threading

    rng = np.random.default_rng(3)
    v = rng.random(50).round(3)
    jobs_r, jobs_w = (os.fdopen(fd, mode) for fd, mode in zip(os.pipe(), ("rb", "wb"), strict=True))
    answers_r, answers_w = (os.fdopen(fd, mode) for fd, mode in zip(os.pipe(), ("rb", "wb"), strict=True))
    child = threading.Thread(target=statsworker.serve, args=(jobs_r, answers_w, statsjobs.run_job))
    child.start()
    for message in [("job", 7, "intervals", [(v, 300, 1, 0.95)]), ("widen",), ("job", 8, "nope", None)]:
        pickle.dump(message, jobs_w)
    jobs_w.flush()
    answers = dict((job, (ok, result)) for job, ok, result in (pickle.load(answers_r) for _ in range(2)))
    assert answers[7] == (True, [original_interval(v, 300, 1)])
    assert answers[8][0] is False and "unknown job" in answers[8][1]
    jobs_w.close()
    child.join(timeout=30)
    assert not child.is_alive()
    for f in (jobs_r, answers_r, answers_w):
        f.close()


def test_quick_switches_restores_the_interpreters_interval():
    import sys

    before = sys.getswitchinterval()
    with resample.batched(), resample.batched():
        assert sys.getswitchinterval() == pytest.approx(min(before, resample.SWITCH_INTERVAL))
    assert sys.getswitchinterval() == before


def test_index_draws_are_numpys_integers():
    """Lemire's method on the raw output, rejections included (a range where a quarter are rejected),
    across calls of odd sizes (the 32-bit half kept between calls)."""
    for n, seed in [(2, 0), (7, 1), (50_000, 0), (65_537, 5), (199_999, 2), (3 * 2**30 + 1, 4)]:
        rng, draws = np.random.default_rng(seed), bootdraws.IndexDraws(n, seed)
        for size in (1, 3, 1000, 5, 300_001, 2):
            assert np.array_equal(draws.take(size), rng.integers(0, n, size=size)), (n, seed, size)


def test_resampled_means_are_the_original_bootstrap_means():
    """Several lengths from one reading of the draws: gathered means equal the original computation's
    bit for bit, counted ones to the last bits; resamples split across the generator's blocks."""
    rng = np.random.default_rng(8)
    few = np.stack([rng.normal(size=1_999).round(3) for _ in range(2)], axis=1)
    many = np.stack([rng.random(37) for _ in range(5)], axis=1)
    odd = rng.random((50_000, 1))
    got = bootdraws.resampled_means([few, many, odd], 700, 3)
    for values, means in zip([few, many, odd], got, strict=True):
        for j in range(values.shape[1]):
            r = np.random.default_rng(3)
            want = np.concatenate(
                [
                    values[:, j][r.integers(0, len(values), size=(m, len(values)))].mean(axis=1)
                    for m in (40, 660)
                ]
            )
            if bootdraws.gathered_exactly(values):
                assert np.array_equal(means[:, j], want)
            else:
                assert np.allclose(means[:, j], want, rtol=0, atol=1e-13)


def test_flip_bits_from_a_place_in_the_stream():
    """The sign-flip test draws again the flips of chunks near the threshold from where they were in
    the generator's stream: the same values as drawn in order (calls of odd sizes drop bytes)."""
    for seed in (0, 9):
        bits, place = signflip.FlipBits(seed), 0
        for count in (4001, 13, 7, 120_000, 3, 2_000_000):
            want = bits.take(count)
            assert np.array_equal(signflip.FlipBits(seed, skip=place).take(count), want), (seed, place)
            place += -(-count // 4) * 4
