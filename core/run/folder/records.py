"""The typed records of a run: result rows, their status, and what agents and judges hand back.

Every line of ``results.jsonl`` is a :class:`ResultRow`. The runner builds rows through it
before writing, and every reader (resume, ``arena report``, re-scoring) validates each line
through it: a line of the wrong shape becomes one :class:`ResultLineProblem` naming the file
and line, never a traceback deep inside the report.

Why it is long: :class:`ResultRow` validates its fields with the same rules that decide what of an
agent's own claims a row keeps (:func:`reported_usage`, :func:`tools_usage`), so a line read back passes
exactly what the attempt kept; those rules and the row stay together. :class:`AgentOutcome` and
:class:`JudgeOutcome` with their wire shapes (what a worker or the judges hand back) are a second job
and could move to a module of their own (not done yet).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from pptarena.types import Prediction, Status

RESULTS_SCHEMA = 1
NEWER_ROW_FIELDS = (
    "turns",
    "reported_usage",
    "agent_code",
    "agent_fingerprint",
    "task_sha",
    "notes",
    "tools",
)
"""Fields a row leaves out of its JSON while they are None: lines written before a field existed keep
their shape (and their digest, :data:`pptarena.run.folder.results.NEWER_FIELDS`)."""
MAX_NOTES_CHARS = 4000
"""The most characters of an agent's ``Prediction.notes`` a row keeps."""
MAX_EPOCH = 1000  # the largest attempt number a result line (or a label naming one) may carry
"""The version of the result-line shape, written in every line as ``schema_version``."""
MAX_REPORTED_COUNT = 10**10
"""The largest count an agent may report in ``Prediction.usage``; larger ones are refused."""
MAX_REPORTED_KEYS = 64
"""The most counts of an agent's ``Prediction.usage`` kept in a row; the rest are refused."""


def _finite(value: float | None) -> float | None:
    """``value`` unless it is NaN or infinite (JSON readers accept ``NaN``; results must not)."""
    if value is not None and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


FiniteFloat = Annotated[float | None, AfterValidator(_finite)]
"""A float that is not NaN or infinite, or None."""


def _plausible(value: Any) -> bool:
    """Whether ``value`` is a count an agent may report: an ``int`` (not a bool) in [0, 10^10]."""
    return type(value) is int and 0 <= value <= MAX_REPORTED_COUNT


def reported_usage(claimed: Any) -> tuple[dict[str, int], list[str]]:
    """What of an agent's own usage figures (``Prediction.usage``) a row keeps, and what it refuses.

    Kept: up to :data:`MAX_REPORTED_KEYS` counts under text keys (of 100 characters at most) that
    are integers from 0 to :data:`MAX_REPORTED_COUNT`. Refused (named in the second item): negative,
    non-integer, boolean, absurd or non-numeric values, and the keys past the cap. The harness never
    adds these figures to a row's ``usage``, its cost or the summary: they are the agent's word.
    """
    if not isinstance(claimed, dict):
        return {}, [f"(not a mapping: {type(claimed).__name__})"]
    kept: dict[str, int] = {}
    refused: list[str] = []
    for key, value in claimed.items():
        if len(kept) == MAX_REPORTED_KEYS:
            refused.append(f"({len(claimed) - len(kept) - len(refused)} more keys)")
            break
        if isinstance(key, str) and len(key) <= 100 and _plausible(value):
            kept[key] = value
        else:
            refused.append(str(key)[:100])
    return kept, refused


def _checked_reported_usage(value: dict[str, int] | None) -> dict[str, int] | None:
    """``value`` unless one of its counts is not plausible (see :func:`reported_usage`)."""
    if value is not None and reported_usage(value)[0] != value:
        raise ValueError(f"counts must be integers from 0 to {MAX_REPORTED_COUNT}")
    return value


ReportedUsage = Annotated[dict[str, Any] | None, AfterValidator(_checked_reported_usage)]
"""An agent's own usage figures as a row keeps them (see :func:`reported_usage`), or None."""


MAX_TOOL_SERVERS = 32
"""The most servers a row's ``tools`` keeps."""
MAX_TOOL_NAMES = 512
"""The most tools a row's ``tools["calls"]`` keeps."""
MAX_TOOL_TEXT = 128
"""The longest server name, version, command hash or tool name a row's ``tools`` keeps."""


def _short_text(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_TOOL_TEXT


def _server_entry(entry: Any) -> dict[str, Any] | None:
    """One ``servers`` entry as kept (``name``, ``version``, ``command_sha``), None when malformed."""
    if not isinstance(entry, dict) or not _short_text(entry.get("name")):
        return None
    out: dict[str, Any] = {"name": entry["name"]}
    for key in ("version", "command_sha"):
        value = entry.get(key)
        if value is not None and not _short_text(value):
            return None
        out[key] = value
    return out


def tools_usage(claimed: Any) -> tuple[dict[str, Any] | None, str]:
    """What of an agent's ``Prediction.metadata["tools"]`` a row keeps as ``tools``, and why not.

    The shape: ``{"servers": [{"name", "version", "command_sha"}...], "calls": {tool: n}, "errors": n,
    "renders": n}``: at most :data:`MAX_TOOL_SERVERS` servers with unique names and
    :data:`MAX_TOOL_NAMES` tools, texts of 1 to :data:`MAX_TOOL_TEXT` characters, counts integers
    from 0 to :data:`MAX_REPORTED_COUNT`. Anything else is dropped whole (``(None, why)``): the row
    keeps no half-checked record. ``(None, "")`` when there is none.
    """
    if claimed is None:
        return None, ""
    if not isinstance(claimed, dict):
        return None, f"not a mapping: {type(claimed).__name__}"
    extra = sorted(str(k)[:40] for k in claimed if k not in ("servers", "calls", "errors", "renders"))
    if extra:
        return None, f"unknown keys {extra[:5]}"
    servers = claimed.get("servers", [])
    if not isinstance(servers, list) or len(servers) > MAX_TOOL_SERVERS:
        return None, f"servers must be a list of at most {MAX_TOOL_SERVERS}"
    kept_servers = [_server_entry(e) for e in servers]
    if any(e is None for e in kept_servers):
        return None, "a server entry is not {name, version, command_sha} of short texts"
    names = [e["name"] for e in kept_servers if e is not None]
    if len(set(names)) != len(names):
        return None, "a server is named twice"
    calls = claimed.get("calls", {})
    if not isinstance(calls, dict) or len(calls) > MAX_TOOL_NAMES:
        return None, f"calls must be a mapping of at most {MAX_TOOL_NAMES} tools"
    if not all(_short_text(k) and _plausible(v) for k, v in calls.items()):
        return None, f"calls must map tool names to counts from 0 to {MAX_REPORTED_COUNT}"
    counts = {key: claimed.get(key, 0) for key in ("errors", "renders")}
    if not all(_plausible(v) for v in counts.values()):
        return None, f"errors and renders must be counts from 0 to {MAX_REPORTED_COUNT}"
    return {"servers": kept_servers, "calls": dict(calls), **counts}, ""


def _checked_tools(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """``value`` when :func:`tools_usage` keeps it as it is."""
    if value is None:
        return None
    kept, why = tools_usage(value)
    if kept != value:
        raise ValueError(f"tools: {why or 'not in its kept shape'}")
    return value


ToolsRecord = Annotated[dict[str, Any] | None, AfterValidator(_checked_tools)]
"""The tools an attempt had and used as a row keeps them (see :func:`tools_usage`), or None."""


class JudgeScore(BaseModel):
    """One judge's score of one prediction: a finite ``score`` (or None) and its metrics."""

    model_config = ConfigDict(extra="allow")

    score: FiniteFloat = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    fingerprint: str | None = Field(
        None, max_length=64, description="the judge's fingerprint id (pptarena.run.folder.fingerprint)"
    )


class ResultRow(BaseModel):
    """One line of ``results.jsonl``: one finished attempt (epoch) of an (agent, task) pair.

    Rows travel as this type from the attempt that makes them to every reader (resume, the summary,
    ``arena report``, re-scoring, meta-evaluation, ``arena view``). Build one through its
    constructors, one per kind of line: :meth:`begin` (an attempt or a session, filled in as it runs),
    :meth:`infra_failure` (a pair the infrastructure could not run), :meth:`reused_copy` (a
    deterministic agent's later epoch) and :meth:`rescored` (the same attempt under other judges).
    :meth:`to_line` is the JSON written; :meth:`to_json` the full record readers compare.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)  # an attempt fills it in, checked

    # declared in the order an attempt writes them (to_line keeps that order)
    agent: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    epoch: int = Field(
        1,
        ge=1,
        le=MAX_EPOCH,
        description="the attempt number (``[run] epochs``); 1 for lines from before epochs",
    )
    status: Status
    scores: dict[str, JudgeScore] = Field(default_factory=dict)
    error: str | None = None
    duration_s: FiniteFloat = Field(None, ge=0)
    usage: dict[str, Any] = Field(default_factory=dict)
    reported_usage: ReportedUsage = Field(
        None,
        description="the agent's own usage figures (Prediction.usage) that passed reported_usage: "
        "its word, never added to usage, cost or the summary; absent when it reported none",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: ToolsRecord = Field(
        None,
        description="the MCP servers the attempt had (deck tools as server 'deck') and its tool calls, "
        "errors and renders (Prediction.metadata['tools'] that passed tools_usage); absent when none",
    )
    agent_process: str | None = Field(
        None,
        description="where the agent ran (pptarena.run.jail.boundary.agent_process); absent on old lines",
    )
    agent_code: str | None = Field(
        None,
        description="which kind of code the agent is: builtin, installed (a plugin of the harness's "
        "environment, trusted) or agent-env (an environment of its own, never imported by the harness); "
        "absent on old lines",
    )
    agent_fingerprint: str | None = Field(
        None,
        max_length=64,
        description="the id of the agent's fingerprint when the row was recorded "
        "(pptarena.run.folder.provenance; manifest.json keeps the fingerprint); absent on old lines",
    )
    task_sha: str | None = Field(
        None,
        max_length=64,
        description="the hash of the task's instruction, rubric and decks when the row was recorded "
        "(pptarena.run.folder.provenance); absent on old lines",
    )
    prediction: str | None = Field(
        None, description="the prediction's path, relative to the run folder when inside it"
    )
    notes: str | None = Field(
        None,
        max_length=MAX_NOTES_CHARS,
        description="the agent's own notes on its prediction (Prediction.notes; redacted, cut at "
        "MAX_NOTES_CHARS), shown in the report and the view; absent when it gave none",
    )
    #: multi-turn sessions only (see pptarena.run.sessions): one entry per turn run, in order,
    #: with ``turn``, ``status``, ``scores``, ``error``, ``prediction``, ``usage``, ``cost``, ``isolation``
    #: and ``duration_s`` (the session's own ``usage``, ``cost`` and ``isolation`` add them up)
    turns: list[dict[str, Any]] | None = None
    cost: dict[str, Any] | None = Field(
        None, description="USD: agent, judges and total (pptarena.models.pricing.pair_cost)"
    )
    isolation: str | None = (
        None  # what untrusted code ran in: bwrap, unshare, rlimits or none (docs/security.md)
    )
    reused_from_epoch: int | None = Field(
        None, ge=1, description="a deterministic agent's line copied from this epoch"
    )
    reused_digest: str | None = Field(
        None, description="digest of the epoch-1 line a reused copy was made from (pptarena.run.attempts)"
    )
    schema_version: int = RESULTS_SCHEMA

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, value: int) -> int:
        if value > RESULTS_SCHEMA:
            raise ValueError(
                f"written by a newer pptarena (result schema {value}; this one reads {RESULTS_SCHEMA})"
            )
        return value

    # ------------------------------------------------------------------ constructors

    @classmethod
    def begin(
        cls,
        agent: str,
        task_id: str,
        epoch: int = 1,
        *,
        metadata: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
        agent_process: str | None = None,
        agent_code: str | None = None,
    ) -> ResultRow:
        """An attempt's (or a session's) row before anything happened: scored, no scores, no error;
        the attempt fills in status, scores, usage, cost and isolation as it runs."""
        fields: dict[str, Any] = {
            "agent": agent,
            "task_id": task_id,
            "epoch": epoch,
            "status": Status.SCORED,
            "scores": {},
            "error": None,
            "duration_s": 0.0,
            "usage": dict(usage or {}),
            "metadata": metadata or {},
        }
        if agent_process is not None:
            fields["agent_process"] = agent_process
        if agent_code is not None:
            fields["agent_code"] = agent_code
        return cls(**fields)

    @classmethod
    def infra_failure(
        cls,
        agent: str,
        task_id: str,
        epoch: int,
        error: str,
        *,
        metadata: dict[str, Any] | None = None,
        duration_s: float = 0.0,
        **extra: Any,
    ) -> ResultRow:
        """The row of an attempt the infrastructure failed to run (a lost worker, a crashed run);
        ``extra`` adds what the caller knows (``isolation``, ``agent_process``, ``agent_code``)."""
        row = cls.begin(agent, task_id, epoch, metadata=metadata)
        row.status = Status.INFRA_ERROR
        row.error = error
        row.duration_s = round(duration_s, 3)
        for name, value in extra.items():
            setattr(row, name, value)
        return row

    def reused_copy(self, epoch: int, digest: str) -> ResultRow:
        """This epoch-1 row copied as attempt ``epoch`` of a deterministic agent: no usage, time or cost
        of its own, ``reused_from_epoch`` 1 and the digest of this row."""
        copy = self.model_copy(deep=True)
        copy.epoch = epoch
        copy.reused_from_epoch = 1
        copy.reused_digest = digest
        copy.usage = {}
        copy.reported_usage = None
        copy.duration_s = 0.0
        copy.cost = {"usd": 0.0, "known_usd": 0.0, "unpriced_models": [], "agent": None, "judges": {}}
        return copy

    def rescored(
        self, status: Status | str, error: str | None, scores: dict[str, Any] | None = None
    ) -> ResultRow:
        """This attempt under another judging (``arena meta-eval --repeat`` judges it again): status,
        error and scores replaced, everything the agent did kept."""
        copy = self.model_copy(deep=True)
        copy.status = Status(status)
        copy.error = error
        copy.scores = {k: JudgeScore.model_validate(v) for k, v in (scores or {}).items()}
        return copy

    @classmethod
    def from_json(cls, data: Any) -> ResultRow:
        """Validate one decoded result line (:func:`parse_row`)."""
        return parse_row(data)

    # ------------------------------------------------------------------ reading

    @property
    def key(self) -> tuple[str, str, int]:
        """(agent, task_id, epoch): the attempt this line records."""
        return self.agent, self.task_id, self.epoch

    def score(self, judge: str) -> float | None:
        """The judge's 0-1 score in this line, or None when it gave none."""
        block = self.scores.get(judge)
        return None if block is None else block.score

    def success(self, judge: str, threshold: float) -> bool:
        """Success by the benchmark's rule: the judge's ``success`` metric when it has one,
        else score >= threshold."""
        block = self.scores.get(judge)
        if block is None:
            return False
        metric = block.metrics.get("success")
        if isinstance(metric, (int, float)):  # bool is an int
            return bool(metric)
        return block.score is not None and block.score >= threshold - 1e-9

    # ------------------------------------------------------------------ writing

    def to_json(self) -> dict[str, Any]:
        """The whole record as JSON: every field, present or not (what readers compare and digest;
        fields an old line never had are left out, so its digest stays what it was)."""
        data = self.model_dump(mode="json")
        unset = self.model_fields_set
        for name in ("agent_process", "prediction", "reused_digest"):
            if name not in unset and data.get(name) is None:
                data.pop(name)
        for name in NEWER_ROW_FIELDS:  # rows without them stay as they were
            if data.get(name) is None:
                data.pop(name, None)
        return data

    def to_line(self) -> dict[str, Any]:
        """The JSON object written to ``results.jsonl``: the fields this row was given, in the order
        an attempt writes them, then ``schema_version``."""
        data = self.model_dump(mode="json", exclude_unset=True)
        if data.get("reported_usage") is None:
            data.pop("reported_usage", None)
        data.pop("schema_version", None)
        data["schema_version"] = self.schema_version
        return data


class ResultLineProblem(BaseModel):
    """A line of a results file that is not a valid :class:`ResultRow`."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _one_sentence(exc: ValidationError, whole: str) -> str:
    """A validation error as ``where: what; where: what`` (no pydantic internals)."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or whole
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_result_line(raw: bytes | str) -> ResultRow:
    """One line of ``results.jsonl`` as a :class:`ResultRow`: the one definition of a valid results
    line, used by :func:`pptarena.run.folder.results.read_results` and the view's index.

    The row is validated straight from the text (pydantic's own JSON parser: about as fast as
    ``json.loads`` alone); a line refused there is decoded again with Python's JSON (bytes as UTF-8,
    bad bytes replaced) and validated by :func:`parse_row`, so a line only Python's decoder accepts (a
    lone surrogate escape, say) is kept too, and a refusal is :func:`parse_row`'s one sentence.

    :raises ValueError: when the line is not a valid result row.
    """
    try:
        return ResultRow.model_validate_json(raw)
    except ValueError:  # pydantic's ValidationError is a ValueError
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        return parse_row(json.loads(text))


def parse_row(data: Any) -> ResultRow:
    """Validate one decoded result line; raises :class:`ValueError` with one readable sentence."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return ResultRow.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_one_sentence(exc, "line")) from None


def prediction_to_json(pred: Prediction) -> dict[str, Any]:
    """JSON form of a :class:`~pptarena.types.Prediction`."""
    return {
        "path": str(pred.path) if pred.path else None,
        "notes": pred.notes,
        "usage": pred.usage,
        "metadata": pred.metadata,
    }


def prediction_from_json(data: dict[str, Any]) -> Prediction:
    """Inverse of :func:`prediction_to_json`."""
    return Prediction(
        path=Path(data["path"]) if data.get("path") else None,
        notes=data.get("notes", ""),
        usage=dict(data.get("usage") or {}),
        metadata=dict(data.get("metadata") or {}),
    )


class _PredictionLine(BaseModel):
    """The wire shape of a prediction inside an agent outcome."""

    path: str | None = None
    notes: str = ""
    usage: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class _OutcomeLine(BaseModel):
    """The wire shape of an :class:`AgentOutcome` (worker result file, pool reply)."""

    model_config = ConfigDict(extra="ignore")  # a pool worker adds its own timings

    ok: bool
    prediction: _PredictionLine | None = None
    status: Status | None = None
    error: str | None = None
    traceback: str | None = None
    model_usage: dict[str, Any] = Field(default_factory=dict)
    model_cost: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> _OutcomeLine:
        if self.ok and self.prediction is None:
            raise ValueError("ok without a prediction")
        if not self.ok and self.status in (None, Status.SCORED):
            raise ValueError("a failure needs a failure status")
        return self


@dataclass
class AgentOutcome:
    """What running an agent on one task gave back: its prediction, or why there is none.

    Built where the agent ran (in the runner's process, a worker process, a pool worker) and
    carried to the runner as JSON (:meth:`to_json` / :meth:`from_json`). ``status`` is None for a
    prediction; for a failure it is ``agent_error``, ``timeout`` or ``infra_error``.
    ``model_usage`` and ``model_cost`` are the agent's own model calls (None cost: not reported,
    e.g. the worker was killed).
    """

    prediction: Prediction | None = None
    status: Status | None = None
    error: str | None = None
    traceback: str | None = None
    model_usage: dict[str, Any] = field(default_factory=dict)
    model_cost: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when the agent handed in a prediction (it may still be an unreadable deck)."""
        return self.status is None and self.prediction is not None

    @classmethod
    def failed(cls, status: Status | str, error: str, traceback: str | None = None) -> AgentOutcome:
        """An outcome without a prediction."""
        return cls(status=Status(status), error=error, traceback=traceback)

    def to_json(self) -> dict[str, Any]:
        """The JSON object a worker hands the runner."""
        data: dict[str, Any] = {"ok": self.ok, "model_usage": self.model_usage, "model_cost": self.model_cost}
        if self.ok:
            data["prediction"] = prediction_to_json(self.prediction)  # type: ignore[arg-type]
        else:
            data.update(status=str(self.status), error=self.error, traceback=self.traceback)
        return data

    @classmethod
    def from_json(cls, data: Any) -> AgentOutcome:
        """Validate what a worker handed back; raises :class:`ValueError` with one readable sentence."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        try:
            line = _OutcomeLine.model_validate(data)
        except ValidationError as exc:
            raise ValueError(_one_sentence(exc, "outcome")) from None
        pred = prediction_from_json(line.prediction.model_dump()) if line.prediction is not None else None
        return cls(
            prediction=pred if line.ok else None,
            status=None if line.ok else line.status,
            error=line.error,
            traceback=line.traceback,
            model_usage=line.model_usage,
            model_cost=line.model_cost,
        )


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

    def details(self) -> dict[str, Any]:
        """What ``verdicts.json`` holds besides the status: every judge's verdict and the judges' usage."""
        return {"verdicts": self.verdicts, "judge_usage": self.usage}
