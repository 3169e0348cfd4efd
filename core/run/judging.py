"""Judging one prediction with every judge of a run, classifying judge failures.

Shared by the runner and ``arena rescore`` so both record judge outcomes the same way:
an :class:`~pptarena.types.InfraError` makes the result ``infra_error`` (a tool failed), and so does
any failure on a task whose reference deck does not open (the dataset's fault, named as a
``dataset error: ...``; :func:`.configuration.datacheck.reference_failure`); any other exception is
``judge_error``. The scores of the judges that succeeded are kept.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from pptarena.models.messages import add_counts, sum_usage
from pptarena.run.folder.records import JudgeOutcome
from pptarena.run.folder.rundir import AGENT_LOG
from pptarena.types import AgentLog, InfraError, JudgeError, Prediction, Status, Task, Verdict


class JudgeRetryLog(AgentLog):
    """The pair's ``agent.log.jsonl`` as the judges' model clients see it: only their retries
    (``model_retry`` events, marked ``by = "judge"``) are written, so every retry and every second a
    judge's call waited is in the pair's log beside the agent's own, and the agent's ``model_call``
    events stay the agent's alone."""

    def write(self, event: str, **data: Any) -> None:
        """Record a judge call's ``model_retry``; any other event is dropped."""
        if event == "model_retry":
            super().write(event, by="judge", **data)


def judge_prediction(
    task: Task,
    prediction: Prediction,
    judges: list[tuple[Any, Any]],
    task_dir: Path,
    components: Any,
    pair_dir: Path | None = None,
) -> JudgeOutcome:
    """Run ``judges`` (pairs of component config and judge instance) on one prediction.

    Judges write their evidence under ``task_dir``; ``pair_dir`` is the pair's folder in the
    original run (default ``task_dir``), where re-saved reference decks may be kept.

    :returns: the judges' :class:`~pptarena.run.folder.records.JudgeOutcome` (usage keys prefixed ``judge_``).
    """
    from pptarena.evidence import Evidence
    from pptarena.models.pricing import clients_cost
    from pptarena.run.configuration.datacheck import reference_failure
    from pptarena.run.folder.fingerprint import cached_fingerprint, rubric_hash
    from pptarena.run.references import stored_references

    client = getattr(components, "judge_client", components.model_client)
    retries = JudgeRetryLog(Path(task_dir) / AGENT_LOG)
    evidence = Evidence(
        task,
        prediction,
        task_dir,
        renderer=components.renderer,
        model=lambda ref: client(ref, log=retries),
        references=stored_references(pair_dir or task_dir),
    )
    status, scores, errors, verdicts = Status.SCORED, {}, [], {}
    backends = getattr(getattr(components, "config", None), "backends", None) or {}
    only = (task.metadata or {}).get("judges")  # [[datasets]] tables may name the judges of their tasks
    for comp, judge in judges:
        if isinstance(only, list) and comp.label not in only:
            continue
        t0 = time.monotonic()
        fid = cached_fingerprint(comp, judge, backends)["id"]
        first_client = len(evidence.clients)
        try:
            verdict = judge.judge(task, prediction, evidence)
            if not isinstance(verdict, Verdict):
                raise JudgeError(f"judge returned {type(verdict).__name__}, expected pptarena.Verdict")
            scores[comp.label] = {"score": verdict.score, "metrics": verdict.metrics, "fingerprint": fid}
            verdicts[comp.label] = {
                "score": verdict.score,
                "metrics": verdict.metrics,
                "explanation": verdict.explanation,
                "details": verdict.details,
                "duration_s": round(time.monotonic() - t0, 3),
                "fingerprint": fid,
            }
            if task.rubric is not None:
                verdicts[comp.label]["rubric_sha"] = rubric_hash(task.rubric)
        except Exception as exc:  # noqa: BLE001 - classified like the runner does
            kind = Status.INFRA_ERROR if isinstance(exc, InfraError) else Status.JUDGE_ERROR
            # a reference deck that does not open is the dataset's fault, never the judge's or the agent's
            dataset_fault = reference_failure(task, cache_dir=getattr(components, "cache_dir", None))
            if dataset_fault is not None:
                kind = Status.INFRA_ERROR
            if kind == Status.INFRA_ERROR or status == Status.SCORED:
                status = kind
            errors.append(dataset_fault or f"judge {comp.label}: {type(exc).__name__}: {exc}")
            verdicts[comp.label] = {
                "error": dataset_fault or f"{type(exc).__name__}: {exc}",
                "status": kind,
                "traceback": traceback.format_exc(limit=20),
                "fingerprint": fid,
            }
        verdicts[comp.label]["cost"] = clients_cost(evidence.clients[first_client:])
    usage = add_counts({}, sum_usage(c.usage for c in evidence.clients).as_dict(), prefix="judge_")
    return JudgeOutcome(status, scores, errors, verdicts, usage)
