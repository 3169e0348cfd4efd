"""Every command that reads a run folder works with paths relative to the shell's folder (issue 33).

One small real run of the demo config (examples/demo.toml: the demo dataset, noop and oracle, real
LibreOffice renders, the rubric and structural judges; plus the dual judge on a scripted backend, so
``arena export pptarena-csv`` has IF/VQ scores to write) is made and then read by every command,
each given relative paths from a working folder that is neither the repository nor the run
(``monkeypatch.chdir``). The rubric judge runs its checks in a bwrap jail: ``arena rescore`` and
``arena meta-eval --repeat`` with a relative run path used to hand bwrap a relative bind source and
turn every rubric verdict into an infra error ("bwrap: Can't find source path").
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from tests.support.config import run_toml, use
from tests.support.report_fixtures import rows_of

TASK = "birds-title-colour"
DUAL_REPLIES = ['{"score": 4, "reason": "fine"}', '{"score": 2, "reason": "meh"}']


def _demo_config() -> str:
    """examples/demo.toml narrowed to one task, with the dual judge on a scripted backend added."""
    demo = (Path(__file__).parents[2] / "examples" / "demo.toml").read_text(encoding="utf-8")
    assert 'use = "rubric"' in demo and 'use = "structural"' in demo  # what this test relies on
    return run_toml(
        run={"jobs": 2, "tasks": [TASK]},
        dataset="demo",
        agents=["noop", "oracle"],
        renderer="libreoffice",
        judges=["rubric", "structural", use("dual", model="scripted/judge", chunk_size=50)],
        backends={"scripted": {"responses": DUAL_REPLIES, "on_exhausted": "cycle"}},
    )


def _arena(*args: str):
    """``arena ARGS`` in this process; the result, its output shown when it fails."""
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, f"arena {' '.join(args)} exited {res.exit_code}:\n{res.output}"
    return res


def _no_jail_errors(rows: list[dict]) -> None:
    for row in rows:
        assert "bwrap" not in str(row.get("error")), row["error"]
        assert row["status"] == "scored", (row["agent"], row["status"], row.get("error"))


@pytest.mark.slow
def test_every_command_takes_relative_paths(tmp_path, monkeypatch):
    if not shutil.which("soffice"):
        pytest.skip("LibreOffice (soffice) is not installed")
    lab = tmp_path / "lab"  # the shell's folder: the configs and runs are below it, given relatively
    (lab / "configs").mkdir(parents=True)
    (lab / "configs" / "demo.toml").write_text(_demo_config(), encoding="utf-8")
    (lab / "configs" / "rubric-only.toml").write_text(run_toml(judges=["rubric"]), encoding="utf-8")
    monkeypatch.chdir(lab)
    run = "runs/X"

    # run
    _arena("run", "--config", "configs/demo.toml", "--out", run, "--quiet")
    rows = rows_of(lab / run)
    assert {r["agent"] for r in rows} == {"noop", "oracle"}
    _no_jail_errors(rows)

    # rescore: a judges-only config, the rubric judge's jail given the recorded predictions
    _arena("rescore", run, "--config", "configs/rubric-only.toml", "--quiet")
    rescored = rows_of(lab / run / "rescore" / "rubric-only")
    _no_jail_errors(rescored)
    assert {r["agent"]: r["scores"]["rubric"]["score"] for r in rescored} == {"noop": 0.0, "oracle": 1.0}

    # meta-eval: labels and repeats of the rubric judge (its jail again)
    (lab / "labels.csv").write_text(f"task_id,agent,label\n{TASK},noop,0\n{TASK},oracle,1\n")
    res = _arena(
        "meta-eval", "--run", run, "--labels", "labels.csv", "--repeat", "2",
        "--config", "configs/rubric-only.toml", "--json", "--bootstrap", "50",
    )  # fmt: skip
    report = json.loads(res.stdout)
    assert report["warnings"] == []  # no failed judge call among the repeats
    assert report["repeat"]["series"]["rubric"]["items"] == 2
    assert report["agreement"]["rubric"]["n"] == 2 and (lab / run / "meta-eval" / "meta_eval.json").is_file()

    # report: the page's slide links resolve from where the page is
    _arena("report", run, "--max-renders", "10")
    page = lab / run / "report.html"
    links = re.findall(r'<img[^>]+src="([^"]+)"', page.read_text(encoding="utf-8"))
    assert links and all((page.parent / link).is_file() for link in links)
    _arena("report", run, "--no-render", "--out", "pages/x.html", "--layout", "pages")
    assert (lab / "pages" / "x.html").is_file()

    # compare (a run with its re-score, the rubric paired by label)
    res = _arena("compare", run, f"{run}/rescore/rubric-only", "--json", "--bootstrap", "50")
    pairs = json.loads(res.stdout)["comparisons"][0]["pairs"]
    assert {(p["agent"], p["judge_a"], p["diff"]) for p in pairs} == {
        ("noop", "rubric", 0.0),
        ("oracle", "rubric", 0.0),
    }

    # export pptarena-csv, to the default folder and to a relative --out
    _arena("export", "pptarena-csv", run)
    assert (lab / run / "export" / "oracle_judge_results.csv").is_file()
    _arena("export", "pptarena-csv", run, "--out", "csv")
    assert (lab / "csv" / "noop_judge_results.csv").is_file()
    _arena("export", "scores", run, "--format", "jsonl", "--out", "scores.jsonl")
    assert {json.loads(line)["agent"] for line in (lab / "scores.jsonl").read_text().splitlines()} == {
        "noop",
        "oracle",
    }

    # label new / label stats
    res = _arena("label", "new", "--run", run, "--annotators", "alice,bob", "--name", "rel")
    campaign = lab / run / "campaigns" / "rel.sqlite"
    assert campaign.is_file() and f"arena view {run}" in res.output
    _arena("label", "stats", f"{run}/campaigns/rel.sqlite", "--json")

    # view: the app on the relative folder holding the runs, its pages and files
    pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
    from starlette.testclient import TestClient

    from pptarena.view.app import ViewState, create_app

    state = ViewState([Path("runs")], render=True)
    assert len(state.runs) == 1 and len(state.campaigns) == 1
    (served,) = state.runs.values()
    assert served.path == (lab / run).resolve()
    client = TestClient(create_app(state), base_url="http://127.0.0.1:8000")
    assert client.get("/").status_code == 200
    assert client.get(f"/r/{served.id}").status_code == 200
    pair = client.get(f"/r/{served.id}/pair", params={"task": TASK, "agent": "oracle"})
    assert pair.status_code == 200 and "rendering is impossible" not in pair.text
    images = re.findall(r'<img[^>]+src="(/r/[^"]+)"', pair.text)
    assert images and all(client.get(src).status_code == 200 for src in images[:4])
