"""Agreement figures against independent implementations and textbook cases.

Krippendorff's α against the ``krippendorff`` package (random reliability data with missing values,
nominal / ordinal / interval) and Krippendorff's own worked example; Cohen's and Fleiss' κ against
hand-computed textbook cases; people-vs-judge τ_b against ``scipy.stats.kendalltau``.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

from pptarena.label.agreement import (
    bootstrap_alpha,
    choice_agreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    scale_agreement,
)

krippendorff = pytest.importorskip("krippendorff", reason="the krippendorff package (test extra) is absent")
np = pytest.importorskip("numpy")


def _units_from_matrix(matrix: list[list[float | None]]) -> list[list[float]]:
    """Reliability data (annotators × units, None missing) as per-unit value lists."""
    return [
        [row[u] for row in matrix if row[u] is not None] for u in range(len(matrix[0]))
    ]  # fmt: skip


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_matches_the_krippendorff_package(level, seed):
    rng = random.Random(seed)
    truth = [rng.randrange(5) for _ in range(40)]
    matrix = []
    for _ in range(4):  # four annotators, noisy copies of the truth, 25% missing
        row = []
        for t in truth:
            if rng.random() < 0.25:
                row.append(None)
            else:
                row.append(float(min(4, max(0, t + rng.choice((-1, 0, 0, 0, 1))))))
        matrix.append(row)
    ours = krippendorff_alpha(_units_from_matrix(matrix), level)
    data = np.array([[math.nan if v is None else v for v in row] for row in matrix])
    theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=1e-9)


def test_alpha_on_krippendorffs_worked_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
    # 12 units, nominal α = 0.743 (published to three places)
    nan = None
    matrix = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    assert round(krippendorff_alpha(_units_from_matrix(matrix), "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(_units_from_matrix(matrix), "interval"), 3) == 0.849


def test_alpha_perfect_and_undefined():
    assert krippendorff_alpha([[1, 1], [2, 2], [3, 3]], "ordinal") == pytest.approx(1.0)
    assert krippendorff_alpha([[1, 1], [1, 1]], "nominal") is None  # no variation: undefined
    assert krippendorff_alpha([[1], [2]], "nominal") is None  # nothing pairable


def test_bootstrap_interval_brackets_alpha_and_is_seeded():
    rng = random.Random(0)
    units = [[v, min(4, v + rng.choice((0, 0, 1)))] for v in (rng.randrange(5) for _ in range(60))]
    alpha = krippendorff_alpha(units, "ordinal")
    ci = bootstrap_alpha(units, "ordinal", n_boot=400, seed=3)
    assert ci[0] <= alpha <= ci[1] and ci[0] < ci[1]
    assert ci == bootstrap_alpha(units, "ordinal", n_boot=400, seed=3)


def test_cohen_kappa_textbook():
    # 50 items, two raters yes/no: 20 yes-yes, 5 yes-no, 10 no-yes, 15 no-no (Wikipedia's example):
    # p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, κ = 0.4
    x = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    y = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(x, y) == pytest.approx(0.4)


def test_fleiss_kappa_textbook():
    # Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories, κ = 0.210
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    units = [[c for c, n in enumerate(row) for _ in range(n)] for row in counts]
    assert round(fleiss_kappa(units), 3) == 0.210


def test_scale_and_choice_agreement_per_pair():
    units = {1: {"alice": 3, "bob": 3}, 2: {"alice": 1, "bob": 2}, 3: {"alice": 4, "bob": 4, "carol": 4}}
    got = scale_agreement(units, "ordinal", n_boot=50)
    assert set(got["pairs"]) == {"alice|bob", "alice|carol", "bob|carol"}
    assert got["pairs"]["alice|bob"]["items"] == 3 and got["pairs"]["alice|bob"][
        "agreement"
    ] == pytest.approx(2 / 3, abs=1e-4)
    choices = {
        1: {"a": "a", "b": "a"},
        2: {"a": "b", "b": "a"},
        3: {"a": "tie", "b": "tie"},
        4: {"a": "a", "b": "a"},
    }
    got = choice_agreement(choices)
    pair = got["pairs"]["a|b"]
    assert pair["agreement"] == 0.75
    assert pair["cohen_kappa"] == pytest.approx(
        cohen_kappa(["a", "b", "tie", "a"], ["a", "a", "tie", "a"]), abs=1e-4
    )
    assert got["fleiss_items"] == 4


def test_people_vs_judge_tau_matches_scipy(tmp_path):
    """τ_b of human IF against a judge, as `arena label stats` computes it through meta-eval's code."""
    scipy_stats = pytest.importorskip("scipy.stats")
    from pptarena.report.meta_eval import Label, series_agreement

    rng = random.Random(5)
    labels, values = [], {}
    for i in range(30):
        human = rng.randrange(5)
        labels.append(Label(f"t{i}", "a", str(human), human / 4, "", "", 1))
        values[(f"t{i}", "a", 1)] = min(1.0, max(0.0, human / 4 + rng.uniform(-0.3, 0.3)))
    got = series_agreement({"judge": values}, labels, "unit", n_boot=100)["judge"]
    expected = scipy_stats.kendalltau(
        [lab.value for lab in labels], [values[lab.key] for lab in labels]
    ).statistic
    assert got["kendall_tau_b"]["value"] == pytest.approx(expected, abs=1e-4)


# --- the numpy α and τ_b against the pure-Python code they replaced (kept here as the reference) ---


def _ref_coincidences(units):
    values = sorted({v for u in units for v in u}, key=lambda x: (str(type(x)), x))
    index = {v: i for i, v in enumerate(values)}
    o = [[0.0] * len(values) for _ in values]
    for u in units:
        m = len(u)
        if m < 2:
            continue
        for i in range(m):
            for j in range(i + 1, m):
                a, b = index[u[i]], index[u[j]]
                o[a][b] += 1 / (m - 1)
                o[b][a] += 1 / (m - 1)
    return values, o


def _ref_delta(values, n_c, level):
    k = len(values)
    d = [[0.0] * k for _ in range(k)]
    for c in range(k):
        for e in range(c + 1, k):
            if level == "nominal":
                x = 1.0
            elif level == "interval":
                x = (float(values[c]) - float(values[e])) ** 2
            else:
                x = (sum(n_c[c : e + 1]) - (n_c[c] + n_c[e]) / 2) ** 2
            d[c][e] = d[e][c] = x
    return d


def _ref_alpha(units, level):
    """The pure-Python α this module computed before numpy (coincidences, δ, α = 1 − D_o/D_e)."""
    values, o = _ref_coincidences([u for u in units if len(u) >= 2])
    n_c = [sum(row) for row in o]
    n = sum(n_c)
    if n < 2 or len(values) < 2:
        return None
    d = _ref_delta(values, n_c, level)
    k = len(values)
    observed = sum(o[c][e] * d[c][e] for c in range(k) for e in range(k))
    expected = sum(n_c[c] * n_c[e] * d[c][e] for c in range(k) for e in range(k))
    return None if expected == 0 else 1 - (n - 1) * observed / expected


def _ref_bootstrap(units, level, n_boot, seed):
    """The pure-Python bootstrap it replaced: ``randrange`` per unit per resample, α of each."""
    pairable = [list(u) for u in units if len(u) >= 2]
    if len(pairable) < 2:
        return None
    rng = random.Random(seed)
    got = []
    for _ in range(n_boot):
        a = _ref_alpha([pairable[rng.randrange(len(pairable))] for _ in pairable], level)
        if a is not None:
            got.append(a)
    if len(got) < n_boot // 2:
        return None
    got.sort()
    return [round(got[int(0.025 * (len(got) - 1))], 4), round(got[int(math.ceil(0.975 * (len(got) - 1)))], 4)]


def _random_label_set(rng: random.Random) -> list[list]:
    """Units of 2–5 annotators (some missing), few levels (many ties), ints or floats."""
    annotators = rng.randrange(2, 6)
    levels = rng.choice([2, 3, 5])
    as_float = rng.random() < 0.3
    units = []
    for _ in range(rng.randrange(2, 80)):
        truth = rng.randrange(levels)
        unit = []
        for _ in range(annotators):
            if rng.random() < 0.2:
                continue  # missing
            v = min(levels - 1, max(0, truth + rng.choice((-1, 0, 0, 1))))
            unit.append(float(v) if as_float else v)
        units.append(unit)
    return units


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(12))
def test_numpy_alpha_equals_the_pure_python_alpha(level, seed):
    units = _random_label_set(random.Random(seed * 7 + len(level)))
    ours, ref = krippendorff_alpha(units, level), _ref_alpha(units, level)
    assert (ours is None) == (ref is None)
    if ref is not None:
        assert abs(ours - ref) <= 1e-12


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(6))
def test_numpy_bootstrap_equals_the_pure_python_bootstrap(level, seed):
    units = _random_label_set(random.Random(100 + seed))
    assert bootstrap_alpha(units, level, n_boot=60, seed=seed) == _ref_bootstrap(units, level, 60, seed)


def test_bootstrap_edge_cases_equal_the_reference():
    cases = [
        [[1, 1], [1, 1], [1, 1]],  # no variation: every resample undefined
        [[1, 2], [1, 1]],  # two units: many resamples undefined
        [[1], [2], [3, 3]],  # one pairable unit
        [["yes", "no"], ["no", "no"], ["yes", "yes", "no"]],  # strings (nominal)
    ]
    for units in cases:
        assert bootstrap_alpha(units, "nominal", n_boot=50, seed=1) == _ref_bootstrap(units, "nominal", 50, 1)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 1000, 1025])
def test_resample_indices_are_the_draws_of_random_randrange(n):
    from pptarena.label.agreement import resample_indices

    rng = random.Random(n)
    expected = [[rng.randrange(n) for _ in range(n)] for _ in range(5)]
    assert resample_indices(n, 5, n).tolist() == expected


def _tau_data(rng: random.Random, n: int) -> tuple[list[float], list[float]]:
    human = [rng.randrange(9) / 8 for _ in range(n)]  # few levels: many ties
    judge = [round(min(1.0, max(0.0, h + rng.uniform(-0.4, 0.4))), rng.choice((1, 3))) for h in human]
    return human, judge


@pytest.mark.parametrize("seed", range(8))
def test_fast_tau_equals_meta_stats_bit_for_bit(seed):
    from pptarena.label import fast_tau
    from pptarena.report import meta_stats

    rng = random.Random(seed)
    x, y = _tau_data(rng, rng.randrange(2, 300))
    assert fast_tau.kendall_tau_b(x, y) == meta_stats.kendall_tau_b(x, y)
    assert fast_tau.rankdata(x).tolist() == meta_stats.rankdata(x).tolist()
    assert fast_tau.spearman(x, y) == meta_stats.spearman(x, y)
    assert fast_tau.tau_bootstrap_ci(x, y, n_boot=80, seed=seed, chunk=30) == meta_stats.bootstrap_ci(
        meta_stats.kendall_tau_b, x, y, n_boot=80, seed=seed
    )


def test_fast_tau_undefined_cases_equal_meta_stats():
    from pptarena.label import fast_tau
    from pptarena.report import meta_stats

    for x, y in (
        [[0.5, 0.5, 0.5], [0.1, 0.2, 0.3]],
        [[0.1, 0.2], [0.3, 0.3]],
        [[1.0, math.nan, 0.0], [0.0, 1.0, 0.5]],
    ):
        assert math.isnan(fast_tau.kendall_tau_b(x, y)) == math.isnan(meta_stats.kendall_tau_b(x, y))
        assert fast_tau.tau_bootstrap_ci(x, y, n_boot=40) == meta_stats.bootstrap_ci(
            meta_stats.kendall_tau_b, x, y, n_boot=40
        )
    assert fast_tau.tau_bootstrap_ci([0.1], [0.2]) == (None, None)


def test_fast_series_agreement_equals_meta_eval_and_scipy():
    """What `arena label stats` now prints for people against judges is meta-eval's dict, unchanged."""
    scipy_stats = pytest.importorskip("scipy.stats")
    from pptarena.label.fast_tau import series_agreement as fast
    from pptarena.report.meta_eval import Label, series_agreement, to_class

    rng = random.Random(11)
    labels, series = [], {"rubric": {}, "structural": {}}
    for i in range(120):
        human = rng.randrange(9) / 8
        labels.append(Label(f"t{i}", "a", str(human), human, to_class(human, "unit"), "", 1))
        for name in series:
            if rng.random() < 0.9:  # some attempts unscored by a judge
                series[name][(f"t{i}", "a", 1)] = round(min(1.0, max(0.0, human + rng.uniform(-0.4, 0.4))), 2)
    got = fast(series, labels, "unit", n_boot=120, seed=4)
    assert got == series_agreement(series, labels, "unit", n_boot=120, seed=4)
    paired = [(lab.value, series["rubric"][lab.key]) for lab in labels if lab.key in series["rubric"]]
    expected = scipy_stats.kendalltau(*zip(*paired, strict=True)).statistic
    assert got["rubric"]["kendall_tau_b"]["value"] == pytest.approx(expected, abs=1e-4)


def test_run_series_reads_the_results_again_only_when_they_change(tmp_path):
    from pptarena.label.stats import run_series

    sys_path = Path(__file__).resolve().parents[2] / "benchmarks"
    if str(sys_path) not in sys.path:
        sys.path.insert(0, str(sys_path))
    from report_bench import make_run

    make_run(tmp_path / "run", 40)
    results = tmp_path / "run" / "results.jsonl"
    first = run_series(results)
    assert set(first) == {"rubric", "structural"} and run_series(results) is first
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:10]) + "\n")  # the run changed: fewer rows
    again = run_series(results)
    assert again is not first and sum(len(v) for v in again.values()) < sum(len(v) for v in first.values())
    assert run_series(tmp_path / "absent.jsonl") == {}


@pytest.mark.parametrize("seed", range(6))
def test_fast_spearman_interval_equals_meta_stats(seed):
    from pptarena.label import fast_tau
    from pptarena.report import meta_stats

    rng = random.Random(50 + seed)
    x, y = _tau_data(rng, rng.randrange(2, 200))
    assert fast_tau.spearman_bootstrap_ci(x, y, n_boot=70, seed=seed, chunk=25) == meta_stats.bootstrap_ci(
        meta_stats.spearman, x, y, n_boot=70, seed=seed
    )
    x[0] = math.nan  # a NaN value: meta_stats' own path
    assert fast_tau.spearman_bootstrap_ci(x, y, n_boot=20, seed=seed) == meta_stats.bootstrap_ci(
        meta_stats.spearman, x, y, n_boot=20, seed=seed
    )


def test_bootstrap_in_chunks_equals_the_reference(monkeypatch):
    """Resamples drawn a few at a time (a campaign too big for one chunk) are still randrange's."""
    from pptarena.label import agreement

    monkeypatch.setattr(agreement, "MAX_RESAMPLE_CELLS", 70)  # 70 draws at a time: chunks of a few resamples
    for seed in range(4):
        units = _random_label_set(random.Random(200 + seed))
        assert bootstrap_alpha(units, "ordinal", n_boot=45, seed=seed) == _ref_bootstrap(
            units, "ordinal", 45, seed
        )
    chunks = list(agreement.resample_chunks(9, 7, 3, 2))
    assert [len(c) for c in chunks] == [2, 2, 2, 1]
    rng = random.Random(3)
    assert np.concatenate(chunks).tolist() == [[rng.randrange(9) for _ in range(9)] for _ in range(7)]
