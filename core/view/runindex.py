"""A run's task table as columns in memory, built by reading ``results.jsonl`` once and extended by
byte offset as the runner appends lines (the file is never read again from the start unless it
shrank or was replaced).

Every line is validated as a :class:`~pptarena.run.folder.records.ResultRow` (from its bytes, which costs no
more than decoding the JSON); a line that is not a valid row is counted in ``problems`` and left out,
as :func:`pptarena.run.folder.results.read_results` leaves it out of the report. Per attempt (the last valid
line of each (agent, task, epoch) wins, as in ``read_results``) the index keeps the task, agent,
status, epoch, duration, each judge's score, the line's sequence number and where the line lies in
the file — a pair page reads its rows back by offset. Filters and sorts run on NumPy arrays made
from the columns when they changed, so a page of a 100,000-pair run costs milliseconds. The task
table's rows (:meth:`RunIndex.query`, :meth:`RunIndex.since`) are plain dicts: the page's and its
JSON API's projection of the columns (with the judges' disagreement), not result lines.

Columns from elsewhere (the people's labels of :mod:`pptarena.view.human_labels`) join a query as
``extra`` arrays, one value per position (:meth:`RunIndex.snapshot` gives the positions of attempts
and the arrays they were computed from): the query filters and sorts on them like on its own
columns, and each row carries their values under ``extra``. Positions never move while the file
only grows, so arrays made at an earlier version still fit the rows they had.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pptarena.run.folder.records import ResultRow, parse_result_line

READ_CHUNK = 8 * 1024 * 1024
SORTS = ("line", "task", "agent", "status", "epoch", "duration", "disagreement")
#: the least gap on 0-1 between a judge's score and the people's value for "judge and people
#: disagree" (``Query.disagree``; see :mod:`pptarena.view.human_labels`)
DISAGREE_GAP = 0.5


@dataclass(frozen=True)
class Query:
    """A task-table request: filters, sort (a column of :data:`SORTS`, ``judge:<label>`` or an
    ``extra`` column's name), page.

    ``disagree`` keeps the pairs whose ``extra`` column ``gap:<disagree>`` (the largest gap between a
    judge and the people of that campaign) is at least ``gap``; without that column, no pair.
    """

    status: str = ""
    agent: str = ""
    text: str = ""
    min_disagreement: float | None = None
    disagree: str = ""
    gap: float = DISAGREE_GAP
    sort: str = "line"
    descending: bool = False
    page: int = 0
    per_page: int = 50


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)


class RunIndex:
    """The columns of one run's ``results.jsonl`` (thread-safe; see the module doc)."""

    def __init__(self, results: Path):
        self.path = Path(results)
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self.offset = 0
        self.inode: tuple[int, int] | None = None
        self.lines = 0
        self.problems = 0
        # never back to an earlier number: what was computed from the file before it was replaced
        # (keyed on the version) must not pass for current
        self.version = getattr(self, "version", -1) + 1
        self.tasks: list[str] = []
        self.agents: list[str] = []
        self.statuses: list[str] = []
        self.judges: list[str] = []
        self._task_ix: dict[str, int] = {}
        self._agent_ix: dict[str, int] = {}
        self._status_ix: dict[str, int] = {}
        self._cols: dict[str, list[Any]] = {k: [] for k in ("t", "a", "s", "e", "dur", "seq", "off", "len")}
        self._scores: dict[str, list[float]] = {}
        self._pos: dict[tuple[str, str, int], int] = {}
        self._by_task: dict[int, list[int]] = {}
        self._np: tuple[int, dict[str, np.ndarray]] | None = None
        self._task_rank: tuple[int, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._cols["t"])

    # ------------------------------------------------------------------ reading

    def refresh(self) -> int:
        """Read what was appended since the last call; returns the number of new lines read."""
        with self._lock:
            try:
                st = os.stat(self.path)
            except OSError:
                return 0
            ident = (st.st_dev, st.st_ino)
            if self.inode is not None and (ident != self.inode or st.st_size < self.offset):
                self._reset()  # replaced or truncated: start over
            self.inode = ident
            if st.st_size <= self.offset:
                return 0
            new = 0
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                while self.offset < st.st_size:
                    data = fh.read(min(READ_CHUNK, st.st_size - self.offset))
                    end = data.rfind(b"\n")
                    if end < 0:
                        if len(data) >= READ_CHUNK:  # a line longer than a chunk: skip it whole
                            self.offset += len(data)
                            continue
                        break  # the last line is still being written
                    start = 0
                    while start <= end:
                        stop = data.index(b"\n", start)
                        raw = data[start:stop]
                        self.lines += 1
                        if raw.strip():
                            try:
                                row = parse_result_line(raw)
                            except ValueError:
                                self.problems += 1
                            else:
                                self._add(row, self.offset + start, stop - start)
                                new += 1
                        start = stop + 1
                    self.offset += end + 1
                    fh.seek(self.offset)
            if new:
                self.version += 1
            return new

    def _intern(self, table: dict[str, int], names: list[str], value: str) -> int:
        ix = table.get(value)
        if ix is None:
            ix = table[value] = len(names)
            names.append(value)
        return ix

    def _add(self, row: ResultRow, offset: int, length: int) -> None:
        key = (row.task_id, row.agent, row.epoch)
        t = self._intern(self._task_ix, self.tasks, row.task_id)
        values = {
            "t": t,
            "a": self._intern(self._agent_ix, self.agents, row.agent),
            "s": self._intern(self._status_ix, self.statuses, str(row.status)),
            "e": row.epoch,
            "dur": _number(row.duration_s),
            "seq": self.lines,
            "off": offset,
            "len": length,
        }
        scores = row.scores
        for judge in scores:
            if judge not in self._scores:
                self.judges.append(judge)
                self._scores[judge] = [math.nan] * len(self)
        pos = self._pos.get(key)
        if pos is None:
            pos = self._pos[key] = len(self)
            for k, v in values.items():
                self._cols[k].append(v)
            for judge, col in self._scores.items():
                col.append(_number(row.score(judge)))
            self._by_task.setdefault(t, []).append(pos)
        else:  # a later line for the same attempt replaces the earlier one
            for k, v in values.items():
                self._cols[k][pos] = v
            for judge, col in self._scores.items():
                col[pos] = _number(row.score(judge))

    def read_rows(self, positions: list[int]) -> list[ResultRow]:
        """The result rows at these positions, read back from the file by offset
        (:func:`~pptarena.run.folder.records.parse_result_line`; a line that no longer parses, because the
        file changed under us, is left out)."""
        with self._lock:
            where = [(self._cols["off"][p], self._cols["len"][p]) for p in positions]
        out = []
        with open(self.path, "rb") as fh:  # seek + read: os.pread is not on Windows
            for off, length in where:
                fh.seek(off)
                try:
                    out.append(parse_result_line(fh.read(length)))
                except ValueError:
                    continue
        return out

    def task_rows(self, task_id: str) -> list[ResultRow]:
        """Every attempt of one task (all agents and epochs)."""
        with self._lock:
            t = self._task_ix.get(task_id)
            positions = list(self._by_task.get(t, [])) if t is not None else []
        return self.read_rows(positions)

    # ------------------------------------------------------------------ querying

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns as arrays (rebuilt only when lines were added since the last call)."""
        with self._lock:
            if self._np is not None and self._np[0] == self.version:
                return self._np[1]
            arrs = {
                k: np.asarray(v, dtype=np.float64 if k == "dur" else np.int64) for k, v in self._cols.items()
            }
            for judge, col in self._scores.items():
                arrs["judge:" + judge] = np.asarray(col, dtype=np.float64)
            if len(self._scores) >= 2:
                stack = np.vstack([arrs["judge:" + j] for j in self._scores])
                counts = np.sum(~np.isnan(stack), axis=0)
                with np.errstate(all="ignore"):
                    spread = np.nanmax(np.where(counts >= 1, stack, 0), axis=0) - np.nanmin(
                        np.where(counts >= 1, stack, 0), axis=0
                    )
                arrs["disagreement"] = np.where(counts >= 2, np.round(spread, 4), np.nan)  # as shown
            else:
                arrs["disagreement"] = np.full(len(self), np.nan)
            self._np = (self.version, arrs)
            return arrs

    def snapshot(self, keys: list[tuple[str, str, int]]) -> tuple[int, np.ndarray, dict[str, np.ndarray]]:
        """``(version, positions, arrays)`` taken together: the position of each (task, agent,
        epoch) attempt of ``keys`` (-1 when the run has none) and the columns (:meth:`arrays`)."""
        with self._lock:
            arrs = self.arrays()
            pos = np.fromiter((self._pos.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
            return self.version, pos, arrs

    def _task_ranks(self) -> np.ndarray:
        if self._task_rank is None or self._task_rank[0] != len(self.tasks):
            order = sorted(range(len(self.tasks)), key=self.tasks.__getitem__)
            rank = np.empty(len(self.tasks), dtype=np.int64)
            rank[order] = np.arange(len(order))
            self._task_rank = (len(self.tasks), rank)
        return self._task_rank[1]

    def query(self, q: Query, extra: dict[str, np.ndarray] | None = None) -> tuple[int, list[dict[str, Any]]]:
        """``(matching pairs, the page's rows)``; each row holds task, agent, status, epoch, duration,
        the judges' scores and the disagreement, and with ``extra`` columns (float arrays by
        position, NaN: no value) their values under ``extra``."""
        with self._lock:
            arrs = self.arrays()
            n = len(self)
            more = {k: _fit(v, n) for k, v in (extra or {}).items()}
            mask = np.ones(n, dtype=bool)
            if q.status:
                mask &= arrs["s"] == self._status_ix.get(q.status, -1)
            if q.agent:
                mask &= arrs["a"] == self._agent_ix.get(q.agent, -1)
            if q.text:
                needle = q.text.lower()
                hits = np.fromiter(
                    (needle in t.lower() for t in self.tasks), dtype=bool, count=len(self.tasks)
                )
                mask &= hits[arrs["t"]] if len(self.tasks) else mask
            if q.min_disagreement is not None:
                with np.errstate(invalid="ignore"):
                    mask &= arrs["disagreement"] >= q.min_disagreement
            if q.disagree:
                gaps = more.get("gap:" + q.disagree)
                if gaps is None:
                    mask[:] = False
                else:
                    with np.errstate(invalid="ignore"):
                        mask &= gaps >= q.gap
            chosen = np.flatnonzero(mask)
            key = more[q.sort] if q.sort in more else self._sort_key(q.sort, arrs)
            if key is not None:
                values = key[chosen]
                if values.dtype.kind == "f":
                    nan = np.isnan(values)
                    values = np.where(nan, np.inf if not q.descending else -np.inf, values)
                order = np.argsort(-values if q.descending else values, kind="stable")
                chosen = chosen[order]
            elif q.descending:
                chosen = chosen[::-1]
            page = chosen[q.page * q.per_page : (q.page + 1) * q.per_page]
            rows = [self._row(int(p), arrs) for p in page]
            if more:  # the page's values of each column at once (NaN: None, else 4 decimals)
                values = {
                    k: [None if x != x else x for x in np.round(v[page], 4).tolist()] for k, v in more.items()
                }
                for i, row in enumerate(rows):
                    row["extra"] = {k: col[i] for k, col in values.items()}
            return len(chosen), rows

    def _sort_key(self, sort: str, arrs: dict[str, np.ndarray]) -> np.ndarray | None:
        if sort == "task":
            return self._task_ranks()[arrs["t"]]
        if sort == "agent":
            ranks = (
                np.argsort(np.argsort(np.array(self.agents, dtype=object))) if self.agents else np.array([])
            )
            return ranks[arrs["a"]].astype(np.int64)
        if sort == "status":
            ranks = (
                np.argsort(np.argsort(np.array(self.statuses, dtype=object)))
                if self.statuses
                else np.array([])
            )
            return ranks[arrs["s"]].astype(np.int64)
        if sort == "epoch":
            return arrs["e"]
        if sort == "duration":
            return arrs["dur"]
        if sort == "disagreement":
            return arrs["disagreement"]
        if sort.startswith("judge:") and sort in arrs:
            return arrs[sort]
        return None  # "line": file order

    def _row(self, p: int, arrs: dict[str, np.ndarray]) -> dict[str, Any]:
        return {
            "task_id": self.tasks[int(arrs["t"][p])],
            "agent": self.agents[int(arrs["a"][p])],
            "status": self.statuses[int(arrs["s"][p])],
            "epoch": int(arrs["e"][p]),
            "duration_s": _num(arrs["dur"][p]),
            "scores": {j: _num(arrs["judge:" + j][p]) for j in self.judges},
            "disagreement": _num(arrs["disagreement"][p]),
            "seq": int(arrs["seq"][p]),
        }

    def since(self, seq: int, limit: int = 20) -> list[dict[str, Any]]:
        """Attempts whose latest line came after line ``seq`` (newest first, at most ``limit``)."""
        with self._lock:
            arrs = self.arrays()
            newer = np.flatnonzero(arrs["seq"] > seq)
            newer = newer[np.argsort(-arrs["seq"][newer], kind="stable")][:limit]
            return [self._row(int(p), arrs) for p in newer]

    def counts(self) -> dict[str, dict[str, int]]:
        """Pairs per status and per agent (for the filter menus)."""
        with self._lock:
            arrs = self.arrays()
            s = np.bincount(arrs["s"], minlength=len(self.statuses)) if len(self) else []
            a = np.bincount(arrs["a"], minlength=len(self.agents)) if len(self) else []
            return {
                "status": {name: int(s[i]) for i, name in enumerate(self.statuses)},
                "agent": {name: int(a[i]) for i, name in enumerate(self.agents)},
            }


def _num(x: float) -> float | None:
    """A column's value as a row shows it: None for NaN, else rounded to 4 decimals."""
    return None if math.isnan(x) else round(float(x), 4)


def _fit(values: np.ndarray, n: int) -> np.ndarray:
    """An ``extra`` column cut or padded with NaN to ``n`` positions (made at an earlier version,
    it lacks the attempts added since)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) >= n:
        return values[:n]
    return np.concatenate([values, np.full(n - len(values), np.nan)])


def attempt_row(index: RunIndex, task_id: str, agent: str, epoch: int = 1) -> ResultRow | None:
    """The result row of one attempt (None when the run has none)."""
    with index._lock:
        pos = index._pos.get((task_id, agent, epoch))
    rows = index.read_rows([pos]) if pos is not None else []
    return rows[0] if rows else None
