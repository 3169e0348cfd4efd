"""A campaign's instructions page: a markdown file kept in the campaign file, rendered safely.

The instructions are given at ``arena label new --instructions FILE.md`` and replaced later with
``arena label instructions CAMPAIGN FILE.md``. They are stored **in** the campaign's SQLite file
(table ``instructions``, created through the campaign's connection the first time they are set), so
the file stays the whole campaign (``arena label pack`` copies them too). Like labels they are
versions: appended, never changed or deleted (the table's triggers refuse it); the latest version
is the campaign's instructions, and a version without text withdraws them.

**Limits.** A file is at most :data:`MAX_INSTRUCTIONS_BYTES` bytes of UTF-8 text, without NUL
characters; anything else is refused with an error saying why, before the campaign is touched.

**Rendering** (:func:`render_markdown`): CommonMark plus tables through ``markdown-it-py`` (installed
with ``rich``), with raw HTML **disabled**: a ``<script>`` or any other tag in the file is shown as
text. Links keep markdown-it's own check (no ``javascript:``, ``vbscript:``, ``file:`` or non-image
``data:`` URL) and open in a new tab without a referrer. An image embedded as a ``data:image/png``,
``jpeg``, ``gif`` or ``webp`` URI is shown (it travels inside the campaign file); an image at any
other address becomes a link to it, so a page never loads anything from elsewhere.

**Blind campaigns**: the words to blank out of the instructions before they are rendered
(:func:`hidden_names`) are every agent of the campaign's items and every agent and judge named in
the manifests of its runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from pptarena.label.adjudication import ADJUDICATOR_NAME, ensure_schema, has_table
from pptarena.label.errors import CampaignError
from pptarena.label.store import Campaign

MAX_INSTRUCTIONS_BYTES = 1024 * 1024
"""The largest instructions file accepted (1 MiB: pages of text and a few small embedded images)."""

INSTRUCTIONS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS instructions ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT, source TEXT NOT NULL,"
    " added_by TEXT NOT NULL, created_at REAL NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS instructions_append_only_u BEFORE UPDATE ON instructions"
    " BEGIN SELECT RAISE(ABORT, 'instructions are append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS instructions_append_only_d BEFORE DELETE ON instructions"
    " BEGIN SELECT RAISE(ABORT, 'instructions are append-only'); END",
)
"""The table of instruction versions, created in the campaign file when they are first set."""

IMAGE_DATA_PREFIXES = tuple(f"data:image/{kind};" for kind in ("png", "jpeg", "gif", "webp"))


@dataclass(frozen=True)
class Instructions:
    """One version of a campaign's instructions (``text`` None: withdrawn)."""

    version: int
    text: str | None
    source: str
    added_by: str
    created_at: float


def check_text(text: str, where: str = "the instructions") -> str:
    """``text`` when it can be a campaign's instructions (see the module doc's limits).

    :raises CampaignError: when it is too large, empty or holds a NUL character.
    """
    size = len(text.encode("utf-8"))
    if size > MAX_INSTRUCTIONS_BYTES:
        raise CampaignError(
            f"{where}: {size} bytes, more than the {MAX_INSTRUCTIONS_BYTES} allowed "
            "(shorten the text, or make embedded images smaller)"
        )
    if "\x00" in text:
        raise CampaignError(f"{where}: holds a NUL character (not a text file?)")
    if not text.strip():
        raise CampaignError(f"{where}: empty (to withdraw the instructions, use --clear)")
    return text


def read_instructions_file(path: Path) -> str:
    """The text of an instructions file, checked (:func:`check_text`); read without ever holding
    more than the limit in memory, whatever the file claims to be.

    :raises CampaignError: when it cannot be read, is too large, or is not UTF-8 text.
    """
    path = Path(path)
    try:
        if not path.is_file():
            raise CampaignError(f"{path}: not a file")
        with path.open("rb") as f:
            raw = f.read(MAX_INSTRUCTIONS_BYTES + 1)
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read it ({exc})") from exc
    if len(raw) > MAX_INSTRUCTIONS_BYTES:
        raise CampaignError(
            f"{path}: larger than the {MAX_INSTRUCTIONS_BYTES} bytes allowed for instructions "
            "(shorten the text, or make embedded images smaller)"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CampaignError(f"{path}: not UTF-8 text ({exc})") from exc
    return check_text(text, str(path))


def set_instructions(campaign: Campaign, text: str | None, *, source: str, by: str = "admin") -> Instructions:
    """Append a version of the campaign's instructions (``text`` None withdraws them).

    :raises CampaignError: for text that is not allowed (:func:`check_text`) or a bad name.
    """
    if not ADJUDICATOR_NAME.match((by or "").strip()):
        raise CampaignError("--by: 1-64 letters, digits, spaces and . _ @ -")
    if text is not None:
        check_text(text)
    ensure_schema(campaign, INSTRUCTIONS_SCHEMA)
    now = time.time()
    with campaign._lock:
        cur = campaign._conn.execute(
            "INSERT INTO instructions (text, source, added_by, created_at) VALUES (?,?,?,?)",
            (text, source[:200], by.strip(), now),
        )
        version = int(cur.lastrowid or 0)
    return Instructions(version, text, source[:200], by.strip(), now)


def instructions_history(campaign: Campaign) -> list[Instructions]:
    """Every version of the campaign's instructions, oldest first (none when never set)."""
    if not has_table(campaign, "instructions"):
        return []
    with campaign._lock:
        rows = campaign._conn.execute(
            "SELECT id, text, source, added_by, created_at FROM instructions ORDER BY id"
        ).fetchall()
    return [Instructions(*r) for r in rows]


def current_instructions(campaign: Campaign) -> Instructions | None:
    """The campaign's instructions: the latest version, None when never set or withdrawn."""
    if not has_table(campaign, "instructions"):
        return None
    with campaign._lock:
        row = campaign._conn.execute(
            "SELECT id, text, source, added_by, created_at FROM instructions ORDER BY id DESC LIMIT 1"
        ).fetchone()
    if row is None or row[1] is None:
        return None
    return Instructions(*row)


def hidden_names(campaign: Campaign) -> list[str]:
    """The names a blind campaign's instructions must not show (see the module doc), longest first."""
    from pptarena.run.folder.manifest_record import Manifest
    from pptarena.run.folder.rundir import MANIFEST

    names: set[str] = set()
    for it in campaign.items.values():
        names.update(n for n in (it.agent, it.agent_b) if n)
    for run in set(campaign.runs.values()):
        try:
            m = Manifest.read(Path(run) / MANIFEST)
        except Exception:  # noqa: BLE001 - a manifest that cannot be read names nobody
            continue
        names.update(str(n) for n in (*(m.agents or []), *(m.judges or [])) if n)
    return sorted(names, key=lambda n: (-len(n), n))


def _image_rule(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """An embedded image (data URI) as an image; any other as a link to it (see the module doc)."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    if src.startswith(IMAGE_DATA_PREFIXES):
        return f'<img class="instructions-image" src="{escape(src)}" alt="{escape(alt)}">'
    return (
        f'<a href="{escape(src)}" target="_blank" rel="noopener noreferrer">image: {escape(alt or src)}</a>'
    )


def _link_open_rule(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Links open in a new tab without a referrer (the labelling page stays where it was)."""
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer")
    return str(renderer.renderToken(tokens, idx, options, env))


def render_markdown(text: str) -> str:
    """Markdown as HTML that is safe to put in a page (see the module doc)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    md.add_render_rule("image", _image_rule)
    md.add_render_rule("link_open", _link_open_rule)
    return str(md.render(text))
