"""JSON text of summaries and diffs kept under a character cap, saying what was left out."""

from __future__ import annotations

import json
from typing import Any


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def bounded_list_json(data: dict[str, Any], key: str, max_chars: int, describe: Any = None) -> str:
    """``data`` as compact JSON of at most ``max_chars`` characters.

    When it is too long, items of the list ``data[key]`` are dropped from the end and named in
    ``omitted_<key>`` (through ``describe(item)``, else only counted) with a ``truncated`` note;
    as a last resort the text is cut and says so.
    """
    full = _dump(data)
    if len(full) <= max_chars:
        return full
    items = list(data.get(key) or [])
    total = len(items)
    lo, hi = 0, total  # the most items kept that still fit: binary search on the count
    best: str | None = None
    while lo <= hi:
        keep = (lo + hi) // 2
        text = _dump(_cut(data, key, items, keep, describe, max_chars))
        if len(text) <= max_chars:
            best, lo = text, keep + 1
        else:
            hi = keep - 1
    if best is not None:
        return best
    note = f" …[truncated: {len(full)} characters, over the {max_chars}-character limit]"
    return full[: max(0, max_chars - len(note))] + note


def _cut(data: dict[str, Any], key: str, items: list[Any], keep: int, describe: Any, max_chars: int) -> dict:
    dropped = items[keep:]
    out = dict(data)
    out[key] = items[:keep]
    out["truncated"] = (
        f"{len(dropped)} of {len(items)} {key} left out to stay under {max_chars} characters; "
        "ask for fewer (e.g. a slide selection)"
    )
    if describe is not None:
        listed = [describe(item) for item in dropped[:200]]
        out[f"omitted_{key}"] = listed
    return out
