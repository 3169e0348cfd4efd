"""The run config: a TOML file validated by pydantic, components resolved through the registry.

Tables: ``[run]``, ``[dataset]``, ``[[agents]]`` (or one ``[agent]``),
``[renderer]``, ``[[judges]]``, ``[backends.NAME]``, ``[executor]`` (where pairs run;
``use = "local"`` by default), ``[[reporters]]`` (optional: where a finished run is logged, e.g. an
experiment tracker; :mod:`pptarena.run.folder.reporting`). ``use`` picks a
component; ``label`` names an agent, judge or reporter in results; every other key is
validated by the component's own ``Options`` model. Secrets are written
``{ env = "VAR" }`` and resolved from the environment when the config is
loaded; they are never written anywhere.

Every problem raises one :class:`ConfigError` naming the file, each key path,
the bad value, the valid choices and a did-you-mean — before any work starts.

Why it is long: :func:`parse_config` walks every table of the file in one pass, collecting problems
instead of stopping at the first, so that one :class:`ConfigError` lists them all, cross-table checks
included (duplicate labels, model references to backends, a dataset's judges naming judge labels); the
records it fills and the per-table helpers sit beside it. Building an agent from its own environment
(``package = ...``, :func:`_env_agent_component`) could move out (not done yet).
"""

from __future__ import annotations

import difflib
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pptarena.run.configuration.config_options import absolutize_paths, format_validation, model_refs
from pptarena.run.configuration.config_secrets import redact, resolve_secrets
from pptarena.run.configuration.registry import Registry, UnknownComponentError
from pptarena.trust.redact import literal_secret_problems
from pptarena.types import PptArenaError

TOP_LEVEL = (
    "run",
    "dataset",
    "datasets",
    "agents",
    "agent",
    "renderer",
    "judges",
    "backends",
    "executor",
    "reporters",
)


class ConfigError(PptArenaError):
    """An invalid run config; the message lists every problem with its key path."""


class RunOptions(BaseModel):
    """The ``[run]`` table."""

    model_config = ConfigDict(extra="forbid")

    out: str | None = Field(None, description="run directory (default runs/<config stem>-<timestamp>)")
    jobs: int = Field(1, ge=1, le=256, description="(agent, task) pairs in flight")
    task_timeout: float = Field(900.0, gt=0, description="seconds per agent attempt")
    limit: int | None = Field(None, ge=1, description="run only the first N tasks")
    tasks: list[str] = Field(default_factory=list, description="task-id globs to run")
    cache_dir: str | None = Field(
        None, description="cache folder (default ~/.cache/pptarena or $PPTARENA_CACHE)"
    )
    epochs: int = Field(1, ge=1, le=100, description="independent attempts per (agent, task)")
    max_cost: float | None = Field(
        None, ge=0, description="USD: start no new attempt once the run has spent this much"
    )
    success_threshold: float = Field(
        1.0,
        ge=0,
        le=1,
        description="score counted as success for pass@k (rubric judges use their own `success`)",
    )
    seed: int = Field(0, description="seed of the bootstrap intervals and permutation tests")
    allow_weak_isolation: bool = Field(
        False,
        description="run agents even where bubblewrap is unusable (they can then read the answer key); "
        "same as `arena run --allow-weak-isolation`",
    )
    bootstrap: int = Field(2000, ge=0, le=100_000, description="bootstrap resamples per interval")
    preflight: bool = Field(
        True,
        description="check every model backend the run uses once before the first pair "
        "(SDK installed, key present, server reachable, model known); `arena run --no-preflight` skips it",
    )
    batch: bool = Field(
        False,
        description="send judge calls through the providers' batch APIs (half price, answers within "
        "hours); same as `arena run --batch`",
    )
    batch_poll: float = Field(
        30.0, gt=0, le=3600, description="seconds between polls of pending batch jobs (batch mode)"
    )
    batch_quiet: float = Field(
        2.0,
        gt=0,
        le=3600,
        description="batch mode: submit a backend's waiting calls once no new one came for this long",
    )


@dataclass
class ComponentConfig:
    """One resolved component table."""

    kind: str
    use: str
    label: str
    options: BaseModel
    raw: dict[str, Any]
    key_path: str
    spec: Any = None
    #: ``trusted = true`` in an ``[[agents]]`` table: the agent runs in the harness's process, unsandboxed
    trusted: bool = False
    #: ``batch = true|false`` in an ``[[agents]]`` table: the agent's model calls go (or never go)
    #: through the providers' batch APIs in batch mode; None: as its plugin declares
    #: (:mod:`pptarena.run.configuration.batching`)
    batch: bool | None = None


@dataclass
class RunConfig:
    """A fully validated config."""

    path: Path
    raw: dict[str, Any]
    run: RunOptions
    dataset: ComponentConfig
    agents: list[ComponentConfig]
    renderer: ComponentConfig
    judges: list[ComponentConfig]
    backends: dict[str, ComponentConfig] = field(default_factory=dict)
    missing_secrets: list[str] = field(default_factory=list)
    """``{ env = VAR }`` references whose variable was unset
    (only when loaded with ``require_secrets=False``).
    """
    executor: ComponentConfig | None = None
    #: the ``[[datasets]]`` tables when a run mixes benchmarks (``dataset`` is then the first);
    #: task ids get ``<label>/`` in front and ``metadata["dataset"] = label``
    datasets: list[ComponentConfig] = field(default_factory=list)
    #: ``[[datasets]]`` label → the judge labels its tasks get (``judges = [...]`` in the table);
    #: all when absent
    dataset_judges: dict[str, list[str]] = field(default_factory=dict)
    #: the ``[[reporters]]`` tables: where the finished run is logged (:mod:`pptarena.run.folder.reporting`)
    reporters: list[ComponentConfig] = field(default_factory=list)

    @property
    def stem(self) -> str:
        """The config file name without suffix."""
        return self.path.stem

    def redacted(self) -> dict[str, Any]:
        """The raw config with secret-looking literal values elided (env references kept by name)."""
        return redact(self.raw)

    def components(self) -> list[ComponentConfig]:
        """Every component table, in config order."""
        extra = [self.executor] if self.executor is not None else []
        return [
            *(self.datasets or [self.dataset]),
            *self.agents,
            self.renderer,
            *self.judges,
            *self.backends.values(),
            *extra,
            *self.reporters,
        ]


def default_cache_dir() -> Path:
    """``$PPTARENA_CACHE``, else ``$XDG_CACHE_HOME/pptarena``, else ``~/.cache/pptarena``."""
    env = os.environ.get("PPTARENA_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "pptarena"


def _env_agent_component(
    table: dict[str, Any],
    key_path: str,
    base: Path,
    errors: list[str],
    label_allowed: bool,
    cache_dir: Path | None,
) -> ComponentConfig | None:
    """An ``[[agents]]`` table with ``package``: built from the agent's own environment, its options
    validated in its jail (:mod:`pptarena.run.jail.env_agents`); secrets reach it masked, as they reach
    every jailed agent."""
    from pptarena.run.configuration.config_options import format_errors
    from pptarena.run.jail.agent_env import AgentEnvError
    from pptarena.run.jail.env_agents import env_agent

    use, package = table["use"], table["package"]
    if not isinstance(package, str) or not package.strip():
        errors.append(
            f"{key_path}.package: expected a requirement, a wheel file or a folder, got {package!r}"
        )
        return None
    label = table.get("label", use) if label_allowed else use
    if not isinstance(label, str) or not label or "/" in label or label.startswith("."):
        errors.append(f"{key_path}.label: must be a non-empty name without '/', got {label!r}")
        return None
    if table.get("trusted"):
        errors.append(
            f"{key_path}.trusted: an agent from its own environment (package = ...) always runs in its jail; "
            "the harness never imports it"
        )
        return None
    batch = table.get("batch")
    if not _is_flag(batch, "batch", key_path, errors):
        return None
    raw_opts = {k: v for k, v in table.items() if k not in ("use", "label", "package", "trusted", "batch")}
    masked = _masked(resolve_secrets(raw_opts, key_path, errors, missing=[]))
    try:
        spec, options, problems, fields = env_agent(
            use, package.strip(), masked, base, cache_dir or default_cache_dir(), key_path, say=_say
        )
    except AgentEnvError as exc:
        errors.append(f"{key_path}.package = {package!r}: {exc}")
        return None
    if problems:
        errors.extend(format_errors(problems, key_path, fields))
        return None
    return ComponentConfig("agents", use, label, options, table, key_path, spec, batch=batch)


def _is_flag(value: Any, key: str, key_path: str, errors: list[str]) -> bool:
    """Whether an agent table's harness key ``key`` (``trusted``, ``batch``) is unset (None) or a
    bool; else its error is added."""
    if value is None or isinstance(value, bool):
        return True
    errors.append(f"{key_path}.{key}: expected true or false, got {value!r}")
    return False


def _masked(value: Any) -> Any:
    """``value`` with every resolved secret replaced by ``"**********"`` (what a jail gets)."""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return "**********" if hasattr(value, "get_secret_value") else value


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _component(
    registry: Registry,
    kind: str,
    table: Any,
    key_path: str,
    base: Path,
    errors: list[str],
    label_allowed: bool,
    missing: list[str] | None = None,
    cache_dir: Path | None = None,
) -> ComponentConfig | None:
    if not isinstance(table, dict):
        errors.append(f"{key_path}: expected a table, got {type(table).__name__}")
        return None
    if "use" not in table:
        errors.append(
            f"{key_path}.use: missing; choose one of: {', '.join(registry.names(kind)) or '(none)'}"
        )
        return None
    use = table["use"]
    if not isinstance(use, str):
        errors.append(f"{key_path}.use: expected a component name, got {use!r}")
        return None
    if kind == "agents" and "package" in table:
        return _env_agent_component(table, key_path, base, errors, label_allowed, cache_dir)
    try:
        spec = registry.get(kind, use)
    except (UnknownComponentError, LookupError) as exc:
        errors.append(f"{key_path}.use = {use!r}: " + str(exc).replace("\n", "\n  "))
        return None
    label = table.get("label", use.rpartition(":")[2]) if label_allowed else use.rpartition(":")[2]
    if label_allowed and (not isinstance(label, str) or not label or "/" in label or label.startswith(".")):
        errors.append(f"{key_path}.label: must be a non-empty name without '/', got {label!r}")
        return None
    raw_opts = {k: v for k, v in table.items() if k not in ("use", "label" if label_allowed else "use")}
    trusted = raw_opts.pop("trusted", False) if kind == "agents" else False
    batch = raw_opts.pop("batch", None) if kind == "agents" else None
    if not (_is_flag(trusted, "trusted", key_path, errors) and _is_flag(batch, "batch", key_path, errors)):
        return None
    opts_with_secrets = resolve_secrets(raw_opts, key_path, errors, missing)
    model = spec.options_model
    try:
        options = model.model_validate(opts_with_secrets)
    except ValidationError as exc:
        errors.extend(format_validation(exc, key_path, model, raw_opts))
        return None
    options = absolutize_paths(options, base)
    return ComponentConfig(kind, use, label, options, table, key_path, spec, trusted=trusted, batch=batch)


def _table_list(data: dict[str, Any], key: str, default: list[Any], errors: list[str]) -> list[Any]:
    """``data[key]`` as a list of tables (one table is accepted); a wrong type is reported in ``errors``."""
    value = data.get(key, default)
    if isinstance(value, dict):
        return [value]
    if not isinstance(value, list):
        errors.append(f"{key}: expected [[{key}]] tables, got {type(value).__name__}")
        return []
    return value


def parse_config(
    data: dict[str, Any], registry: Registry, path: Path, *, require_secrets: bool = True
) -> RunConfig:
    """Validate an already-parsed TOML document (see :func:`load_config`)."""
    errors: list[str] = list(literal_secret_problems(data))
    missing: list[str] | None = None if require_secrets else []
    base = path.parent.resolve()
    for key in data:
        if key not in TOP_LEVEL:
            hint = difflib.get_close_matches(key, TOP_LEVEL, n=1)
            errors.append(
                f"{key}: unknown table"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; valid: {', '.join(TOP_LEVEL)}"
            )
    try:
        run = RunOptions.model_validate(data.get("run", {}))
    except ValidationError as exc:
        errors.extend(format_validation(exc, "run", RunOptions, data.get("run", {})))
        run = RunOptions()

    dataset = None
    datasets: list[ComponentConfig | None] = []
    dataset_judges: dict[str, list[str]] = {}
    if "datasets" in data:  # several benchmarks in one run
        if "dataset" in data:
            errors.append(
                "dataset / datasets: use either one [dataset] table or [[datasets]] tables, not both"
            )
        tables = _table_list(data, "datasets", [], errors)
        datasets = [
            _component(
                registry,
                "datasets",
                {k: v for k, v in t.items() if k != "judges"},
                f"datasets[{i}]",
                base,
                errors,
                True,
                missing,
            )
            if isinstance(t, dict)
            else None
            for i, t in enumerate(tables)
        ]
        for i, (t, d) in enumerate(zip(tables, datasets, strict=True)):
            only = t.get("judges") if isinstance(t, dict) else None
            if d is not None and only is not None:
                if not isinstance(only, list) or not all(isinstance(j, str) for j in only):
                    errors.append(f"datasets[{i}].judges: expected a list of judge labels, got {only!r}")
                else:
                    dataset_judges[d.label] = only
        names = [d.label for d in datasets if d is not None]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            errors.append(
                f"datasets: label {dup!r} is used twice; give each [[datasets]] table its own `label`"
            )
        dataset = next((d for d in datasets if d is not None), None)
        if not tables:
            errors.append("datasets: no [[datasets]] table")
    elif "dataset" not in data:
        errors.append(f"dataset: missing table; choose one of: {', '.join(registry.names('datasets'))}")
    else:
        dataset = _component(registry, "datasets", data["dataset"], "dataset", base, errors, False, missing)

    if "agent" in data and "agents" in data:
        errors.append("agent / agents: use either one [agent] table or [[agents]] tables, not both")
    agent_tables = _table_list(data, "agents", [data["agent"]] if "agent" in data else [], errors)
    if not agent_tables:
        errors.append(f"agents: no [[agents]] table; installed agents: {', '.join(registry.names('agents'))}")
    key = "agents" if "agents" in data else "agent"
    cache_dir = Path(run.cache_dir).expanduser() if run.cache_dir else None
    agents = [
        _component(
            registry,
            "agents",
            t,
            f"{key}[{i}]" if key == "agents" else "agent",
            base,
            errors,
            True,
            missing,
            cache_dir,
        )
        for i, t in enumerate(agent_tables)
    ]
    renderer = _component(
        registry,
        "renderers",
        data.get("renderer", {"use": "libreoffice"}),
        "renderer",
        base,
        errors,
        False,
        missing,
    )
    judge_tables = _table_list(data, "judges", [], errors)
    judges = [
        _component(registry, "judges", t, f"judges[{i}]", base, errors, True, missing)
        for i, t in enumerate(judge_tables)
    ]

    backends: dict[str, ComponentConfig] = {}
    backend_tables = data.get("backends") or {}
    if not isinstance(backend_tables, dict):
        errors.append(f"backends: expected tables [backends.NAME], got {type(backend_tables).__name__}")
        backend_tables = {}
    for name, table in backend_tables.items():
        if not isinstance(table, dict):
            errors.append(f"backends.{name}: expected a table")
            continue
        table = {"use": name, **table}
        comp = _component(registry, "backends", table, f"backends.{name}", base, errors, False, missing)
        if comp is not None:
            comp.label = name
            backends[name] = comp

    reporters = parse_reporters(data.get("reporters", []), registry, base, errors, missing)

    for group in (agents, judges, reporters):
        labels = [c.label for c in group if c is not None]
        for dup in sorted({lbl for lbl in labels if labels.count(lbl) > 1}):
            errors.append(
                f"label {dup!r} is used twice; give each [[agents]] / [[judges]] / [[reporters]] table "
                "its own `label`"
            )

    for comp in [*(datasets or [dataset]), *agents, renderer, *judges]:
        if comp is None:
            continue
        for field_name, ref in model_refs(comp.options).items():
            backend = ref.partition("/")[0]
            if backend in backends:
                continue
            try:
                registry.get("backends", backend)
            except LookupError as exc:
                errors.append(f"{comp.key_path}.{field_name} = {ref!r}: " + str(exc).replace("\n", "\n  "))

    executor = _component(
        registry, "executors", data.get("executor", {"use": "local"}), "executor", base, errors, False
    )
    check = getattr(executor.spec.factory, "check_config", None) if executor is not None else None
    if executor is not None and callable(check):
        errors.extend(
            f"executor.{e}" for e in check(executor.options, [a.label for a in agents if a is not None])
        )

    judge_labels = [j.label for j in judges if j is not None]
    for name, only in dataset_judges.items():
        for label in only:
            if label not in judge_labels:
                errors.append(
                    f"datasets ({name}).judges: no [[judges]] table is labelled {label!r} "
                    f"(labels: {', '.join(judge_labels)})"
                )
    if errors:
        raise ConfigError(f"invalid config {path}:\n- " + "\n- ".join(errors))
    assert dataset is not None and renderer is not None
    return RunConfig(
        path=path,
        raw=data,
        run=run,
        dataset=dataset,
        agents=[a for a in agents if a is not None],
        renderer=renderer,
        judges=[j for j in judges if j is not None],
        backends=backends,
        missing_secrets=missing or [],
        executor=executor,
        datasets=[d for d in datasets if d is not None],
        dataset_judges=dataset_judges,
        reporters=[r for r in reporters if r is not None],
    )


def parse_reporters(
    value: Any, registry: Registry, base: Path, errors: list[str], missing: list[str] | None = None
) -> list[ComponentConfig | None]:
    """The ``[[reporters]]`` tables (``value``: the TOML value, a list of tables or one table), each
    validated by its reporter's ``Options`` like any component; problems are added to ``errors``
    (an invalid table gives None). Also used to rebuild a run's reporters from its manifest
    (:func:`pptarena.run.folder.reporting.report_run_dir`)."""
    tables = _table_list({"reporters": value}, "reporters", [], errors)
    return [
        _component(registry, "reporters", t, f"reporters[{i}]", base, errors, True, missing)
        for i, t in enumerate(tables)
    ]


MAX_CONFIG_BYTES = 1_000_000


def load_config(path: str | Path, registry: Registry, *, require_secrets: bool = True) -> RunConfig:
    """Read, parse and validate a TOML run config; raise :class:`ConfigError` on any problem.

    ``require_secrets=False`` is for commands that never call a model (``arena tasks``,
    ``arena dataset export``): unset ``{ env = VAR }`` variables are then listed in
    :attr:`RunConfig.missing_secrets` instead of failing the load.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        import difflib

        near = difflib.get_close_matches(p.name, [c.name for c in p.parent.glob("*.toml")], n=1)
        meant = f"did you mean {str(p.with_name(near[0]))!r}? " if near else ""
        raise ConfigError(
            f"config file {p} does not exist ({meant}`arena init` writes an example: `arena init --list`)"
        )
    if p.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {p} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"invalid config {p}: not valid TOML: {exc}") from exc
    return parse_config(data, registry, p.resolve(), require_secrets=require_secrets)
