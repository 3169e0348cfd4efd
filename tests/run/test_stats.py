"""Statistics of publishable leaderboards: pass@k / pass^k by hand, bootstrap intervals and the paired test
against scipy, the summary's per-task aggregation over epochs."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.results import summarize_results
from pptarena.run.statistics.stats import (
    bootstrap_mean_ci,
    epoch_block,
    paired_comparison,
    paired_permutation_p,
    pass_at_k,
    pass_hat_k,
)
from pptarena.run.statistics.summary_stats import StatsOptions

scipy_stats = pytest.importorskip(
    "scipy.stats", reason="scipy (test extra) is the reference for intervals and tests"
)


def row(agent, task, epoch, score, success=None):
    metrics = {} if success is None else {"success": success}
    return ResultRow.from_json(
        {
            "agent": agent,
            "task_id": task,
            "epoch": epoch,
            "status": "scored",
            "scores": {"j": {"score": score, "metrics": metrics}},
            "usage": {},
            "metadata": {},
        }
    )


def test_pass_at_k_and_pass_hat_k_hand_computed():
    # n=3 attempts, c=1 success: pass@2 = 1 - C(2,2)/C(3,2) = 2/3, pass^2 = C(1,2)/C(3,2) = 0
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)
    assert pass_hat_k(3, 1, 2) == 0.0
    # c=2: pass@2 = 1 - C(1,2)/3 = 1, pass^2 = C(2,2)/C(3,2) = 1/3
    assert pass_at_k(3, 2, 2) == 1.0 and pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    # k = 1 is the success rate; k = n is "any" and "all"
    assert pass_at_k(4, 1, 1) == pass_hat_k(4, 1, 1) == 0.25
    assert pass_at_k(4, 1, 4) == 1.0 and pass_hat_k(4, 1, 4) == 0.0 and pass_hat_k(4, 4, 4) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_epoch_block_matches_subset_enumeration_on_seeded_outcomes():
    rng = random.Random(11)
    outcomes = {
        f"t{i}": [rng.random() < p for _ in range(4)] for i, p in enumerate((0.2, 0.5, 0.8, 0.5, 0.0, 1.0))
    }
    rows = [row("a", t, e + 1, 1.0 if ok else 0.3) for t, oks in outcomes.items() for e, ok in enumerate(oks)]
    block = epoch_block(rows, "j", threshold=1.0, n_boot=200)
    assert block["k"] == 4
    for k in range(1, 5):
        # reference: share of k-subsets of the attempts with any / all successes, averaged over tasks
        anys, alls = [], []
        for oks in outcomes.values():
            subsets = list(itertools.combinations(oks, k))
            anys.append(sum(any(s) for s in subsets) / len(subsets))
            alls.append(sum(all(s) for s in subsets) / len(subsets))
        assert block["pass_at_k"][str(k)]["value"] == pytest.approx(np.mean(anys), abs=1e-4)
        assert block["pass_hat_k"][str(k)]["value"] == pytest.approx(np.mean(alls), abs=1e-4)
    consistent = sum(1 for oks in outcomes.values() if len(set(oks)) == 1) / len(outcomes)
    assert block["consistency"] == pytest.approx(consistent, abs=1e-4)


def test_success_metric_wins_over_threshold():
    rows = [row("a", "t", 1, 0.9, success=True), row("a", "t", 2, 1.0, success=False)]
    block = epoch_block(rows, "j", threshold=1.0, n_boot=10)
    assert block["pass_at_k"]["1"]["value"] == 0.5 and block["pass_hat_k"]["2"]["value"] == 0.0
    loose = epoch_block([row("a", "t", 1, 0.9), row("a", "t", 2, 0.5)], "j", threshold=0.8, n_boot=10)
    assert loose["pass_at_k"]["1"]["value"] == 0.5


def test_bootstrap_interval_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(3)
    values = rng.beta(2, 3, size=40)
    ours = bootstrap_mean_ci(values, n_boot=20_000, seed=5)
    ref = scipy_stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(9),
    ).confidence_interval
    assert ours[0] == pytest.approx(ref.low, abs=0.006) and ours[1] == pytest.approx(ref.high, abs=0.006)
    assert ours[0] < values.mean() < ours[1]
    assert bootstrap_mean_ci(values, n_boot=500, seed=1) == bootstrap_mean_ci(values, n_boot=500, seed=1)
    assert bootstrap_mean_ci([0.5]) is None


@pytest.mark.slow
def test_paired_permutation_test_matches_scipy_exact():
    rng = np.random.default_rng(8)
    a = rng.uniform(0, 1, 12)
    b = np.clip(a - rng.normal(0.08, 0.15, 12), 0, 1)
    ours = paired_permutation_p(a - b)
    ref = scipy_stats.permutation_test(
        (a, b),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    assert ours == pytest.approx(ref, rel=1e-9)
    # a large sample falls back to seeded Monte Carlo, still close to scipy's own Monte Carlo
    a2, b2 = rng.uniform(0, 1, 60), rng.uniform(0, 1, 60) * 0.9
    mc = paired_permutation_p(a2 - b2, n_perm=20_000, seed=1)
    ref2 = scipy_stats.permutation_test(
        (a2, b2), lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=20_000, random_state=2
    ).pvalue
    assert mc == pytest.approx(ref2, abs=0.02)
    assert paired_permutation_p([0.0, 0.0, 0.0]) == 1.0


def test_paired_comparison_uses_common_tasks_only():
    cmp = paired_comparison({"t1": 1.0, "t2": 0.5, "t3": 0.0}, {"t1": 0.5, "t2": 0.5, "t4": 1.0}, n_boot=100)
    assert cmp["n"] == 2 and cmp["diff"] == 0.25 and cmp["wins"] == 1 and cmp["losses"] == 0
    # exact sign flips of (0.5, 0): |mean| >= 0.25 in all 4 patterns
    assert cmp["p_value"] == 1.0


def test_summary_averages_per_task_means_over_epochs_with_intervals():
    rows = [
        row("a", "t1", 1, 1.0),
        row("a", "t1", 2, 0.0),
        row("a", "t1", 3, 1.0),  # task mean 2/3
        row("a", "t2", 1, 0.0),  # one attempt only: mean 0
        row("b", "t1", 1, 0.5),
        row("b", "t2", 1, 0.5),
    ]
    failed = row("a", "t3", 1, 0.0)
    failed.status, failed.scores = "agent_error", {}
    rows.append(failed)  # counts 0
    summary = summarize_results(rows, opts=StatsOptions(n_boot=300, seed=2))
    a = summary.agents["a"]
    assert a.tasks == 3 and a.attempts == 5 and a.epochs == 3
    j = a.judges["j"]
    assert j.mean_all == pytest.approx((2 / 3 + 0 + 0) / 3, abs=1e-4)
    assert j.mean == pytest.approx((2 / 3 + 0) / 2, abs=1e-4)
    assert j.mean_all_ci95[0] <= j.mean_all <= j.mean_all_ci95[1]
    assert j.epochs.pass_at_k["3"].to_json() == {"value": 1.0, "ci95": None, "tasks": 1}
    assert summary.statistics["bootstrap"]["seed"] == 2
    pair = summary.comparisons["j"]["a|b"]
    assert pair.n == 2 and pair.diff == pytest.approx(((2 / 3 - 0.5) + (0 - 0.5)) / 2, abs=1e-4)
