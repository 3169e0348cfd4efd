"""Labels beside scores: each labelling campaign of a run as a column of its task table, and the
filter "judge and people disagree" (admin pages only: the run pages and the table API, which an
annotator's session never reaches, see :mod:`pptarena.view.security`).

**The people's value of a pair** (one attempt: task, agent, epoch), per campaign, from the current
labels of the campaign's annotators (each annotator's latest version of an item; a label cleared by
an undo does not count, nor do gold labels and known-answer marks, which are not annotators' labels):

* absolute campaigns: the mean of the **instruction following** scale (``if``, 0-4), the scale
  ``arena label stats`` compares with every judge's score, and the number of labels; on the common
  0-1 scale, that mean over 4;
* pairwise campaigns: the attempt's **win share** over the labels of the items it is in (a label
  for it counts 1, against it 0, a tie ½), on 0-1 already, and the number of those labels.

**Judge and people disagree** (``?disagree=<campaign id>``, threshold ``?gap=``, default
:data:`~pptarena.view.runindex.DISAGREE_GAP` = 0.5: two levels of the 0-4 scale) keeps the pairs
whose largest gap, over the run's judges, between a judge and the people is at least the threshold:

* absolute: ``|judge score − mean / 4|`` for each judge that scored the pair;
* pairwise: the judge's win share against the people's over the same labels: on each labelled item
  whose two sides are in this run and both scored by that judge, the judge gives the attempt 1
  when it scored it above the other side, ½ when equal, 0 below, and each item weighs as many
  labels as it has. A judge that agrees with every label has gap 0.

**Cost.** A campaign's labels are read (:meth:`pptarena.label.store.Campaign.current`) and summed
per attempt once per change of the campaign: its change key is the store's change marker
(:meth:`pptarena.label.store.Campaign.change_marker`: the largest label id and a few other index
look-ups; labels are append-only, so any new label, an undo included, changes it). The columns of a run
(arrays by task-table position, :meth:`pptarena.view.runindex.RunIndex.snapshot`) are made again
only when that key or the run's index version changed; a table request with neither changed costs a
dictionary look-up per campaign, and rows only read the arrays.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pptarena.label.store import Campaign
from pptarena.view.runindex import RunIndex

MAIN_SCALE = "if"
"""The scale of an absolute campaign shown in the task table (instruction following, 0-4)."""
SCALE_TOP = 4
PEOPLE, MEAN, COUNT, GAP = "people:", "people_mean:", "people_n:", "gap:"
"""Prefixes of the ``extra`` task-table columns of a campaign id: the value on 0-1 (the column's
sort key), the mean in the scale's own units, the number of labels, the largest judge gap."""

AttemptKey = tuple[str, str, str, int]  # (run folder, task, agent, epoch)


@dataclass(frozen=True)
class Duel:
    """The current labels of one pairwise item: its two sides and the votes for each."""

    a: AttemptKey
    b: AttemptKey
    votes_a: int
    votes_b: int
    ties: int


@dataclass(frozen=True)
class Tallies:
    """One campaign's current labels summed per attempt, at change key ``key``."""

    key: tuple[Any, ...]
    protocol: str
    #: absolute: (sum of the main scale's levels, labels) per attempt
    sums: dict[AttemptKey, tuple[int, int]] = field(default_factory=dict)
    #: pairwise: the labelled items
    duels: list[Duel] = field(default_factory=list)


@dataclass(frozen=True)
class CampaignColumn:
    """A campaign shown as a task-table column."""

    id: str
    name: str
    protocol: str

    @property
    def scale(self) -> str:
        """What the column's number is."""
        return "IF 0–4" if self.protocol == "absolute" else "win share"

    def to_json(self) -> dict[str, str]:
        """The column as the table API lists it."""
        return {"id": self.id, "name": self.name, "protocol": self.protocol, "scale": self.scale}


@dataclass
class PeopleColumns:
    """The people columns of one run's task table: the campaigns and their ``extra`` arrays."""

    campaigns: list[CampaignColumn]
    arrays: dict[str, np.ndarray]

    @property
    def ids(self) -> list[str]:
        """The campaign ids shown."""
        return [c.id for c in self.campaigns]

    def attach(self, rows: list[dict[str, Any]]) -> None:
        """Replace each row's ``extra`` values by ``people``: per campaign id ``{"mean", "n",
        "unit", "gap"}`` (mean in the scale's units, unit on 0-1, gap None when no judge compares),
        or None when the pair has no label in that campaign."""
        for row in rows:
            extra = row.pop("extra", None) or {}
            row["people"] = {c.id: _cell(extra, c.id) for c in self.campaigns}


def _cell(extra: dict[str, float | None], cid: str) -> dict[str, Any] | None:
    n = extra.get(COUNT + cid)
    if not n:
        return None
    return {
        "mean": extra.get(MEAN + cid),
        "n": int(n),
        "unit": extra.get(PEOPLE + cid),
        "gap": extra.get(GAP + cid),
    }


# ---------------------------------------------------------------------------------------------- store


def label_key(campaign: Campaign) -> tuple[Any, ...] | None:
    """The campaign's change key (:meth:`pptarena.label.store.Campaign.change_marker`: the largest
    label id among a few others, index look-ups); None when the campaign is closed or its file
    cannot be read."""
    try:
        return campaign.change_marker()
    except (sqlite3.Error, ValueError):  # a closed connection raises sqlite3.ProgrammingError
        return None


def _resolved(run: str, memo: dict[str, str]) -> str:
    if run not in memo:
        memo[run] = str(Path(run).resolve())
    return memo[run]


def tally(campaign: Campaign, key: tuple[Any, ...]) -> Tallies:
    """The campaign's current labels summed per attempt (see the module doc), at change key ``key``
    (read after the key: a label written in between is counted now and read again at its key)."""
    memo: dict[str, str] = {}
    current = campaign.current()
    if campaign.protocol == "pairwise":
        votes: dict[int, list[int]] = {}
        for (_, item_id), v in current.items():
            choice = (v.fields or {}).get("choice")
            if choice in ("a", "b", "tie"):
                slot = votes.setdefault(item_id, [0, 0, 0])
                slot[("a", "b", "tie").index(choice)] += 1
        duels = []
        for item_id, (a, b, tie) in sorted(votes.items()):
            item = campaign.items[item_id]
            run_a = _resolved(item.run, memo)
            run_b = _resolved(item.run_b, memo) if item.run_b else run_a
            side_a = (run_a, item.task_id, item.agent, item.epoch)
            side_b = (run_b, item.task_id, item.agent_b or "", item.epoch_b or 1)
            duels.append(Duel(side_a, side_b, a, b, tie))
        return Tallies(key, "pairwise", duels=duels)
    sums: dict[AttemptKey, tuple[int, int]] = {}
    for (_, item_id), v in current.items():
        level = (v.fields or {}).get(MAIN_SCALE)
        if type(level) is not int:
            continue
        item = campaign.items[item_id]
        k = (_resolved(item.run, memo), item.task_id, item.agent, item.epoch)
        s, n = sums.get(k, (0, 0))
        sums[k] = (s + level, n + 1)
    return Tallies(key, "absolute", sums=sums)


# ---------------------------------------------------------------------------------------------- columns


def _judges(arrs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [v for k, v in arrs.items() if k.startswith("judge:")]


def _largest_gap(gaps: list[np.ndarray], n: int) -> np.ndarray:
    """The largest of the judges' gaps per position (NaN where no judge compares), rounded as shown."""
    if not gaps:
        return np.full(n, np.nan)
    with np.errstate(invalid="ignore"):
        return np.round(np.fmax.reduce(np.vstack(gaps), axis=0), 4)


def absolute_columns(
    tallies: Tallies, run: str, index: RunIndex
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(index version, value on 0-1, mean, labels, gap)`` by position, for an absolute campaign."""
    entries = [(k[1:], s, n) for k, (s, n) in tallies.sums.items() if k[0] == run]
    version, pos, arrs = index.snapshot([e[0] for e in entries])
    size = len(arrs["t"])
    mean, count = np.full(size, np.nan), np.full(size, np.nan)
    found = pos >= 0
    if entries:
        sums = np.array([e[1] for e in entries], dtype=np.float64)
        ns = np.array([e[2] for e in entries], dtype=np.float64)
        mean[pos[found]] = sums[found] / ns[found]
        count[pos[found]] = ns[found]
    unit = mean / SCALE_TOP
    gap = _largest_gap([np.abs(j - unit) for j in _judges(arrs)], size)
    return version, unit, mean, count, gap


def pairwise_columns(
    tallies: Tallies, run: str, index: RunIndex
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(index version, win share, win share, labels, gap)`` by position, for a pairwise campaign."""
    duels = [d for d in tallies.duels if run in (d.a[0], d.b[0])]
    keys = [d.a[1:] for d in duels] + [d.b[1:] for d in duels]
    version, pos, arrs = index.snapshot(keys)
    size = len(arrs["t"])
    m = len(duels)
    if not m or not size:
        nothing = np.full(size, np.nan)
        return version, nothing, nothing, nothing, nothing
    pos_a = np.where([d.a[0] == run for d in duels], pos[:m], -1)
    pos_b = np.where([d.b[0] == run for d in duels], pos[m:], -1)
    votes_a = np.array([d.votes_a for d in duels], dtype=np.float64)
    votes_b = np.array([d.votes_b for d in duels], dtype=np.float64)
    ties = np.array([d.ties for d in duels], dtype=np.float64)
    labels = votes_a + votes_b + ties
    wins_a, wins_b = votes_a + ties / 2, votes_b + ties / 2

    def per_position(weights_a: np.ndarray, weights_b: np.ndarray, where: np.ndarray) -> np.ndarray:
        """Sum the items' weights onto the positions of their sides in this run (``where``: items kept)."""
        out = np.zeros(size)
        for p, w in ((pos_a, weights_a), (pos_b, weights_b)):
            keep = where & (p >= 0)
            out += np.bincount(p[keep], weights=w[keep], minlength=size)
        return out

    everything = np.ones(m, dtype=bool)
    won = per_position(wins_a, wins_b, everything)
    count = per_position(labels, labels, everything)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(count > 0, won / count, np.nan)
    count = np.where(count > 0, count, np.nan)
    gaps = []
    both = (pos_a >= 0) & (pos_b >= 0)  # the judge orders the two sides of an item in this run only
    for judge in _judges(arrs):
        sa, sb = judge[np.where(both, pos_a, 0)], judge[np.where(both, pos_b, 0)]
        valid = both & ~np.isnan(sa) & ~np.isnan(sb)
        judged_a = np.where(sa > sb, 1.0, np.where(sa == sb, 0.5, 0.0))
        people = per_position(wins_a, wins_b, valid)
        said = per_position(labels * judged_a, labels * (1 - judged_a), valid)
        weight = per_position(labels, labels, valid)
        with np.errstate(invalid="ignore", divide="ignore"):
            gaps.append(np.where(weight > 0, np.abs(people - said) / weight, np.nan))
    return version, unit, unit, count, _largest_gap(gaps, size)


# ---------------------------------------------------------------------------------------------- cache

_lock = threading.Lock()
_runs_of: weakref.WeakKeyDictionary[Campaign, frozenset[str]] = weakref.WeakKeyDictionary()
_tallies: weakref.WeakKeyDictionary[Campaign, Tallies] = weakref.WeakKeyDictionary()
#: per run index, per campaign id: ((label key, index version), the campaign's four arrays)
_columns: weakref.WeakKeyDictionary[RunIndex, dict[str, tuple[Any, dict[str, np.ndarray]]]] = (
    weakref.WeakKeyDictionary()
)


def campaign_runs(campaign: Campaign) -> frozenset[str]:
    """The run folders of a campaign, resolved (worked out once per campaign)."""
    with _lock:
        got = _runs_of.get(campaign)
    if got is None:
        got = frozenset(str(Path(r).resolve()) for r in campaign.runs.values())
        with _lock:
            _runs_of[campaign] = got
    return got


def campaigns_of(run_path: Path, states: Iterable[Any]) -> list[Any]:
    """The served campaigns (:class:`pptarena.view.labelling.CampaignState`) with items in the run
    at ``run_path`` (resolved), in the order served."""
    path = str(run_path)
    return [c for c in states if path in campaign_runs(c.campaign)]


def tallies_for(campaign: Campaign, key: tuple[Any, ...]) -> Tallies:
    """The campaign's :class:`Tallies` at change key ``key`` (read from the store only when the key
    is not the one last read)."""
    with _lock:
        got = _tallies.get(campaign)
    if got is not None and got.key == key:
        return got
    got = tally(campaign, key)
    with _lock:
        _tallies[campaign] = got
    return got


def people_columns(index: RunIndex, run_path: Path, states: Iterable[Any]) -> PeopleColumns | None:
    """The people columns of the run at ``run_path`` (its index ``index``) for the served campaigns
    ``states`` with items in it; None when there is none (see the module doc for what is cached)."""
    run = str(run_path)
    shown: list[CampaignColumn] = []
    arrays: dict[str, np.ndarray] = {}
    for state in campaigns_of(run_path, states):
        campaign: Campaign = state.campaign
        key = label_key(campaign)
        if key is None:
            continue
        with _lock:
            cached = _columns.get(index, {}).get(state.id)
        if cached is not None and cached[0] == (key, index.version):
            cols = cached[1]
        else:
            tallies = tallies_for(campaign, key)
            make = pairwise_columns if tallies.protocol == "pairwise" else absolute_columns
            version, unit, mean, count, gap = make(tallies, run, index)
            cols = {PEOPLE: unit, MEAN: mean, COUNT: count, GAP: gap}
            with _lock:
                _columns.setdefault(index, {})[state.id] = ((key, version), cols)
        shown.append(CampaignColumn(state.id, campaign.name, campaign.protocol))
        arrays.update({prefix + state.id: values for prefix, values in cols.items()})
    return PeopleColumns(shown, arrays) if shown else None
