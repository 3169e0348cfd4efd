"""Known-answer items: campaign items with an expected label, to check annotators against.

A campaign's known-answer items are marked among its **existing** items, in the campaign's SQLite
file (the table ``known_answers``, created through the campaign's connection the first time an item
is marked). Nothing an annotator can get changes: the items stay where they are in their queues and
their pages are built as before, so they are hidden among the others by construction.

Expected labels come

* from a file (:func:`read_expected_file`): CSV or JSON (a list of objects), one row per expected
  label: the item by ``task_id`` and ``agent`` (pairwise: and ``agent_b``; ``epoch``,
  ``epoch_b`` and ``run`` narrow the match, an absent one matches every value; or directly by the
  campaign's ``item`` number), and the expected answers — any of ``if``, ``vq``, ``damage``
  (absolute) or ``choice`` (pairwise: ``a``/``b`` naming the row's ``agent``/``agent_b``, or
  ``tie``). Only the answers given are checked;
* or from the oracle and no-op attempts already in the campaign (:func:`seed_oracle_noop`): the
  oracle applies the target, so its instruction following is expected at the top of the scale
  (``if`` 4, "done completely and exactly"); the no-op leaves the deck unchanged, which the scale's
  anchor puts at ``if`` 0 ("nothing asked was done (or the deck was left unchanged)"); a pairwise
  oracle-vs-noop item expects the oracle's side. Visual quality and damage are not expected of
  either (the target's own look is not known to be perfect).

**New known-answer items** (:func:`add_known_items`) are items **added** to the campaign for the
check, when the campaign does not hold them (a sampled campaign, or control decks in a run of their
own): :func:`pptarena.label.store.insert_hidden_items` puts each into every annotator's queue at a
random but reproducible place among the items they have not reached yet, and they are marked as
known-answer in the same transaction. They are items like the others — numbered after them, with a
public id drawn the same way, a page built the same way — so an annotator cannot tell them apart.
They come

* from a file (:func:`read_new_items_file`): the same CSV or JSON as above, each row naming the
  attempt to show — ``task_id``, ``agent``, ``epoch`` (default 1), ``run`` (a run folder, relative
  to the file's folder; default: the first of the given runs holding the attempt), pairwise also
  ``agent_b``, ``epoch_b`` and ``run_b`` — and its expected answers. The attempt must have left a
  prediction deck;
* or from the oracle and no-op attempts of the runs (:func:`new_oracle_noop_items`) that are not
  items of the campaign yet (absolute: each attempt; pairwise: an oracle and a no-op attempt of
  the same task, in an order drawn with the seed), expected as above.

Like labels, marks are versions (append-only, latest wins; ``expected`` None unmarks an item).
:func:`accuracy` scores each annotator's current labels of the known-answer items in their queue:
a label is right when every expected answer matches (ordinal scales within ``tolerance`` levels),
and an annotator below ``min_accuracy`` is flagged.

Why it is long: it holds two jobs on the same ``known_answers`` table: marking existing items (from
a file or the oracle/no-op attempts) and adding new hidden items, plus the accuracy that scores
both; the new-item part (:func:`add_known_items`, :func:`read_new_items_file`,
:func:`new_oracle_noop_items`) could move to its own module (not done yet), taking the shared
file-row parsing with it.
"""

from __future__ import annotations

import csv
import io
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptarena.label.adjudication import ADJUDICATOR_NAME, ensure_schema, has_table
from pptarena.label.errors import CampaignError
from pptarena.label.scales import ABSOLUTE_SCALES, PAIRWISE_CHOICES
from pptarena.label.store import Campaign, Item, NewItem, insert_hidden_items

KNOWN_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS known_answers ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, item INTEGER NOT NULL REFERENCES items(id),"
    " expected TEXT, source TEXT NOT NULL, added_by TEXT NOT NULL, created_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS known_answers_by_item ON known_answers(item, id)",
    "CREATE TRIGGER IF NOT EXISTS known_answers_append_only_u BEFORE UPDATE ON known_answers"
    " BEGIN SELECT RAISE(ABORT, 'known answers are append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS known_answers_append_only_d BEFORE DELETE ON known_answers"
    " BEGIN SELECT RAISE(ABORT, 'known answers are append-only'); END",
)
"""The table of known-answer marks, created in the campaign file when the first item is marked."""

DEFAULT_MIN_ACCURACY = 0.7
ORACLE_IF, NOOP_IF = 4, 0
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_NEW_ITEMS = 10_000
"""The most known-answer items one call adds (each goes into every annotator's queue)."""


@dataclass(frozen=True)
class KnownAnswer:
    """One mark of an item as known-answer (``expected`` None: unmarked)."""

    id: int
    item: int
    expected: dict[str, Any] | None
    source: str
    added_by: str
    created_at: float


def validate_expected(protocol: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The expected answers, checked (any non-empty subset of the protocol's answers).

    :raises CampaignError: for an unknown protocol answer out of range, or no answer at all.
    """
    out: dict[str, Any] = {}
    if protocol == "pairwise":
        if fields.get("choice") not in (None, ""):
            if fields["choice"] not in PAIRWISE_CHOICES:
                raise CampaignError(f"expected choice must be one of {', '.join(PAIRWISE_CHOICES)}")
            out["choice"] = fields["choice"]
    else:
        for key in ABSOLUTE_SCALES:
            value = fields.get(key)
            if value in (None, ""):
                continue
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if type(value) is not int or not 0 <= value <= 4:
                raise CampaignError(f"expected {key} must be a whole number from 0 to 4")
            out[key] = value
        if fields.get("damage") not in (None, ""):
            if fields["damage"] not in ("yes", "no"):
                raise CampaignError("expected damage must be yes or no")
            out["damage"] = fields["damage"]
    if not out:
        answers = "choice" if protocol == "pairwise" else "if, vq or damage"
        raise CampaignError(f"no expected answer given ({answers})")
    return out


def mark_known(
    campaign: Campaign, marks: list[tuple[int, dict[str, Any] | None]], *, source: str, by: str
) -> int:
    """Append known-answer marks ``(item, expected answers or None to unmark)`` in one transaction;
    returns how many were appended.

    :raises CampaignError: for an unknown item, invalid answers or a bad name.
    """
    if not ADJUDICATOR_NAME.match((by or "").strip()):
        raise CampaignError("--by: 1-64 letters, digits, spaces and . _ @ -")
    rows = []
    now = time.time()
    if any(item not in campaign.items for item, _ in marks):
        campaign.refresh_items()  # items added by another process since this handle was opened
    for item, expected in marks:
        if item not in campaign.items:
            raise CampaignError(f"item {item} is not in campaign {campaign.name}")
        text = None if expected is None else json.dumps(validate_expected(campaign.protocol, expected))
        rows.append((item, text, source[:200], by.strip(), now))
    if not rows:
        return 0
    ensure_schema(campaign, KNOWN_SCHEMA)
    with campaign._lock:
        conn = campaign._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT INTO known_answers (item, expected, source, added_by, created_at) VALUES (?,?,?,?,?)",
                rows,
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(rows)


def known_answers(campaign: Campaign) -> dict[int, KnownAnswer]:
    """The campaign's known-answer items: each item's latest mark, unmarked ones left out."""
    if not has_table(campaign, "known_answers"):
        return {}
    with campaign._lock:
        rows = campaign._conn.execute(
            "SELECT id, item, expected, source, added_by, created_at FROM known_answers ORDER BY id"
        ).fetchall()
    latest = {
        r[1]: KnownAnswer(r[0], r[1], json.loads(r[2]) if r[2] else None, r[3], r[4], r[5]) for r in rows
    }
    return {i: k for i, k in latest.items() if k.expected is not None}


def oracle_noop_candidates(
    campaign: Campaign, oracle: str = "oracle", noop: str = "noop"
) -> list[tuple[int, dict[str, Any]]]:
    """The campaign's items whose answer the oracle and no-op agents settle (see the module doc),
    with their expected answers, in item order."""
    out = []
    for item_id, it in sorted(campaign.items.items()):
        if campaign.protocol == "pairwise":
            if {it.agent, it.agent_b} == {oracle, noop}:
                out.append((item_id, {"choice": "a" if it.agent == oracle else "b"}))
        elif it.agent == oracle:
            out.append((item_id, {"if": ORACLE_IF}))
        elif it.agent == noop:
            out.append((item_id, {"if": NOOP_IF}))
    return out


def seed_oracle_noop(
    campaign: Campaign, count: int, *, seed: int = 0, by: str, oracle: str = "oracle", noop: str = "noop"
) -> list[int]:
    """Mark up to ``count`` oracle / no-op items (not marked yet) as known-answer, drawn with
    ``seed`` (absolute: oracle and no-op items alternately); returns the items marked.

    :raises CampaignError: when the campaign holds no such item (its runs had neither agent).
    """
    if count < 1:
        raise CampaignError("--oracle-noop: give how many items to mark (1 or more)")
    known = known_answers(campaign)
    found = [(i, e) for i, e in oracle_noop_candidates(campaign, oracle, noop) if i not in known]
    if not found:
        raise CampaignError(
            f"campaign {campaign.name} has no {oracle}/{noop} item left to mark: its runs had neither "
            f"agent (add them to the run, or give expected labels with --from-file)"
        )
    rng = random.Random(seed)
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, e in found:
        groups.setdefault(json.dumps(e, sort_keys=True), []).append((i, e))
    for g in groups.values():
        rng.shuffle(g)
    chosen: list[tuple[int, dict[str, Any]]] = []
    while len(chosen) < count and any(groups.values()):
        for key in sorted(groups):
            if groups[key] and len(chosen) < count:
                chosen.append(groups[key].pop())
    chosen.sort()
    mark_known(campaign, chosen, source=f"oracle-noop (seed {seed})", by=by)
    return [i for i, _ in chosen]


def _matches(value: Any, want: Any) -> bool:
    return value in (None, "") or str(value).strip() == str(want)


def _rows_of(path: Path) -> list[dict[str, Any]]:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise CampaignError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() in (".json", ".jsonl") or text.lstrip().startswith(("[", "{")):
        try:
            data = (
                [json.loads(line) for line in text.splitlines() if line.strip()]
                if path.suffix.lower() == ".jsonl"
                else json.loads(text)
            )
        except ValueError as exc:
            raise CampaignError(f"{path}: not JSON ({exc})") from exc
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise CampaignError(f"{path}: expected a JSON list of objects")
        return [
            {**r, **(r.get("expected") or {})} if isinstance(r.get("expected"), dict) else r for r in data
        ]
    return list(csv.DictReader(io.StringIO(text)))


def _find(campaign: Campaign, row: dict[str, Any]) -> list[tuple[Item, bool]]:
    """The campaign items a file row names, each with whether its agents are given in reverse."""
    if row.get("item") not in (None, ""):
        try:
            it = campaign.items.get(int(row["item"]))
        except (TypeError, ValueError):
            return []
        return [(it, False)] if it is not None else []
    out = []
    for it in campaign.items.values():
        if not _matches(row.get("run"), it.run) or str(row.get("task_id") or "") != it.task_id:
            continue
        a, ea, b, eb = row.get("agent"), row.get("epoch"), row.get("agent_b"), row.get("epoch_b")
        if campaign.protocol == "pairwise":
            if a == it.agent and b == it.agent_b and _matches(ea, it.epoch) and _matches(eb, it.epoch_b):
                out.append((it, False))
            elif a == it.agent_b and b == it.agent and _matches(ea, it.epoch_b) and _matches(eb, it.epoch):
                out.append((it, True))
        elif a == it.agent and _matches(ea, it.epoch):
            out.append((it, False))
    return out


def read_expected_file(campaign: Campaign, path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """``(marks, problems)`` of an expected-labels file (see the module doc): each row's matching
    items with their expected answers, and a line per row that names no item or has no valid answer.

    :raises CampaignError: when the file cannot be read.
    """
    try:
        rows = _rows_of(Path(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise CampaignError(f"{path}: cannot read it ({exc})") from exc
    marks: list[tuple[int, dict[str, Any]]] = []
    problems = []
    for n, row in enumerate(rows, start=1):
        try:
            expected = validate_expected(campaign.protocol, row)
        except CampaignError as exc:
            problems.append(f"row {n}: {exc}")
            continue
        found = _find(campaign, row)
        if not found:
            problems.append(f"row {n}: no campaign item matches it")
        for it, reverse in found:
            e = dict(expected)
            if reverse and e.get("choice") in ("a", "b"):
                e["choice"] = "b" if e["choice"] == "a" else "a"
            marks.append((it.id, e))
    return marks, problems


def seed_from_file(campaign: Campaign, path: Path, *, by: str) -> tuple[list[int], list[str]]:
    """Mark the items of an expected-labels file as known-answer; ``(items marked, problems)``."""
    marks, problems = read_expected_file(campaign, path)
    mark_known(campaign, marks, source=f"file {Path(path).name}", by=by)
    return sorted({i for i, _ in marks}), problems


def add_known_items(
    campaign: Campaign,
    new: list[tuple[NewItem, dict[str, Any]]],
    *,
    seed: int,
    source: str,
    by: str,
) -> list[int]:
    """Add new known-answer items (see the module doc): each item with its expected answers, put
    into every annotator's queue at hidden places drawn with ``seed`` and marked, in one
    transaction; returns their item numbers.

    :raises CampaignError: for no item, too many, invalid answers, an agent missing from a pairwise
        item (or given to an absolute one), or a bad name.
    """
    if not ADJUDICATOR_NAME.match((by or "").strip()):
        raise CampaignError("--by: 1-64 letters, digits, spaces and . _ @ -")
    if not new:
        raise CampaignError("no known-answer item to add")
    if len(new) > MAX_NEW_ITEMS:
        raise CampaignError(f"{len(new)} items to add: at most {MAX_NEW_ITEMS} at once")
    pairwise = campaign.protocol == "pairwise"
    texts = []
    for it, expected in new:
        if pairwise != (it.agent_b is not None):
            need = "two attempts (agent and agent_b)" if pairwise else "one attempt (no agent_b)"
            raise CampaignError(f"{it.task_id}: a {campaign.protocol} item shows {need}")
        texts.append(json.dumps(validate_expected(campaign.protocol, expected)))
    ensure_schema(campaign, KNOWN_SCHEMA)
    now = time.time()

    def mark(conn: Any, numbers: list[int]) -> None:
        conn.executemany(
            "INSERT INTO known_answers (item, expected, source, added_by, created_at) VALUES (?,?,?,?,?)",
            [(n, t, source[:200], by.strip(), now) for n, t in zip(numbers, texts, strict=True)],
        )

    return insert_hidden_items(campaign, [it for it, _ in new], seed=seed, after=mark)


def _attempt_index(runs: list[Path]) -> dict[tuple[str, str, str, int], None]:
    """The attempts of ``runs`` that left a prediction deck, as (run, task, agent, epoch), in order."""
    from pptarena.label.campaign import attempts

    found = attempts(runs)
    return {(str(runs[i]), r.task_id, r.agent, r.epoch): None for i, r in found}


def _epoch(value: Any, what: str, n: int) -> int:
    if value in (None, ""):
        return 1
    try:
        epoch = int(str(value).strip())
    except ValueError:
        epoch = 0
    if epoch < 1:
        raise CampaignError(f"row {n}: {what} must be a whole number from 1")
    return epoch


def read_new_items_file(
    campaign: Campaign, path: Path, runs: list[Path] | None = None
) -> tuple[list[tuple[NewItem, dict[str, Any]]], list[str]]:
    """``(items with expected answers, problems)`` of a file of new known-answer items (see the
    module doc): a row is looked for in its ``run`` (relative to the file's folder), else in
    ``runs`` (default: the campaign's runs), first match wins; a row whose attempt is in none of
    them, has no prediction deck, or gives no valid answer is a problem line instead.

    :raises CampaignError: when the file cannot be read or names too many items.
    """
    path = Path(path)
    try:
        rows = _rows_of(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CampaignError(f"{path}: cannot read it ({exc})") from exc
    if len(rows) > MAX_NEW_ITEMS:
        raise CampaignError(f"{path}: {len(rows)} rows, at most {MAX_NEW_ITEMS} new items at once")
    defaults = (
        [Path(r).resolve() for r in runs]
        if runs
        else [Path(r) for r in dict.fromkeys(campaign.runs.values())]
    )
    indexes: dict[str, dict[tuple[str, str, str, int], None]] = {}

    def has(run: Path, task: str, agent: str, epoch: int) -> bool:
        key = str(run)
        if key not in indexes:
            try:
                indexes[key] = _attempt_index([run])
            except CampaignError:
                indexes[key] = {}
        return (key, task, agent, epoch) in indexes[key]

    def where(value: Any, task: str, agent: str, epoch: int) -> Path | None:
        if value not in (None, ""):
            named = Path(str(value))
            named = (named if named.is_absolute() else path.parent / named).resolve()
            return named if has(named, task, agent, epoch) else None
        return next((r for r in defaults if has(r, task, agent, epoch)), None)

    out: list[tuple[NewItem, dict[str, Any]]] = []
    problems = []
    pairwise = campaign.protocol == "pairwise"
    for n, row in enumerate(rows, start=1):
        try:
            expected = validate_expected(campaign.protocol, row)
            task, agent = str(row.get("task_id") or ""), str(row.get("agent") or "")
            if not task or not agent:
                raise CampaignError("give task_id and agent")
            epoch = _epoch(row.get("epoch"), "epoch", n)
            run = where(row.get("run"), task, agent, epoch)
            if run is None:
                raise CampaignError(f"no attempt {task}/{agent}/epoch {epoch} with a prediction in the runs")
            if not pairwise:
                if row.get("agent_b") not in (None, ""):
                    raise CampaignError("agent_b is for pairwise campaigns")
                out.append((NewItem(str(run), task, agent, epoch), expected))
                continue
            agent_b = str(row.get("agent_b") or "")
            if not agent_b:
                raise CampaignError("a pairwise item needs agent_b")
            epoch_b = _epoch(row.get("epoch_b"), "epoch_b", n)
            run_b = where(row.get("run_b") or row.get("run"), task, agent_b, epoch_b)
            if run_b is None:
                raise CampaignError(
                    f"no attempt {task}/{agent_b}/epoch {epoch_b} with a prediction in the runs"
                )
            if (run, agent, epoch) == (run_b, agent_b, epoch_b):
                raise CampaignError("the two sides are the same attempt")
            out.append((NewItem(str(run), task, agent, epoch, agent_b, epoch_b, str(run_b)), expected))
        except CampaignError as exc:
            problems.append(f"row {n}: {str(exc).removeprefix(f'row {n}: ')}")
    return out, problems


def new_oracle_noop_items(
    campaign: Campaign,
    count: int,
    *,
    runs: list[Path] | None = None,
    seed: int = 0,
    oracle: str = "oracle",
    noop: str = "noop",
) -> list[tuple[NewItem, dict[str, Any]]]:
    """Up to ``count`` new known-answer items from the oracle and no-op attempts of ``runs``
    (default: the campaign's runs) that are not items of the campaign yet (see the module doc),
    drawn with ``seed`` (absolute: oracle and no-op attempts alternately).

    :raises CampaignError: when the runs hold no such attempt left.
    """
    if count < 1:
        raise CampaignError("--add-oracle-noop: give how many items to add (1 or more)")
    folders = (
        [Path(r).resolve() for r in runs]
        if runs
        else [Path(r) for r in dict.fromkeys(campaign.runs.values())]
    )
    found = list(_attempt_index(folders))
    rng = random.Random(seed)
    groups: dict[str, list[tuple[NewItem, dict[str, Any]]]] = {}
    if campaign.protocol == "pairwise":
        shown = {
            (
                it.task_id,
                frozenset({(it.run, it.agent, it.epoch), (it.run_b or it.run, it.agent_b, it.epoch_b)}),
            )
            for it in campaign.items.values()
        }
        by_task: dict[tuple[str, str], dict[str, list[tuple[str, str, int]]]] = {}
        for run, task, agent, epoch in found:
            if agent in (oracle, noop):
                by_task.setdefault((run, task), {}).setdefault(agent, []).append((run, agent, epoch))
        pairs = [
            (task, o, z)
            for (_, task), sides in sorted(by_task.items())
            for o in sides.get(oracle, [])
            for z in sides.get(noop, [])
            if (task, frozenset({o, z})) not in shown
        ]
        for task, o, z in pairs:
            a, b = (o, z) if rng.random() < 0.5 else (z, o)
            item = NewItem(a[0], task, a[1], a[2], b[1], b[2], b[0])
            groups.setdefault("pair", []).append((item, {"choice": "a" if a == o else "b"}))
    else:
        taken = {(it.run, it.task_id, it.agent, it.epoch) for it in campaign.items.values()}
        for run, task, agent, epoch in found:
            if agent in (oracle, noop) and (run, task, agent, epoch) not in taken:
                want = {"if": ORACLE_IF if agent == oracle else NOOP_IF}
                groups.setdefault(agent, []).append((NewItem(run, task, agent, epoch), want))
    if not any(groups.values()):
        raise CampaignError(
            f"the runs hold no {oracle}/{noop} attempt that is not an item of campaign {campaign.name} "
            f"already: mark the campaign's own with --oracle-noop, or give a run of control attempts "
            f"with --run"
        )
    for g in groups.values():
        rng.shuffle(g)
    chosen: list[tuple[NewItem, dict[str, Any]]] = []
    while len(chosen) < count and any(groups.values()):
        for key in sorted(groups):
            if groups[key] and len(chosen) < count:
                chosen.append(groups[key].pop())
    return chosen


def is_right(label: dict[str, Any], expected: dict[str, Any], tolerance: int = 0) -> bool:
    """Whether a label gives every expected answer (ordinal scales within ``tolerance`` levels)."""
    for key, want in expected.items():
        got = label.get(key)
        if key in ABSOLUTE_SCALES:
            if type(got) is not int or abs(got - want) > tolerance:
                return False
        elif got != want:
            return False
    return True


def accuracy(
    campaign: Campaign, *, min_accuracy: float = DEFAULT_MIN_ACCURACY, tolerance: int = 0
) -> dict[str, Any]:
    """Each annotator's accuracy on the known-answer items they labelled (see the module doc):
    ``{"items": known-answer items, "min_accuracy", "tolerance", "annotators": {name: {"queued",
    "labelled", "right", "accuracy" (None before any label), "flagged", "wrong": [items]}}}``."""
    known = known_answers(campaign)
    out: dict[str, Any] = {"items": len(known), "min_accuracy": min_accuracy, "tolerance": tolerance}
    current = campaign.current()
    people: dict[str, Any] = {}
    for annotator in campaign.annotators:
        queued = [i for i, _ in campaign.queue(annotator) if i in known]
        labelled = [i for i in queued if (annotator, i) in current]
        wrong = [
            i
            for i in labelled
            if not is_right(current[(annotator, i)].fields or {}, known[i].expected or {}, tolerance)
        ]
        acc = round((len(labelled) - len(wrong)) / len(labelled), 4) if labelled else None
        people[annotator] = {
            "queued": len(queued),
            "labelled": len(labelled),
            "right": len(labelled) - len(wrong),
            "accuracy": acc,
            "flagged": acc is not None and acc < min_accuracy,
            "wrong": sorted(wrong),
        }
    out["annotators"] = people
    return out
