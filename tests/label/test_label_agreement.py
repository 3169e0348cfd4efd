"""Agreement figures against independent implementations and textbook cases.

Krippendorff's α against the ``krippendorff`` package (random reliability data with missing values,
nominal / ordinal / interval) and Krippendorff's own worked example; Cohen's and Fleiss' κ against
hand-computed textbook cases; people-vs-judge τ_b against ``scipy.stats.kendalltau``.
"""

from __future__ import annotations

import math
import random

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
