"""Reporters (issue 33, item 6): the ``register_reporters`` hook, ``[[reporters]]`` tables and
:func:`pptarena.run.folder.reporting.report_run` on a real finished run.

The reporters here are test plugins registered for the module's duration: one that records what
it is handed, one that raises, one whose package is "missing". The built-in MLflow and W&B
reporters are tested against the real packages in test_reporters_mlflow_wandb.py.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

import pptarena
from pptarena import hookspecs
from pptarena.run.configuration.config import ConfigError, load_config
from pptarena.run.configuration.registry import KINDS, SINGULAR, get_registry, reset_registry
from pptarena.run.folder.reporting import (
    FinishedRun,
    Reporter,
    check_reporters,
    read_finished_run,
    report_run,
    report_run_dir,
)
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.paths import PLUGIN_MODULES

SECRET = "s3cr3t-reporter-token-4711"
RECORDED: list[FinishedRun] = []


class RecordingReporter:
    """Keeps what it is handed; its line (deliberately) names its secret option."""

    class Options(pptarena.Options):
        note: str = ""
        token: SecretStr | None = None

    def __init__(self, options, context):
        self.options, self.context = options, context

    def report(self, run: FinishedRun) -> str:
        RECORDED.append(run)
        token = self.options.token.get_secret_value() if self.options.token else ""
        return f"recorded {run.name}: {len(run.rows)} rows {self.options.note} token={token}"


class ExplodingReporter:
    """Raises a two-line error from ``report``."""

    Options = pptarena.Options

    def __init__(self, options, context):
        pass

    def report(self, run: FinishedRun) -> str:
        raise RuntimeError("tracker down\nsecond line of the traceback text")


class MissingPackageReporter:
    """Cannot start here: its package is "not installed"."""

    Options = pptarena.Options

    def __init__(self, options, context):
        raise pptarena.ComponentUnavailable("fancytracker is not available (install pptarena[fancy])")

    def report(self, run: FinishedRun) -> str:  # pragma: no cover - never built
        return "unreachable"


class ReporterPlugin:
    """The test plugin (registered by hand for this module)."""

    @pptarena.hookimpl
    def register_reporters(self, register):
        register("recording", RecordingReporter)
        register("exploding", ExplodingReporter)
        register("missing", MissingPackageReporter)


def reporters_toml(reporters: list) -> str:
    """The fake run's config (retitle, noop and crash on two tasks) with ``[[reporters]]`` tables."""
    return fake_run_toml(2, ["retitle", "noop", "crash"], reporters=reporters)


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    """fakeplugins and the test reporters in the process registry, for the whole module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(PLUGIN_MODULES))
        mp.setenv("PYTHONPATH", str(PLUGIN_MODULES))
        mp.setenv("PPTARENA_PLUGINS", "fakeplugins")
        mp.setenv("PPTARENA_CACHE", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("PPTARENA_TEST_REPORTER_TOKEN", SECRET)
        reset_registry()
        registry = get_registry()
        registry.register_plugin(ReporterPlugin(), "test-reporters")
        yield registry
        reset_registry()


@pytest.fixture(scope="module")
def finished(plugins, tmp_path_factory):
    """``(config path, run folder)`` of one real finished run whose config names a recording reporter."""
    base = tmp_path_factory.mktemp("reporting")
    cfg = write_run_config(
        base / "fake.toml",
        reporters_toml([use("recording", note="hello", token={"env": "PPTARENA_TEST_REPORTER_TOKEN"})]),
    )
    run_dir = base / "run"
    Runner(load_config(cfg, plugins), plugins, run_dir, quiet=True).run()
    (run_dir / "report.html").write_text("<html>the report</html>", encoding="utf-8")
    return cfg, run_dir


def load(tmp_path: Path, registry, reporters: list) -> object:
    """A config naming ``reporters`` (written beside the test's files)."""
    return load_config(write_run_config(tmp_path / "r.toml", reporters_toml(reporters)), registry)


def snapshot(run_dir: Path) -> dict[str, bytes]:
    """The run's own files, to show a reporter changed none of them."""
    return {
        name: (run_dir / name).read_bytes() for name in ("results.jsonl", "summary.json", "manifest.json")
    }


# --------------------------------------------------------------------------- the hook and the kind


def test_the_hook_is_a_documented_kind():
    assert "reporters" in KINDS and SINGULAR["reporters"] == "reporter"
    doc = hookspecs.register_reporters.__doc__
    assert doc and "register(" in doc and "FinishedRun" in doc


def test_the_test_reporters_are_registered(plugins):
    assert {"recording", "exploding", "missing"} <= set(plugins.names("reporters"))
    info = plugins.plugins["test-reporters"]
    assert info.components == {"reporters": ["recording", "exploding", "missing"]}


# --------------------------------------------------------------------------- config tables


def test_reporter_tables_are_validated_like_components(plugins, tmp_path):
    config = load(tmp_path, plugins, [use("recording", label="first", note="x"), use("exploding")])
    assert [(r.use, r.label, r.key_path) for r in config.reporters] == [
        ("recording", "first", "reporters[0]"),
        ("exploding", "exploding", "reporters[1]"),
    ]
    assert config.reporters[0].options.note == "x"
    assert [c.kind for c in config.components()][-2:] == ["reporters", "reporters"]


def test_a_config_without_reporters_has_none(plugins, tmp_path):
    config = load_config(write_run_config(tmp_path / "r.toml", fake_run_toml(2, ["noop"])), plugins)
    assert config.reporters == []


@pytest.mark.parametrize(
    ("reporters", "expected"),
    [
        ([use("recording", nope=1)], "reporters[0].nope"),
        ([use("recordnig")], "reporters[0].use = 'recordnig'"),
        ([use("recording"), use("recording")], "label 'recording' is used twice"),
        ([{"note": "no use"}], "reporters[0].use: missing"),
    ],
)
def test_a_bad_reporter_table_is_a_config_error_naming_it(plugins, tmp_path, reporters, expected):
    with pytest.raises(ConfigError) as err:
        load(tmp_path, plugins, reporters)
    assert expected in str(err.value)


def test_an_unknown_reporter_suggests_the_installed_ones(plugins, tmp_path):
    with pytest.raises(ConfigError) as err:
        load(tmp_path, plugins, [use("recordnig")])
    assert "Did you mean: recording?" in str(err.value)


# --------------------------------------------------------------------------- report_run


def test_a_reporter_gets_the_whole_finished_run(plugins, finished):
    cfg, run_dir = finished
    config = load_config(cfg, plugins)
    RECORDED.clear()
    messages = report_run(config, plugins, run_dir, None)
    (run,) = RECORDED
    assert run.run_dir == run_dir.resolve() and run.name == "run"
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted((r["agent"], r["task_id"]) for r in rows) == [(r["agent"], r["task_id"]) for r in run.rows]
    assert run.rows == sorted(rows, key=lambda r: (r["agent"], r["task_id"], r["epoch"]))
    assert run.summary == json.loads((run_dir / "summary.json").read_text())
    assert run.manifest == json.loads((run_dir / "manifest.json").read_text())
    assert run.report_html == run_dir.resolve() / "report.html"
    assert set(run.files) == {"results.jsonl", "summary.json", "manifest.json", "report.html"}
    assert run.judges == ["title"]
    # the config as stored: the secret is a reference by name, its value is nowhere
    assert run.config["reporters"][0]["token"] == {"env": "PPTARENA_TEST_REPORTER_TOKEN"}
    assert SECRET not in json.dumps(run.config) and SECRET not in json.dumps(run.manifest)
    # the reporter's line is shown, its secret masked
    (line,) = messages
    assert line.startswith("recorded run: 6 rows hello token=") and SECRET not in line


def test_the_summary_handed_over_is_the_one_given(plugins, finished):
    cfg, run_dir = finished
    RECORDED.clear()
    report_run(load_config(cfg, plugins), plugins, run_dir, {"agents": {}, "judges": ["title"], "mine": 1})
    assert RECORDED[0].summary == {"agents": {}, "judges": ["title"], "mine": 1}


def test_a_failing_reporter_is_one_warning_line_and_the_run_is_intact(plugins, finished, tmp_path):
    _, run_dir = finished
    before = snapshot(run_dir)
    config = load(tmp_path, plugins, [use("exploding"), use("missing"), use("recording")])
    RECORDED.clear()
    messages = report_run(config, plugins, run_dir, None)
    assert len(messages) == 3
    boom, missing, recorded = messages
    assert boom == (
        "warning: reporter 'exploding' (exploding) failed: RuntimeError: tracker down; "
        "the run's results are unaffected"
    )
    assert missing.startswith("warning: reporter 'missing' (missing) could not start: ComponentUnavailable: ")
    assert "fancytracker is not available (install pptarena[fancy])" in missing
    assert recorded.startswith("recorded run:") and len(RECORDED) == 1  # the others do not stop it
    assert all("\n" not in m for m in messages)
    assert snapshot(run_dir) == before


def test_a_reporter_raising_system_exit_does_not_end_the_process(plugins, finished, tmp_path, monkeypatch):
    _, run_dir = finished
    monkeypatch.setattr(ExplodingReporter, "report", lambda self, run: (_ for _ in ()).throw(SystemExit(3)))
    (line,) = report_run(load(tmp_path, plugins, [use("exploding")]), plugins, run_dir, None)
    assert line.startswith("warning: reporter 'exploding' (exploding) failed: SystemExit")


def test_a_run_folder_that_cannot_be_read_is_one_warning(plugins, tmp_path, monkeypatch):
    import pptarena.run.folder.reporting as reporting

    def unreadable(run_dir, summary=None):
        raise OSError(f"[Errno 13] Permission denied: '{run_dir}'")

    monkeypatch.setattr(reporting, "read_finished_run", unreadable)
    config = load(tmp_path, plugins, [use("recording")])
    (line,) = report_run(config, plugins, tmp_path / "run", None)
    assert line.startswith("warning: reporters skipped: the run folder could not be read:")


def test_no_reporters_means_nothing_is_read(plugins, tmp_path):
    config = load_config(write_run_config(tmp_path / "r.toml", fake_run_toml(2, ["noop"])), plugins)
    started = time.perf_counter()
    assert report_run(config, plugins, tmp_path / "no-such-run", None) == []
    assert time.perf_counter() - started < 0.5


def test_check_reporters_names_those_that_cannot_start_before_the_run(plugins, tmp_path):
    config = load(tmp_path, plugins, [use("recording"), use("missing")])
    (line,) = check_reporters(config)
    assert line.startswith("warning: reporter 'missing' (missing) cannot start: ComponentUnavailable: ")
    assert line.endswith("; the run goes on without it")
    assert check_reporters(load(tmp_path, plugins, [use("recording")])) == []


def test_report_run_dir_uses_the_reporters_the_manifest_recorded(plugins, finished, tmp_path):
    _, run_dir = finished
    RECORDED.clear()
    (line,) = report_run_dir(plugins, run_dir)
    assert line.startswith("recorded run: 6 rows hello token=") and SECRET not in line
    assert RECORDED[0].rows == read_finished_run(run_dir).rows
    copy = shutil.copytree(run_dir, tmp_path / "copy")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["config"]["reporters"] = [{"use": "recording", "bogus": 1}]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    (line,) = report_run_dir(plugins, copy)
    assert line.startswith("warning: reporter table skipped: reporters[0].bogus")
    manifest["config"].pop("reporters")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert report_run_dir(plugins, copy) == []


# --------------------------------------------------------------------------- what a reporter reads


def test_the_finished_run_helpers(finished):
    _, run_dir = finished
    run = read_finished_run(run_dir)
    assert isinstance(run, FinishedRun)
    assert run.steps() == {("task-00", 1): 0, ("task-01", 1): 1}
    columns, table = run.pair_table()
    assert columns == [
        "step",
        "agent",
        "task_id",
        "epoch",
        "status",
        "title",
        "duration_s",
        "cost_usd",
        "error",
    ]
    by_pair = {(r[1], r[2]): dict(zip(columns, r, strict=True)) for r in table}
    assert len(table) == 6
    assert by_pair[("retitle", "task-01")]["title"] == 1.0 and by_pair[("retitle", "task-01")]["step"] == 1
    assert (
        by_pair[("crash", "task-00")]["status"] == "agent_error"
        and by_pair[("crash", "task-00")]["title"] is None
    )
    assert by_pair[("crash", "task-00")]["error"]
    scores = {(a, j, s): v for a, j, s, v in run.pair_scores()}
    expected = {
        (r["agent"], "title", run.steps()[(r["task_id"], 1)]): r["scores"]["title"]["score"]
        for r in run.rows
        if r["status"] == "scored"
    }
    assert scores == expected and ("retitle", "title", 0) in scores
    metrics = run.summary_metrics()
    retitle = run.summary["agents"]["retitle"]
    assert metrics["retitle/title/mean"] == retitle["judges"]["title"]["mean"]
    assert metrics["retitle/title/n"] == retitle["judges"]["title"]["n"]
    assert metrics["crash/status/agent_error"] == 2.0
    assert metrics["retitle/attempts"] == 2.0 and "cost_usd" in metrics
    flat = run.flat_config()
    assert flat["agents.0.use"] == "retitle" and flat["dataset.count"] == 2
    assert flat["reporters.0.token"] == '{"env": "PPTARENA_TEST_REPORTER_TOKEN"}'
    assert len(run.digest) == 16 and run.digest == read_finished_run(run_dir).digest


def test_a_reporter_class_satisfies_the_protocol():
    assert isinstance(RecordingReporter(RecordingReporter.Options(), None), Reporter)


# --------------------------------------------------------------------------- the docs' example


def test_the_docs_example_reporter_works(plugins, finished, tmp_path, monkeypatch):
    """docs/reporters.md's SlackReporter, as printed, registers, validates and posts (the post is caught)."""
    import re
    import types
    import urllib.request

    from tests.support.paths import ROOT

    page = (ROOT / "docs" / "reporters.md").read_text(encoding="utf-8")
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", page, flags=re.S) if "class SlackReporter" in c]
    module = types.ModuleType("docs_slack_reporter")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, "docs/reporters.md", "exec", dont_inherit=True), module.__dict__)
    plugins.register_plugin(module, "docs-slack")
    try:
        posted = []
        monkeypatch.setattr(urllib.request, "urlopen", lambda request, timeout: posted.append(request))
        monkeypatch.setenv("SLACK_WEBHOOK", "https://hooks.example/T000/secret-path")
        _, run_dir = finished
        config = load(tmp_path, plugins, [use("slack", webhook={"env": "SLACK_WEBHOOK"})])
        assert report_run(config, plugins, run_dir, None) == ["Slack: posted run"]
        (request,) = posted
        assert request.full_url == "https://hooks.example/T000/secret-path"
        text = json.loads(request.data)["text"]
        assert text.startswith("run: ") and "retitle/title/mean 1.000" in text
    finally:
        plugins.unregister_plugin("docs-slack")
