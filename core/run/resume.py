"""Which folder a run uses, and whether an existing run folder may be resumed with a config.

A run folder records the config it was started with (``manifest.json``). ``arena run`` without
``--out`` resumes the newest run of the same config; an explicit folder is resumed only if the
parts that decide results (dataset, renderer, judges, backends, each agent's table) are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pptarena.run.config import RunConfig
from pptarena.run.rundir import RunDir


def config_hash(config: RunConfig) -> str:
    """A stable hash of the config (secrets elided), used to find a run to resume."""
    raw = dict(config.redacted())
    raw.get("run", {}).pop("out", None) if isinstance(raw.get("run"), dict) else None
    raw.pop("executor", None)  # where pairs run does not change their results: resume across executors
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
            try:
                manifest = json.loads(RunDir(cand).manifest.read_text())
            except (OSError, ValueError):
                continue
            if manifest.get("config_hash") == h:
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
    both must have the same table. Adding agents (or changing ``[run]``) is fine.
    """
    problems = []
    for key in ("dataset", "datasets", "renderer", "judges", "backends"):
        if _without_pricing(key, previous.get(key)) != _without_pricing(key, current.get(key)):
            problems.append(f"[{key}] differs")
    before, after = _agent_tables(previous), _agent_tables(current)
    for label in sorted(set(before) & set(after)):
        if before[label] != after[label]:
            problems.append(f"agent {label!r} differs")
    return problems
