"""MCP tools as backend tool specs, and the model's tool calls read back from its answer.

Three wire forms of a function tool (:data:`ToolFormat`): ``openai`` (chat completions:
``{"type": "function", "function": {"name", "description", "parameters"}}``), ``anthropic``
(``{"name", "description", "input_schema"}``) and ``google`` (a bare function declaration
``{"name", "description", "parameters_json_schema"}``, which the google backend groups into one
``function_declarations`` tool). :func:`tool_format_for` picks the form from the backend a model
client talks to.

:func:`read_tool_calls` reads the calls out of :attr:`Completion.raw` whatever the provider's
shape (Anthropic ``tool_use`` blocks, OpenAI ``tool_calls`` or Responses ``function_call`` items,
Gemini ``function_call`` parts), so a scripted backend may answer in any of them. Arguments that
are not a JSON object come back as a :class:`ReadCall` with an ``error``: the loop answers the
model with that error instead of calling the tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pptarena.mcp.server import TOOL_NAMES
from pptarena.models import Completion, ToolCall

ToolFormat = Literal["openai", "anthropic", "google"]

DECK_TOOL_NAMES = TOOL_NAMES
"""The tools of the harness's deck server (:mod:`pptarena.mcp`), the names an allow-list may hold."""

MAX_ARGUMENT_CHARS = 4_000_000
"""A tool call's arguments longer than this (as JSON text) are refused before they reach a tool."""

MAX_DESCRIPTION_CHARS = 4000
"""A tool description longer than this is cut before it goes to the model."""


@dataclass(frozen=True)
class McpToolSpec:
    """One tool as an MCP server lists it: ``name``, ``description`` and its JSON ``input_schema``."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    @classmethod
    def from_mcp(cls, tool: Any) -> McpToolSpec:
        """From the SDK's ``mcp_types.Tool`` (or anything with those attributes)."""
        schema = getattr(tool, "input_schema", None)
        if not isinstance(schema, Mapping):
            schema = {"type": "object", "properties": {}}
        description = str(getattr(tool, "description", None) or "")[:MAX_DESCRIPTION_CHARS]
        return cls(str(tool.name), description, dict(schema))


def _clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The input schema with an object root (every provider wants ``type: object``)."""
    out = dict(schema)
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    return out


def tool_spec(tool: McpToolSpec, fmt: ToolFormat) -> dict[str, Any]:
    """One MCP tool in the backend's tool form."""
    schema = _clean_schema(tool.input_schema)
    if fmt == "openai":
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": schema},
        }
    if fmt == "google":
        return {"name": tool.name, "description": tool.description, "parameters_json_schema": schema}
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def tool_specs(tools: Iterable[McpToolSpec], fmt: ToolFormat) -> list[dict[str, Any]]:
    """Every tool in the backend's form, in the server's order."""
    return [tool_spec(t, fmt) for t in tools]


def tool_format_for(client: Any) -> ToolFormat:
    """The tool form of the backend behind a :class:`~pptarena.models.ModelClient`: from the
    backend class's module (``...backends.openai`` → ``openai``); any other backend (``scripted``, a
    third-party one) gets the Anthropic form, which carries the plain JSON schema."""
    backend = getattr(client, "backend", None)
    module = type(backend).__module__.rsplit(".", 1)[-1] if backend is not None else ""
    if module in ("openai", "google"):
        return module  # type: ignore[return-value]
    return "anthropic"


def carries_tool_parts(client: Any) -> bool:
    """Whether the backend takes :class:`ToolCall`/:class:`ToolResult` parts in a conversation.

    Every built-in backend does (``openai`` sends them as chat-completions ``tool_calls`` and
    ``tool`` messages, on the OpenAI API, Azure and OpenAI-compatible servers alike); a backend that
    refuses them declares ``accepts_tool_parts = False`` and its conversations carry the calls and
    results as text (:mod:`.conversation`).
    """
    backend = getattr(client, "backend", None)
    return bool(getattr(backend, "accepts_tool_parts", True))


@dataclass(frozen=True)
class ReadCall:
    """A tool call read from an answer; ``error`` says why its arguments are unusable (else None)."""

    call: ToolCall
    error: str | None = None


def _arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments given as an object or as JSON text → ``(dict, None)``, else ``({}, error)``."""
    if isinstance(value, str):
        if len(value) > MAX_ARGUMENT_CHARS:
            return {}, f"the arguments are {len(value)} characters, over the {MAX_ARGUMENT_CHARS} limit"
        if not value.strip():
            return {}, None
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return {}, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if value is None:
        return {}, None
    if not isinstance(value, Mapping):
        return {}, f"the arguments must be a JSON object, not {type(value).__name__}"
    size = len(json.dumps(value, default=str))
    if size > MAX_ARGUMENT_CHARS:
        return {}, f"the arguments are {size} characters, over the {MAX_ARGUMENT_CHARS} limit"
    return dict(value), None


def _read(call_id: Any, name: Any, args: Any, native: Mapping[str, Any], n: int) -> ReadCall:
    arguments, error = _arguments(args)
    cid = str(call_id) if call_id else f"call_{n}"
    return ReadCall(ToolCall(cid, str(name or ""), arguments, native=dict(native)), error)


def read_tool_calls(completion: Completion) -> list[ReadCall]:
    """The tool calls of an answer, in order (none for a plain text answer)."""
    raw = completion.raw if isinstance(completion.raw, Mapping) else {}
    out: list[ReadCall] = []
    for block in raw.get("content") or []:  # Anthropic
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            out.append(_read(block.get("id"), block.get("name"), block.get("input"), block, len(out)))
    for choice in (raw.get("choices") or [])[:1]:  # OpenAI chat completions
        message = choice.get("message") if isinstance(choice, Mapping) else None
        for item in (message or {}).get("tool_calls") or []:
            if not isinstance(item, Mapping):
                continue
            fn = item.get("function") or {}
            out.append(_read(item.get("id"), fn.get("name"), fn.get("arguments"), item, len(out)))
    for item in raw.get("output") or []:  # OpenAI Responses
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            out.append(
                _read(
                    item.get("call_id") or item.get("id"),
                    item.get("name"),
                    item.get("arguments"),
                    item,
                    len(out),
                )
            )
    for candidate in (raw.get("candidates") or [])[:1]:  # Gemini
        content = candidate.get("content") if isinstance(candidate, Mapping) else None
        for part in (content or {}).get("parts") or []:
            if not isinstance(part, Mapping):
                continue
            fc = part.get("function_call") or part.get("functionCall")
            if isinstance(fc, Mapping):
                out.append(_read(fc.get("id"), fc.get("name"), fc.get("args"), part, len(out)))
    return out
