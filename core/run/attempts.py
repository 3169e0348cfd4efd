"""Epochs and budgets of a run: which attempts to make, where they live, when to stop starting new ones.

* An attempt is (agent, task, epoch), epoch 1..K (``[run] epochs`` / ``--epochs``). Epoch 1 lives
  in ``tasks/<agent>/<task>/`` as before epochs existed; epoch e > 1 in ``tasks/<agent>/<task>@e<e>/``
  (``@`` never occurs in a safe folder name, so the two cannot collide).
* An agent whose class sets ``deterministic = True`` (noop, oracle, precomputed) runs epoch 1 only;
  its other epochs are copies of that line with ``reused_from_epoch = 1`` and no usage or cost of
  their own.
* :class:`Budget`: ``[run] max_cost`` / ``--max-cost`` in USD. The runner starts no new attempt once
  the priced cost of every recorded line reaches it; attempts in flight finish.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from pptarena.models.pricing import spent_usd
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.rundir import RunDir


def attempt_dir(run_dir: Path, agent: str, task_id: str, epoch: int = 1) -> Path:
    """The folder of one attempt (``tasks/<agent>/<task>`` for epoch 1, ``...@e<N>`` after)."""
    return RunDir(run_dir).attempt(agent, task_id, epoch)


def row_dir(run_dir: Path, row: ResultRow) -> Path:
    """The folder holding a result line's files (a reused line points at the epoch it copies)."""
    return attempt_dir(run_dir, row.agent, row.task_id, row.reused_from_epoch or row.epoch)


def is_deterministic(factory: Any) -> bool:
    """Whether an agent class declares that every attempt gives the same deck."""
    return bool(getattr(factory, "deterministic", False))


def _digest(row: ResultRow) -> str:
    """What a reused copy records of the epoch-1 line it copies (it is re-copied when this changes)."""
    data = row.to_json()
    core = {k: data.get(k) for k in ("status", "scores", "error", "prediction")}
    return hashlib.sha256(json.dumps(core, sort_keys=True, default=str).encode()).hexdigest()[:16]


def reused_rows(rows: list[ResultRow], agent: str, epochs: int) -> list[ResultRow]:
    """Lines to append so a deterministic agent has epochs 2..K copied from its epoch-1 line.

    A copy is (re)written when missing or when the epoch-1 line changed since it was copied.
    """
    by_task: dict[str, dict[int, ResultRow]] = {}
    for r in rows:
        if r.agent == agent:
            by_task.setdefault(r.task_id, {})[r.epoch] = r
    out = []
    for attempts in by_task.values():
        first = attempts.get(1)
        if first is None:
            continue
        digest = _digest(first)
        for e in range(2, epochs + 1):
            have = attempts.get(e)
            if have is not None and have.reused_digest == digest:
                continue
            out.append(first.reused_copy(e, digest))
    return out


class Budget:
    """Dollars spent by a run (priced calls of every recorded line) against ``max_cost`` (None: no limit)."""

    def __init__(self, max_cost: float | None, rows: list[ResultRow]):
        self.max_cost = max_cost
        self.spent = spent_usd(rows)
        self.unpriced = any(r.cost and r.cost.get("usd") is None for r in rows)
        self.stopped = False
        self.not_started = 0
        self._lock = threading.Lock()

    def add(self, row: ResultRow) -> None:
        """Count a newly recorded line."""
        with self._lock:
            self.spent += spent_usd([row])
            if row.cost and row.cost.get("usd") is None:
                self.unpriced = True

    def exhausted(self) -> bool:
        """True once the spending reached ``max_cost``."""
        return self.max_cost is not None and self.spent >= self.max_cost

    def to_json(self) -> dict[str, Any]:
        """The manifest / summary record."""
        return {
            "max_cost": self.max_cost,
            "spent_usd": round(self.spent, 6),
            "stopped": self.stopped,
            "not_started": self.not_started,
            "unpriced_calls_seen": self.unpriced,
        }

    def message(self) -> str:
        """What to tell the user when the budget stopped the run."""
        text = (
            f"Budget reached: ${self.spent:.4f} spent of max_cost ${self.max_cost:.4f}; "
            f"{self.not_started} attempts were not started (attempts in flight were finished). "
            "Resume with a higher --max-cost to continue."
        )
        if self.unpriced:
            text += " Some calls have no known price and are not counted."
        return text
