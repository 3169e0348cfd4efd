"""The typed ``summary.json``: what :func:`pptarena.run.folder.results.summarize_results` returns and every
reader (``arena report``, ``arena view``, ``arena compare``, the leaderboard figures) reads.

Each model keeps the keys it was given and writes them back in the order the summary computes them
(:meth:`Summary.to_json`), so a summary read and written again is the same file. Unknown keys (a
newer pptarena's) are kept (``extra="allow"``). Numbers keep their JSON type (an ``int`` stays an
``int``): fields are typed ``int | float``, never ``float`` alone.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Number = int | float
"""A JSON number as it was written (pydantic would turn an ``int`` typed ``float`` into ``1.0``)."""

Interval = list[Number | None] | None
"""A 95% interval ``[low, high]`` (None when there is nothing to resample)."""


class _Record(BaseModel):
    """Keeps unknown keys; :meth:`to_json` writes back exactly the keys that were set."""

    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        """The record as JSON, with the keys it was given, in the order the summary writes them."""
        return self.model_dump(mode="json", exclude_unset=True)


class KFigure(_Record):
    """pass@k or pass^k for one k: the value, its interval and the number of tasks with n >= k."""

    value: Number | None = None
    ci95: Interval = None
    tasks: int = 0


class EpochFigures(_Record):
    """A judge's figures over epochs: largest k, pass@k and pass^k per k, consistency, score spread."""

    k: int = 0
    pass_at_k: dict[str, KFigure] = Field(default_factory=dict)
    pass_hat_k: dict[str, KFigure] = Field(default_factory=dict)
    consistency: Number | None = None
    score_sd: Number | None = None


class JudgeFigures(_Record):
    """One judge's figures over an agent's lines (or a group of them), with 95% intervals
    (:func:`pptarena.run.statistics.summary_stats.judge_blocks`)."""

    n: int = 0
    mean: Number | None = None
    mean_ci95: Interval = None
    mean_all: Number | None = None
    mean_all_ci95: Interval = None
    success_rate: Number | None = None
    success_rate_ci95: Interval = None
    metrics: dict[str, Number | None] = Field(default_factory=dict)
    metrics_ci95: dict[str, Interval] = Field(default_factory=dict)
    labels: dict[str, dict[str, int]] = Field(default_factory=dict)
    epochs: EpochFigures | None = None


class GroupFigures(_Record):
    """A metadata group's tasks and per-judge figures (e.g. ``category = "Layout"``)."""

    tasks: int = 0
    judges: dict[str, JudgeFigures] = Field(default_factory=dict)


class AgentSummary(_Record):
    """One agent's part of the summary."""

    tasks: int = 0
    attempts: int = 0
    epochs: int = 1
    status: dict[str, int] = Field(default_factory=dict)
    judges: dict[str, JudgeFigures] = Field(default_factory=dict)
    duration_s: Number = 0.0
    usage: dict[str, Any] = Field(default_factory=dict)
    cost: dict[str, Any] | None = None
    isolation: str | None = None
    agent_process: str | None = None
    groups: dict[str, dict[str, GroupFigures]] = Field(default_factory=dict)

    def judge(self, name: str) -> JudgeFigures:
        """This agent's figures under judge ``name`` (empty figures when it has none)."""
        return self.judges.get(name) or JudgeFigures()


class Comparison(_Record):
    """A paired comparison of agents ``a`` and ``b`` on their common tasks under one judge."""

    a: str
    b: str
    n: int = 0
    diff: Number | None = None
    ci95: Interval = None
    p_value: Number | None = None
    wins: int = 0
    losses: int = 0


class Summary(_Record):
    """``summary.json``: per agent and judge figures, groups, paired comparisons, cost and the
    ``source`` (rows digest and summary revision) a reader checks before reusing it.

    ``cost`` (and each agent's) is a cost record (:func:`pptarena.models.pricing.cost_of_rows`):
    ``usd``, ``known_usd``, ``unpriced_models``, ``agent``, ``judges``, and when not empty / zero
    ``local_models`` (priced as local and free) and ``cache_saved_usd`` (:meth:`cache_saved_usd`).

    ``isolation`` and ``budget`` are what the runner adds after the figures (the run's record).
    """

    schema_version: int = 1
    judges: list[str] = Field(default_factory=list)
    statistics: dict[str, Any] = Field(default_factory=dict)
    agents: dict[str, AgentSummary] = Field(default_factory=dict)
    cost: dict[str, Any] | None = None
    comparisons: dict[str, dict[str, Comparison]] = Field(default_factory=dict)
    leaderboard_splits: dict[str, Any] = Field(default_factory=dict)
    source: dict[str, Any] | None = None
    isolation: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None

    def agent(self, name: str) -> AgentSummary:
        """Agent ``name``'s part (an empty one when the summary has none)."""
        return self.agents.get(name) or AgentSummary()

    def comparison(self, judge: str, a: str, b: str) -> Comparison | None:
        """The comparison of ``a`` and ``b`` under ``judge`` in either order (as stored: ``a|b``)."""
        pairs = self.comparisons.get(judge) or {}
        return pairs.get(f"{a}|{b}") or pairs.get(f"{b}|{a}")

    def cache_saved_usd(self) -> float:
        """What providers' prompt caching saved over the run in USD (its reads' discount minus its
        writes' premium, :func:`pptarena.models.pricing.cache_savings_usd`): ``cost.cache_saved_usd``,
        0 when the cost has none (nothing saved, or a summary from before it was recorded)."""
        from pptarena.models.pricing import cache_saved

        return cache_saved(self.cost)

    def figures(self) -> dict[str, Any]:
        """The summary without what the runner adds (``budget``, ``isolation``): what
        :func:`~pptarena.run.folder.results.summarize_results` computes."""
        data = self.to_json()
        data.pop("budget", None)
        data.pop("isolation", None)
        return data
