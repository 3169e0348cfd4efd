"""The structural judge on the graded near-miss set built from real corpus decks
(tests/support/graded_set.py).

Asserts, for every task: complete > wrong_value, complete > overlay, complete > over_edit > damage,
wrong_object ≤ two; the misses are named; and Kendall τ_b against the labels over all kinds ≥ 0.95.
The full set (10 tasks) is measured by benchmarks/structural_graded.py; the test builds the first 5.
"""

from __future__ import annotations

import pytest

from tests.support.graded_set import KINDS, build_set, iter_attempts, label_of, write_labels

pytestmark = pytest.mark.slow

N_TASKS = 5


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from tests.support.paths import CORPUS

    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available")
    out = tmp_path_factory.mktemp("graded")
    tasks = build_set(CORPUS, out / "decks", limit=N_TASKS)
    assert len(tasks) == N_TASKS, "the corpus no longer yields enough graded tasks"
    from benchmarks.structural_graded import score_set

    return tasks, score_set(tasks, out / "judged"), out


def test_every_sub_edit_type_is_covered(graded):
    tasks, _, _ = graded
    assert {e.kind for t in tasks for e in t.edits} == {"text", "size", "move", "color", "note"}


def test_orderings_hold_in_every_task(graded):
    tasks, scores, _ = graded
    for t in tasks:
        s = {k: scores[(t.task_id, k)]["score"] for k in KINDS}
        assert s["complete"] == 1.0 and s["none"] == 0.0, t.task_id
        assert s["complete"] > s["wrong_value"], t.task_id
        assert s["complete"] > s["overlay"], t.task_id
        assert s["complete"] > s["over_edit"] > s["damage"], t.task_id
        assert s["wrong_object"] <= s["two"], t.task_id
        assert s["one"] < s["two"] < s["complete"], t.task_id


def test_misses_are_named_by_kind(graded):
    tasks, scores, _ = graded
    for t in tasks:
        m = {k: scores[(t.task_id, k)]["metrics"] for k in KINDS}
        assert m["wrong_value"]["miss_wrong_value"] == 1, t.task_id
        assert m["wrong_object"]["miss_wrong_object"] == 1, t.task_id
        assert m["overlay"]["miss_overlay"] == 1, t.task_id
        assert m["two"]["miss_missed"] == 1 and m["none"]["miss_missed"] == 3, t.task_id
        assert (
            sum(m["complete"][f"miss_{c}"] for c in ("wrong_value", "wrong_object", "overlay", "missed")) == 0
        )
        assert m["damage"]["damaged_units"] == 1 and m["over_edit"]["damaged_units"] == 0, t.task_id
        assert m["over_edit"]["over_edited_units"] == sum(1 for e in t.edits if e.kind != "note"), t.task_id


def test_kendall_tau_b_against_the_labels(graded):
    from pptarena.report.meta_stats import kendall_tau_b

    tasks, scores, _ = graded
    labels = [label_of(kind, t) for t, kind, _ in iter_attempts(tasks)]
    judged = [scores[(t.task_id, kind)]["score"] for t, kind, _ in iter_attempts(tasks)]
    assert kendall_tau_b(labels, judged) >= 0.95


def test_labels_csv_reads_with_its_kinds(graded):
    from pptarena.report.meta_eval import read_labels

    tasks, _, out = graded
    labels, scale = read_labels(write_labels(tasks, out / "labels.csv"))
    assert scale == "unit" and len(labels) == len(tasks) * len(KINDS)
    assert {lab.kind for lab in labels} == set(KINDS)
