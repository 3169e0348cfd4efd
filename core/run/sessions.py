"""Multi-turn tasks: the turns of a session run in order, each on the agent's previous output.

A task is multi-turn when ``task.metadata["turns"]`` is a non-empty list. Each turn is a dict with
``instruction``, optional ``target`` (the gold deck after this turn), optional ``style_target`` and
optional ``metadata`` (merged into the turn's task metadata, e.g. a judge's per-turn inputs).

Each turn is an attempt of its own (:meth:`pptarena.run.attempt.Attempts.run_turn`): turn *i* is an
ordinary :class:`~pptarena.types.Task` (id ``<task id>--turn-<i>``) whose ``original`` is the
agent's prediction of turn *i-1* (the session's ``original`` for turn 0) and whose
``metadata["turn_history"]`` lists the earlier turns (``{"turn", "instruction"}``), so single-turn
agents work unchanged and multi-turn agents can read the history. Every turn is judged; the session
stops at the first turn the agent or a judge fails on. A session's score per judge is the **lowest**
turn score (for 0/1 judges: it succeeds only if every turn does); the metrics give ``turns``,
``turns_passed``, ``final_turn_score`` and ``turn_scores``, and the result line lists the turns
under ``turns``.

``task.metadata["session_score"] = "final"`` scores a session by its **last** turn alone (PPTC's
session accuracy: the final deck against the final label): its score per judge is the last turn's,
the earlier turns' scores stay in the metrics, and a judge that fails on an earlier turn does not
end the session (only the final deck is scored; the earlier turn's error stays in its entry).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pptarena.run.folder.records import ResultRow
from pptarena.types import Status, Task

if TYPE_CHECKING:
    from pptarena.run.attempt import Attempts


def is_session(task: Task) -> bool:
    """Whether ``task`` is a multi-turn session."""
    turns = (task.metadata or {}).get("turns")
    return isinstance(turns, list) and bool(turns)


def turn_task(session: Task, index: int, original: Path, history: list[dict[str, Any]]) -> Task:
    """The single-turn task for turn ``index`` of ``session``, starting from ``original``."""
    turn = session.metadata["turns"][index]
    base = {k: v for k, v in session.metadata.items() if k != "turns"}
    metadata = {
        **base,
        **(turn.get("metadata") or {}),
        "turn": index,
        "turn_history": list(history),
        "session_id": session.id,
    }
    return Task(
        id=f"{session.id}--turn-{index}",
        instruction=str(turn["instruction"]),
        original=Path(original),
        target=Path(turn["target"]) if turn.get("target") else None,
        style_target=turn.get("style_target"),
        metadata=metadata,
    )


def final_only(session: Task) -> bool:
    """Whether ``session`` is scored by its last turn alone (``metadata["session_score"] == "final"``)."""
    return (session.metadata or {}).get("session_score") == "final"


def session_scores(turn_rows: list[ResultRow], final: bool = False) -> dict[str, Any]:
    """Per judge: the lowest turn score (``final``: the last turn's), with per-turn metrics."""
    last = turn_rows[-1].scores if turn_rows else {}
    judges = sorted({name for row in turn_rows for name in row.scores})
    scores: dict[str, Any] = {}
    for name in judges:
        if final and name not in last:
            continue
        values = [float(row.scores[name].score) for row in turn_rows if name in row.scores]  # type: ignore[arg-type]
        scores[name] = {
            "score": values[-1] if final else min(values),
            "metrics": {
                "turns": len(values),
                "turns_passed": sum(1 for v in values if v >= 1.0),
                "final_turn_score": values[-1],
                "turn_scores": values,
            },
        }
    return scores


ISOLATION_RANK = {"none": 0, "rlimits": 1, "unshare": 2, "bwrap": 3}  # unknown names rank with "none"


def weakest_isolation(levels: list[str]) -> str | None:
    """The weakest of the turns' isolation levels: a session is as contained as its least contained turn."""
    return min(levels, key=lambda level: ISOLATION_RANK.get(level, 0)) if levels else None


def run_session(attempts: Attempts, agent: Any, session: Task, epoch: int = 1) -> ResultRow | None:
    """Run every turn of ``session`` with ``agent`` through ``attempts``;
    return its one row (the caller appends it).

    Each turn is an ordinary attempt (:meth:`~pptarena.run.attempt.Attempts.run_turn`): its own task
    folder, judges, usage, cost and isolation. The session's row adds them up (usage, cost, duration)
    and takes the weakest isolation.
    """
    from pptarena.models.messages import add_counts
    from pptarena.models.pricing import cost_of_rows

    t0 = time.monotonic()
    row = attempts.new_row(agent, session, epoch)
    row.metadata = {k: v for k, v in session.metadata.items() if k != "turns"}
    previous: Path = session.original
    history: list[dict[str, Any]] = []
    turn_rows: list[ResultRow] = []
    for index in range(len(session.metadata["turns"])):
        task = turn_task(session, index, previous, history)
        turn = attempts.run_turn(agent, task, epoch)
        if turn is None:  # interrupted
            return None
        turn_rows.append(turn)
        add_counts(row.usage, turn.usage)
        judged_later = final_only(session) and turn.status == Status.JUDGE_ERROR and turn.prediction
        last = index == len(session.metadata["turns"]) - 1
        if turn.status != Status.SCORED and (last or not judged_later):
            row.status, row.error = turn.status, f"turn {index}: {turn.error or turn.status}"
            break
        previous = Path(attempts.run_dir) / str(turn.prediction)  # absolute when outside the run folder
        history.append({"turn": index, "instruction": task.instruction})
    if row.status == Status.SCORED:
        row.scores = session_scores(turn_rows, final=final_only(session))  # type: ignore[assignment]
    row.turns = [_turn_entry(index, turn) for index, turn in enumerate(turn_rows)]
    row.cost = cost_of_rows(turn_rows)
    row.isolation = weakest_isolation([t.isolation for t in turn_rows if t.isolation])
    row.duration_s = round(time.monotonic() - t0, 3)
    if attempts.stopping():
        return None
    return row


def _turn_entry(index: int, turn: ResultRow) -> dict[str, Any]:
    """What a session's row keeps of one turn's attempt row."""
    keep = ("status", "scores", "error", "prediction", "usage", "cost", "isolation", "duration_s")
    data = turn.to_line()  # the fields as the attempt set them
    entry = {"turn": index, **{k: data.get(k) for k in keep}}
    if data.get("notes"):  # the agent's notes on this turn, when it gave any
        entry["notes"] = data["notes"]
    return entry
