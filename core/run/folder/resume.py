"""Which folder a run uses, its ``manifest.json``, and whether a run folder may be resumed with a config.

A run folder records the config it was started with (``manifest.json``). ``arena run`` without
``--out`` resumes the newest run of the same config; an explicit folder is resumed only if the
parts that decide results (dataset, renderer, judges, backends, each agent's table) are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pptarena.run.configuration.config import RunConfig
from pptarena.run.folder.manifest_record import Manifest
from pptarena.run.folder.results import SCHEMA_VERSION, write_json_atomic
from pptarena.run.folder.rundir import RunDir
from pptarena.types import PptArenaError


def config_hash(config: RunConfig) -> str:
    """A stable hash of the config (secrets elided), used to find a run to resume."""
    raw = dict(config.redacted())
    raw.get("run", {}).pop("out", None) if isinstance(raw.get("run"), dict) else None
    raw.pop("executor", None)  # where pairs run does not change their results: resume across executors
    raw.pop("reporters", None)  # where a finished run is logged does not change its results either
    return hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


def choose_run_dir(config: RunConfig, out: str | None, new: bool = False) -> tuple[Path, bool]:
    """The run directory and whether it already holds a run to resume.

    Explicit ``out`` (CLI or ``[run] out``) is used as is. Otherwise the newest
    ``runs/<stem>-<timestamp>`` started from the same config is resumed (a finished
    one just reports its results again; pairs added since, e.g. new tasks, run);
    ``new`` or no such folder makes a new timestamped folder.
    """
    chosen = out or config.run.out
    if chosen:
        p = Path(chosen).expanduser()
        return p, RunDir(p).results.exists()
    runs = Path("runs")
    if not new and runs.is_dir():
        h = config_hash(config)
        for cand in sorted(runs.glob(f"{config.stem}-*"), reverse=True):
            if Manifest.read(RunDir(cand).manifest).config_hash == h:
                return cand, True
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, n = runs / f"{config.stem}-{stamp}", 1
    while candidate.exists():  # two runs started in the same second
        n += 1
        candidate = runs / f"{config.stem}-{stamp}-{n}"
    return candidate, False


def _agent_tables(config: dict[str, Any]) -> dict[str, Any]:
    tables = config.get("agents", [config["agent"]] if "agent" in config else [])
    if isinstance(tables, dict):
        tables = [tables]
    labels = {}
    for t in tables:
        if isinstance(t, dict):
            labels[str(t.get("label") or t.get("use") or "?").rpartition(":")[2]] = t
    return labels


def _results_part(table: Any) -> Any:
    """An agent table minus ``batch`` (whether its calls wait for a batch job changes when answers
    come and what they cost, not which agent asks: each attempt's batch requests are its own)."""
    return {k: v for k, v in table.items() if k != "batch"} if isinstance(table, dict) else table


def _without_pricing(key: str, table: Any) -> Any:
    """Backend tables minus ``pricing`` (prices change what a run cost, never its results)."""
    if key != "backends" or not isinstance(table, dict):
        return table
    return {
        k: {o: v for o, v in t.items() if o != "pricing"} if isinstance(t, dict) else t
        for k, t in table.items()
    }


def resume_conflicts(previous: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """How a config differs from the one a run folder was started with, in ways that make old results stale.

    The dataset, renderer, judges and backends must be the same, and every agent label present in
    both must have the same table (its ``batch`` key aside). Adding agents (or changing ``[run]``) is
    fine.
    """
    problems = []
    for key in ("dataset", "datasets", "renderer", "judges", "backends"):
        if _without_pricing(key, previous.get(key)) != _without_pricing(key, current.get(key)):
            problems.append(f"[{key}] differs")
    before, after = _agent_tables(previous), _agent_tables(current)
    for label in sorted(set(before) & set(after)):
        if _results_part(before[label]) != _results_part(after[label]):
            problems.append(f"agent {label!r} differs")
    return problems


def write_start_manifest(
    path: Path,
    config: RunConfig,
    registry: Any,
    *,
    tasks: int,
    skipped: dict[tuple[str, str], str],
    judge_fingerprints: dict[str, Any],
    epochs: int,
    provenance: Any = None,
    max_cost: float | None,
) -> None:
    """Write the run's ``manifest.json`` as a run (or a resume) starts: the config (secrets elided),
    components, plugins, fingerprints and start times (a resume keeps ``started_at`` and adds to
    ``resumed_at``); ``finished_at`` is None until :func:`finish_manifest`. ``provenance``
    (:class:`~pptarena.run.folder.provenance.Provenance`) adds the agents' fingerprints to those kept from
    earlier starts and the tasks' hashes."""
    from pptarena import __version__

    now = datetime.now(UTC).isoformat(timespec="seconds")
    previous = Manifest.read(path) if path.exists() else None
    if previous is not None and not previous.model_fields_set:  # unreadable: started afresh
        previous = None
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        pptarena_version=__version__,
        config_path=str(config.path),
        config_hash=config_hash(config),
        config=config.redacted(),
        components=[
            {"key": c.key_path, "label": c.label, **c.spec.provenance()} for c in config.components()
        ],
        plugins=[p.to_json() for p in registry.plugins.values()],
        started_at=(previous.started_at if previous is not None else None) or now,
        resumed_at=[*previous.resumed_at, now] if previous is not None else [],
        finished_at=None,
        tasks=tasks,
        agents=[a.label for a in config.agents],
        judges=[j.label for j in config.judges],
        judge_fingerprints=judge_fingerprints,
        agent_fingerprints=dict(provenance.agents) if provenance is not None else {},
        agent_fingerprint_history={
            **(previous.agent_fingerprint_history if previous is not None else {}),
            **({fp["id"]: fp for fp in provenance.agents.values()} if provenance is not None else {}),
        },
        task_hashes=dict(provenance.tasks) if provenance is not None else {},
        epochs=epochs,
        max_cost=max_cost,
        skipped=[{"agent": a, "task_id": t, "reason": why} for (a, t), why in skipped.items()],
        python=sys.version.split()[0],
        platform=platform.platform(),
    )
    write_json_atomic(path, manifest.to_json())


def finish_manifest(path: Path, finished: bool, budget: dict[str, Any] | None) -> None:
    """Record the end of a run: ``finished_at`` when every attempt has a result, the budget record."""
    manifest = Manifest.read(path)
    if finished:
        manifest.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
    if budget is not None:
        manifest.budget = budget
    write_json_atomic(path, manifest.to_json())


def check_resumable(path: Path, config: RunConfig, run_dir: Path) -> None:
    """Raise :class:`~pptarena.types.PptArenaError` when the run folder's manifest (``path``) was written
    for a config whose results-deciding parts differ from ``config`` (see :func:`resume_conflicts`)."""
    if not path.exists():
        return
    previous = Manifest.read(path).config
    problems = resume_conflicts(previous, config.redacted())
    if problems:
        raise PptArenaError(
            f"{run_dir} holds results of a different config ({'; '.join(problems)}), "
            "so resuming would mix them. Use another --out (or --new), "
            "or re-judge the existing predictions with "
            f"`arena rescore {run_dir} --config {config.path}`."
        )
