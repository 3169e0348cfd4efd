"""Reading a 0-5 score and a reason out of a judge model's answer (untrusted text).

Accepted forms, tried in order:

1. the whole answer is JSON: ``{"score": 4, "reason": "..."}``;
2. a fenced block (```` ```json ... ``` ```` or a plain ```` ``` ```` fence) holding such JSON;
3. the first balanced ``{...}`` object in the text that parses as JSON and holds a score;
4. a bare number (``4``, ``4/5``, ``Score: 4``) as the whole answer or on its first or last line.

Score keys: ``score``, ``rating``, the PPTArena names ``instruction_following_score`` /
``visual_quality_score`` and ``if_score`` / ``vq_score`` (first found). Reason keys: ``reason``,
``instruction_following_reason``, ``visual_quality_reason``, ``explanation``, ``rationale``.
The score must be a number (or numeric string) in [0, 5]; non-integers are rounded half up.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from pptarena.replyjson import embedded_json

MAX_ANSWER_CHARS = 200_000  # longer answers are cut before parsing
MAX_REASON_CHARS = 4_000
SCORE_KEYS = (
    "score",
    "rating",
    "instruction_following_score",
    "visual_quality_score",
    "if_score",
    "vq_score",
)
REASON_KEYS = ("reason", "instruction_following_reason", "visual_quality_reason", "explanation", "rationale")

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)```", re.S)
_BARE_RE = re.compile(
    r"^\s*(?:\*\*)?(?:(?:final\s+)?score\s*[:=]?\s*)?(?:\*\*)?\s*([0-9]+(?:\.[0-9]+)?)\s*(?:/\s*5)?\s*(?:\*\*)?[.!]?\s*$",
    re.I,
)


class ScoreParseError(ValueError):
    """The answer holds no usable 0-5 score; the message says why."""


@dataclass(frozen=True)
class ParsedScore:
    """A score in 0..5 (integer), the reason given (may be empty) and how it was found."""

    score: int
    reason: str
    form: str  # "json" | "fenced" | "embedded" | "bare"


def _score_value(value: Any, where: str) -> int:
    if isinstance(value, bool) or value is None:
        raise ScoreParseError(f"{where}: score {value!r} is not a number")
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(?:/\s*5)?\s*", value)
        if not m:
            raise ScoreParseError(f"{where}: score {value[:40]!r} is not a number")
        value = float(m.group(1))
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScoreParseError(f"{where}: score {value!r} is not a number")
    if not 0 <= value <= 5:
        raise ScoreParseError(f"{where}: score {value} is outside 0-5")
    return int(math.floor(value + 0.5))


def _from_object(obj: Any, form: str) -> ParsedScore:
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return ParsedScore(_score_value(obj, "bare number"), "", "bare")
    if not isinstance(obj, dict):
        raise ScoreParseError(f"{form}: expected a JSON object with a score, got {type(obj).__name__}")
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in SCORE_KEYS:
        if key in lowered:
            score = _score_value(lowered[key], f"{form} key {key!r}")
            break
    else:
        raise ScoreParseError(
            f"{form}: the JSON object has no score key (expected one of {', '.join(SCORE_KEYS)})"
        )
    reason = ""
    for key in REASON_KEYS:
        if isinstance(lowered.get(key), str):
            reason = lowered[key]
            break
    return ParsedScore(score, reason[:MAX_REASON_CHARS], form)


def parse_score(text: str | None) -> ParsedScore:
    """The score and reason in a model's answer; :class:`ScoreParseError` when there is none."""
    if text is None or not text.strip():
        raise ScoreParseError("the answer is empty")
    text = text[:MAX_ANSWER_CHARS]
    problems: list[str] = []
    stripped = text.strip()
    try:
        return _from_object(json.loads(stripped), "json")
    except (json.JSONDecodeError, RecursionError):  # RecursionError: absurdly deep nesting
        pass
    except ScoreParseError as exc:
        problems.append(str(exc))
    for m in _FENCE_RE.finditer(text):
        body = m.group(2).strip()
        try:
            return _from_object(json.loads(body), "fenced")
        except json.JSONDecodeError as exc:
            problems.append(f"fenced block is not JSON ({exc.msg})")
        except RecursionError:
            problems.append("fenced block is nested too deeply to read")
        except ScoreParseError as exc:
            problems.append(str(exc))
    try:
        for value in embedded_json(text, openers="{", limit=20):
            try:
                return _from_object(value, "embedded")
            except ScoreParseError as exc:
                problems.append(str(exc))
    except RecursionError:
        problems.append("an embedded JSON object is nested too deeply to read")
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    for candidate in [stripped] + ([lines[0], lines[-1]] if lines else []):
        bare = _BARE_RE.match(candidate)
        if bare:
            rest = (
                "\n".join(lines[1:] if candidate == lines[0] else lines[:-1]) if candidate != stripped else ""
            )
            return ParsedScore(
                _score_value(float(bare.group(1)), "bare number"), rest.strip()[:MAX_REASON_CHARS], "bare"
            )
    detail = "; ".join(dict.fromkeys(p for p in problems if p))
    raise ScoreParseError(
        "no JSON object with a 0-5 score and no bare number found" + (f" ({detail})" if detail else "")
    )


__all__ = ["ParsedScore", "ScoreParseError", "parse_score"]
