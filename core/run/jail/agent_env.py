"""An agent's own environment: the harness installs it, reads its metadata, and never imports it.

An ``[[agents]]`` table may name the agent's distribution with ``package`` (a requirement such as
``"my-agent==1.2"``, a wheel file, or a project folder). :func:`ensure_env` then builds, once and
cached by content under ``<cache>/agent-envs/<key>/``, a folder ``site/`` holding that distribution
and those of its requirements the harness does not already give every jail (pptarena's own
requirements: python-pptx, lxml, pydantic, ...). Everything the distribution could run while being
installed (a ``setup.py``, a build backend) runs in a bubblewrap jail that sees only the interpreter,
pip and the build tools, the copied source and the folder being built: never the harness's
site-packages, the dataset, the cache or a secret. Its entry points are read from that folder's
metadata (:meth:`AgentEnv.entry_points`); the agent classes are known, and their options validated,
only inside a jail (:mod:`pptarena.run.jail.agent_probe`); the pairs run in a jailed worker whose
``PYTHONPATH`` is ``site/`` (:func:`pptarena.run.jail.agent_jail.worker_command`). The harness's process
never has ``site/`` on its ``sys.path``: no module body, validator or ``.pth`` file of the
distribution runs on the harness's side.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata as md
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptarena._version import __version__
from pptarena.trust import isolation
from pptarena.types import PptArenaError

FOLDER = "agent-envs"
"""Where agent environments live under the harness's cache folder."""
ENV_REVISION = 1
"""Part of every environment's key: raising it rebuilds every environment."""
BUILD_TOOLS = ("pip", "setuptools", "wheel")
"""The harness's distributions an environment build sees (pip, and the build backend of a folder)."""
BUILD_TIMEOUT = 900.0
PIP_LOG_BYTES = 1024 * 1024
"""What of pip's output a build keeps (the start of stdout, the end of stderr): an install may print
without end."""
MAX_SOURCE_FILES = 20_000
MAX_SOURCE_BYTES = 512 * 1024 * 1024
_SKIPPED_SOURCE = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "build",
    "dist",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
}
_PIP_ENV = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_TRUSTED_HOST")


class AgentEnvError(PptArenaError):
    """An agent environment could not be built or read (the message says which and why)."""


@dataclass(frozen=True)
class AgentEnv:
    """A built agent environment.

    :param package: the ``package`` value as the config wrote it.
    :param root: ``<cache>/agent-envs/<key>``; ``site`` is the folder on the jailed worker's
        ``PYTHONPATH``.
    :param distribution: name and version of the agent's own distribution.
    """

    package: str
    key: str
    root: Path
    distribution: str
    version: str

    @property
    def site(self) -> Path:
        """The folder holding the agent's distribution and its extra requirements."""
        return self.root / "site"

    def distributions(self) -> list[md.Distribution]:
        """Every distribution installed in the environment (read from metadata, nothing imported)."""
        return list(md.distributions(path=[str(self.site)]))

    def entry_points(self) -> list[tuple[str, str, str]]:
        """``(name, value, distribution)`` of the environment's ``pptarena`` entry points, from metadata."""
        found = []
        for dist in self.distributions():
            for ep in dist.entry_points:
                if ep.group == "pptarena":
                    found.append((ep.name, ep.value, str(dist.metadata["Name"])))
        return sorted(set(found))


def source_of(package: str, base: Path) -> tuple[str, Path | None]:
    """``("wheel" | "folder" | "requirement", path)`` for a ``package`` value; paths are relative to
    ``base`` (the config's folder)."""
    candidate = Path(package).expanduser()
    if not candidate.is_absolute():
        candidate = base / candidate
    if package.endswith(".whl"):
        if not candidate.is_file():
            raise AgentEnvError(f"package {package!r}: no such wheel file ({candidate})")
        return "wheel", candidate.resolve()
    if candidate.is_dir():
        return "folder", candidate.resolve()
    if "/" in package or package.startswith("."):
        raise AgentEnvError(f"package {package!r}: no such folder ({candidate})")
    try:
        from packaging.requirements import InvalidRequirement, Requirement

        Requirement(package)
    except InvalidRequirement as exc:
        raise AgentEnvError(f"package {package!r}: not a wheel, a folder or a requirement ({exc})") from exc
    return "requirement", None


def _source_files(folder: Path, skip: Path | None = None) -> list[Path]:
    """The files of a project folder worth hashing and copying (no VCS, venv or build output, nothing
    under ``skip``: the harness's cache when it lies inside the folder)."""
    return list(_walk_source(folder, skip.resolve() if skip is not None else None))


def _walk_source(folder: Path, skip: Path | None) -> Iterator[Path]:
    count = size = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in _SKIPPED_SOURCE
            and not d.endswith(".egg-info")
            and (Path(dirpath) / d).resolve() != skip
        )
        for name in sorted(filenames):
            path = Path(dirpath) / name
            count += 1
            size += path.lstat().st_size
            if count > MAX_SOURCE_FILES or size > MAX_SOURCE_BYTES:
                raise AgentEnvError(
                    f"agent folder {folder} holds more than {MAX_SOURCE_FILES} files or "
                    f"{MAX_SOURCE_BYTES >> 20} MB; build a wheel of it and name that in `package`"
                )
            yield path


def env_key(package: str, kind: str, path: Path | None, skip: Path | None = None) -> str:
    """The environment's cache key: what is installed (by content), the interpreter and pptarena."""
    digest = hashlib.sha256()
    head = [
        ENV_REVISION,
        kind,
        package if kind == "requirement" else "",
        __version__,
        sys.version,
        sys.platform,
    ]
    digest.update(json.dumps(head).encode())
    if kind == "wheel" and path is not None:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    elif kind == "folder" and path is not None:
        for file in _source_files(path, skip):
            digest.update(str(file.relative_to(path)).encode() + b"\0")
            digest.update(os.readlink(file).encode() if file.is_symlink() else file.read_bytes())
    return digest.hexdigest()[:24]


def _copy_source(kind: str, path: Path, into: Path, skip: Path | None = None) -> Path:
    """The source copied into the build folder (links copied as links: they lead nowhere in the jail)."""
    if kind == "wheel":
        into.mkdir(parents=True)
        dst = into / path.name
        shutil.copyfile(path, dst)
        return dst
    for file in _source_files(path, skip):
        dst = into / file.relative_to(path)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if file.is_symlink():
            os.symlink(os.readlink(file), dst)
        elif file.is_file():
            shutil.copyfile(file, dst)
    return into


def harness_provides() -> dict[str, str]:
    """Distributions every agent jail sees from the harness (pptarena and its requirements):
    name → version."""
    from pptarena.run.jail.agent_jail import canonical, distribution_closure

    return {canonical(d.metadata["Name"]): d.version for d in distribution_closure(["pptarena"])}


def missing_requirements(dist: md.Distribution, have: dict[str, str]) -> list[str]:
    """The requirements of ``dist`` that neither the harness's jail nor the environment satisfies.

    :raises AgentEnvError: when the agent needs another pptarena than the harness's.
    """
    from packaging.requirements import Requirement

    from pptarena.run.jail.agent_jail import canonical

    missing = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonical(req.name)
        version = have.get(name)
        if name == "pptarena" and (version is None or not req.specifier.contains(version, prereleases=True)):
            raise AgentEnvError(
                f"{dist.metadata['Name']} needs {text}, but the harness is pptarena {__version__}: the "
                "agent runs against the harness's pptarena; install a matching pptarena"
            )
        if version is None or not req.specifier.contains(version, prereleases=True):
            missing.append(text)
    return missing


def _pip(argv: list[str], build: Path, network: bool) -> None:
    """Run ``python -m pip ARGV`` in a jail that sees pip, the build tools and ``build`` (writable)."""
    from pptarena.run.jail.agent_jail import run_jailed_capped

    view = isolation.python_view(BUILD_TOOLS)
    jail = isolation.Jail(
        workdir=build / "home",
        workdir_host=build / "home",
        writable=[build],
        network=network,
        python=True,
        python_view=view,
        tmpfs_mb=1024,
    )
    (build / "home").mkdir(exist_ok=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(build / "home"),
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update({k: os.environ[k] for k in _PIP_ENV if k in os.environ})
    cmd = isolation.command(jail, [sys.executable, "-I", "-m", "pip", *argv])
    code, out, err = run_jailed_capped(cmd, env, b"", BUILD_TIMEOUT, PIP_LOG_BYTES)
    with (build / "pip.log").open("ab") as log:
        log.write(out[:PIP_LOG_BYTES] + err)
    if code is None:
        raise AgentEnvError(f"pip did not finish in {BUILD_TIMEOUT:.0f} s: {' '.join(argv[-1:])}")
    if code != 0:
        lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()] or ["(no output)"]
        raise AgentEnvError(f"pip install {argv[-1]} failed in its jail: {lines[-1].strip()}")


@contextlib.contextmanager
def _locked(folder: Path, key: str) -> Iterator[None]:
    """One builder per environment at a time, across processes."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{key}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read(root: Path, package: str) -> AgentEnv:
    data = json.loads((root / "env.json").read_text())
    return AgentEnv(package, data["key"], root, data["distribution"], data["version"])


def ensure_env(package: str, base: Path, cache_dir: Path, say: Any = None) -> AgentEnv:
    """The environment for ``package`` (built now unless the cache holds it).

    :param base: the folder relative paths in ``package`` start from (the config's).
    :param say: called with one line when a build starts (progress for a slow step).
    :raises AgentEnvError: bubblewrap unusable, a bad ``package``, pip failing (its last line).
    """
    from pptarena.run.jail.agent_jail import jail_available

    kind, path = source_of(package, base)
    folder = Path(cache_dir) / FOLDER
    key = env_key(package, kind, path, skip=Path(cache_dir))
    root = folder / key
    if (root / "env.json").is_file():
        return _read(root, package)
    if not jail_available():
        raise AgentEnvError(
            f"package {package!r}: building an agent environment needs bubblewrap (its install may run "
            "the agent's code), which is not usable here; install it (scripts/setup.sh)"
        )
    with _locked(folder, key):
        if (root / "env.json").is_file():
            return _read(root, package)
        if say is not None:
            say(f"building the agent environment for {package} (once; cached in {root})")
        build = folder / f".build-{key}-{os.getpid()}"
        shutil.rmtree(build, ignore_errors=True)
        try:
            _build(package, kind, path, build, key, skip=Path(cache_dir))
            shutil.rmtree(root, ignore_errors=True)
            os.replace(build, root)
        finally:
            shutil.rmtree(build, ignore_errors=True)
    return _read(root, package)


def _build(package: str, kind: str, path: Path | None, build: Path, key: str, skip: Path) -> None:
    """Install ``package`` (no dependencies), then what it needs that the harness does not give."""
    site = build / "site"
    site.mkdir(parents=True)
    target = package if path is None else str(_copy_source(kind, path, build / "src", skip))
    common = ["install", "--no-compile", "--no-warn-script-location", "--target", str(site)]
    try:
        _pip([*common, "--no-deps", "--no-build-isolation", target], build, network=path is None)
    except AgentEnvError as exc:
        if kind != "folder":
            raise
        raise AgentEnvError(
            f"{exc} (a folder is built offline with the harness's own setuptools and wheel: install "
            "them next to pptarena, or build a wheel first, `python -m build`, and name that)"
        ) from exc
    dists = list(md.distributions(path=[str(site)]))
    if len(dists) != 1:
        raise AgentEnvError(f"package {package!r}: expected one distribution, pip installed {len(dists)}")
    own = dists[0]
    missing = missing_requirements(own, harness_provides())
    if missing:
        _pip([*common, *missing], build, network=True)
    shutil.rmtree(build / "src", ignore_errors=True)
    shutil.rmtree(build / "home", ignore_errors=True)
    record = {
        "key": key,
        "package": package,
        "distribution": str(own.metadata["Name"]),
        "version": own.version,
        "extra_requirements": missing,
    }
    (build / "env.json").write_text(json.dumps(record, indent=2))
