"""What the commands reading a run folder show and accept (issue 33, item 5): the agent's note on its
prediction in report.html and in ``arena view``, ``meta-eval --config`` taking the judges-only config
``rescore`` takes, and ``compare`` naming what it left out."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.report.html import write_report
from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.report_fixtures import rows_of

NOTE = "Retitled slide 1; <b>kept</b> the subtitle"
JUDGES_ONLY = """
# only what re-judging needs: the dataset and the agents are the run's own
[renderer]
use = "dummy"
[[judges]]
use = "title"
label = "title-again"
"""


def _with_note(run_dir, agent: str, note: str) -> None:
    """Give ``agent``'s result lines the key ``notes`` (``Prediction.notes``, as a result line holds it)."""
    lines = rows_of(run_dir)
    for row in lines:
        if row["agent"] == agent:
            row["notes"] = note
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


@pytest.mark.slow
def test_the_agents_note_is_shown_in_the_report_and_the_view(fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    _with_note(run_dir, "retitle", NOTE)
    shown = "Retitled slide 1; &lt;b&gt;kept&lt;/b&gt; the subtitle"  # escaped, never markup
    page = write_report(run_dir, render=False, layout="single").read_text(encoding="utf-8")
    assert shown in page and "<b>kept" not in page
    index = write_report(run_dir, out=run_dir / "pages" / "index.html", render=False, layout="pages")
    task_pages = [p.read_text(encoding="utf-8") for p in index.parent.rglob("*.html") if p != index]
    assert sum(shown in p for p in task_pages) == 1

    pytest.importorskip("starlette", reason="the view extra (starlette) is not installed")
    from starlette.testclient import TestClient

    from pptarena.view.app import ViewState, create_app

    state = ViewState([run_dir], render=False)
    client = TestClient(create_app(state), base_url="http://127.0.0.1:8000")
    (rid,) = state.runs
    pair = client.get(f"/r/{rid}/pair", params={"task": "task-00", "agent": "retitle"})
    assert pair.status_code == 200 and shown in pair.text
    other = client.get(f"/r/{rid}/pair", params={"task": "task-00", "agent": "noop"})
    assert other.status_code == 200 and shown not in other.text and "unchanged input deck" in other.text


@pytest.mark.slow
def test_meta_eval_takes_the_judges_only_config_rescore_takes(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    cfg = tmp_path / "configs" / "again.toml"
    cfg.parent.mkdir()
    cfg.write_text(JUDGES_ONLY)
    rescored = CliRunner().invoke(cli, ["rescore", str(run_dir), "--config", str(cfg), "--quiet"])
    assert rescored.exit_code == 0, rescored.output
    res = CliRunner().invoke(
        cli, ["meta-eval", "--run", str(run_dir), "--repeat", "2", "--config", str(cfg), "--json"]
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert set(report["repeat"]["series"]) == {"title-again"}
    assert report["repeat"]["series"]["title-again"]["items"] == 2  # retitle and noop; crash left no deck
    empty = tmp_path / "configs" / "none.toml"
    empty.write_text('[renderer]\nuse = "dummy"\n')
    res = CliRunner().invoke(
        cli, ["meta-eval", "--run", str(run_dir), "--repeat", "2", "--config", str(empty)]
    )
    assert res.exit_code == 1 and "has no [[judges]] to repeat" in res.output


@pytest.mark.slow
def test_compare_names_the_agents_tasks_and_judges_it_left_out(tmp_path, fake_plugins, fake_run):
    first = fake_run(count=2)  # retitle, noop, crash on task-00, task-01
    other = tmp_path / "b" / "run"
    other.parent.mkdir()
    cfg = write_run_config(
        other.parent / "b.toml",
        fake_run_toml(3, ["retitle"], judges=["title", use("title", label="title-twin")]),
    )
    Runner(load_config(cfg, get_registry()), get_registry(), other, quiet=True).run()

    res = CliRunner().invoke(cli, ["compare", str(first), str(other), "--json", "--bootstrap", "20"])
    assert res.exit_code == 0, res.output
    left = json.loads(res.stdout)["comparisons"][0]["left_out"]
    assert {(x["what"], x["run"], x.get("agent") or x.get("judge")) for x in left} == {
        ("agent", "A", "noop"),
        ("agent", "A", "crash"),
        ("judge", "B", "title-twin"),
        ("tasks", "B", "retitle"),
    }
    tasks = next(x for x in left if x["what"] == "tasks")
    assert tasks["count"] == 1 and tasks["tasks"] == ["task-02"]

    text = CliRunner().invoke(cli, ["compare", str(first), str(other), "--bootstrap", "20"]).output
    assert f"left out of run − run: agent noop is only in the first run ({first.name})" in text
    assert "agent crash is only in the first run" in text
    assert "judge title-twin of the other run (run) has no counterpart in the other run" in text
    assert "1 task(s) of agent retitle are only in the other run (run) (e.g. task-02)" in text


def test_an_agents_notes_reach_the_row_and_the_report(tmp_path, fake_plugins):
    """End to end: ``Prediction.notes`` of a real agent is kept in its row (cut at MAX_NOTES_CHARS) and
    shown, escaped, on its pair in report.html."""
    from pptarena.run.folder.records import MAX_NOTES_CHARS

    cfg = write_run_config(tmp_path / "run.toml", fake_run_toml(1, [use("noting", trusted=True)]))
    Runner(load_config(cfg, get_registry()), get_registry(), tmp_path / "run", quiet=True).run()
    rows = {r["agent"]: r for r in rows_of(tmp_path / "run")}
    assert rows["noting"]["notes"].startswith("Retitled slide 1; <b>kept</b> the subtitle. xxx")
    assert len(rows["noting"]["notes"]) == MAX_NOTES_CHARS and rows["noting"]["notes"].endswith("[... cut]")
    page = write_report(tmp_path / "run", render=False, layout="single").read_text(encoding="utf-8")
    assert "Retitled slide 1; &lt;b&gt;kept&lt;/b&gt; the subtitle" in page
