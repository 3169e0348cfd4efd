"""Finding JSON in a model's reply: the whole reply, a fenced block, or values embedded in prose.

Models wrap JSON in ```json fences, put a sentence before it, or answer with
several objects. Agents, judges and the authoring tools all read replies
through these helpers, so they accept the same shapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .types import PptArenaError

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.S)
MAX_REPLY_CHARS = 2_000_000


class ReplyParseError(PptArenaError, ValueError):
    """No usable JSON in a model reply; the message says what was wrong."""


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced code block, in order."""
    return [(lang.lower(), body) for lang, body in FENCE.findall(text)]


def embedded_json(text: str, *, openers: str = "{[", limit: int = 50) -> list[Any]:
    """Top-level JSON values that start with one of ``openers``, in order of appearance.

    Each position where an opener appears is tried with a JSON decoder; after a
    value is decoded the search continues after it, so nested values are not
    reported twice. At most ``limit`` values are returned.
    """
    decoder = json.JSONDecoder()
    pattern = re.compile("[" + re.escape(openers) + "]")
    found: list[Any] = []
    pos = 0
    while len(found) < limit:
        m = pattern.search(text, pos)
        if not m:
            break
        try:
            value, end = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            pos = m.start() + 1
            continue
        found.append(value)
        pos = end
    return found


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in fenced blocks, else in the reply itself; None when there is none."""
    for block in [*(body for _, body in fenced_blocks(text)), text]:
        for value in embedded_json(block, openers="{"):
            if isinstance(value, dict):
                return value
    return None


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole reply, else a fenced block (``json`` fences first), else
    the first value embedded in the text.

    :raises ReplyParseError: naming the first JSON error found, when nothing parses.
    """
    if not isinstance(text, str) or not text.strip():
        raise ReplyParseError("the reply is empty")
    if len(text) > MAX_REPLY_CHARS:
        raise ReplyParseError(f"the reply has {len(text)} characters (limit {MAX_REPLY_CHARS})")
    blocks = fenced_blocks(text)
    candidates = [text.strip()]
    candidates += [body for lang, body in blocks if lang in ("json", "")]
    candidates += [body for lang, body in blocks if lang not in ("json", "")]
    first_error = ""
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            first_error = first_error or f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    embedded = embedded_json(text, limit=1)
    if embedded:
        return embedded[0]
    raise ReplyParseError(f"no valid JSON found in the reply ({first_error or 'no JSON-looking text'})")
