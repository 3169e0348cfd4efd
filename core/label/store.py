"""A labelling campaign's SQLite file: items, annotators, queues and append-only label versions.

One file per campaign, in WAL mode with ``synchronous=FULL``: a label is acknowledged only after
its transaction is in the write-ahead log on disk, so killing the server (``kill -9``) loses no
acknowledged label, and several annotators can write at once (SQLite serialises the writers).
Labels are never updated or deleted: changing a label, or undoing it, appends a new version; the
current label of (annotator, item) is its latest version, and the whole history stays readable.

Tokens are stored as SHA-256 digests only; the links holding them are printed once at creation.

**Public item ids.** Items are numbered from 1 in (task, agent) order, so an item's number tells
which agent made it. Annotators never see these numbers: pages, image URLs and the label API name
an item by its public id (:meth:`Campaign.public_id`), a 15-digit number drawn from an HMAC-SHA256
of the item's number under a random key of the campaign (meta ``item_key``, written at creation,
or added when a file made before it is opened), so public ids are random per campaign and say
nothing about the order of the items.

**The file is the campaign once it is closed.** While a campaign is open, committed labels sit in
the write-ahead log (``<file>-wal``) until SQLite checkpoints them into ``<file>``. Closing a
campaign (:meth:`Campaign.close`, also run for every campaign still open when the process exits
normally, e.g. when ``arena view`` stops) checkpoints the log into the file and truncates it, so
``<file>`` alone then holds every label. A self-contained copy of a campaign in use is made with
:meth:`Campaign.pack` (SQLite's online backup), never by copying ``<file>`` alone.

Why it is long: it owns the campaign file's schema and every statement that reads or writes it
(items, queues, tokens, label versions, hidden insertions, checkpoint and pack), so the
append-only and WAL durability promises above can be checked against one module rather than
against every caller's SQL.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import os
import random
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pptarena.label.errors import CampaignError
from pptarena.label.scales import validate_fields

SCHEMA_VERSION = 1
PROTOCOLS = ("absolute", "pairwise")
UNDO_NOTE = "undo of version "

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id), task_id TEXT NOT NULL,
    agent TEXT NOT NULL, epoch INTEGER NOT NULL DEFAULT 1,
    agent_b TEXT, epoch_b INTEGER, run_b INTEGER REFERENCES runs(id));
CREATE TABLE IF NOT EXISTS annotators (name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS queue (
    annotator TEXT NOT NULL REFERENCES annotators(name), position INTEGER NOT NULL,
    item INTEGER NOT NULL REFERENCES items(id), swapped INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (annotator, position));
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT, item INTEGER NOT NULL REFERENCES items(id),
    annotator TEXT NOT NULL REFERENCES annotators(name), fields TEXT, created_at REAL NOT NULL,
    seconds REAL, note TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS labels_by_item ON labels(annotator, item, id);
CREATE TRIGGER IF NOT EXISTS labels_append_only_u BEFORE UPDATE ON labels
    BEGIN SELECT RAISE(ABORT, 'labels are append-only'); END;
CREATE TRIGGER IF NOT EXISTS labels_append_only_d BEFORE DELETE ON labels
    BEGIN SELECT RAISE(ABORT, 'labels are append-only'); END;
"""


#: the meta key of the campaign's secret key for public item ids (see the module doc)
ITEM_KEY = "item_key"
PUBLIC_ID_MIN = 10**14
PUBLIC_ID_SPAN = 9 * 10**14  # 15 digits, below 2**53 (a JavaScript number holds it exactly)

CHECKPOINT_WAIT_MS = 5000
"""How long closing a campaign waits for other connections before giving up its checkpoint."""

_OPEN: weakref.WeakSet[Campaign] = weakref.WeakSet()


def _close_open_campaigns() -> None:
    """Close (and so checkpoint) every campaign this process still has open: run at normal exit."""
    for campaign in list(_OPEN):
        campaign.close()


atexit.register(_close_open_campaigns)


def public_ids(key: str, items: list[int], taken: set[int] | None = None) -> dict[int, int]:
    """Each item number's public id under the campaign key ``key`` (hex): 15-digit numbers from
    HMAC-SHA256(key, item number), all distinct (a clash, about one campaign in a billion, is
    resolved by hashing again with a counter, in item order, so the result is deterministic).

    ``taken``: the public ids of the campaign's items numbered below ``items`` (items added later:
    their ids are then the same as if every item had been numbered at once)."""
    raw = bytes.fromhex(key)
    out: dict[int, int] = {}
    taken = set(taken or ())
    for item in sorted(items):
        for attempt in range(1000):
            msg = f"item:{item}" if attempt == 0 else f"item:{item}:{attempt}"
            digest = hmac.new(raw, msg.encode(), hashlib.sha256).digest()
            pid = PUBLIC_ID_MIN + int.from_bytes(digest[:8], "big") % PUBLIC_ID_SPAN
            if pid not in taken:
                break
        taken.add(pid)
        out[item] = pid
    return out


def token_digest(token: str) -> str:
    """The SHA-256 hex digest under which an annotator's token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Item:
    """One thing to label: an attempt (absolute) or two attempts of the same task (pairwise)."""

    id: int
    run: str
    task_id: str
    agent: str
    epoch: int
    agent_b: str | None = None
    epoch_b: int | None = None
    run_b: str | None = None


@dataclass(frozen=True)
class LabelVersion:
    """One appended label version (``fields`` None: the label was cleared by an undo)."""

    id: int
    item: int
    annotator: str
    fields: dict[str, Any] | None
    created_at: float
    seconds: float | None
    note: str


def connect(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode with full synchronous commits (see the module doc)."""
    conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


class Campaign:
    """An open campaign file; safe to share between threads (one connection behind a lock)."""

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = Path(path)
        self._conn = conn
        self._lock = threading.Lock()
        self.meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        self.runs: dict[int, str] = {}
        self.items: dict[int, Item] = {}
        self._public: dict[int, int] = {}
        self._by_public: dict[int, int] = {}
        self.annotators = [n for (n,) in conn.execute("SELECT name FROM annotators ORDER BY rowid")]
        self._load_items(conn)
        self.closed = False
        _OPEN.add(self)

    def _load_items(self, conn: sqlite3.Connection) -> bool:
        """Read the runs and the items numbered above those already loaded, with their public ids
        (the maps are replaced whole, so a reader in another thread sees the old or the new ones);
        True when there were any."""
        known = max(self.items, default=0)
        rows = conn.execute(
            "SELECT id, run, task_id, agent, epoch, agent_b, epoch_b, run_b FROM items WHERE id > ? "
            "ORDER BY id",
            (known,),
        ).fetchall()
        if not rows and self.runs:
            return False
        runs = {i: p for i, p in conn.execute("SELECT id, path FROM runs")}
        items = dict(self.items)
        for row in rows:
            rid = row[7]
            items[row[0]] = Item(
                row[0], runs[row[1]], row[2], row[3], row[4], row[5], row[6],
                runs[rid] if rid is not None else None,
            )  # fmt: skip
        new = public_ids(self._item_key(), [r[0] for r in rows], taken=set(self._public.values()))
        public = {**self._public, **new}
        self.runs, self.items = runs, items
        self._public, self._by_public = public, {pid: item for item, pid in public.items()}
        return bool(rows)

    def refresh_items(self) -> bool:
        """Load the items added to the file since it was opened, by this handle or another process
        (``arena label seed --add-…`` while ``arena view`` serves the campaign); True when some were.
        Queues and label histories that name an item not loaded yet call it themselves."""
        with self._lock:
            if self.closed:
                return False
            return self._load_items(self._conn)

    def _item_key(self) -> str:
        """The campaign's key for public item ids, added to a file made before there was one (kept
        in memory only when the file cannot be written: public ids then change at each opening)."""
        key = self.meta.get(ITEM_KEY)
        if isinstance(key, str) and len(key) == 64:
            return key
        fresh = secrets.token_hex(32)
        try:
            # OR IGNORE: two processes opening an old file at once agree on the first key written
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (ITEM_KEY, json.dumps(fresh)))
            row = self._conn.execute("SELECT value FROM meta WHERE key=?", (ITEM_KEY,)).fetchone()
            key = json.loads(row[0]) if row else fresh
        except sqlite3.Error:
            key = fresh
        self.meta[ITEM_KEY] = key
        return str(key)

    def public_id(self, item: int) -> int:
        """The public id of item number ``item`` (what annotators see; see the module doc)."""
        return self._public[item]

    def item_for_public(self, public: object) -> int | None:
        """The item number of a public id (an int or its decimal text); None when it names no item."""
        if isinstance(public, bool):
            return None
        if isinstance(public, str):
            if not (public.isascii() and public.isdecimal()) or len(public) > 20:
                return None
            public = int(public)
        if not isinstance(public, int):
            return None
        found = self._by_public.get(public)
        if (
            found is None
            and PUBLIC_ID_MIN <= public < PUBLIC_ID_MIN + PUBLIC_ID_SPAN
            and self._has_more_items()
        ):
            self.refresh_items()  # an item added by another process since this handle was opened
            found = self._by_public.get(public)
        return found

    def _has_more_items(self) -> bool:
        """Whether the file has items numbered above those loaded (one index look-up)."""
        with self._lock:
            if self.closed:
                return False
            (top,) = self._conn.execute("SELECT COALESCE(MAX(id), 0) FROM items").fetchone()
        return int(top) > max(self.items, default=0)

    @classmethod
    def open(cls, path: Path) -> Campaign:
        """Open an existing campaign file.

        :raises CampaignError: when it is missing or not a campaign of this schema.
        """
        path = Path(path)
        if not path.is_file():
            raise CampaignError(f"{path}: no such campaign file")
        try:
            conn = connect(path)
            version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise CampaignError(f"{path}: not a campaign file ({exc})") from exc
        if version is None or json.loads(version[0]) != SCHEMA_VERSION:
            conn.close()
            raise CampaignError(f"{path}: not a campaign file of schema {SCHEMA_VERSION}")
        return cls(path, conn)

    @property
    def protocol(self) -> str:
        """``absolute`` or ``pairwise``."""
        return str(self.meta.get("protocol"))

    @property
    def blind(self) -> bool:
        """Whether annotators see neither agent names nor judge scores."""
        return bool(self.meta.get("blind", True))

    @property
    def name(self) -> str:
        """The campaign's name."""
        return str(self.meta.get("name") or self.path.stem)

    def __enter__(self) -> Campaign:
        """The campaign itself (``with Campaign.open(f) as c:`` closes it at the end)."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it (see :meth:`close`)."""
        self.close()

    def checkpoint(self) -> bool:
        """Move every committed label from the write-ahead log into the campaign file and empty the
        log (``PRAGMA wal_checkpoint(TRUNCATE)``); True when it completed.

        It waits up to :data:`CHECKPOINT_WAIT_MS` for other connections' transactions; a campaign in
        a folder that cannot be written keeps its log (False).
        """
        with self._lock:
            if self.closed:
                return False
            return self._checkpoint()

    def _checkpoint(self) -> bool:
        try:
            self._conn.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error:
            return False
        finally:
            try:
                self._conn.execute("PRAGMA busy_timeout=30000")
            except sqlite3.Error:
                pass
        return busy == 0

    def close(self) -> bool:
        """Checkpoint the write-ahead log into the file (see :meth:`checkpoint`), then close the
        connection; closing twice does nothing. True when the file alone now holds every label."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
            _OPEN.discard(self)
            done = self._checkpoint()
            self._conn.close()
        return done

    def pack(self, out: Path) -> Path:
        """Write a self-contained copy of the campaign to ``out`` with SQLite's online backup API.

        Safe while other connections (a running ``arena view``) write: the copy is a consistent
        snapshot holding every label committed before it started. The copy is one file (rollback
        journal mode; it switches back to WAL when opened as a campaign), written beside ``out`` and
        renamed into place; an existing ``out`` is never overwritten.

        :raises CampaignError: when ``out`` exists or is this campaign's own file.
        """
        out = Path(out)
        if out.exists() or out.is_symlink():
            raise CampaignError(f"{out} exists already (a campaign is never overwritten)")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.part")
        tmp.unlink(missing_ok=True)
        try:
            dst = sqlite3.connect(str(tmp), isolation_level=None)
            try:
                with self._lock:
                    if self.closed:
                        raise CampaignError(f"{self.path}: the campaign is closed")
                    self._conn.backup(dst)  # one step: a read transaction over the whole file
                dst.execute("PRAGMA journal_mode=DELETE")
                (check,) = dst.execute("PRAGMA integrity_check").fetchone()
                if check != "ok":
                    raise CampaignError(f"the copy of {self.path} failed its integrity check: {check}")
            finally:
                dst.close()
            if out.exists():
                raise CampaignError(f"{out} exists already (a campaign is never overwritten)")
            os.replace(tmp, out)
        finally:
            for leftover in (tmp, Path(f"{tmp}-journal")):
                leftover.unlink(missing_ok=True)
        return out

    def change_marker(self) -> tuple[Any, ...]:
        """A cheap marker of everything the campaign's statistics read from its file: the largest
        id and the number of rows of the labels, the items and the annotators, and the largest id
        of the gold labels and known-answer marks (tables written later, when they exist). Rows are
        only ever appended, so the marker changes whenever a statistic may change; two equal
        markers mean an unchanged store. A few index look-ups, whatever the number of labels."""
        parts = ["(SELECT MAX(id) FROM labels)", "(SELECT COUNT(*) FROM labels)",
                 "(SELECT MAX(id) FROM items)", "(SELECT COUNT(*) FROM annotators)"]  # fmt: skip
        with self._lock:
            tables = {
                name
                for (name,) in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name IN (?, ?)",
                    ("gold_labels", "known_answers"),
                )
            }
            parts += [f"(SELECT MAX(id) FROM {t})" for t in sorted(tables)]
            return tuple(self._conn.execute("SELECT " + ", ".join(parts)).fetchone())

    def annotator_for_token(self, token: str) -> str | None:
        """The annotator whose token this is (None when no annotator has it)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT name FROM annotators WHERE token_sha256=?", (token_digest(token),)
            ).fetchone()
        return row[0] if row else None

    def queue(self, annotator: str) -> list[tuple[int, bool]]:
        """The annotator's items in their order, each with whether its two predictions are shown swapped."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT item, swapped FROM queue WHERE annotator=? ORDER BY position", (annotator,)
            ).fetchall()
        items = self.items
        if any(i not in items for i, _ in rows):
            self.refresh_items()
        return [(i, bool(s)) for i, s in rows]

    def append(
        self, annotator: str, item: int, fields: dict[str, Any] | None, seconds: float | None, note: str = ""
    ) -> LabelVersion:
        """Append a label version (committed and synced before this returns).

        :raises CampaignError: when the item is not in the annotator's queue or the fields are invalid.
        """
        if fields is not None:
            fields = validate_fields(self.protocol, fields)
        if seconds is not None and not (0 <= float(seconds) < 86_400 * 7):
            raise CampaignError("seconds spent must be between 0 and a week")
        now = time.time()
        text = None if fields is None else json.dumps(fields, sort_keys=True)
        with self._lock:
            found = self._conn.execute(
                "SELECT 1 FROM queue WHERE annotator=? AND item=?", (annotator, item)
            ).fetchone()
            if found is None:
                raise CampaignError(f"item {item} is not in {annotator}'s queue")
            cur = self._conn.execute(
                "INSERT INTO labels (item, annotator, fields, created_at, seconds, note) "
                "VALUES (?,?,?,?,?,?)",
                (item, annotator, text, now, None if seconds is None else float(seconds), note[:200]),
            )
            lid = int(cur.lastrowid or 0)
        return LabelVersion(lid, item, annotator, fields, now, seconds, note)

    def undo(self, annotator: str, item: int) -> LabelVersion:
        """Append a version restoring the label before the current one (cleared when there was none).

        Undo versions are marked (``note``), so undoing twice goes back two labels, not forth again.
        """
        stack: list[LabelVersion] = []
        for v in self.history(annotator, item):
            if v.note.startswith(UNDO_NOTE):
                if stack:
                    stack.pop()
            else:
                stack.append(v)
        if not stack:
            raise CampaignError("nothing to undo")
        undone = stack.pop()
        previous = stack[-1].fields if stack else None
        return self.append(annotator, item, previous, None, note=f"{UNDO_NOTE}{undone.id}")

    def history(self, annotator: str | None = None, item: int | None = None) -> list[LabelVersion]:
        """Every label version (of one annotator and/or item), oldest first."""
        sql = "SELECT id, item, annotator, fields, created_at, seconds, note FROM labels"
        where, args = [], []
        if annotator is not None:
            where.append("annotator=?")
            args.append(annotator)
        if item is not None:
            where.append("item=?")
            args.append(item)
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY id", args).fetchall()
        items = self.items
        if any(r[1] not in items for r in rows):
            self.refresh_items()
        return [
            LabelVersion(r[0], r[1], r[2], json.loads(r[3]) if r[3] is not None else None, r[4], r[5], r[6])
            for r in rows
        ]

    def current(self, annotator: str | None = None) -> dict[tuple[str, int], LabelVersion]:
        """The latest version per (annotator, item), cleared labels left out."""
        latest: dict[tuple[str, int], LabelVersion] = {}
        for v in self.history(annotator):
            latest[(v.annotator, v.item)] = v
        return {k: v for k, v in latest.items() if v.fields is not None}

    def overlap(self) -> float:
        """The share of items in the queues of two annotators or more."""
        with self._lock:
            counts = [n for (n,) in self._conn.execute("SELECT COUNT(*) FROM queue GROUP BY item")]
        return sum(1 for n in counts if n >= 2) / len(counts) if counts else 0.0


def create_campaign(
    path: Path,
    *,
    name: str,
    protocol: str,
    runs: list[str],
    items: list[tuple[int, str, str, int, str | None, int | None, int | None]],
    queues: dict[str, list[tuple[int, bool]]],
    tokens: dict[str, str],
    meta: dict[str, Any],
) -> Campaign:
    """Write a new campaign file (refusing to overwrite one) and open it.

    ``items`` are ``(run index, task_id, agent, epoch, agent_b, epoch_b, run_b index)``, numbered
    from 1 in this order; ``queues`` map annotators to (item number, swapped) lists.
    """
    path = Path(path)
    if path.exists():
        raise CampaignError(f"{path} exists already (a campaign is never overwritten)")
    if protocol not in PROTOCOLS:
        raise CampaignError(f"protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    try:
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        info = {
            **meta,
            "name": name,
            "protocol": protocol,
            "schema_version": SCHEMA_VERSION,
            ITEM_KEY: secrets.token_hex(32),
        }
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in info.items()])
        conn.executemany("INSERT INTO runs VALUES (?, ?)", list(enumerate(runs)))
        conn.executemany(
            "INSERT INTO items (id, run, task_id, agent, epoch, agent_b, epoch_b, run_b) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(i + 1, *it) for i, it in enumerate(items)],
        )
        conn.executemany(
            "INSERT INTO annotators VALUES (?, ?)", [(a, token_digest(t)) for a, t in tokens.items()]
        )
        conn.executemany(
            "INSERT INTO queue VALUES (?, ?, ?, ?)",
            [(a, pos, item, int(sw)) for a, q in queues.items() for pos, (item, sw) in enumerate(q)],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        path.unlink(missing_ok=True)
        raise
    return Campaign(path, conn)


def add_annotator(campaign: Campaign, name: str, token: str) -> None:
    """Add an annotator (for imported labels by a person the campaign did not list)."""
    with campaign._lock:
        campaign._conn.execute("INSERT INTO annotators VALUES (?, ?)", (name, token_digest(token)))
    campaign.annotators.append(name)


def add_to_queue(campaign: Campaign, annotator: str, item: int) -> None:
    """Put an item at the end of an annotator's queue unless it is there already."""
    with campaign._lock:
        conn = campaign._conn
        if conn.execute("SELECT 1 FROM queue WHERE annotator=? AND item=?", (annotator, item)).fetchone():
            return
        (last,) = conn.execute(
            "SELECT COALESCE(MAX(position), -1) FROM queue WHERE annotator=?", (annotator,)
        ).fetchone()
        conn.execute("INSERT INTO queue VALUES (?, ?, ?, 0)", (annotator, last + 1, item))


@dataclass(frozen=True)
class NewItem:
    """An item to add to a campaign: an attempt (absolute) or two attempts of one task (pairwise),
    named by run folder, task, agent and epoch (pairwise: the second agent, epoch and run)."""

    run: str
    task_id: str
    agent: str
    epoch: int = 1
    agent_b: str | None = None
    epoch_b: int | None = None
    run_b: str | None = None


def hidden_positions(queue: list[int], labelled: set[int], new: list[int], rng: random.Random) -> list[int]:
    """``queue`` (item numbers in order) with the ``new`` items put at random places among the items
    the annotator has not reached yet: after the last item they labelled and after the first item
    still open (the one their page shows next), so no item they have seen moves and no new item
    turns up behind them."""
    last = max((k for k, item in enumerate(queue) if item in labelled), default=-1)
    keep = min(last + 2, len(queue))  # through the first open item
    head, tail = list(queue[:keep]), list(queue[keep:])
    for item in new:
        tail.insert(rng.randint(0, len(tail)), item)
    return head + tail


def insert_hidden_items(
    campaign: Campaign,
    new: list[NewItem],
    *,
    seed: int,
    after: Callable[[sqlite3.Connection, list[int]], None] | None = None,
) -> list[int]:
    """Add items to the campaign and to **every** annotator's queue at hidden, random but
    reproducible places (:func:`hidden_positions`, drawn with ``seed``, the annotator's name and the
    new item numbers); returns their item numbers.

    They are numbered after the campaign's items, so their public ids are drawn like every other
    item's; in pairwise campaigns the side each prediction is shown on is drawn per annotator, as at
    creation. Runs not in the campaign yet are added to it. ``after(connection, item numbers)``
    runs in the same transaction (the known-answer marks of the new items): all is written, or
    nothing.

    :raises CampaignError: when there is nothing to add.
    """
    if not new:
        raise CampaignError("no item to add")
    pairwise = campaign.protocol == "pairwise"
    with campaign._lock:
        if campaign.closed:
            raise CampaignError(f"{campaign.path}: the campaign is closed")
        conn = campaign._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            runs = {p: i for i, p in conn.execute("SELECT id, path FROM runs")}
            for path in dict.fromkeys(p for it in new for p in (it.run, it.run_b) if p is not None):
                if path not in runs:
                    runs[path] = max(runs.values(), default=-1) + 1
                    conn.execute("INSERT INTO runs VALUES (?, ?)", (runs[path], path))
            (top,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM items").fetchone()
            numbers = list(range(top + 1, top + 1 + len(new)))
            conn.executemany(
                "INSERT INTO items (id, run, task_id, agent, epoch, agent_b, epoch_b, run_b) "
                "VALUES (?,?,?,?,?,?,?,?)",
                [
                    (n, runs[it.run], it.task_id, it.agent, it.epoch, it.agent_b, it.epoch_b,
                     runs[it.run_b] if it.run_b is not None else None)
                    for n, it in zip(numbers, new, strict=True)
                ],
            )  # fmt: skip
            tag = ",".join(map(str, numbers))
            annotators = [a for (a,) in conn.execute("SELECT name FROM annotators ORDER BY rowid")]
            for who in annotators:
                rows = conn.execute(
                    "SELECT item, swapped FROM queue WHERE annotator=? ORDER BY position", (who,)
                ).fetchall()
                swapped = {i: s for i, s in rows}
                labelled = {
                    i for (i,) in conn.execute("SELECT DISTINCT item FROM labels WHERE annotator=?", (who,))
                }
                rng = random.Random(f"{seed}:{who}:{tag}")
                order = hidden_positions(
                    [i for i, _ in rows], labelled, rng.sample(numbers, len(numbers)), rng
                )
                for n in numbers:
                    swapped[n] = int(pairwise and rng.random() < 0.5)
                conn.execute("DELETE FROM queue WHERE annotator=?", (who,))
                conn.executemany(
                    "INSERT INTO queue VALUES (?, ?, ?, ?)",
                    [(who, pos, item, swapped[item]) for pos, item in enumerate(order)],
                )
            if after is not None:
                after(conn, numbers)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        campaign._load_items(conn)
    return numbers
