"""PPTArena's leaderboard figures (§5.2 of ../shared/reference/pptarena-format.md) and its
judged-results CSV, on a real run: the ``pptarena`` dataset (a six-case index written here, a
subset of three), the ``noop`` agent and a judge giving dual-shaped IF/VQ verdicts from a table.

Expected figures are worked out by hand from the formulas, with a clamped score, an unscored case
(judge error) and a case the run never covered (both count 0).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pptx import Presentation

from pptarena.cli.main import cli
from pptarena.plugins.datasets.pptarena_bench import load_pptarena_tasks
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.runner import Runner
from tests.support.config import use, write_run_config

CATEGORIES = {  # case number -> categories
    1: ["Content"],
    2: ["Layout", "Content"],
    3: ["Styling"],
    4: ["Content"],
    5: ["Structure"],
    6: ["Layout"],
}
SUBSET = [1, 3, 5]
# IF, VQ per case; case 3's judge fails (unscored), case 5 is not in the run (missing), case 4 is clamped
SCORES = {1: (5, 4), 2: (3, 2.5), 4: (6, -1), 6: (0, 0)}


@pytest.fixture
def figures_plugin(monkeypatch, plugin_modules):
    monkeypatch.setenv("PPTARENA_PLUGINS", "pptarena_figures_plugins")
    reset_registry()
    yield
    reset_registry()


def _index(root: Path) -> Path:
    cases = []
    for n, categories in CATEGORIES.items():
        for kind in ("Original", "GroundTruth"):
            (root / kind).mkdir(parents=True, exist_ok=True)
            Presentation().save(str(root / kind / f"deck {n}.pptx"))
        cases.append(
            {
                "name": f"Case {n}: Edit & check",
                "prompt": f"Do {n}.",
                "original": f"Original/deck {n}.pptx",
                "ground_truth": f"GroundTruth/deck {n}.pptx",
                "category": categories,
            }
        )
    (root / "evaluation_pairs_refined.json").write_text(json.dumps(cases), encoding="utf-8")
    (root / "agent_bench").mkdir()
    names = [f"Case {n}: Edit & check" for n in SUBSET]
    (root / "agent_bench" / "subset25.json").write_text(json.dumps(names), encoding="utf-8")
    return root


def test_dataset_describes_its_splits(tmp_path):
    root = _index(tmp_path / "arena")
    both = load_pptarena_tasks(root, subset=Path("agent_bench/subset25.json"), subset_only=False)
    assert len(both) == 6
    lb = {t.id: t.metadata["leaderboard"] for t in both}
    assert lb["case-1"]["splits"] == ["full", "subset25"] and lb["case-2"]["splits"] == ["full"]
    assert lb["case-2"]["categories"] == ["Content", "Layout"]
    sizes = lb["case-1"]["sizes"]
    assert sizes["full"]["cases"] == 6 and sizes["subset25"]["cases"] == 3
    assert sizes["full"]["categories"] == {
        "Content": 3,
        "Layout": 2,
        "Styling": 1,
        "Structure": 1,
        "Interactivity": 0,
    }
    only = load_pptarena_tasks(root, subset=Path("agent_bench/subset25.json"))  # the subset is the run
    assert [t.id for t in only] == ["case-1", "case-3", "case-5"]
    assert set(only[0].metadata["leaderboard"]["sizes"]) == {"subset25"}  # no Full Set view
    plain = load_pptarena_tasks(root, ids=["case-1"])
    assert plain[0].metadata["leaderboard"]["sizes"]["full"]["cases"] == 6  # the benchmark's size


@pytest.fixture
def run_dir(tmp_path, figures_plugin) -> Path:
    root = _index(tmp_path / "arena")
    scores = {f"case-{n}": [i, v] for n, (i, v) in SCORES.items()}
    cfg = write_run_config(
        tmp_path / "run.toml",
        run={"jobs": 1},
        dataset=use(
            "pptarena",
            root=str(root),
            subset="agent_bench/subset25.json",
            subset_only=False,
            ids=["case-1", "case-2", "case-3", "case-4", "case-6"],
        ),
        agents=["noop"],
        judges=[use("ifvq", label="dual", scores=scores, fail=["case-3"])],
    )
    out = tmp_path / "run"
    Runner(load_config(cfg, get_registry()), get_registry(), out, quiet=True).run()
    return out


def _f(score, if_pct, vq_pct, mean_scored, coverage, scored, cases) -> dict:
    return {
        "score_pct": score,
        "if_pct": if_pct,
        "vq_pct": vq_pct,
        "mean_scored_pct": mean_scored,
        "coverage_pct": coverage,
        "scored": scored,
        "cases": cases,
    }


@pytest.mark.slow
def test_leaderboard_figures_by_hand(run_dir):
    splits = json.loads((run_dir / "summary.json").read_text())["leaderboard_splits"]["dual"]
    # per case (IF%, VQ%, case%): 1 (100, 80, 90); 2 (60, 50, 55); 3 unscored; 4 clamped (100, 0, 50);
    # 5 missing; 6 (0, 0, 0)
    full = splits["full"]
    assert full["title"] == "Full Set" and full["cases"] == 6
    # score 195/6, IF 260/6, VQ 130/6, over scored 195/4, coverage 4/6
    assert full["agents"]["noop"] == _f(32.5, 43.3, 21.7, 48.8, 66.7, 4, 6)
    cats = full["categories"]
    assert set(cats) == {"Content", "Layout", "Styling", "Structure"}  # Interactivity has no case
    assert cats["Content"]["agents"]["noop"] == _f(65.0, 86.7, 43.3, 65.0, 100.0, 3, 3)  # cases 1, 2, 4
    assert cats["Layout"]["agents"]["noop"] == _f(27.5, 30.0, 25.0, 27.5, 100.0, 2, 2)  # cases 2, 6
    assert cats["Styling"]["agents"]["noop"] == _f(0.0, 0.0, 0.0, None, 0.0, 0, 1)  # unscored case 3
    assert cats["Structure"]["agents"]["noop"] == _f(0.0, 0.0, 0.0, None, 0.0, 0, 1)  # missing case 5
    subset = splits["subset25"]  # cases 1, 3, 5
    assert subset["agents"]["noop"] == _f(30.0, 33.3, 26.7, 90.0, 33.3, 1, 3)
    assert set(subset["categories"]) == {"Content", "Styling", "Structure"}
    assert subset["categories"]["Content"]["agents"]["noop"] == _f(90.0, 100.0, 80.0, 90.0, 100.0, 1, 1)


@pytest.mark.slow
def test_leaderboard_terminal_and_report(run_dir):
    result = CliRunner().invoke(cli, ["report", str(run_dir), "--no-render"])
    assert result.exit_code == 0, result.output
    assert "PPTArena leaderboard · Full Set (6 cases) · dual" in result.output
    assert "PPTArena leaderboard · Subset subset25 (3 cases) · dual" in result.output
    full = result.output.split("PPTArena leaderboard · Full Set (6 cases)")[1]
    assert all(cell in full.split("\n\n")[0] for cell in ("32.5", "43.3", "21.7", "48.8", "66.7", "4/6"))
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "PPTArena leaderboard · Full Set (6 cases)" in html and "48.8" in html and "Content (3)" in html


def test_export_pptarena_csv(run_dir, tmp_path):
    out = tmp_path / "csv"
    result = CliRunner().invoke(cli, ["export", "pptarena-csv", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "noop_judge_results.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["pair_name"] for r in rows] == [f"Case {n}: Edit & check" for n in (1, 2, 3, 4, 6)]
    by_name = {r["pair_name"]: r for r in rows}
    first = by_name["Case 1: Edit & check"]
    assert (float(first["instruction_following_score"]), float(first["visual_quality_score"])) == (5, 4)
    assert first["instruction_following_reason"] == "if of case-1" and first["llm_engine"] == "noop"
    assert first["judge_model"] == "table/model"
    unscored = by_name["Case 3: Edit & check"]  # PPTArena drops a row without scores: it counts 0
    assert unscored["instruction_following_score"] == "" and "no verdict" in unscored["visual_quality_reason"]
    assert list(rows[0]) == [
        "timestamp",
        "pair_name",
        "llm_engine",
        "generation_time_seconds",
        "judge_model",
        "judge_time_seconds",
        "instruction_following_score",
        "visual_quality_score",
        "instruction_following_reason",
        "visual_quality_reason",
    ]
    missing = CliRunner().invoke(cli, ["export", "pptarena-csv", str(run_dir), "--judge", "other"])
    assert missing.exit_code != 0 and "gave no IF/VQ scores" in missing.output


def test_epochs_weigh_each_attempt_by_one_over_attempts():
    """Two attempts of a case, one scored (IF 5, VQ 4) and one not: the case counts half."""
    from pptarena.run.statistics.split_figures import figures, metric_pct

    assert (metric_pct(7), metric_pct(-2), metric_pct(2.5)) == (100.0, 0.0, 50.0)
    half = figures({"case-1": [(100.0, 80.0), None], "case-2": []}, cases=2)
    # sums: case% 0.5 * 90 = 45, IF% 50, VQ% 40, scored 0.5
    assert half == {
        "score_pct": 22.5,
        "if_pct": 25.0,
        "vq_pct": 20.0,
        "mean_scored_pct": 90.0,
        "coverage_pct": 25.0,
        "scored": 0.5,
        "cases": 2,
    }
