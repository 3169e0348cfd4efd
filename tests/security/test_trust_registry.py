"""Issue 31: no trust decision reads a value the agent controls, and no distribution silently replaces
another's component. Each test is the attack, written against the registry and the jail's binds.
"""

from __future__ import annotations

import importlib.metadata as md
import types
from pathlib import Path

import pytest

import pptarena
from pptarena.run.configuration.registry import PluginLoadError, Registry, load_registry
from pptarena.run.jail.agent_view import placement
from pptarena.types import Component, Prediction


class ClaimsEverything(Component):
    """A third-party agent class that sets every attribute built-ins once used to be trusted by."""

    reference_agent = True
    host_worker = True
    untrusted_code = False
    __module__ = "pptarena.plugins.agents.baselines"  # the module string once decided "built-in"

    @classmethod
    def jail_paths(cls, options):
        return ["/"]

    def edit(self, task, workspace):
        return Prediction(path=workspace.input_deck)


def _module(name: str, **hooks) -> types.ModuleType:
    mod = types.ModuleType(name)
    for hook, fn in hooks.items():
        setattr(mod, hook, pptarena.hookimpl(fn))
    return mod


def _agent(spec, trusted: bool = False):
    return types.SimpleNamespace(spec=spec, trusted=trusted, label=spec.name, options=None)


def test_a_third_party_class_claiming_builtin_status_is_jailed_and_binds_nothing_it_names():
    """Attack: module string, reference_agent, host_worker, untrusted_code and jail_paths all claim
    trust. Placement, the weak-isolation refusal and the jail's binds ignore every one of them."""
    from pptarena.run.jail.agent_jail import jail_paths_of
    from pptarena.run.jail.boundary import untrusted_agents

    reg = Registry()
    reg.register_plugin(
        _module("claims", register_agents=lambda register: register("claims", ClaimsEverything)),
        "claims",
        distribution="pptarena",
    )  # even its distribution name says pptarena
    spec = reg.get("agents", "claims")
    assert not spec.builtin and spec.code_kind == "installed"
    assert placement(_agent(spec)) == "jail"
    assert untrusted_agents([_agent(spec)]) == ["claims"]
    assert jail_paths_of(spec, None) == []


@pytest.mark.parametrize("kwargs", [{"placement": "host"}, {"placement": "reference"}, {"inert": True}])
def test_a_third_party_plugin_cannot_register_itself_into_a_trusted_placement(kwargs):
    """Attack: the register callback's own trust keywords, used by a plugin that is not pptarena's."""
    reg = Registry()
    info = reg.register_plugin(
        _module("asks", register_agents=lambda register: register("asks", ClaimsEverything, **kwargs)), "asks"
    )
    assert info.error and "only pptarena's own agents may have" in info.error
    with pytest.raises(PluginLoadError, match="only pptarena's own agents"):
        Registry().register_plugin(
            _module("asks", register_agents=lambda register: register("asks", ClaimsEverything, **kwargs)),
            "asks",
            strict=True,
        )


def test_the_builtins_are_known_by_their_entry_points_distribution():
    """The real registry: oracle is the reference, code/command/gui are host, noop inert; all built-in."""
    reg = load_registry()
    where = {n: placement(_agent(reg.get("agents", n))) for n in ("oracle", "noop", "code", "command", "gui")}
    assert where == {"oracle": "reference", "noop": "jail", "code": "host", "command": "host", "gui": "host"}
    assert reg.get("agents", "noop").runs_untrusted_code is False and reg.get("agents", "noop").builtin


def _dist(folder: Path, name: str, entry_points: dict[str, str]) -> Path:
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pptarena]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    )
    return info


def test_two_distributions_declaring_one_entry_point_name_load_neither(tmp_path, monkeypatch):
    """Attack: an agent distribution declares the entry-point name ``judges-structural`` to replace the
    structural judge with one that scores everything 1.0 (it once won by sorting first)."""
    import sys

    (tmp_path / "fake_structural.py").write_text(
        "import pptarena\n@pptarena.hookimpl\n"
        "def register_judges(register):\n    register('structural', object)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _dist(tmp_path, "aaa-agent", {"judges-structural": "fake_structural"})
    own = [ep for ep in md.entry_points(group="pptarena") if ep.name == "judges-structural"]
    theirs = [ep for ep in md.distributions(path=[str(tmp_path)]) for ep in ep.entry_points]
    reg = load_registry(entry_points=[*own, *theirs])
    info = reg.plugins["judges-structural"]
    assert info.error and "aaa-agent" in info.error and "pptarena" in info.error
    assert "structural" not in reg.names("judges")
    assert "fake_structural" not in sys.modules
    blocked = load_registry(entry_points=[*own, *theirs], block=["aaa-agent"])
    assert "structural" in blocked.names("judges") and blocked.get("judges", "structural").builtin


def test_the_jail_never_binds_a_distribution_that_registers_datasets_or_judges(monkeypatch):
    """Attack: the agent's distribution requires a distribution that ships a dataset's decks."""
    from pptarena.run.jail import agent_jail

    agent_jail.plugin_paths.cache_clear()
    binds, _ = agent_jail.plugin_paths("tests", False, frozenset({"pydantic"}))

    def own_files(paths):
        return [p for p in paths if p.name == "pydantic" or p.name.startswith("pydantic-")]

    assert own_files(binds) == []
    keep, _ = agent_jail.plugin_paths("tests", False, frozenset())
    assert len(own_files(keep)) == 2  # its package and its .dist-info


def test_nothing_under_a_forbidden_root_is_bound(tmp_path):
    """The run's cache, run folder and dataset folders are never bound, whatever asked for them."""
    from pptarena.run.jail import agent_jail

    inside = tmp_path / "cache" / "pptarena-demo" / "target.pptx"
    inside.parent.mkdir(parents=True)
    inside.write_text("answer")
    agent_jail.forbid_in_jails([tmp_path / "cache"])
    assert agent_jail._allowed([inside, tmp_path / "cache", tmp_path]) == [tmp_path]


def test_a_rows_isolation_is_what_was_launched_never_what_the_prediction_says():
    """Attack (round 3): host agents' rows took ``isolation`` from ``Prediction.metadata``, so an agent
    could write ``bwrap`` there. The row now asks the built-in's own class about its options."""
    from pptarena.run.jail.boundary import row_isolation

    reg = load_registry()
    spec = reg.get("agents", "command")
    model = spec.options_model
    off = types.SimpleNamespace(
        spec=spec, trusted=False, label="cli", options=model(command="true", sandbox="off")
    )
    on = types.SimpleNamespace(spec=spec, trusted=False, label="cli", options=model(command="true"))
    assert row_isolation(off, "bwrap") == "none"
    assert row_isolation(on, "rlimits") == "rlimits"  # never stronger than the machine
    jailed = types.SimpleNamespace(spec=reg.get("agents", "noop"), trusted=False, label="noop", options=None)
    from pptarena.run.jail.agent_jail import jail_available

    assert row_isolation(jailed, "bwrap") == ("bwrap" if jail_available() else "none")
    reference = types.SimpleNamespace(
        spec=reg.get("agents", "oracle"), trusted=False, label="o", options=None
    )
    assert row_isolation(reference, "bwrap") == "none"


def test_a_builtin_agents_folder_inside_a_dataset_is_refused_with_a_clear_message(tmp_path):
    """The ``precomputed`` agent's folder (a built-in's ``jail_paths``) inside a dataset folder would
    show the dataset's files to the jail: refused, naming the folder, instead of a silent omission."""
    from pptarena.run.jail.agent_jail import forbid_in_jails, worker_command
    from pptarena.types import PptArenaError

    dataset = tmp_path / "dataset"
    (dataset / "preds").mkdir(parents=True)
    forbid_in_jails([dataset])
    reg = load_registry()
    spec = reg.get("agents", "precomputed")
    options = spec.options_model(dir=dataset / "preds")
    with pytest.raises(PptArenaError, match="lies inside the run's cache, dataset or run folder"):
        worker_command(spec, options)
    elsewhere = tmp_path / "preds"
    elsewhere.mkdir()
    argv, _ = worker_command(spec, spec.options_model(dir=elsewhere))
    assert str(elsewhere) in argv and str(dataset) not in " ".join(argv)
