"""A fresh virtualenv with pptarena installed from its built wheel (not editable, no system packages).

Shared by the wheel tests (the README's demo, the docs in the wheel, the trust view, the
docs/plugins.md plugin): the wheel is built and installed into one venv once per test session, in
the session's temporary folder. A test that installs more into it restores it afterwards
(:func:`installs_into`), so every test sees the venv a newcomer gets from ``pip install``.
Dependencies come from pip's cache or the configured index; when neither can provide them the
caller skips with pip's reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.paths import ROOT

_BUILT: dict[str, Path] = {}


def run(cmd: list[str], cwd: Path | None = None, env: dict | None = None, timeout: float = 300):
    """Run ``cmd``, capturing text output (never raises on a non-zero exit)."""
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without this venv's traces (VIRTUAL_ENV, PYTHONPATH, PATH entries to .venv)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    env.update(extra)
    return env


def source_copy(dest: Path) -> Path:
    """The project's tracked and new (not ignored) files copied to ``dest``, to build the wheel from.

    pip builds in the source folder; building in the checkout would leave ``build/`` and
    ``pptarena.egg-info/`` there, whose stale modules and entry points a later build or test picks up
    after a module moves. Files git ignores (the venv, caches, earlier build output) are not copied.
    """
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT)
    if listed.returncode != 0:  # not a git checkout (an sdist): copy all but the usual build output
        ignore = shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__", ".tox")
        shutil.copytree(ROOT, dest, ignore=ignore)
        return dest
    for name in filter(None, listed.stdout.split("\0")):
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def fresh_venv(base: Path) -> Path:
    """A new venv under ``base`` with the built wheel installed; returns its folder (cached per session)."""
    if "venv" in _BUILT:
        return _BUILT["venv"]
    wheels = base / "wheel"
    source = source_copy(base / "source")
    built = run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-v", "-w", str(wheels)])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    _BUILT["build_log"] = base / "build.log"
    _BUILT["build_log"].write_text(built.stdout + built.stderr)
    wheel = next(wheels.glob("pptarena-*.whl"))
    venv = base / "venv"
    made = run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)])
    assert made.returncode == 0, made.stderr
    # byte-compiled, as pip does by default (about 20 s of the install's 40 s here): with --no-compile
    # the README-demo test's `arena run` took 59 s instead of 43 s (its jailed workers see
    # site-packages read-only, so they cannot keep what they compile), a wash for the session
    installed = run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], env=clean_env())
    if installed.returncode != 0:
        reason = (installed.stderr.strip().splitlines() or ["?"])[-1]
        if any(s in installed.stderr for s in ("NewConnectionError", "No matching distribution", "resolve")):
            pytest.skip(f"cannot install the wheel's dependencies (no package index reachable?): {reason}")
        raise AssertionError(installed.stderr[-3000:])
    _BUILT["venv"] = venv
    _BUILT["wheel"] = wheel
    return venv


def build_log() -> str:
    """The verbose output of the wheel build (after :func:`fresh_venv`)."""
    return _BUILT["build_log"].read_text()


def wheel_path() -> Path:
    """The built wheel (after :func:`fresh_venv`)."""
    return _BUILT["wheel"]


def venv_contents(venv: Path) -> list[str]:
    """What ``venv`` holds: ``pip freeze --all`` (every distribution and its version) and the names
    at the top of its site-packages folder (a module left behind without its metadata shows)."""
    frozen = run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all"], env=clean_env())
    assert frozen.returncode == 0, frozen.stderr[-3000:]
    (site_packages,) = venv.glob("lib/python*/site-packages")
    names = {p.name for p in site_packages.iterdir() if p.name != "__pycache__"}
    return sorted(frozen.stdout.splitlines()) + sorted(f"site-packages/{n}" for n in names)


@contextmanager
def installs_into(venv: Path, *distributions: str) -> Iterator[Path]:
    """For a test that pip-installs ``distributions`` into the shared venv: on the way out they are
    uninstalled, and the venv must again hold exactly what it held before (else AssertionError)."""
    before = venv_contents(venv)
    try:
        yield venv
    finally:
        python = str(venv / "bin" / "python")
        gone = run([python, "-m", "pip", "uninstall", "-y", *distributions], env=clean_env())
        assert gone.returncode == 0, gone.stderr[-3000:]
        after = venv_contents(venv)
        assert after == before, f"the shared wheel venv was left changed: {sorted(set(after) ^ set(before))}"
