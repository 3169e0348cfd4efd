"""Re-scoring a real run's predictions with other judges: results apart, same schema, comparable,
resumable."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pptarena.cli.main import cli
from pptarena.report.rescore import RescoreError, Rescorer, rescore
from pptarena.run.configuration.registry import get_registry
from tests.support.config import run_toml, use, write_run_config
from tests.support.report_fixtures import rows_of

ALT_JUDGES = (use("title", label="title-again"), use("title", label="buggy", fail="judge"))


def alt_config(judges=ALT_JUDGES) -> str:
    """Another config for the fake run: the title judge under another label and a buggy one."""
    return run_toml(dataset=use("fake", root="data"), renderer="dummy", agents=["noop"], judges=judges)


@pytest.mark.slow
def test_rescore_with_other_judges_keeps_results_apart(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=2)
    before = (run_dir / "results.jsonl").read_bytes()
    alt = tmp_path / "alt.toml"
    write_run_config(alt, alt_config())
    out, summary = rescore(run_dir, get_registry(), config_path=alt)
    assert out == run_dir / "rescore" / "alt"
    assert (run_dir / "results.jsonl").read_bytes() == before  # the run itself is untouched
    original = {(r["agent"], r["task_id"]): r for r in rows_of(run_dir)}
    again = {(r["agent"], r["task_id"]): r for r in rows_of(out)}
    assert set(again) == set(original)
    for key, row in again.items():
        assert set(row) >= {
            "agent",
            "task_id",
            "status",
            "scores",
            "error",
            "duration_s",
            "usage",
            "metadata",
            "prediction",
        }
        assert row["prediction"] == original[key].get("prediction")
        if original[key]["status"] == "agent_error":  # crash: copied, not judged
            assert row["status"] == "agent_error" and row["scores"] == {} and "agent bug" in row["error"]
        else:  # the same title judge under another label agrees; the buggy one is a judge_error
            assert row["scores"]["title-again"]["score"] == original[key]["scores"]["title"]["score"]
            assert row["status"] == "judge_error" and "buggy" in row["error"]
    assert summary.agents["retitle"].judges["title-again"].mean_all == 1.0
    assert summary.agents["crash"].status["agent_error"] == 2
    pair = out / "tasks" / "retitle" / "task-00"
    assert (pair / "verdicts.json").is_file() and (pair / "judges" / "title-again" / "looked.json").is_file()
    assert not (run_dir / "tasks" / "retitle" / "task-00" / "judges" / "title-again").exists()
    assert (out / "summary.json").is_file() and '"kind": "rescore"' in (out / "manifest.json").read_text()
    # resuming adds nothing
    rescore(run_dir, get_registry(), config_path=alt)
    assert len((out / "results.jsonl").read_text().splitlines()) == 6


@pytest.mark.slow
def test_rescore_with_the_runs_own_judges_and_cli(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    res = CliRunner().invoke(cli, ["rescore", str(run_dir), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "Re-score self" in res.output and "rescore/self · title" in res.output
    rows = {r["agent"]: r for r in rows_of(run_dir / "rescore" / "self")}
    assert (
        rows["retitle"]["scores"]["title"]["score"] == 1.0 and rows["noop"]["scores"]["title"]["score"] == 0.0
    )
    # the report shows the re-score beside the run
    rep = CliRunner().invoke(cli, ["report", str(run_dir), "--no-render"])
    assert rep.exit_code == 0 and "Re-scores" in rep.output
    html = (run_dir / "report.html").read_text()
    assert "Re-score self" in html and "rescore/self · title: score distribution" in html


@pytest.mark.slow
def test_rescore_rejects_bad_names_and_configs_without_judges(tmp_path, fake_plugins, fake_run):
    run_dir = fake_run(count=1)
    try:
        Rescorer(run_dir, get_registry(), name="../escape")
    except RescoreError as exc:
        assert "../escape" in str(exc)
    else:
        raise AssertionError("a name with '/' was accepted")
    nojudge = tmp_path / "nojudge.toml"
    write_run_config(nojudge, alt_config(judges=()))
    res = CliRunner().invoke(cli, ["rescore", str(run_dir), "--config", str(nojudge)])
    assert res.exit_code != 0 and "has no [[judges]]" in res.output


@pytest.mark.slow
def test_rescore_checks_its_judges_model_backends_first(
    tmp_path, fake_plugins, fake_run, llm_server, monkeypatch
):
    from tests.support.stub_llm_server import TEST_API_KEY, Fail

    run_dir = fake_run(count=1)
    monkeypatch.setenv("STUB_KEY", TEST_API_KEY)
    llm_server.models_action = Fail(401, "Incorrect API key provided: {api_key}")
    cfg = tmp_path / "model.toml"
    write_run_config(
        cfg,
        run_toml(
            dataset=use("fake", root="data"),
            renderer="dummy",
            agents=["noop"],
            judges=[use("dual", label="vlm", model="local/gpt-test")],
            backends={
                "local": use("openai", base_url=llm_server.openai_base_url, api_key={"env": "STUB_KEY"})
            },
        ),
    )
    res = CliRunner().invoke(cli, ["rescore", str(run_dir), "--config", str(cfg), "--quiet"])
    assert res.exit_code == 2, res.output
    assert "preflight failed: local/gpt-test (base_url http://127.0.0.1:" in res.stderr
    assert "HTTP 401" in res.stderr and TEST_API_KEY not in res.output
    assert llm_server.requests == [] and not (run_dir / "rescore" / "model" / "results.jsonl").exists()
