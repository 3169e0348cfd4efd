"""Judge meta-evaluation: statistics against scipy and hand-computed values, labels parsing, agreement on
real runs, and stability over repeats (deterministic structural judge; dual judge on the scripted backend)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.report.meta_eval import LabelError, label_agreement, meta_eval, read_labels, to_class
from pptarena.report.meta_stats import bootstrap_ci, kendall_tau_b, pearson, rankdata, spearman, stability
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.folder.records import ResultRow
from pptarena.run.runner import Runner
from tests.support.config import run_toml, use, write_run_config
from tests.support.report_fixtures import rows_of

# ------------------------------------------------------------------ statistics


def test_statistics_by_hand():
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    # 10 pairs, 2 discordant ((1,2) and (3,4)): τ = (8 − 2) / 10
    assert kendall_tau_b(x, y) == pytest.approx(0.6)
    # Σd² = 4: ρ = 1 − 6·4 / (5·24)
    assert spearman(x, y) == pytest.approx(0.8)
    assert pearson(x, y) == pytest.approx(0.8)
    # ties: x has one tied pair, y none; S = 4 − 1 = 3 over sqrt(5 · 6)
    assert kendall_tau_b([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(5 * 6))
    assert list(rankdata([10, 20, 20, 5])) == [2.0, 3.5, 3.5, 1.0]
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3])) and math.isnan(kendall_tau_b([2, 2], [1, 3]))


def test_statistics_match_scipy_on_tied_data():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for _ in range(5):
        x = rng.integers(0, 6, 60).astype(float)
        y = np.clip(x + rng.integers(-2, 3, 60), 0, 5) / 5
        assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)


def test_bootstrap_ci_is_the_percentile_interval_of_resampled_pairs():
    x = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    y = [0, 2, 1, 3, 5, 4, 6, 8, 7, 9]
    lo, hi = bootstrap_ci(pearson, x, y, n_boot=200, seed=3)
    rng = np.random.default_rng(3)
    a, b = np.array(x, float), np.array(y, float)
    vals = []
    for _ in range(200):
        idx = rng.integers(0, 10, 10)
        vals.append(pearson(a[idx], b[idx]))
    assert (lo, hi) == tuple(np.percentile(vals, [2.5, 97.5]))
    assert lo <= pearson(x, y) <= hi
    assert bootstrap_ci(pearson, x, y, n_boot=200, seed=3) == (lo, hi)  # seeded: reproducible


def test_stability_by_hand():
    s = stability([[1.0, 1.0, 0.0], [0.5, 0.5, 0.5], [0.2, 0.4, 0.6]])
    # variances 2/9, 0, 0.08/3
    assert s["mean_variance"] == pytest.approx((2 / 9 + 0 + 0.08 / 3) / 3, abs=1e-6)
    assert s["majority_rate"] == pytest.approx(2 / 3, abs=1e-4)  # the third item has no majority
    assert s["majority_share"] == pytest.approx((2 / 3 + 1 + 1 / 3) / 3, abs=1e-4)
    assert s["unanimous_rate"] == pytest.approx(1 / 3, abs=1e-4) and s["k"] == 3


# ------------------------------------------------------------------ labels


def _csv(tmp_path, text, name="labels.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_label_scales_and_errors(tmp_path):
    labels, scale = read_labels(_csv(tmp_path, "task_id,agent,label,note\nt1,a,0,x\nt2,a,1,\n"))
    assert scale == "binary" and [lab.cls for lab in labels] == ["0", "1"]
    labels, scale = read_labels(_csv(tmp_path, "task_id,agent,label\nt1,a,0.25\nt2,a,1\n"))
    assert scale == "unit" and [lab.cls for lab in labels] == ["partial", "complete"]
    labels, scale = read_labels(_csv(tmp_path, "task_id,agent,label\nt1,a,3\nt2,a,5\n"))
    assert scale == "five" and [lab.value for lab in labels] == [0.6, 1.0] and labels[0].cls == "3"
    labels, scale = read_labels(
        _csv(tmp_path, "task_id,agent,label\nt1,a,No progress\nt2,a,substantial\nt3,a,SUCCESS\n")
    )
    assert scale == "classes" and [lab.cls for lab in labels] == ["no_progress", "substantial", "complete"]
    assert [round(lab.value, 4) for lab in labels] == [0.0, 0.6667, 1.0]
    assert (
        to_class(0.7, "five") == "4"
        and to_class(0.5, "classes") == "substantial"
        and to_class(0.0, "unit") == "no_progress"
    )
    for text, message in [
        ("task,agent,label\nt1,a,1\n", "missing column(s) task_id"),
        (
            "task_id,agent,label\nt1,a,1\nt1,a,0\n",
            "labels.csv:3: a second label for (t1, a) (first on line 2)",
        ),
        ("task_id,agent,label\nt1,a,7\n", "labels.csv:2: label 7 is outside 0-5"),
        ("task_id,agent,label\nt1,a,maybe\n", "labels.csv:2: label 'maybe' is not a progress class"),
        ("task_id,agent,label\nt1,,1\n", "labels.csv:2: task_id, agent and label must all be set"),
        ("task_id,agent,label\n", "no labels"),
    ]:
        with pytest.raises(LabelError) as info:
            read_labels(_csv(tmp_path, text))
        assert message in str(info.value)


# ------------------------------------------------------------------ agreement on a real run


@pytest.mark.slow
def test_agreement_with_labels_on_a_fake_run(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=4)
    rows = rows_of(run_dir)
    # humans agree with the title judge except on one noop pair; crash pairs have no score
    lines = ["task_id,agent,label"]
    for r in rows:
        human = 1 if r["agent"] == "retitle" else 0
        if (r["agent"], r["task_id"]) == ("noop", "task-03"):
            human = 1
        lines.append(f"{r['task_id']},{r['agent']},{human}")
    labels_path = _csv(tmp_path, "\n".join(lines) + "\n")
    labels, scale = read_labels(labels_path)
    result = label_agreement([ResultRow.from_json(r) for r in rows], labels, scale, n_boot=300)["title"]
    judge = [1.0] * 4 + [0.0] * 4
    human = [1.0] * 4 + [0, 0, 0, 1.0]
    assert result["n"] == 8 and result["missing"] == 4
    assert result["kendall_tau_b"]["value"] == pytest.approx(round(kendall_tau_b(human, judge), 4))
    # 12 concordant pairs, none discordant; untied pairs: 5·3 (human), 4·4 (judge) → 12 / sqrt(240)
    expected = round(12 / math.sqrt(240), 4)
    assert result["kendall_tau_b"]["value"] == pytest.approx(expected)
    # binary data: Pearson = Spearman = the phi coefficient (4·3 − 1·0) / sqrt(5·3·4·4), the same value
    assert result["pearson"]["value"] == pytest.approx(expected) and result["spearman"][
        "value"
    ] == pytest.approx(expected)
    assert result["accuracy"]["value"] == pytest.approx(7 / 8)
    assert result["per_class"] == {"0": {"n": 3, "accuracy": 1.0}, "1": {"n": 5, "accuracy": 0.8}}
    lo, hi = result["kendall_tau_b"]["ci95"]
    assert -1 <= lo <= expected <= hi <= 1
    res = CliRunner().invoke(
        cli, ["meta-eval", "--run", str(run_dir), "--labels", str(labels_path), "--bootstrap", "300"]
    )
    assert res.exit_code == 0, res.output
    assert "Kendall τ_b" in res.output and "0.775 [" in res.output and "1: 0.80 (n=5)" in res.output
    saved = json.loads((run_dir / "meta-eval" / "meta_eval.json").read_text())
    assert saved["agreement"]["title"]["accuracy"]["value"] == pytest.approx(0.875)
    usage = CliRunner().invoke(cli, ["meta-eval", "--run", str(run_dir)])
    assert usage.exit_code != 0 and "--labels" in usage.output


# ------------------------------------------------------------------ stability


def _need_soffice():
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")


@pytest.mark.slow
def test_repeat_of_the_deterministic_structural_judge_has_no_variance(tmp_path_factory, tmp_path, demo_run):
    _need_soffice()
    run_dir = tmp_path / "run"
    shutil.copytree(demo_run, run_dir)
    cfg = write_run_config(
        tmp_path / "structural-only.toml",
        dataset="demo",
        agents=["noop"],
        renderer="libreoffice",
        judges=["structural"],
    )
    report = meta_eval(run_dir, repeat=3, config_path=cfg, registry=get_registry())
    s = report["repeat"]["series"]["structural"]
    assert s["items"] == 6 and s["k"] == 3
    assert s["mean_variance"] == 0.0 and s["majority_rate"] == 1.0 and s["unanimous_rate"] == 1.0
    assert report["warnings"] == []


def _dual_config(cache_dir: Path, **backend_options) -> str:
    """noop on one demo task, real renders, the dual judge on three scripted replies (cycled)."""
    replies = [f'{{"score": {score}, "reason": "r{i}"}}' for i, score in enumerate((4, 2, 4))]
    return run_toml(
        run={"tasks": ["birds-title-colour"], "cache_dir": str(cache_dir)},
        dataset="demo",
        agents=["noop"],
        renderer="libreoffice",
        judges=[use("dual", model="scripted/judge", chunk_size=50)],
        backends={"scripted": {"responses": replies, "on_exhausted": "cycle", **backend_options}},
    )


def _dual_run(tmp_path, **backend_options):
    cfg = write_run_config(tmp_path / "dual.toml", _dual_config(tmp_path / "cache", **backend_options))
    reset_registry()
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "run", quiet=True).run()
    return tmp_path / "run"


@pytest.mark.slow
def test_repeat_of_a_model_judge_on_the_scripted_backend(tmp_path):
    _need_soffice()
    run_dir = _dual_run(tmp_path)
    assert rows_of(run_dir)[0]["scores"]["dual"]["metrics"]["vq_chunks"] == 1
    res = CliRunner().invoke(cli, ["meta-eval", "--run", str(run_dir), "--repeat", "3", "--json"])
    assert res.exit_code == 0, res.output
    series = json.loads(res.output)["repeat"]["series"]
    # noop: IF is 0 by rule (no edit); each repeat builds a fresh backend, so VQ = replies 0, 1, 2 = 4, 2, 4
    vq = np.array([4, 2, 4]) / 5
    assert series["dual.vq_score"]["mean_variance"] == pytest.approx(round(float(np.var(vq)), 6))
    assert series["dual"]["mean_variance"] == pytest.approx(round(float(np.var(vq / 2)), 6))  # (IF + VQ) / 10
    assert series["dual.if_score"]["mean_variance"] == 0.0
    assert series["dual.vq_score"]["majority_rate"] == 1.0 and series["dual.vq_score"][
        "majority_share"
    ] == pytest.approx(0.6667)
    assert series["dual.vq_score"]["unanimous_rate"] == 0.0
    assert len(list((run_dir / "meta-eval").glob("repeat-*/tasks/noop/*/judges/dual"))) == 3


@pytest.mark.slow
def test_repeat_warns_when_the_response_cache_hides_variance(tmp_path):
    _need_soffice()
    run_dir = _dual_run(tmp_path, cache=True)
    report = meta_eval(run_dir, repeat=2, registry=get_registry())
    assert any("response cache" in w for w in report["warnings"])
    assert report["repeat"]["series"]["dual"]["mean_variance"] == 0.0


def test_graded_set_kinds_and_order_within_tasks(tmp_path):
    from pptarena.report.meta_kinds import kind_means, within_task_order

    labels, _ = read_labels(
        _csv(
            tmp_path,
            "task_id,agent,label,kind\n"
            "t1,a,1,complete\nt1,b,0.5,damage\nt1,c,0,none\n"
            "t2,a,1,complete\nt2,b,0.5,damage\nt2,c,0,none\n",
        )
    )
    assert [lab.kind for lab in labels] == ["complete", "damage", "none"] * 2
    # the judge reverses complete/damage in t2 and ties damage/none in t1
    values = {
        ("t1", "a", 1): 1.0,
        ("t1", "b", 1): 0.0,
        ("t1", "c", 1): 0.0,
        ("t2", "a", 1): 0.4,
        ("t2", "b", 1): 0.6,
        ("t2", "c", 1): 0.0,
    }
    order = within_task_order(labels, values)
    assert (order["pairs"], order["concordant"], order["tied"], order["discordant"]) == (6, 4, 1, 1)
    assert order["not_concordant"] == {
        "complete > damage": {"pairs": 2, "concordant": 1, "tied": 0, "discordant": 1},
        "damage > none": {"pairs": 2, "concordant": 1, "tied": 1, "discordant": 0},
    }
    means = kind_means(labels, {"j": values})
    assert means["complete"] == {"n": 2, "label_mean": 1.0, "series": {"j": 0.7}}
    assert means["damage"]["series"]["j"] == 0.3
    # a labels file without the kind column still reads, with empty kinds
    plain, _ = read_labels(_csv(tmp_path, "task_id,agent,label\nt1,a,1\n", name="plain.csv"))
    assert plain[0].kind == "" and kind_means(plain, {"j": values}) == {}


@pytest.mark.slow
def test_meta_eval_command_reports_kinds_on_a_run(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=3)
    lines = ["task_id,agent,label,kind"]
    for r in rows_of(run_dir):
        lines.append(f"{r['task_id']},{r['agent']},{1 if r['agent'] == 'retitle' else 0},{r['agent']}-kind")
    result = CliRunner().invoke(
        cli,
        [
            "meta-eval",
            "--run",
            str(run_dir),
            "--labels",
            str(_csv(tmp_path, "\n".join(lines) + "\n")),
            "--bootstrap",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Mean per attempt kind" in result.output and "retitle-kind" in result.output
    assert "Order within each task" in result.output
    report = json.loads((run_dir / "meta-eval" / "meta_eval.json").read_text())
    assert report["kinds"]["retitle-kind"]["label_mean"] == 1.0
    assert report["within_task"]["title"]["pairs"] > 0


def test_labels_of_later_epochs_are_matched_to_their_own_attempt(tmp_path):
    """With ``[run] epochs`` every attempt has its own score; a label names its attempt in an
    ``epoch`` column (1 when absent) and is compared with that attempt's score only."""
    from pptarena.report.meta_eval import judge_series, series_agreement

    rows = [
        ResultRow.from_json(
            {"task_id": f"t{i}", "agent": "a", "epoch": e, "status": "scored", "scores": {"j": {"score": s}}}
        )
        for i in range(1, 6)
        for e, s in ((1, (6 - i) / 5), (2, i / 5))  # epoch 1 ranks the tasks backwards, epoch 2 forwards
    ]
    labels, scale = read_labels(
        _csv(tmp_path, "task_id,agent,label,epoch\n" + "".join(f"t{i},a,{i / 5},2\n" for i in range(1, 6)))
    )
    assert [lab.epoch for lab in labels] == [2] * 5
    assert label_agreement(rows, labels, scale, n_boot=50)["j"]["kendall_tau_b"]["value"] == 1.0
    first, _ = read_labels(
        _csv(tmp_path, "task_id,agent,label\n" + "".join(f"t{i},a,{i / 5}\n" for i in range(1, 6)))
    )
    assert (
        series_agreement(judge_series(rows), first, scale, n_boot=50)["j"]["kendall_tau_b"]["value"] == -1.0
    )
    # the same pair may be labelled once per attempt, not twice for one
    both, _ = read_labels(_csv(tmp_path, "task_id,agent,label,epoch\nt1,a,1,1\nt1,a,0,2\n"))
    assert [(lab.epoch, lab.value) for lab in both] == [(1, 1.0), (2, 0.0)]
    with pytest.raises(LabelError, match=r"labels.csv:3: a second label for \(t1, a, epoch 2\)"):
        read_labels(_csv(tmp_path, "task_id,agent,label,epoch\nt1,a,1,2\nt1,a,0,2\n"))
    for bad in ("0", "two", "1.5", "1001"):
        with pytest.raises(
            LabelError, match=rf"labels.csv:2: epoch '{bad}' is not a whole number from 1 to 1000"
        ):
            read_labels(_csv(tmp_path, f"task_id,agent,label,epoch\nt1,a,1,{bad}\n"))
