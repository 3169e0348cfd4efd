"""The append-only results store of a run directory, and its aggregation into summary.json.

``results.jsonl`` gets one line per finished (agent, task) pair, written and
fsynced as each finishes. A line cut short by a crash (SIGKILL, power loss) is
dropped when the store is reopened, so a resumed run never loses a complete
line and never duplicates one.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from pptarena.models.messages import add_counts
from pptarena.models.pricing import cost_of_rows
from pptarena.run.folder.records import ResultLineProblem, ResultRow, parse_result_line, parse_row
from pptarena.run.folder.rundir import RunDir
from pptarena.run.folder.summary_record import Summary
from pptarena.run.jail.boundary import weakest as weakest_isolation
from pptarena.run.statistics.columns import columns, tasks_of
from pptarena.run.statistics.resample import active_batch, batched
from pptarena.run.statistics.split_figures import split_figures
from pptarena.run.statistics.summary_stats import StatsOptions, judge_blocks, start_comparisons
from pptarena.types import STATUSES, PptArenaError

SCHEMA_VERSION = 1
MAX_RESULTS_BYTES = 512 * 1024 * 1024
SUMMARY_REVISION = 4  # 2: agents have ``isolation`` (their weakest row); 3: ``leaderboard_splits``;
# 4: ``source.sha256`` digests each typed row's own JSON serialization (figures unchanged)
"""Bump when :func:`summarize_results` computes any figure differently: summaries stored with another
revision are then recomputed by readers instead of reused (see :func:`rows_source`)."""


def read_results(path: Path, problems: list[ResultLineProblem] | None = None) -> list[ResultRow]:
    """Result lines of a ``results.jsonl``, each validated as a :class:`ResultRow`
    (last line per (agent, task, epoch) wins).

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
    latest: dict[tuple[str, str, int], ResultRow] = {}
    with paused_gc(), path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = parse_result_line(line)
            except ValueError as exc:
                if problems is not None:
                    problems.append(ResultLineProblem(path=path, line=number, message=str(exc)))
                continue
            latest[row.key] = row
    return list(latest.values())


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many long-lived objects are made (the rows of a
    large run): reading them makes no reference cycles, and each collection would walk every row
    read so far (100,000 lines: 0.8 s instead of 2.7 s). Re-enabled after, if it was enabled."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` via a new temporary file and rename (never a half-written file, never
    through a link an agent left in a pair's folder: :func:`pptarena.trust.safeio.write_replacing`)."""
    from pptarena.trust.redact import redact_obj, redact_text
    from pptarena.trust.safeio import write_replacing

    text = redact_text(
        json.dumps(redact_obj(data), indent=2, ensure_ascii=False, default=str)
    )  # never a secret
    write_replacing(path, (text + "\n").encode("utf-8"))


class ResultsStore:
    """``results.jsonl`` of one run directory."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = RunDir(self.run_dir).results
        self._lock = threading.Lock()
        self._repair()  # the folder itself is made on first write (a run that cannot start leaves none)

    def _repair(self) -> None:
        """Cut a trailing partial line left by a crash."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with self.path.open("r+b") as fh:
                fh.truncate(keep)

    def read(self, problems: list[ResultLineProblem] | None = None) -> list[ResultRow]:
        """All complete, valid result lines, last line per (agent, task, epoch) winning
        (see :func:`read_results`).
        """
        return read_results(self.path, problems)

    def done(self, retry_statuses: Iterable[str] = ()) -> set[tuple[str, str]]:
        """(agent, task_id) pairs with at least one finished attempt
        (minus those whose status should be retried).
        """
        return {(a, t) for a, t, _ in self.done_attempts(retry_statuses)}

    def done_attempts(self, retry_statuses: Iterable[str] = ()) -> set[tuple[str, str, int]]:
        """(agent, task_id, epoch) attempts already finished (minus those whose status should be retried)."""
        retry = set(retry_statuses)
        return {r.key for r in self.read() if r.status not in retry}

    def append(self, row: ResultRow) -> None:
        """Append one result line (:meth:`ResultRow.to_line`), flushed and fsynced.

        The line is validated again as written (a field an attempt set to a wrong shape raises
        :class:`ValueError` here, before anything reaches the file) and redacted (never a secret).
        """
        from pptarena.trust.redact import redact_obj, redact_text

        data = json.loads(json.dumps(row.to_line(), ensure_ascii=False, default=str))
        parse_row(data)  # raises ValueError on a wrong shape
        line = redact_text(json.dumps(redact_obj(data), ensure_ascii=False)) + "\n"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _value_keys(value: Any) -> list[str]:
    """The metadata group keys of one value (a list is several groups; nothing for an empty value)."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


NEWER_FIELDS = frozenset({"reported_usage", "agent_code", "agent_fingerprint", "task_sha", "notes", "tools"})
"""Row fields added after the digest's revision 4: left out of a row's digest while they are None,
so the lines that never had them digest as before (and stored summaries stay reusable)."""


def _absent_newer_fields(row: ResultRow) -> set[str] | None:
    """The :data:`NEWER_FIELDS` that ``row`` leaves empty (None when it has them all)."""
    absent = {name for name in NEWER_FIELDS if getattr(row, name) is None}
    return absent or None


def rows_source(rows: list[ResultRow]) -> dict[str, Any]:
    """What a summary was computed from: the number of lines, a SHA-256 of the lines as read and
    :data:`SUMMARY_REVISION` (``summary.json`` ``source``).

    A reader holding the same lines and options can reuse a stored summary whose ``source`` is
    equal instead of recomputing it (the report does, :func:`pptarena.report.data.load_run`).
    Each row is digested as its JSON serialization (fields in declared order, then the line's other
    keys in the order read; :data:`NEWER_FIELDS` only when set); a row holding text JSON cannot
    encode (a lone surrogate in its metadata) is digested through Python's encoder instead.
    """
    digest = hashlib.sha256()
    for row in rows:
        try:
            digest.update(row.model_dump_json(exclude=_absent_newer_fields(row)).encode("utf-8"))
        except ValueError:  # pydantic's serialization error: text UTF-8 cannot carry
            text = json.dumps(row.to_json(), ensure_ascii=False, separators=(",", ":"), default=str)
            digest.update(text.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\n")
    return {"rows": len(rows), "sha256": digest.hexdigest(), "revision": SUMMARY_REVISION}


def _one_or_mixed(values: list[Any]) -> str | None:
    """The one value the rows share, ``"mixed"`` when they differ, None when none has one."""
    found = {v for v in values if isinstance(v, str) and v}
    return None if not found else found.pop() if len(found) == 1 else "mixed"


MCP_SERVERS_GROUP = "mcp_servers"
"""A group field read from the row itself, not its metadata: the MCP servers the attempt had."""


def mcp_servers_key(row: ResultRow) -> str | None:
    """A row's :data:`MCP_SERVERS_GROUP` key: the sorted names of the servers in its ``tools`` record
    joined by ``+`` (``deck`` for the harness's deck tools, e.g. ``deck+pptx``), ``none`` when it
    had none, None (no group) for a row without a ``tools`` record (an agent that records no tools)."""
    if row.tools is None:
        return None
    names = sorted({str(s.get("name")) for s in row.tools.get("servers") or [] if isinstance(s, dict)})
    return "+".join(names) if names else "none"


def _group_value(row: ResultRow, field: str) -> Any:
    """The value a row is grouped by for ``field``: :func:`mcp_servers_key` or its metadata's value."""
    if field == MCP_SERVERS_GROUP:
        return mcp_servers_key(row)
    return row.metadata.get(field)


def summarize_results(
    rows: list[ResultRow],
    group_fields: Iterable[str] = ("category", "edit_type", "difficulty", "dataset", MCP_SERVERS_GROUP),
    opts: StatsOptions | None = None,
) -> Summary:
    """Aggregate result lines per agent and judge, and per metadata group (category, difficulty...)
    and per set of MCP servers (:func:`mcp_servers_key`, for rows that record their tools).

    Means are over tasks of the per-task mean over epochs, with 95% bootstrap intervals; see
    :mod:`pptarena.run.statistics.summary_stats` (statistics), :mod:`pptarena.models.pricing` (cost).
    """
    opts = opts or StatsOptions()
    with batched():  # every bootstrap interval computed together at the end (the same numbers)
        figures = _summarize(rows, list(group_fields), opts)
    return Summary.model_validate(figures)  # once the batch has filled in every interval


def _summarize(rows: list[ResultRow], group_fields: list[str], opts: StatsOptions) -> dict[str, Any]:
    agents: dict[str, list[ResultRow]] = defaultdict(list)
    for r in rows:
        agents[r.agent].append(r)
    judges = sorted({j for r in rows for j in r.scores})
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "judges": judges,
        "statistics": opts.to_json(),
        "agents": {},
    }
    per_agent = {}  # each agent's lines as arrays, read once
    for agent, arows in sorted(agents.items()):
        cols = columns(arows, judges, opts.success_threshold)
        per_agent[agent] = (cols, tasks_of(cols, np.arange(len(arows))))
    comparisons = start_comparisons(judges, per_agent, opts)  # the sign-flip tests, on a thread
    for agent, arows in sorted(agents.items()):
        cols, everything = per_agent[agent][0], np.arange(len(arows))
        found = Counter(r.status for r in arows)
        counts = {s: found[s] for s in STATUSES}
        usage: dict[str, int] = {}
        for r in arows:
            add_counts(usage, r.usage)
        entry: dict[str, Any] = {
            "tasks": len(cols.task_ids),
            "attempts": len(arows),
            "epochs": int(cols.epoch.max()),
            "status": counts,
            "judges": judge_blocks(cols, everything, judges, opts),
            "duration_s": round(sum(float(r.duration_s or 0) for r in arows), 2),
            "usage": dict(usage),
            "cost": cost_of_rows(arows),
            "isolation": weakest_isolation([r.isolation for r in arows]),
            "agent_process": _one_or_mixed([r.agent_process for r in arows]),
            "groups": {},
        }
        summary["agents"][agent] = entry
    comparisons.wait()
    batch = active_batch()
    if batch is not None:
        batch.start()  # the agents' and comparisons' intervals, on other threads, while groups are built
    for agent, arows in sorted(agents.items()):
        cols, entry = per_agent[agent][0], summary["agents"][agent]
        for field in group_fields:
            groups: dict[str, list[int]] = defaultdict(list)
            for i, row in enumerate(arows):
                value = _group_value(row, field)
                if type(value) is str:  # the usual value: one group (as _value_keys gives it)
                    if value:
                        groups[value].append(i)
                    continue
                for key in _value_keys(value):
                    groups[key].append(i)
            if groups:
                entry["groups"][field] = {
                    key: {
                        "tasks": len(set(cols.task[at].tolist())),
                        "judges": judge_blocks(cols, at, judges, opts),
                    }
                    for key, g in sorted(groups.items())
                    if len(at := np.array(g, dtype=np.intp))
                }
    summary["cost"] = cost_of_rows(rows)
    comparisons.add_to(summary)
    if batch is not None:
        batch.start()  # the groups' intervals, on other threads, while the lines' digest is computed
    splits = split_figures(rows)  # PPTArena's leaderboard figures, when the dataset describes its splits
    if splits:
        summary["leaderboard_splits"] = splits
    summary["source"] = rows_source(rows)
    return summary
