"""Multi-turn tasks: the turns of a session run in order, each on the agent's previous output.

A task is multi-turn when ``task.metadata["turns"]`` is a non-empty list. Each turn is a dict with
``instruction``, optional ``target`` (the gold deck after this turn), optional ``style_target`` and
optional ``metadata`` (merged into the turn's task metadata, e.g. a judge's per-turn inputs).

The runner turns turn *i* into an ordinary :class:`~pptarena.types.Task` (id
``<task id>--turn-<i>``) whose ``original`` is the agent's prediction of turn *i-1* (the
session's ``original`` for turn 0) and whose ``metadata["turn_history"]`` lists the earlier turns
(``{"turn", "instruction"}``), so single-turn agents work unchanged and multi-turn agents can read
the history. Every turn is judged; the session stops at the first turn the agent or a judge fails
on. A session's score per judge is the **lowest** turn score (for 0/1 judges: it succeeds only if
every turn does); the metrics give ``turns``, ``turns_passed``, ``final_turn_score`` and
``turn_scores``, and the result line lists the turns under ``turns``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pptarena.types import Prediction, Status, Task


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


def session_scores(turn_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per judge: the lowest turn score, with per-turn metrics."""
    judges = sorted({name for row in turn_rows for name in row["scores"]})
    scores: dict[str, Any] = {}
    for name in judges:
        values = [float(row["scores"][name]["score"]) for row in turn_rows if name in row["scores"]]
        scores[name] = {
            "score": min(values),
            "metrics": {
                "turns": len(values),
                "turns_passed": sum(1 for v in values if v >= 1.0),
                "final_turn_score": values[-1],
                "turn_scores": values,
            },
        }
    return scores


def run_session(runner: Any, agent: Any, session: Task, epoch: int = 1) -> dict[str, Any] | None:
    """Run every turn of ``session`` with ``agent`` through ``runner``;
    return its one row (the caller appends it).
    """
    t0 = time.monotonic()
    row = runner._new_row(agent, session, {}, epoch)
    row["metadata"] = {k: v for k, v in session.metadata.items() if k != "turns"}
    previous: Path = session.original
    history: list[dict[str, Any]] = []
    turn_rows: list[dict[str, Any]] = []
    for index in range(len(session.metadata["turns"])):
        task = turn_task(session, index, previous, history)
        failure = _run_turn(runner, agent, task, epoch, row, turn_rows)
        if failure is None:  # interrupted
            return None
        if isinstance(failure, tuple):
            row["status"], row["error"] = failure[0], f"turn {index}: {failure[1]}"
            break
        previous = Path(turn_rows[-1]["prediction_path"])
        history.append({"turn": index, "instruction": task.instruction})
    if row["status"] == Status.SCORED:
        row["scores"] = session_scores(turn_rows)
    for turn in turn_rows:
        turn.pop("prediction_path", None)
    row["turns"] = turn_rows
    row["duration_s"] = round(time.monotonic() - t0, 3)
    if runner._stop.is_set():
        return None
    return row


def _run_turn(
    runner: Any,
    agent: Any,
    task: Task,
    epoch: int,
    row: dict[str, Any],
    turn_rows: list[dict[str, Any]],
) -> tuple[str, str] | bool | None:
    """Run and judge one turn. False = fine; (status, error) = the session stops; None = interrupted."""
    try:
        ws = runner._workspace(agent, task, epoch)
    except OSError as exc:
        return (Status.INFRA_ERROR, f"could not prepare the workspace: {exc}")
    from pptarena.redact import redact_tree

    try:
        return _judge_turn(runner, agent, task, ws, row, turn_rows)
    finally:
        redact_tree(ws.dir)  # files plugins wrote themselves hold no secret, as in a single-turn pair


def _judge_turn(
    runner: Any, agent: Any, task: Task, ws: Any, row: dict[str, Any], turn_rows: list[dict[str, Any]]
) -> tuple[str, str] | bool | None:
    """Run the agent on one turn in ``ws`` and judge what it handed in (see :func:`_run_turn`)."""
    from pptarena.models.messages import add_counts
    from pptarena.run.results import write_json_atomic
    from pptarena.run.rundir import VERDICTS

    outcome = runner.launch_agent(agent, task, ws)
    if runner._stop.is_set():
        return None
    add_counts(row["usage"], outcome.model_usage)
    if not outcome.ok or outcome.prediction is None:
        return (outcome.status, str(outcome.error))
    pred: Prediction = outcome.prediction
    add_counts(row["usage"], pred.usage)
    problem = runner._check_prediction(pred)
    if problem:
        return (Status.AGENT_ERROR, problem)
    scratch: dict[str, Any] = {"status": Status.SCORED, "error": None}
    if not runner._normalize_references(agent, task, ws, scratch):
        return (scratch["status"], scratch["error"])
    judged = runner._judge(task, pred, ws)
    add_counts(row["usage"], judged.usage)
    write_json_atomic(ws.dir / VERDICTS, {"status": judged.status, "error": judged.error, **judged.details()})
    where = Path(pred.path).resolve()  # type: ignore[arg-type]
    turn_rows.append(
        {
            "turn": task.metadata["turn"],
            "status": judged.status,
            "scores": judged.scores,
            "error": judged.error,
            "prediction_path": str(where),
            "prediction": str(where.relative_to(runner.run_dir))
            if where.is_relative_to(runner.run_dir)
            else str(where),
        }
    )
    if judged.status != Status.SCORED:
        return (judged.status, judged.error or "")
    return False
