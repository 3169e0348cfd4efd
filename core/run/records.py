"""The typed records of a run: result rows, their status, and what agents and judges hand back.

Every line of ``results.jsonl`` is a :class:`ResultRow`. The runner builds rows through it
before writing, and every reader (resume, ``arena report``, re-scoring) validates each line
through it: a line of the wrong shape becomes one :class:`ResultLineProblem` naming the file
and line, never a traceback deep inside the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from pptarena.types import Status

RESULTS_SCHEMA = 1
"""The version of the result-line shape, written in every line as ``schema_version``."""


def _finite(value: float | None) -> float | None:
    """``value`` unless it is NaN or infinite (JSON readers accept ``NaN``; results must not)."""
    if value is not None and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


FiniteFloat = Annotated[float | None, AfterValidator(_finite)]
"""A float that is not NaN or infinite, or None."""


class JudgeScore(BaseModel):
    """One judge's score of one prediction: a finite ``score`` (or None) and its metrics."""

    model_config = ConfigDict(extra="allow")

    score: FiniteFloat = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    fingerprint: str | None = Field(
        None, max_length=64, description="the judge's fingerprint id (pptarena.run.fingerprint)"
    )


class ResultRow(BaseModel):
    """One line of ``results.jsonl``: one finished attempt (epoch) of an (agent, task) pair."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = RESULTS_SCHEMA
    agent: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    status: Status
    scores: dict[str, JudgeScore] = Field(default_factory=dict)
    error: str | None = None
    duration_s: FiniteFloat = Field(None, ge=0)
    usage: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    epoch: int = Field(
        1, ge=1, le=1000, description="the attempt number (``[run] epochs``); 1 for lines from before epochs"
    )
    reused_from_epoch: int | None = Field(
        None, ge=1, description="a deterministic agent's line copied from this epoch"
    )
    cost: dict[str, Any] | None = Field(
        None, description="USD: agent, judges and total (pptarena.models.pricing.pair_cost)"
    )
    isolation: str | None = (
        None  # what untrusted code ran in: bwrap, unshare, rlimits or none (docs/security.md)
    )
    #: multi-turn sessions only (see pptarena.run.sessions): one entry per turn run, in order,
    #: with ``turn``, ``status``, ``scores``, ``error`` and ``prediction``
    turns: list[dict[str, Any]] | None = None

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, value: int) -> int:
        if value > RESULTS_SCHEMA:
            raise ValueError(
                f"written by a newer pptarena (result schema {value}; this one reads {RESULTS_SCHEMA})"
            )
        return value

    def to_json(self) -> dict[str, Any]:
        """The row as the JSON object written to ``results.jsonl``."""
        data = self.model_dump(mode="json")
        if data.get("turns") is None:  # single-turn rows stay as they were
            data.pop("turns", None)
        return data


class ResultLineProblem(BaseModel):
    """A line of a results file that is not a valid :class:`ResultRow`."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def parse_row(data: Any) -> ResultRow:
    """Validate one decoded result line; raises :class:`ValueError` with one readable sentence."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return ResultRow.model_validate(data)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "line"
            parts.append(f"{where}: {err['msg']}")
        raise ValueError("; ".join(parts)) from None


@dataclass
class JudgeOutcome:
    """What the judges of a run made of one prediction (see :func:`pptarena.run.judging.judge_prediction`).

    ``status`` is ``scored`` unless a judge failed (``judge_error``, or ``infra_error`` when a tool
    failed); ``scores`` holds the judges that succeeded; ``verdicts`` every judge's verdict or error.
    """

    status: Status
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    verdicts: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        """The judges' errors in one line, or None."""
        return "; ".join(self.errors) or None
