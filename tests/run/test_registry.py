"""Plugin loading: isolation, strict mode, check_pending, selection, collisions, provenance."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
import types

import pytest

import pptarena
from pptarena.run.configuration.registry import (
    AmbiguousComponentError,
    PluginLoadError,
    Registry,
    UnknownComponentError,
    get_registry,
    load_registry,
)
from tests.support.config import fake_dataset, fake_run_toml, write_run_config
from tests.support.paths import PLUGIN_MODULES


def _plugin(name: str, **hooks):
    mod = types.ModuleType(name)
    for hook, func in hooks.items():
        setattr(mod, hook, pptarena.hookimpl(func))
    return mod


def fake_ep(name: str, value: str):
    return md.EntryPoint(name=name, value=value, group="pptarena")


def test_builtins_are_entry_points_with_provenance():
    reg = get_registry()
    info = reg.plugins["agents-baselines"]
    assert info.builtin and info.distribution == "pptarena" and info.version == pptarena.__version__
    spec = reg.get("agents", "oracle")
    assert (spec.plugin, spec.distribution) == ("agents-baselines", "pptarena")
    assert spec.provenance()["version"] == pptarena.__version__


def test_broken_plugin_is_isolated_and_strict_makes_it_fatal(monkeypatch):
    sys.modules.pop("broken_mod_for_test", None)
    baselines = [ep for ep in md.entry_points(group="pptarena") if ep.name == "agents-baselines"]
    eps = [fake_ep("broken", "broken_mod_for_test"), *baselines]
    reg = load_registry(entry_points=eps, strict=False)
    assert reg.plugins["broken"].error and "broken_mod_for_test" in reg.plugins["broken"].error
    assert "noop" in reg.names("agents")  # everything else still works
    with pytest.raises(PluginLoadError, match="broken"):
        load_registry(entry_points=eps, strict=True)
    monkeypatch.setenv("PPTARENA_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError):
        load_registry(entry_points=eps)


def test_misspelled_hook_is_an_error_naming_the_plugin():
    reg = Registry()

    def register_agent(register):  # singular: a typo of register_agents
        register("x", object)

    info = reg.register_plugin(_plugin("typo_plugin", register_agent=register_agent), "typo")
    assert info.error and "register_agent" in info.error and "typo" in info.error
    with pytest.raises(PluginLoadError, match="typo"):
        Registry().register_plugin(_plugin("typo_plugin", register_agent=register_agent), "typo", strict=True)


def test_collision_reported_on_use_and_qualified_name_picks_one():
    reg = Registry()

    class A: ...

    class B: ...

    reg.register_plugin(_plugin("p1", register_judges=lambda register: register("same", A)), "p1")
    reg.register_plugin(_plugin("p2", register_judges=lambda register: register("same", B)), "p2")
    with pytest.raises(AmbiguousComponentError, match="p1:same.*p2:same"):
        reg.get("judges", "same")
    assert reg.get("judges", "p2:same").factory is B


def test_unknown_component_did_you_mean():
    reg = get_registry()
    with pytest.raises(UnknownComponentError) as exc:
        reg.get("agents", "oracel")
    msg = str(exc.value)
    assert "Did you mean: oracle?" in msg and "noop" in msg and "precomputed" in msg


def test_load_and_block_env(monkeypatch):
    monkeypatch.setenv("PPTARENA_LOAD_PLUGINS", "agents-baselines")
    reg = load_registry()
    assert set(reg.plugins) == {"agents-baselines"}
    monkeypatch.delenv("PPTARENA_LOAD_PLUGINS")
    monkeypatch.setenv("PPTARENA_BLOCK_PLUGINS", "agents-baselines")
    reg = load_registry()
    assert "agents-baselines" not in reg.plugins and "noop" not in reg.names("agents")


def test_no_entry_points_means_not_installed():
    with pytest.raises(PluginLoadError, match="pip install -e"):
        load_registry(entry_points=[])


@pytest.mark.slow
def test_broken_plugin_does_not_break_help_or_plugins(tmp_path):
    (tmp_path / "explodes_on_import.py").write_text("raise RuntimeError('kaboom at import')\n")
    env = {
        "PPTARENA_PLUGINS": "explodes_on_import",
        "PYTHONPATH": str(tmp_path),
        "PPTARENA_LOAD_PLUGINS": "agents-baselines,executors-local",
    }
    import os

    env = {**os.environ, **env}
    out = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "--help"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0 and "run" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "plugins", "--json"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "kaboom at import" in out.stdout and '"noop"' in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "--strict", "plugins"], env=env, capture_output=True, text=True
    )
    assert out.returncode != 0 and "kaboom" in out.stderr
    # a run that does not use the broken plugin works, with a warning naming it
    env["PPTARENA_PLUGINS"] = "explodes_on_import,fakeplugins"
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(PLUGIN_MODULES)])
    cfg = write_run_config(
        tmp_path / "run.toml", fake_run_toml(1, ["noop"], dataset=fake_dataset(1, root="d"))
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pptarena.cli",
            "run",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "r"),
            "--no-report",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "explodes_on_import" in out.stderr and "kaboom" in out.stderr  # the warning
    assert '"status": "scored"' in (tmp_path / "r" / "results.jsonl").read_text()


def test_every_hook_has_a_docstring():
    from pptarena import hookspecs

    for kind in ("datasets", "agents", "renderers", "judges", "backends", "executors"):
        fn = getattr(hookspecs, f"register_{kind}")
        assert fn.__doc__ and "register(" in fn.__doc__


def test_every_builtin_option_is_described():
    """`arena options` must explain every key of every built-in component."""
    reg = get_registry()
    missing = []
    for kind in ("datasets", "agents", "renderers", "judges", "backends", "executors"):
        for name in reg.names(kind):
            spec = reg.get(kind, name)
            if spec.distribution != "pptarena":
                continue
            missing += [f"{kind}:{name}.{o['name']}" for o in spec.describe_options() if not o["description"]]
    assert not missing, missing
