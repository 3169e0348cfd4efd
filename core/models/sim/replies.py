"""Who answers what: rules first, then the harness-aware responder, then a fixed text.

1. :class:`~pptarena.models.sim.config.Rule` objects, tried in order on the last user text
   (and the model name when the rule has ``model``); the first match answers. Its reply is
   sent as written. With ``tool_call`` and tools in the request, the answer is a tool call.
2. :func:`~pptarena.models.sim.harness_replies.harness_reply`: valid answers for the
   harness's judges and agents.
3. :data:`FALLBACK_TEXT`.

Built-in answers (2 and 3) follow the request's JSON mode: when JSON is asked for and the
answer is not JSON, the answer becomes an instance of the requested schema (every required
property with a placeholder of its type), or ``{"reply": <text>}`` without a schema.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pptarena.models.sim.config import Rule
from pptarena.models.sim.harness_replies import harness_reply
from pptarena.models.sim.prompt import Prompt

FALLBACK_TEXT = "This is a simulated reply."
BROKEN_ARGUMENTS = '{"arguments": "cut off'


@dataclass(frozen=True)
class ToolCallReply:
    """A tool call to answer with: the tool's name and its arguments as JSON text."""

    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        """The arguments as JSON data; the raw text when it does not parse (a broken call)."""
        try:
            return json.loads(self.arguments)
        except json.JSONDecodeError:
            return self.arguments


@dataclass(frozen=True)
class Reply:
    """What the simulated model says: text, tool calls, and where it came from."""

    text: str
    tool_calls: tuple[ToolCallReply, ...] = ()
    source: str = "builtin"  # "rule <n>" | "builtin" | "fallback"


def schema_instance(schema: Any, depth: int = 0) -> Any:
    """A value that fits ``schema`` (JSON Schema or Gemini's upper-case OpenAPI subset)."""
    if not isinstance(schema, dict) or depth > 12:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_instance(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind or ("object" if "properties" in schema else "string")).lower()
    if kind == "object":
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {name: schema_instance(sub, depth + 1) for name, sub in props.items()}
    if kind == "array":
        n = int(schema.get("minItems") or 0)
        return [schema_instance(schema.get("items"), depth + 1) for _ in range(min(n, 3))]
    if kind in ("integer", "number"):
        low = schema.get("minimum")
        return low if isinstance(low, (int, float)) else 0
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "simulated"


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


class Responder:
    """Chooses the reply to a :class:`~pptarena.models.sim.prompt.Prompt` (see the module docstring)."""

    def __init__(self, rules: Sequence[Rule]):
        self.rules = list(rules)
        self._compiled = [
            (re.compile(r.match), re.compile(r.model) if r.model is not None else None) for r in self.rules
        ]
        self._counts = [0] * len(self.rules)
        self._lock = threading.Lock()

    def reply(self, prompt: Prompt, *, bad_tool_args: bool = False) -> Reply:
        """The answer to ``prompt``; ``bad_tool_args`` forces a tool call with broken arguments."""
        if bad_tool_args and prompt.tools:
            return Reply("", (ToolCallReply(prompt.tools[0].name, BROKEN_ARGUMENTS),), "fault")
        text = prompt.last_user_text()
        for i, (rule, (match, model)) in enumerate(zip(self.rules, self._compiled, strict=True)):
            if model is not None and not model.search(prompt.model):
                continue
            if not match.search(text):
                continue
            with self._lock:
                items = rule.replies()
                item = items[min(self._counts[i], len(items) - 1)]
                self._counts[i] += 1
            calls: tuple[ToolCallReply, ...] = ()
            if rule.tool_call is not None and prompt.tools:
                name = str(rule.tool_call.get("name") or prompt.tools[0].name)
                args = json.dumps(dict(rule.tool_call.get("arguments") or {}), ensure_ascii=False)
                calls = (ToolCallReply(name, args),)
            return Reply(item, calls, f"rule {i + 1}")
        built = harness_reply(prompt)
        source = "builtin"
        if built is None:
            built, source = FALLBACK_TEXT, "fallback"
        if prompt.json_mode and not _is_json(built):
            if prompt.json_schema is not None:
                built = json.dumps(schema_instance(prompt.json_schema), ensure_ascii=False)
            else:
                built = json.dumps({"reply": built}, ensure_ascii=False)
        return Reply(built, (), source)

    def reset(self) -> None:
        """Start every rule's reply list from its first item again."""
        with self._lock:
            self._counts = [0] * len(self.rules)


__all__ = ["BROKEN_ARGUMENTS", "FALLBACK_TEXT", "Reply", "Responder", "ToolCallReply", "schema_instance"]
