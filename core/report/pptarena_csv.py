"""A run's dual-judge verdicts as PPTArena's judged-results CSV, to sit beside the published systems.

PPTArena's leaderboard reads ``agent_bench/results/<system>_judge_results.csv``: one row per case,
keyed by the case name (``pair_name``, the name in ``evaluation_pairs_refined.json``), with
``instruction_following_score`` and ``visual_quality_score`` on 0-5; a row missing either score is
dropped (``../shared/reference/pptarena-format.md`` §5.1). :func:`export_pptarena_csv` writes one
such file per agent, with the columns of PPTArena's own evaluation log::

    timestamp, pair_name, llm_engine, generation_time_seconds, judge_model, judge_time_seconds,
    instruction_following_score, visual_quality_score, instruction_following_reason,
    visual_quality_reason

``llm_engine`` is the agent's label, ``generation_time_seconds`` the attempt's time (agent and
judges), ``timestamp`` the run's start. A case the judge did not score keeps its row with empty
scores and the error as its reasons (PPTArena drops it, so it counts 0 there as here). Only each
case's first attempt is written (PPTArena has one answer per case).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from pptarena.report.data import RunData
from pptarena.run.statistics.split_figures import IF_KEY, VQ_KEY, dual_judges
from pptarena.types import PptArenaError, Status

COLUMNS = [
    "timestamp",
    "pair_name",
    "llm_engine",
    "generation_time_seconds",
    "judge_model",
    "judge_time_seconds",
    "instruction_following_score",
    "visual_quality_score",
    "instruction_following_reason",
    "visual_quality_reason",
]
_UNSAFE = str.maketrans({c: "_" for c in '\\/\x00<>:"|?*'})


class ExportError(PptArenaError, ValueError):
    """The run cannot be exported (no dual-judge verdicts, or an ambiguous judge)."""


def pick_judge(data: RunData, judge: str | None) -> str:
    """The judge to export: ``judge`` if it gives IF/VQ scores, else the run's only such judge."""
    found = dual_judges(data.rows)
    if judge is not None:
        if judge not in found:
            raise ExportError(
                f"judge {judge!r} gave no IF/VQ scores in {data.run_dir} (judges that did: {found})"
            )
        return judge
    if len(found) != 1:
        raise ExportError(
            f"{data.run_dir}: {len(found)} judges gave IF/VQ scores ({found}); choose one with --judge"
            if found
            else f"{data.run_dir}: no judge gave IF/VQ scores (PPTArena's CSV needs the dual judge)"
        )
    return found[0]


def _reasons(verdict: dict[str, Any]) -> tuple[str, str]:
    details = verdict.get("details") or {}
    if_reason = str(((details.get("if") or {}).get("reason")) or "")
    chunks = (details.get("vq") or {}).get("chunks") or []
    vq_reason = " | ".join(str(c.get("reason")) for c in chunks if isinstance(c, dict) and c.get("reason"))
    return if_reason, vq_reason


def case_rows(data: RunData, judge: str, agent: str) -> list[dict[str, Any]]:
    """One CSV row per case the agent attempted (first attempt), in result order."""
    started = str(data.manifest.started_at or "")
    out = []
    for row in data.rows:
        if row.agent != agent or row.epoch != 1:
            continue
        block = row.scores.get(judge)
        metrics = block.metrics if block is not None else {}
        verdict = (data.verdicts(agent, row.task_id).get("verdicts") or {}).get(judge) or {}
        scored = row.status == Status.SCORED and IF_KEY in metrics and VQ_KEY in metrics
        if_reason, vq_reason = _reasons(verdict)
        if not scored:
            why = str(verdict.get("error") or row.error or row.status or "not scored")
            if_reason = vq_reason = why
        out.append(
            {
                "timestamp": started,
                "pair_name": str(row.metadata.get("name") or row.task_id),
                "llm_engine": agent,
                "generation_time_seconds": row.duration_s,
                "judge_model": metrics.get("judge_model") or "",
                "judge_time_seconds": verdict.get("duration_s", ""),
                "instruction_following_score": metrics.get(IF_KEY) if scored else "",
                "visual_quality_score": metrics.get(VQ_KEY) if scored else "",
                "instruction_following_reason": if_reason,
                "visual_quality_reason": vq_reason,
            }
        )
    return out


def export_pptarena_csv(data: RunData, out_dir: Path, judge: str | None = None) -> list[Path]:
    """Write ``<agent>_judge_results.csv`` per agent under ``out_dir``; the files written.

    :raises ExportError: no judge to export, or ``out_dir`` cannot be written (read-only: the message
        names the folder and ``--out``).
    """
    from pptarena.report.fileio import ReadOnlyFolderError, writing_into

    label = pick_judge(data, judge)
    try:
        with writing_into(Path(out_dir).absolute(), "write the CSV files elsewhere with --out DIR"):
            return _write_csvs(data, Path(out_dir), label)
    except ReadOnlyFolderError as exc:
        raise ExportError(str(exc)) from exc


def _write_csvs(data: RunData, out_dir: Path, label: str) -> list[Path]:
    """:func:`export_pptarena_csv` once the judge is chosen."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for agent in data.agents:
        rows = case_rows(data, label, agent)
        if not rows:
            continue
        path = out_dir / f"{agent.translate(_UNSAFE)}_judge_results.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        written.append(path)
    return written
