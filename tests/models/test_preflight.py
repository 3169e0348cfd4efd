"""The preflight: which backends and models a run uses, each checked once (built, then ``check(model)``)
concurrently with a short timeout; the built-in backends' ``check`` against the loopback stub; a failed
preflight stops ``arena run`` (exit 2, nothing started) and ``arena rescore``."""

from __future__ import annotations

import sys
import threading
import time
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict

from pptarena.models import ModelError, ModelRef
from pptarena.models.preflight import (
    PreflightError,
    check_backends,
    display_url,
    models_in_use,
    preflight,
    preflight_run,
)
from pptarena.types import ComponentUnavailable
from tests.support.config import fake_run_toml, use, write_run_config
from tests.support.stub_llm_server import TEST_API_KEY, Fail, Hang


class JudgeOpts(BaseModel):
    model: ModelRef
    vq_model: ModelRef | None = None
    models: list[ModelRef] = []
    notes: str = "openai/not-a-model-field"  # a plain string, but openai is configured: counted


class AgentOpts(BaseModel):
    model_config = ConfigDict(extra="allow")  # an agent from its own environment: untyped extras
    prompt_file: str = "prompts/judge.txt"  # no configured backend named "prompts": not a model


def comp(options: BaseModel) -> SimpleNamespace:
    return SimpleNamespace(options=options)


def test_models_in_use_reads_model_fields_and_model_like_strings_of_configured_backends():
    config = SimpleNamespace(
        agents=[comp(AgentOpts(model="local/llama3:8b", other="nobody/else", count=3)), comp(AgentOpts())],
        judges=[
            comp(JudgeOpts(model="openai/gpt-4o", vq_model="anthropic/claude-sonnet-4-5")),
            comp(JudgeOpts(model="openai/gpt-4o", models=["scripted/a", "openai/gpt-4o-mini"])),
        ],
        backends={"openai": object(), "local": object()},
    )
    assert models_in_use(config) == {
        "anthropic": ["claude-sonnet-4-5"],
        "local": ["llama3:8b"],
        "openai": ["gpt-4o", "gpt-4o-mini", "not-a-model-field"],
        "scripted": ["a"],
    }
    assert models_in_use(config, ("agents",)) == {"local": ["llama3:8b"]}
    assert models_in_use(SimpleNamespace(agents=[comp(AgentOpts())], judges=[], backends={})) == {}


class Fake:
    """A backend with a scripted ``check``."""

    def __init__(self, outcome=None, delay=0.0, takes_timeout=True):
        self.outcome, self.delay, self.seen = outcome, delay, []
        self.options = SimpleNamespace(
            base_url="http://user:pw-secret@10.0.0.7:8000/v1?key=zzz", api_key=None
        )
        if not takes_timeout:
            self.check = self._check_no_timeout

    def check(self, model, *, timeout=None):
        self.seen.append((model, timeout))
        return self._answer(model)

    def _check_no_timeout(self, model):
        self.seen.append((model, None))
        return self._answer(model)

    def _answer(self, model):
        if self.delay:
            time.sleep(self.delay)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def test_check_backends_reports_each_failure_and_note_on_one_line():
    ok, noted, old = Fake(), Fake("model 'x' is not in the server's model list"), Fake(takes_timeout=False)
    backends = {
        "ok": ok,
        "noted": noted,
        "old": old,
        "bad": Fake(ModelError("openai: HTTP 401: Incorrect API key provided: sk-abc...\nxyz")),
        "plain": SimpleNamespace(options=None),  # no check method: being built is the check
    }

    def build(name):
        if name == "missing":
            raise ComponentUnavailable(
                "the openai backend needs the openai SDK; install with: pip install 'x'"
            )
        return backends[name]

    report = check_backends(
        {
            "ok": ["m1", "m2"],
            "noted": ["x"],
            "old": ["y"],
            "bad": ["gpt-4o"],
            "plain": ["p"],
            "missing": ["a", "b"],
        },
        build,
        timeout=3,
    )
    assert [(c.backend, c.model, c.ok) for c in report.failures] == [
        ("bad", "gpt-4o", False),
        ("missing", "a, b", False),
    ]
    assert sorted(ok.seen) == [("m1", 3), ("m2", 3)] and old.seen == [("y", None)]
    assert not report.ok and len(report.checks) == 7
    lines = report.lines()
    assert lines[0] == (
        "preflight failed: bad/gpt-4o (base_url http://10.0.0.7:8000/v1): "
        "openai: HTTP 401: Incorrect API key provided: sk-abc... xyz"
    )
    assert lines[1].startswith("preflight failed: missing/a, b (base_url default): the openai backend needs")
    assert lines[2] == (
        "preflight: noted/x (base_url http://10.0.0.7:8000/v1): "
        "note: model 'x' is not in the server's model list"
    )
    assert len(lines) == 3  # the checks that passed say nothing
    assert all("pw-secret" not in line and "zzz" not in line for line in lines)


def test_checks_run_concurrently_and_a_hung_check_times_out():
    slow = {name: Fake(delay=0.6) for name in ("a", "b", "c")}
    started = time.monotonic()
    report = check_backends({name: ["m"] for name in slow}, slow.__getitem__, timeout=5)
    assert report.ok and time.monotonic() - started < 1.5  # three 0.6 s checks side by side

    release = threading.Event()
    hung = Fake()
    hung.check = lambda model, timeout=None: release.wait(10)
    try:
        started = time.monotonic()
        report = check_backends({"hung": ["m"]}, lambda name: hung, timeout=0.3)
        assert time.monotonic() - started < 3
        assert [c.message for c in report.failures] == ["no answer within 0.3 s"]
    finally:
        release.set()


def test_a_failing_check_message_never_shows_the_key():
    from pydantic import SecretStr

    backend = Fake(ModelError(f"HTTP 401: bad key {TEST_API_KEY} / {TEST_API_KEY[:10]}"))
    backend.options.api_key = SecretStr(TEST_API_KEY)
    report = check_backends({"x": ["m"]}, lambda name: backend, timeout=2)
    text = "\n".join(report.lines())
    assert "HTTP 401" in text and TEST_API_KEY not in text and TEST_API_KEY[:10] not in text


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://api.openai.com/v1/", "https://api.openai.com/v1/"),
        ("http://u:p@127.0.0.1:8000/v1?key=k#f", "http://127.0.0.1:8000/v1"),
        ("http://[::1]:11434/v1", "http://[::1]:11434/v1"),
    ],
)
def test_display_url_drops_what_may_hold_a_secret(url, shown):
    assert display_url(url) == shown


# ------------------------------------------------------------------ the built-in backends' check


def test_openai_check_against_a_local_server(openai_backend, llm_server):
    backend = openai_backend()
    llm_server.models = ["gpt-test", "llama3:latest"]
    assert backend.check("gpt-test", timeout=2) is None
    assert llm_server.model_requests[-1].path == "/v1/models/gpt-test"
    assert llm_server.model_requests[-1].api_key == TEST_API_KEY
    # another name: 404 for the model, then the list is read; missing from it is a note, not a failure
    note = backend.check("llama3", timeout=2)
    assert "not in the server's model list (gpt-test, llama3:latest)" in note
    assert [r.path for r in llm_server.model_requests[-2:]] == ["/v1/models/llama3", "/v1/models"]
    llm_server.models_action = Fail(404, "no route")  # a server without /v1/models: it answered, a note
    assert "HTTP 404 to GET /models" in backend.check("anything", timeout=2)
    llm_server.models_action, llm_server.models = None, None  # the stub's default: every model exists
    assert backend.check("anything", timeout=2) is None
    assert llm_server.requests == []  # no completion was asked for


def test_openai_check_failures(openai_backend, llm_server, monkeypatch):
    from pptarena.plugins.backends.openai import OpenAIBackend

    backend = openai_backend()
    llm_server.models_action = Fail(401, "Incorrect API key provided: {api_key}")
    with pytest.raises(ModelError, match="HTTP 401") as info:
        backend.check("gpt-test", timeout=2)
    assert TEST_API_KEY not in str(info.value)
    llm_server.models_action = Fail(
        429, "You exceeded your current quota", headers={"x-ratelimit-limit-requests": "1"}
    )
    with pytest.raises(ModelError, match="quota"):
        backend.check("gpt-test", timeout=2)
    llm_server.models_action = Fail(503, "overloaded")
    assert "HTTP 503" in backend.check("gpt-test", timeout=2)
    llm_server.models_action = Hang(5)
    started = time.monotonic()
    with pytest.raises(ModelError, match="timed out"):
        backend.check("gpt-test", timeout=0.3)
    assert time.monotonic() - started < 3
    llm_server.models_action = None
    llm_server.models = ["gpt-4o"]
    monkeypatch.setattr(OpenAIBackend, "official_api", property(lambda self: True))
    with pytest.raises(ModelError, match="HTTP 404.*unknown model"):  # on the OpenAI API a 404 is final
        backend.check("gpt-4o-typo", timeout=2)
    dead = openai_backend(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelError, match="connection"):
        dead.check("gpt-test", timeout=2)


def test_openai_check_on_azure_checks_the_endpoint_and_key(openai_backend, llm_server):
    backend = openai_backend(azure_endpoint=llm_server.azure_endpoint, api_version="2024-10-21")
    llm_server.models = ["gpt-4o"]
    assert backend.check("my-deployment", timeout=2) is None  # a deployment is not a model name
    assert llm_server.model_requests[-1].path == "/openai/models"
    assert llm_server.model_requests[-1].query == {"api-version": "2024-10-21"}
    llm_server.models_action = Fail(401, "Access denied due to invalid subscription key")
    with pytest.raises(ModelError, match="HTTP 401"):
        backend.check("my-deployment", timeout=2)


def test_anthropic_check(anthropic_backend, llm_server):
    backend = anthropic_backend()
    llm_server.models = ["claude-test"]
    assert backend.check("claude-test", timeout=2) is None
    assert llm_server.model_requests[-1].path == "/v1/models/claude-test"
    assert llm_server.model_requests[-1].api_key == TEST_API_KEY
    assert "HTTP 404" in backend.check("claude-other", timeout=2)  # a base_url server: a note
    llm_server.models_action = Fail(401, "invalid x-api-key {api_key}")
    with pytest.raises(ModelError, match="HTTP 401") as info:
        backend.check("claude-test", timeout=2)
    assert TEST_API_KEY not in str(info.value)


# ------------------------------------------------------------------ a run's preflight


def config_with(tmp_path, llm_server, agents, **parts):
    from pptarena.run.configuration.config import load_config
    from pptarena.run.configuration.registry import get_registry

    backends = {"local": use("openai", base_url=llm_server.openai_base_url, api_key={"env": "STUB_KEY"})}
    path = write_run_config(tmp_path / "run.toml", fake_run_toml(1, agents, backends=backends, **parts))
    return load_config(path, get_registry()), get_registry()


def test_a_run_without_models_builds_and_asks_nothing(tmp_path, fake_plugins, monkeypatch, llm_server):
    import pptarena.run.configuration.components as components

    monkeypatch.setenv("STUB_KEY", TEST_API_KEY)
    config, registry = config_with(tmp_path, llm_server, ["noop"])  # a backend table, no model named
    monkeypatch.setattr(components, "Components", None)  # would fail if the preflight built anything
    report = preflight(config, registry)
    assert report.ok and report.checks == [] and report.lines() == []
    assert llm_server.model_requests == []


def test_preflight_of_a_config_and_preflight_run(tmp_path, fake_plugins, monkeypatch, llm_server):
    monkeypatch.setenv("STUB_KEY", TEST_API_KEY)
    llm_server.models = ["gpt-test"]
    config, registry = config_with(
        tmp_path,
        llm_server,
        [use("asker-inproc", model="local/gpt-test"), use("asker", label="b", model="scripted/x")],
    )
    report = preflight(config, registry)
    assert [(c.backend, c.model, c.ok, c.message) for c in report.checks] == [
        ("local", "gpt-test", True, ""),
        ("scripted", "x", True, ""),
    ]
    assert report.checks[0].base_url == llm_server.openai_base_url + "/"
    llm_server.models_action = Fail(401, "bad key")
    with pytest.raises(PreflightError) as info:
        preflight_run(config, registry)
    assert str(info.value).startswith("preflight failed: local/gpt-test (base_url http://127.0.0.1:")
    assert info.value.report.failures[0].model == "gpt-test"
    config.run.preflight = False
    assert preflight_run(config, registry) is None


def test_a_missing_sdk_is_one_line_naming_the_extra(tmp_path, fake_plugins, monkeypatch, llm_server):
    monkeypatch.setenv("STUB_KEY", TEST_API_KEY)
    config, registry = config_with(tmp_path, llm_server, [use("asker-inproc", model="local/gpt-test")])
    monkeypatch.setitem(sys.modules, "openai", None)  # "not installed"
    report = preflight(config, registry)
    assert report.lines() == [
        f"preflight failed: local/gpt-test (base_url {llm_server.openai_base_url}): the openai backend needs "
        "the openai SDK; install with: pip install 'pptarena[openai]'"
    ]


def test_arena_run_stops_with_exit_2_before_anything_starts(tmp_path, fake_plugins, monkeypatch, llm_server):
    from pptarena.cli.main import cli

    monkeypatch.setenv("STUB_KEY", TEST_API_KEY)
    monkeypatch.chdir(tmp_path)
    llm_server.models_action = Fail(401, "Incorrect API key provided: {api_key}")
    config_with(tmp_path, llm_server, [use("asker-inproc", model="local/gpt-test")])
    out = tmp_path / "out"
    res = CliRunner().invoke(
        cli, ["run", "--config", "run.toml", "--out", str(out), "--quiet", "--no-report"]
    )
    assert res.exit_code == 2, res.output
    assert "preflight failed: local/gpt-test (base_url http://127.0.0.1:" in res.stderr
    assert "HTTP 401" in res.stderr and TEST_API_KEY not in res.output
    assert not out.exists() and llm_server.requests == []
    # --no-preflight: the run starts and its calls meet the server
    res = CliRunner().invoke(
        cli, ["run", "--config", "run.toml", "--out", str(out), "--quiet", "--no-report", "--no-preflight"]
    )
    assert res.exit_code == 0, res.output
    assert (out / "results.jsonl").is_file() and len(llm_server.requests) == 1


def test_arena_run_help_documents_the_flag_and_exit_code():
    from pptarena.cli.main import cli

    res = CliRunner().invoke(cli, ["run", "--help"])
    assert "--no-preflight" in res.output and "2    a config or preflight error" in res.output
