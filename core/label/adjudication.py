"""Adjudication: where a campaign's annotators disagree, and the gold labels that settle it.

**Disagreement** is measured on the items labelled by two annotators or more (their current
labels), per scale of the campaign (:mod:`pptarena.label.scales`):

* an ordinal 0-4 scale (``if``, ``vq``): the spread, highest level minus lowest, over 4 (0-1);
* a nominal answer (``damage``; the pairwise ``choice``): the split, ``1 − m/n`` over
  ``1 − 1/n`` for ``n`` labels of which ``m`` give the most common answer (0 when all agree, 1 when
  no two agree; two annotators who differ: 1);

and an item's ``disagreement`` is the largest of its scales'. :func:`disagreements` lists them,
sortable by any of these, with every annotator's label side by side and the item's gold label.

**Gold labels** are recorded by an adjudicator with a note (:func:`record_gold`). Like annotators'
labels they are versions, appended and never changed: the item's gold label is its latest version
(``fields`` None withdraws it), and every version keeps who recorded it, when, and why. They live in
the campaign's own SQLite file, in the table ``gold_labels`` this module creates (through the
campaign's connection) the first time one is written; triggers refuse any update or delete.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pptarena.label.errors import CampaignError
from pptarena.label.scales import ABSOLUTE_SCALES, validate_fields
from pptarena.label.store import Campaign

GOLD_ANNOTATOR = "(gold)"
"""The name gold labels go under where labels are listed by annotator (``export --gold``); no
annotator can have it (names are letters, digits and ``. _ @ -``)."""
ADJUDICATOR_NAME = re.compile(r"^[A-Za-z0-9_.@ -]{1,64}$")
MAX_NOTE = 2000

GOLD_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS gold_labels ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, item INTEGER NOT NULL REFERENCES items(id),"
    " fields TEXT, note TEXT NOT NULL DEFAULT '', adjudicator TEXT NOT NULL, created_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS gold_labels_by_item ON gold_labels(item, id)",
    "CREATE TRIGGER IF NOT EXISTS gold_labels_append_only_u BEFORE UPDATE ON gold_labels"
    " BEGIN SELECT RAISE(ABORT, 'gold labels are append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS gold_labels_append_only_d BEFORE DELETE ON gold_labels"
    " BEGIN SELECT RAISE(ABORT, 'gold labels are append-only'); END",
)
"""The table of gold label versions, created in the campaign file when the first one is written."""

SORT_KEYS = ("disagreement", "item", "if", "vq", "damage", "choice", "labels")
"""What :func:`disagreements` sorts by (``item`` ascending, the others largest first)."""


@dataclass(frozen=True)
class GoldLabel:
    """One gold label version of an item (``fields`` None: the gold label was withdrawn)."""

    id: int
    item: int
    fields: dict[str, Any] | None
    note: str
    adjudicator: str
    created_at: float


def has_table(campaign: Campaign, table: str) -> bool:
    """Whether the campaign file has ``table`` (tables of this module and of
    :mod:`pptarena.label.gold_items` exist once something was written to them)."""
    with campaign._lock:
        row = campaign._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
        ).fetchone()
    return row is not None


def ensure_schema(campaign: Campaign, statements: tuple[str, ...]) -> None:
    """Run ``CREATE … IF NOT EXISTS`` statements in the campaign file (one transaction)."""
    with campaign._lock:
        conn = campaign._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql in statements:
                conn.execute(sql)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def parse_label(protocol: str, text: str) -> dict[str, Any]:
    """A label typed in a terminal: JSON (``{"if": 4, "vq": 3, "damage": "no"}``), ``key=value``
    pairs (``if=4,vq=3,damage=no``), or for pairwise campaigns just ``a``, ``b`` or ``tie``;
    validated as an annotator's label is.

    :raises CampaignError: when it cannot be read or is not a valid label of the protocol.
    """
    text = text.strip()
    if protocol == "pairwise" and text in ("a", "b", "tie"):
        fields: Any = {"choice": text}
    elif text.startswith("{"):
        try:
            fields = json.loads(text)
        except ValueError as exc:
            raise CampaignError(f"label {text!r}: not JSON ({exc})") from exc
    else:
        fields = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise CampaignError(f"label {text!r}: expected key=value pairs, e.g. if=4,vq=3,damage=no")
            value = value.strip()
            fields[key.strip()] = int(value) if value.isdigit() else value
    return validate_fields(protocol, fields)


def record_gold(
    campaign: Campaign, item: int, fields: dict[str, Any] | None, *, note: str = "", by: str
) -> GoldLabel:
    """Append a gold label version of ``item`` (``fields`` None withdraws the item's gold label);
    committed and synced before this returns.

    :raises CampaignError: for an unknown item, an invalid label, or a missing adjudicator name.
    """
    if item not in campaign.items:
        raise CampaignError(f"item {item} is not in campaign {campaign.name}")
    by = (by or "").strip()
    if not ADJUDICATOR_NAME.match(by):
        raise CampaignError("the adjudicator's name: 1-64 letters, digits, spaces and . _ @ -")
    if fields is not None:
        fields = validate_fields(campaign.protocol, fields)
    note = (note or "").strip()[:MAX_NOTE]
    ensure_schema(campaign, GOLD_SCHEMA)
    now = time.time()
    text = None if fields is None else json.dumps(fields, sort_keys=True)
    with campaign._lock:
        cur = campaign._conn.execute(
            "INSERT INTO gold_labels (item, fields, note, adjudicator, created_at) VALUES (?,?,?,?,?)",
            (item, text, note, by, now),
        )
        gid = int(cur.lastrowid or 0)
    return GoldLabel(gid, item, fields, note, by, now)


def gold_history(campaign: Campaign, item: int | None = None) -> list[GoldLabel]:
    """Every gold label version (of one item), oldest first."""
    if not has_table(campaign, "gold_labels"):
        return []
    sql = "SELECT id, item, fields, note, adjudicator, created_at FROM gold_labels"
    args: tuple[Any, ...] = ()
    if item is not None:
        sql, args = sql + " WHERE item=?", (item,)
    with campaign._lock:
        rows = campaign._conn.execute(sql + " ORDER BY id", args).fetchall()
    return [
        GoldLabel(r[0], r[1], json.loads(r[2]) if r[2] is not None else None, r[3], r[4], r[5]) for r in rows
    ]


def current_gold(campaign: Campaign) -> dict[int, GoldLabel]:
    """Each item's gold label: its latest version, withdrawn ones left out."""
    latest: dict[int, GoldLabel] = {}
    for g in gold_history(campaign):
        latest[g.item] = g
    return {i: g for i, g in latest.items() if g.fields is not None}


def scale_keys(protocol: str) -> list[tuple[str, str]]:
    """``(field, "ordinal"|"nominal")`` of the answers disagreement is measured on."""
    if protocol == "pairwise":
        return [("choice", "nominal")]
    return [(k, "ordinal") for k in ABSOLUTE_SCALES] + [("damage", "nominal")]


def spread(values: list[Any], level: str) -> float:
    """The disagreement of one scale's values (see the module doc), 0-1."""
    if len(values) < 2:
        return 0.0
    if level == "ordinal":
        return (max(values) - min(values)) / 4
    n = len(values)
    top = Counter(values).most_common(1)[0][1]
    return round((1 - top / n) / (1 - 1 / n), 4)


def disagreements(
    campaign: Campaign, *, sort: str = "disagreement", include_agreed: bool = False
) -> list[dict[str, Any]]:
    """The items labelled by two annotators or more whose labels differ (every such item with
    ``include_agreed``), sorted by ``sort`` (one of :data:`SORT_KEYS`; ``item`` ascending, the others
    largest first, ties by item). Each row: ``item``, ``task_id``, ``run``, ``agent``, ``epoch``
    (and ``agent_b``, ``epoch_b`` pairwise), ``labels`` (annotator → fields, side by side),
    ``scales`` (field → disagreement), ``disagreement`` and ``gold`` (the current gold label with its
    adjudicator, time and note, or None).
    """
    if sort not in SORT_KEYS:
        raise CampaignError(f"sort {sort!r}: expected one of {', '.join(SORT_KEYS)}")
    by_item: dict[int, dict[str, dict[str, Any]]] = {}
    for (annotator, item), v in campaign.current().items():
        by_item.setdefault(item, {})[annotator] = v.fields or {}
    gold = current_gold(campaign)
    keys = scale_keys(campaign.protocol)
    rows = []
    for item_id, labels in by_item.items():
        if len(labels) < 2:
            continue
        scales = {k: spread([f[k] for f in labels.values() if k in f], level) for k, level in keys}
        worst = max(scales.values(), default=0.0)
        if worst == 0 and not include_agreed:
            continue
        it = campaign.items[item_id]
        row: dict[str, Any] = {
            "item": item_id,
            "task_id": it.task_id,
            "run": it.run,
            "agent": it.agent,
            "epoch": it.epoch,
        }
        if campaign.protocol == "pairwise":
            row.update(agent_b=it.agent_b, epoch_b=it.epoch_b, run_b=it.run_b)
        g = gold.get(item_id)
        row.update(
            labels=dict(sorted(labels.items())),
            scales=scales,
            disagreement=worst,
            gold=None
            if g is None
            else {
                "fields": g.fields,
                "by": g.adjudicator,
                "at": g.created_at,
                "note": g.note,
                "version": g.id,
            },
        )
        rows.append(row)
    if sort == "item":
        rows.sort(key=lambda r: r["item"])
    elif sort == "labels":
        rows.sort(key=lambda r: (-len(r["labels"]), r["item"]))
    else:
        rows.sort(
            key=lambda r: (
                -(r["disagreement"] if sort == "disagreement" else r["scales"].get(sort, 0)),
                r["item"],
            )
        )
    return rows


def label_text(fields: dict[str, Any] | None) -> str:
    """A label in one short line (``if 4 · vq 3 · damage no``, ``choice a``)."""
    if not fields:
        return "–"
    parts = []
    for k in ("if", "vq", "damage", "choice"):
        if k in fields:
            extra = (
                f" (slide {fields['damage_slide']})" if k == "damage" and fields.get("damage_slide") else ""
            )
            parts.append(f"{k} {fields[k]}{extra}")
    return " · ".join(parts)


def disagreements_text(rows: list[dict[str, Any]], campaign: Campaign) -> str:
    """The disagreement list for the terminal: one block per item, each annotator's label on a line."""
    if not rows:
        return f"campaign {campaign.name}: no item where annotators disagree"
    lines = [f"campaign {campaign.name} ({campaign.protocol}): {len(rows)} item(s)"]
    for r in rows:
        who = r["agent"] + (f" vs {r['agent_b']}" if r.get("agent_b") else "")
        scales = ", ".join(f"{k} {v:.2f}" for k, v in r["scales"].items())
        lines.append(
            f"item {r['item']}  {r['task_id']} · {who}  disagreement {r['disagreement']:.2f} ({scales})"
        )
        for annotator, fields in r["labels"].items():
            lines.append(f"    {annotator:<16} {label_text(fields)}")
        if r["gold"]:
            g = r["gold"]
            note = f" — {g['note']}" if g["note"] else ""
            lines.append(f"    {'gold':<16} {label_text(g['fields'])} (by {g['by']}{note})")
    return "\n".join(lines)
