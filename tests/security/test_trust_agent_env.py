"""Issue 31: a third-party agent's code never runs on the harness's side, and nothing it says decides
how far it is trusted. Each test is the attack.

The hostile distribution is installed the way docs/security.md tells a leaderboard operator to take a
submission: ``package = "<wheel>"`` in its ``[[agents]]`` table (an environment of its own). Its
module body, its options validator and a ``.pth`` file it ships each try to leave a mark on the host
and read the judge's API key; its agent looks for the answer key. None may succeed.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pptarena.run.jail.agent_jail import jail_available
from tests.support.agent_env_fixtures import env_agent_config, write_wheel
from tests.support.trust_fixtures import arena

needs_jail = pytest.mark.skipif(not jail_available(), reason="bubblewrap is not usable here")
SECRET = "sk-judge-secret-31"

HOSTILE = '''
import json, os, pathlib, shutil
MARKS = pathlib.Path({marks!r})

def mark(name, text="ran"):
    try:
        (MARKS / name).write_text(text)
    except OSError:
        pass

mark("import", os.environ.get("OPENAI_API_KEY", "no key"))
import pptarena
from pydantic import field_validator
from pptarena.types import Component, Prediction
from pptarena.types import Options as Base


class Options(Base):
    note: str = "x"

    @field_validator("note")
    @classmethod
    def check(cls, value):
        mark("validator")
        if value == "bad":
            raise ValueError("note must not be bad")
        return value


class EvilAgent(Component):
    """Copies the input deck; looks for the answer key and the judge's key on the way."""

    Options = Options
    reference_agent = True   # claims: each was once taken at face value
    host_worker = True
    untrusted_code = False

    @classmethod
    def jail_paths(cls, options):
        return [{cache!r}]

    @classmethod
    def normalize_reference(cls, src, dst):
        mark("normalize")
        shutil.copyfile(src, dst)

    def edit(self, task, workspace):
        cache = pathlib.Path({cache!r})
        found = [str(p) for p in cache.rglob("*target*")] if cache.exists() else []
        key = os.environ.get("OPENAI_API_KEY")
        seen = {{"targets": found[:5], "key": key, "has_target": hasattr(task, "target")}}
        (pathlib.Path(workspace.dir) / "seen.json").write_text(json.dumps(seen))
        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        return Prediction(path=workspace.output_deck)


@pptarena.hookimpl
def register_agents(register):
    register("evil", EvilAgent)
'''


def _hostile_wheel(tmp: Path, marks: Path, cache: Path, extra_files: dict[str, str] | None = None) -> Path:
    files = {
        "evil_env_agent/__init__.py": HOSTILE.format(marks=str(marks), cache=str(cache)),
        "evil_env_agent.pth": f"import pathlib; pathlib.Path({str(marks / 'pth')!r}).write_text('ran')\n",
        **(extra_files or {}),
    }
    return write_wheel(tmp / "dist", "evil-env-agent", "0.1.0", files, {"agents-evil": "evil_env_agent"})


def _arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in a subprocess whose environment holds a judge's API key to steal."""
    return arena(list(args), cwd, env={"OPENAI_API_KEY": SECRET}, timeout=600)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One cache for the module: the demo set and the built environments are made once."""
    return tmp_path_factory.mktemp("agent-env-cache")


@pytest.mark.slow
@needs_jail
def test_a_hostile_agent_distribution_runs_only_in_its_jail(tmp_path, shared_cache):
    """Attack: module body, validator and .pth file write marks on the host and read the judge's key;
    the class claims reference/host/inert status and asks for the dataset cache through jail_paths;
    normalize_reference would be handed the target. Nothing of it may run on the host side."""
    marks = tmp_path / "marks"
    marks.mkdir()
    wheel = _hostile_wheel(tmp_path, marks, shared_cache)
    config = env_agent_config(tmp_path, str(wheel), "evil", shared_cache, extra='note = "hello"')
    done = _arena(
        "run", "--config", str(config), "--out", str(tmp_path / "run"), "--limit", "1", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in marks.iterdir()) == [], "code of the agent's distribution ran on the host"
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["scored"]
    assert rows[0]["agent_process"] == "jail" and rows[0]["isolation"] == "bwrap"
    assert rows[0]["agent_code"] == "agent-env"
    pair = tmp_path / "run" / "tasks" / "evil" / rows[0]["task_id"]
    seen = json.loads(
        (pair / "seen.json").read_text()
    )  # what the agent found, handed back with its workspace
    assert seen == {"targets": [], "key": None, "has_target": False}, seen
    assert not (pair / "references").exists()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "agent-env" in json.dumps(manifest)


@pytest.mark.slow
@needs_jail
def test_options_are_validated_in_the_jail_with_the_usual_error(tmp_path, shared_cache):
    """A bad option is refused with the config key path and the validator's message, and the
    validator ran in the jail, not on the host."""
    marks = tmp_path / "marks"
    marks.mkdir()
    wheel = _hostile_wheel(tmp_path, marks, shared_cache)
    config = env_agent_config(tmp_path, str(wheel), "evil", shared_cache, extra='note = "bad"')
    done = _arena("run", "--config", str(config), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode != 0
    assert "agents[0].note: Value error, note must not be bad" in done.stderr, done.stderr[-2000:]
    typo = env_agent_config(tmp_path, str(wheel), "evil", shared_cache, extra='nte = "x"')
    done = _arena("run", "--config", str(typo), "--out", str(tmp_path / "run2"), cwd=tmp_path)
    assert "agents[0].nte: unknown option 'nte' (did you mean 'note'?)" in done.stderr, done.stderr[-2000:]
    unknown = env_agent_config(tmp_path, str(wheel), "evli", shared_cache)
    done = _arena("run", "--config", str(unknown), "--out", str(tmp_path / "run3"), cwd=tmp_path)
    assert "registers no such agent; it registers: evil" in done.stderr, done.stderr[-2000:]
    assert list(marks.iterdir()) == []


@pytest.mark.slow
@needs_jail
def test_an_agent_environment_may_not_register_a_judge(tmp_path, shared_cache):
    """Attack: the submission also registers a judge named like the run's (to score itself)."""
    code = HOSTILE.format(marks=str(tmp_path), cache=str(shared_cache)) + (
        "\n@pptarena.hookimpl\ndef register_judges(register):\n    register('structural', EvilAgent)\n"
    )
    wheel = write_wheel(
        tmp_path / "dist",
        "judge-too",
        "0.1.0",
        {"judge_too/__init__.py": code},
        {"agents-judge-too": "judge_too"},
    )
    config = env_agent_config(tmp_path, str(wheel), "evil", shared_cache)
    done = _arena("run", "--config", str(config), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode != 0
    assert "registers judges; an agent's environment holds the agent under test only" in done.stderr


@pytest.mark.slow
@needs_jail
def test_trusted_is_refused_for_an_agent_from_its_own_environment(tmp_path, shared_cache):
    """``trusted = true`` would run it in the harness's process: impossible for code never imported."""
    wheel = _hostile_wheel(tmp_path, tmp_path, shared_cache)
    config = env_agent_config(tmp_path, str(wheel), "evil", shared_cache, extra="trusted = true")
    done = _arena("run", "--config", str(config), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode != 0 and "always runs in its jail" in done.stderr


@needs_jail
def test_environments_are_cached_by_content(tmp_path, shared_cache):
    """The same wheel is built once; a changed wheel gets an environment of its own."""
    from pptarena.run.jail.agent_env import ensure_env

    marks = tmp_path / "marks"
    marks.mkdir()
    wheel = _hostile_wheel(tmp_path / "a", marks, shared_cache)
    said: list[str] = []
    first = ensure_env(str(wheel), tmp_path, shared_cache, say=said.append)
    again = ensure_env(str(wheel), tmp_path, shared_cache, say=said.append)
    assert first.key == again.key and len(said) <= 1
    changed = _hostile_wheel(tmp_path / "b", marks, shared_cache, {"evil_env_agent/extra.py": "X = 1\n"})
    other = ensure_env(str(changed), tmp_path, shared_cache)
    assert other.key != first.key
    assert first.entry_points() == [("agents-evil", "evil_env_agent", "evil-env-agent")]
    assert str(first.site) not in sys.path and "evil_env_agent" not in sys.modules
    assert list(marks.iterdir()) == []


def test_an_agent_needing_another_pptarena_is_refused_with_the_versions(tmp_path):
    """A distribution pinned to a pptarena the harness is not gets a clear refusal, no install."""
    from pptarena.run.jail.agent_env import AgentEnvError, missing_requirements

    site = tmp_path / "site"
    info = site / "x-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: x\nVersion: 1.0\nRequires-Dist: pptarena>=99\n"
        "Requires-Dist: python-pptx\nRequires-Dist: tiny-extra>=1\n"
    )
    dist = next(iter(md.distributions(path=[str(site)])))
    with pytest.raises(AgentEnvError, match="needs pptarena>=99, but the harness is pptarena"):
        missing_requirements(dist, {"pptarena": "0.1.0", "python-pptx": "1.0.2"})
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: x\nVersion: 1.0\nRequires-Dist: pptarena\n"
        "Requires-Dist: python-pptx\nRequires-Dist: tiny-extra>=1\n"
    )
    dist = next(iter(md.distributions(path=[str(site)])))
    assert missing_requirements(dist, {"pptarena": "0.1.0", "python-pptx": "1.0.2"}) == ["tiny-extra>=1"]


FLOOD = """
import os
for _ in range(300):
    os.write(1, b"x" * (1 << 20))
    os.write(2, b"x" * (1 << 20))
"""

RSS_CHILD = r"""
import resource, sys
from pathlib import Path
from pptarena.run.jail.agent_env import ensure_env
from pptarena.run.jail.agent_probe import probe
env = ensure_env(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[2]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
answer = probe(env, [{"use": "evil", "options": {}}])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before, sorted(answer["agents"]))
"""


@needs_jail
def test_a_plugin_printing_without_end_while_probed_costs_the_harness_no_memory(tmp_path, shared_cache):
    """Attack: the plugin's module body writes 300 MB on stdout and stderr while the harness reads what
    it registers. The probe's answer channel is private; both pipes are drained with a cap."""
    code = FLOOD + HOSTILE.format(marks=str(tmp_path), cache=str(shared_cache))
    wheel = write_wheel(
        tmp_path / "dist",
        "flood-agent",
        "0.1.0",
        {"flood_agent/__init__.py": code},
        {"agents-flood": "flood_agent"},
    )
    done = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(wheel), str(shared_cache)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    growth_kb, agents = done.stdout.split(maxsplit=1)
    assert agents.strip() == "['evil']"
    assert int(growth_kb) < 32 * 1024, f"the harness grew {growth_kb} KB reading a flooding probe"


@pytest.mark.slow
@needs_jail
def test_a_project_folder_is_built_in_a_jail_its_setup_py_never_on_the_host(tmp_path, shared_cache):
    """Attack: a submission given as a project folder whose ``setup.py`` writes on the host and copies
    the judge's key and the dataset cache while pip builds it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    project = tmp_path / "project"
    (project / "folder_agent").mkdir(parents=True)
    (project / "folder_agent" / "__init__.py").write_text(
        HOSTILE.format(marks=str(marks), cache=str(shared_cache))
    )
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "folder-agent"\nversion = "0.3.0"\ndependencies = ["pptarena"]\n'
        '[project.entry-points.pptarena]\nagents-folder = "folder_agent"\n'
        "[tool.setuptools]\npackages = ['folder_agent']\n"
    )
    (project / "setup.py").write_text(
        "import os, pathlib\n"
        f"for name in ('setup-py', 'key-' + os.environ.get('OPENAI_API_KEY', 'none')):\n"
        f"    try:\n        pathlib.Path({str(marks)!r}, name).write_text('ran')\n"
        "    except OSError:\n        pass\n"
        "from setuptools import setup\nsetup()\n"
    )
    config = env_agent_config(tmp_path, str(project), "evil", shared_cache)
    done = _arena(
        "run", "--config", str(config), "--out", str(tmp_path / "run"), "--limit", "1", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "building the agent environment" in done.stderr
    assert list(marks.iterdir()) == []
    assert not list(project.glob("*.egg-info")) and not (project / "build").exists()  # built on a copy


@pytest.fixture
def loopback_index(tmp_path):
    """A PEP 503 simple index on loopback (``PIP_INDEX_URL``), serving the hostile wheel."""
    import functools
    import http.server
    import threading

    root = tmp_path / "index"
    served = {}

    def serve(wheel: Path) -> str:
        project = root / "simple" / "evil-env-agent"
        project.mkdir(parents=True)
        (project / wheel.name).write_bytes(wheel.read_bytes())
        (project / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        served["server"] = server
        return f"http://127.0.0.1:{server.server_address[1]}/simple/"

    yield serve
    if "server" in served:
        served["server"].shutdown()


@pytest.mark.slow
@needs_jail
def test_a_requirement_from_an_index_is_installed_in_its_jail(tmp_path, shared_cache, loopback_index):
    """``package = "name==version"``: pip fetches it from the index (``PIP_INDEX_URL`` passed on) in the
    build jail; the agent runs jailed and its module body never runs on the host."""
    marks = tmp_path / "marks"
    marks.mkdir()
    url = loopback_index(_hostile_wheel(tmp_path, marks, shared_cache))
    config = env_agent_config(tmp_path, "evil-env-agent==0.1.0", "evil", shared_cache)
    done = arena(
        ["run", "--config", str(config), "--out", str(tmp_path / "run"), "--limit", "1"],
        tmp_path,
        env={"OPENAI_API_KEY": SECRET, "PIP_INDEX_URL": url},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [(r["status"], r["agent_code"]) for r in rows] == [("scored", "agent-env")]
    assert list(marks.iterdir()) == []
    missing = env_agent_config(tmp_path, "evil-env-agent==9.9", "evil", shared_cache)
    done = arena(
        ["run", "--config", str(missing), "--out", str(tmp_path / "run2")],
        tmp_path,
        env={"PIP_INDEX_URL": url},
        timeout=600,
    )
    assert done.returncode != 0 and "failed in its jail" in done.stderr, done.stderr[-2000:]
