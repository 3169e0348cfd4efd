"""The append-only results store of a run directory, and its aggregation into summary.json.

``results.jsonl`` gets one line per finished (agent, task) pair, written and
fsynced as each finishes. A line cut short by a crash (SIGKILL, power loss) is
dropped when the store is reopened, so a resumed run never loses a complete
line and never duplicates one.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import threading
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pptarena.run.records import ResultLineProblem, parse_row
from pptarena.run.rundir import RunDir
from pptarena.types import STATUSES, PptArenaError

SCHEMA_VERSION = 1
MAX_RESULTS_BYTES = 512 * 1024 * 1024


def read_results(path: Path, problems: list[ResultLineProblem] | None = None) -> list[dict[str, Any]]:
    """Result lines of a ``results.jsonl``, each validated as a :class:`ResultRow` (last line per pair wins).

    A line that is not valid JSON or not a valid row is skipped and, when ``problems`` is a
    list, recorded there with its file and line number. Read-only: it never repairs the file
    (:class:`ResultsStore` does when opened for writing). Only regular files are read.
    """
    if not path.exists():
        return []
    if not path.is_file():
        raise PptArenaError(f"{path}: not a regular file")
    if path.stat().st_size > MAX_RESULTS_BYTES:
        raise PptArenaError(f"{path}: larger than {MAX_RESULTS_BYTES} bytes")
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = parse_row(json.loads(line))
            except ValueError as exc:
                if problems is not None:
                    problems.append(ResultLineProblem(path=path, line=number, message=str(exc)))
                continue
            latest[(row.agent, row.task_id)] = row.to_json()
    return list(latest.values())


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` via a temporary file and rename (never a half-written file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class ResultsStore:
    """``results.jsonl`` of one run directory."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = RunDir(self.run_dir).results
        self._lock = threading.Lock()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._repair()

    def _repair(self) -> None:
        """Cut a trailing partial line left by a crash."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(keep)

    def read(self, problems: list[ResultLineProblem] | None = None) -> list[dict[str, Any]]:
        """All complete, valid result lines, last line per (agent, task) winning (see :func:`read_results`)."""
        return read_results(self.path, problems)

    def done(self, retry_statuses: Iterable[str] = ()) -> set[tuple[str, str]]:
        """(agent, task_id) pairs already finished (minus those whose status should be retried)."""
        retry = set(retry_statuses)
        return {(r["agent"], r["task_id"]) for r in self.read() if r.get("status") not in retry}

    def append(self, row: dict[str, Any]) -> None:
        """Append one result line, flushed and fsynced."""
        checked = parse_row(json.loads(json.dumps(row, default=str)))  # raises ValueError on a wrong shape
        line = json.dumps({**row, "schema_version": checked.schema_version}, ensure_ascii=False, default=str) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def _group_keys(row: dict[str, Any], field: str) -> list[str]:
    value = (row.get("metadata") or {}).get(field)
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _judge_block(rows: list[dict[str, Any]], judges: list[str], total: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for judge in judges:
        scores = [
            float(r["scores"][judge]["score"])
            for r in rows
            if judge in (r.get("scores") or {}) and isinstance(r["scores"][judge].get("score"), int | float)
        ]
        block: dict[str, Any] = {
            "n": len(scores),
            "mean": _mean(scores),
            # every task counts; a missing score (agent failure etc.) counts as 0
            "mean_all": round(sum(scores) / total, 4) if total else None,
            "success_rate": round(sum(1 for s in scores if s >= 1.0 - 1e-9) / total, 4) if total else None,
        }
        metrics: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            m = ((r.get("scores") or {}).get(judge) or {}).get("metrics") or {}
            for k, v in m.items():
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                    metrics[k].append(float(v))
        if metrics:
            block["metrics"] = {k: _mean(v) for k, v in sorted(metrics.items())}
        out[judge] = block
    return out


def summarize_results(rows: list[dict[str, Any]], group_fields: Iterable[str] = ("category", "edit_type", "difficulty", "dataset")) -> dict[str, Any]:
    """Aggregate result lines per agent and judge, and per metadata group (category, difficulty...)."""
    agents: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        agents[r["agent"]].append(r)
    judges = sorted({j for r in rows for j in (r.get("scores") or {})})
    summary: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "judges": judges, "agents": {}}
    for agent, arows in sorted(agents.items()):
        counts = {s: sum(1 for r in arows if r.get("status") == s) for s in STATUSES}
        usage: dict[str, int] = defaultdict(int)
        for r in arows:
            for k, v in (r.get("usage") or {}).items():
                if isinstance(v, int):
                    usage[k] += v
        entry: dict[str, Any] = {
            "tasks": len(arows),
            "status": counts,
            "judges": _judge_block(arows, judges, len(arows)),
            "duration_s": round(sum(float(r.get("duration_s") or 0) for r in arows), 2),
            "usage": dict(usage),
            "groups": {},
        }
        for field in group_fields:
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in arows:
                for key in _group_keys(r, field):
                    groups[key].append(r)
            if groups:
                entry["groups"][field] = {
                    key: {"tasks": len(g), "judges": _judge_block(g, judges, len(g))} for key, g in sorted(groups.items())
                }
        summary["agents"][agent] = entry
    return summary
