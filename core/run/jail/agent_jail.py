"""The bubblewrap jail an agent's worker process runs in: what it sees, and how it is started.

An agent worker (:mod:`pptarena.run.jail.jail_worker`) sees, read-only: the system folders
(:data:`pptarena.trust.isolation.SYSTEM_DIRS`, a few files of ``/etc``), the Python interpreter, pptarena's
core package, the installed distributions pptarena needs and the agent plugin's own distribution with
its requirements (each distribution's top-level folders in site-packages, nothing else of
site-packages), and the host paths the agent class names through ``jail_paths(options)`` (e.g. the
``precomputed`` agent's folder). Writable: a size-capped tmpfs at ``/agent`` (its workspace, HOME)
and ``/tmp``. Not visible: the dataset (``pptarena.plugins.datasets`` and any dataset folder), the
cache, the run folder, other pairs, the home folder, the host's processes; no network. Model calls
and renders go through the harness over the worker's stdin/stdout (:mod:`pptarena.run.jail.bridge`),
so no key is ever inside the jail.

The worker is started with a scrubbed environment (``PATH``, ``LANG``, ``HOME``, ``TMPDIR`` and
``PYTHONPATH`` only) under :func:`pptarena.trust.isolation.command`, which gives it its own PID, mount,
IPC, UTS and network namespaces and kills it with the harness.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import importlib.util
import os
import re
import site
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pptarena.trust import isolation
from pptarena.trust.isolation import distribution_closure  # noqa: F401 - used here and re-exported

WORKER_MODULE = "pptarena.run.jail.jail_worker"
JAIL_HOME = Path("/agent")
"""The agent's writable tmpfs inside the jail (HOME and working directory)."""
JAIL_WORKSPACE = JAIL_HOME / "pair"
"""The workspace of the pair being run, inside the jail (emptied between pairs)."""
DEFAULT_DISK_MB = 1024
MAX_PROCESSES = 512
"""Processes (threads included) alive at once in one jailed worker, where a cgroup can be made."""
MEMORY_MB = 4096
"""Memory of one jailed worker and everything it started (its tmpfs files too), where a cgroup can be made."""
BUILTIN_PLUGINS = "pptarena.plugins"


@functools.cache
def _bwrap_works() -> bool:
    """Whether bubblewrap runs here, probed once (only ever called while ``PPTARENA_SANDBOX`` is not off)."""
    probe = getattr(isolation.base_flags, "__wrapped__", isolation.base_flags)
    return probe() is not None


def jail_available() -> bool:
    """Whether agent workers can be jailed here (bubblewrap usable and ``PPTARENA_SANDBOX`` not off)."""
    if isolation.bwrap_executable() is None or not _bwrap_works():
        return False
    if isolation.base_flags() is None and hasattr(isolation.base_flags, "cache_clear"):
        isolation.base_flags.cache_clear()  # it was cached while PPTARENA_SANDBOX was off
    return isolation.base_flags() is not None


def site_dirs() -> list[Path]:
    """This interpreter's site-packages folders (the user one too), where the agent's distributions
    are looked up; the wider set :func:`pptarena.trust.isolation.site_dirs` masks is not needed here."""
    dirs = [Path(p) for p in site.getsitepackages()]
    user = site.getusersitepackages()
    if user:
        dirs.append(Path(user))
    return [d for d in dirs if d.is_dir()]


def distribution_paths(dist: metadata.Distribution, sites: list[Path]) -> set[Path]:
    """The top-level entries of site-packages a distribution installed (its packages, modules,
    ``.dist-info``, ``.pth`` files), skipping everything of ``pptarena`` itself but its finder."""
    out: set[Path] = set()
    for f in dist.files or []:
        path = Path(str(dist.locate_file(f)))
        for sp in sites:
            try:
                rel = path.relative_to(sp)
            except ValueError:
                continue
            if rel.parts and rel.parts[0] not in ("..", "bin"):
                top = sp / rel.parts[0]
                if top.exists() or top.is_symlink():
                    out.add(top)
    return out


def interpreter_paths() -> set[Path]:
    """The interpreter: the venv's ``bin`` and ``pyvenv.cfg``, the base installation."""
    paths = {Path(sys.base_prefix), Path(sys.base_exec_prefix), Path(sys.executable).parent}
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.exists():
        paths.add(cfg)
    try:
        paths.add(Path(sys.executable).resolve().parent.parent)
    except OSError:
        pass
    return paths


def _module_root(module: str) -> tuple[Path, Path] | None:
    """For a module outside every distribution: (its top-level package folder or module file, the
    ``sys.path`` entry holding it)."""
    top = module.partition(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        where = Path(next(iter(spec.submodule_search_locations)))
    elif spec.origin:
        where = Path(spec.origin)
    else:
        return None
    return where, where.parent


def _builtin_plugin_paths(module: str) -> set[Path]:
    """For a built-in agent (``pptarena.plugins.agents...``): the plugins package's ``__init__`` and the
    agents' folder only (never ``pptarena.plugins.datasets`` or a judge)."""
    spec = importlib.util.find_spec(BUILTIN_PLUGINS)
    if spec is None or not spec.submodule_search_locations:
        return set()
    root = Path(next(iter(spec.submodule_search_locations)))
    kind = module.split(".")[2] if module.count(".") >= 2 else ""
    out = {root / "__init__.py"}
    if kind and (root / kind).is_dir():
        out.add(root / kind)
    return {p for p in out if p.exists()}


def _pptarena_paths(sites: list[Path]) -> set[Path]:
    """pptarena's own entries of site-packages (its package or editable finder, its metadata) and its
    core package's folder."""
    out: set[Path] = set()
    for sp in sites:
        for pattern in ("pptarena-*.dist-info", "__editable__*pptarena*", "pptarena"):
            out.update(sp.glob(pattern))
    core = importlib.util.find_spec("pptarena")
    if core is not None and core.submodule_search_locations:
        out.update(Path(p) for p in core.submodule_search_locations)
    return out


def _hide(binds: set[Path], hidden: Path) -> set[Path]:
    """``binds`` with ``hidden`` left out: a bind holding it is replaced by its other children."""
    out: set[Path] = set()
    for bind in binds:
        if bind == hidden:
            continue
        if bind in hidden.parents:
            branch = bind / hidden.relative_to(bind).parts[0]
            out |= {child for child in bind.iterdir() if child != branch}
            if branch != hidden:
                out |= _hide({branch}, hidden)
        else:
            out.add(bind)
    return out


_FORBIDDEN: set[Path] = set()


def forbid_in_jails(roots: Iterable[Path]) -> None:
    """Never bind anything under ``roots`` into an agent's jail (the run calls this with its cache, run
    folder and dataset folders before the first pair, and every process that starts jailed workers
    with its cache and dataset folders: :class:`pptarena.run.launchers.JailLauncher`)."""
    _FORBIDDEN.update(Path(r).expanduser().resolve() for r in roots if r)


def dataset_folders(config: Any) -> list[Path]:
    """The folders a run's dataset tables name (every path-valued option): never bound into a jail."""
    out = []
    for comp in [config.dataset, *getattr(config, "datasets", [])]:
        options = getattr(comp, "options", None)
        for value in (options.model_dump() if hasattr(options, "model_dump") else {}).values():
            if isinstance(value, Path):
                out.append(value)
    return out


def forbidden_roots() -> set[Path]:
    """The folders no agent jail binds from (:func:`forbid_in_jails`)."""
    return set(_FORBIDDEN)


def _allowed(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without the ones at or under a forbidden root (a cache, a dataset, the run folder)."""
    roots = forbidden_roots()
    out = []
    for p in paths:
        resolved = Path(p).resolve()
        if not any(resolved == r or r in resolved.parents for r in roots):
            out.append(Path(p))
    return out


def judge_side_distributions() -> set[str]:
    """Distributions of the harness's environment that register datasets or judges (their files
    may hold answer keys: decks, rubrics): never bound into an agent's jail (pptarena's own are
    hidden by :func:`plugin_paths` itself)."""
    from pptarena.run.configuration.registry import get_registry

    found = set()
    for info in get_registry().plugins.values():
        if info.distribution and ({"datasets", "judges"} & {k for k, v in info.components.items() if v}):
            found.add(canonical(info.distribution))
    return found - {"pptarena"}


def canonical(name: str) -> str:
    """A distribution name in its normal form (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=64)
def plugin_paths(
    module: str, builtin: bool = False, excluded: frozenset[str] = frozenset()
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """``(read-only binds, extra PYTHONPATH entries)`` for an agent class defined in ``module``:
    pptarena's core and requirements, plus the plugin's distribution and its requirements (or, for
    a module outside every distribution, its top-level package or file). ``pptarena.plugins`` is
    never bound whole: a built-in agent (``builtin``: registered by pptarena's own entry points) gets
    the plugins package's ``__init__`` and the agents' folder, never the datasets or judges.
    Distributions named in ``excluded`` (those registering datasets or judges) are never bound, but
    the agent's own, which is refused when it registers datasets."""
    sites = site_dirs()
    binds: set[Path] = set(interpreter_paths()) | _pptarena_paths(sites)
    pythonpath: list[Path] = []
    wanted = ["pptarena"]
    own: list[str] = []
    if not builtin:
        top = module.partition(".")[0]
        own = [d for d in _distributions_of(top) if canonical(d) != "pptarena"]
        wanted.extend(own)
        root = _module_root(module)
        if root is not None:
            where, entry = root
            if not any(where == s or s in where.parents for s in sites):  # not installed: bind it as is
                binds.add(where)
                pythonpath.append(entry)
    keep = {canonical(d) for d in own}
    for dist in distribution_closure(wanted):
        if canonical(dist.metadata["Name"]) in excluded - keep:
            continue
        binds.update(distribution_paths(dist, sites))
    plugins_spec = importlib.util.find_spec(BUILTIN_PLUGINS)
    if plugins_spec is not None and plugins_spec.submodule_search_locations:
        binds = _hide(binds, Path(next(iter(plugins_spec.submodule_search_locations))))
        if builtin:
            binds |= _builtin_plugin_paths(module)
    return tuple(sorted(p for p in binds if str(p) != "/")), tuple(pythonpath)


def jail_paths_of(spec: Any, options: Any) -> list[Path]:
    """Host paths a built-in agent class asks to read (``jail_paths(options)``: the ``precomputed``
    agent's folder), existing ones only; never asked of any other agent."""
    from pptarena.run.jail.agent_view import is_builtin

    hook = getattr(spec.factory, "jail_paths", None)
    if not is_builtin(spec) or not callable(hook):
        return []
    return [Path(p) for p in hook(options) or [] if Path(p).exists()]


def _worker_env(pythonpath: Iterable[Path]) -> dict[str, str]:
    """The scrubbed environment of a jailed worker."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(JAIL_HOME),
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(str(p) for p in pythonpath),
    }


def _jailed(read_only: list[Path], disk_mb: int, module: str) -> list[str]:
    jail = isolation.Jail(workdir=JAIL_HOME, tmpfs_mb=disk_mb, read_only=read_only, python=False)
    return isolation.command(jail, [sys.executable, "-m", module])


def env_worker_command(
    env: Any, disk_mb: int = DEFAULT_DISK_MB, module: str = WORKER_MODULE
) -> tuple[list[str], dict[str, str]]:
    """The bwrap command line and environment of a worker for an agent from its own environment
    (:class:`~pptarena.run.jail.agent_env.AgentEnv`): the interpreter, pptarena's core and requirements,
    and the environment's folder, on ``PYTHONPATH`` (its ``.pth`` files are never processed)."""
    binds, _ = plugin_paths("pptarena", builtin=True)  # no plugin folder: pptarena.plugins' __init__ only
    return _jailed([*binds, Path(env.root)], disk_mb, module), _worker_env([Path(env.site)])


def worker_command(
    spec: Any, options: Any, disk_mb: int = DEFAULT_DISK_MB
) -> tuple[list[str], dict[str, str]]:
    """The bwrap command line and environment of a jailed worker for the agent ``spec`` (a
    :class:`~pptarena.run.configuration.plugin_specs.ComponentSpec`)."""
    if getattr(spec, "env", None) is not None:
        return env_worker_command(spec.env, disk_mb)
    factory = spec.factory
    builtin = bool(getattr(spec, "builtin", False))
    excluded = frozenset() if builtin else frozenset(judge_side_distributions())
    if not builtin:
        check_own_distribution(factory.__module__)
    binds, pythonpath = plugin_paths(factory.__module__, builtin, excluded)
    asked = jail_paths_of(spec, options)
    refused = sorted(set(asked) - set(_allowed(asked)))
    if refused:
        from pptarena.types import PptArenaError

        raise PptArenaError(
            f"agent {spec.name!r} needs {refused[0]} in its jail, which lies inside the run's cache, "
            "dataset or run folder (a jail never shows those: they hold the answers); move it elsewhere"
        )
    read_only = _allowed([*binds, *asked])
    return _jailed(read_only, disk_mb, WORKER_MODULE), _worker_env(pythonpath)


@functools.lru_cache(maxsize=256)
def _distributions_of(top: str) -> tuple[str, ...]:
    """The distributions that install the top-level package ``top`` (read once: the scan of every
    distribution's file list takes about half a second)."""
    return tuple(metadata.packages_distributions().get(top) or ())


def check_own_distribution(module: str) -> None:
    """Refuse to jail an agent whose own distribution also registers datasets: its files would hold
    the answer keys the agent is scored against.

    :raises pptarena.types.PptArenaError: naming the distribution.
    """
    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import PptArenaError

    dists = {canonical(d) for d in _distributions_of(module.partition(".")[0])}
    for info in get_registry().plugins.values():
        if info.distribution and canonical(info.distribution) in dists - {"pptarena"}:
            if info.components.get("datasets"):
                raise PptArenaError(
                    f"distribution {info.distribution} registers datasets "
                    f"({', '.join(info.components['datasets'])}) "
                    "as well as the agent under test: its jail would hold the answer keys; ship the agent "
                    "in a distribution of its own"
                )


def worker_cgroup() -> Any:
    """An entered process and memory cap for one jailed worker (:class:`pptarena.trust.limits.SandboxCgroup`:
    call its ``preexec()`` in the child, ``__exit__`` when done), or None where no cgroup can be made (the
    ``uid`` level would run the worker as a uid that cannot read the interpreter's folders)."""
    from pptarena.trust.limits import SandboxCgroup

    group = SandboxCgroup(max_processes=MAX_PROCESSES, memory_mb=MEMORY_MB)
    group.__enter__()
    if group.level in ("cgroup1", "cgroup2"):
        return group
    group.__exit__(None, None, None)
    return None


def run_jailed_capped(argv: list[str], env: dict[str, str], stdin: bytes, timeout: float, keep: int) -> Any:
    """Run a jail command line to its end in a cgroup of its own (where there is one), its output capped
    (:func:`pptarena.trust.procs.run_capped`): ``(returncode or None on timeout, stdout, stderr tail)``."""
    from pptarena.trust.procs import run_capped

    group = worker_cgroup()
    try:
        return run_capped(
            argv,
            env=env,
            stdin_bytes=stdin,
            timeout=timeout,
            keep_stdout=keep,
            preexec_fn=group.preexec() if group is not None else None,
        )
    finally:
        if group is not None:
            group.__exit__(None, None, None)
