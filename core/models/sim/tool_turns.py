"""Tool-call conversations checked as each provider checks them, before anything is generated.

A provider refuses a request whose tool results do not answer its tool calls; so does the
simulator, with the provider's status (400), error form and wording, so that a backend that
sends tool messages in the wrong order fails against the simulator as it would in production.

* OpenAI chat completions (:func:`check_chat_tool_turns`): a ``tool`` message answers a
  ``tool_calls[].id`` of the nearest earlier assistant message with only ``tool`` messages
  between them; every id of an assistant's ``tool_calls`` is answered before the next message
  that is not a ``tool`` message (and before the conversation ends); ``function.arguments`` is
  a string.
* OpenAI Responses (:func:`check_responses_tool_turns`): a ``function_call_output`` (or
  ``custom_tool_call_output``) names the ``call_id`` of an earlier ``function_call`` (or
  ``custom_tool_call``) item, unless ``previous_response_id`` continues a stored response.
* Anthropic messages (:func:`check_anthropic_tool_turns`): a ``tool_result`` block (in a user
  message) answers a ``tool_use`` id of the immediately preceding assistant message, and each
  ``tool_use`` is answered in the next message (a last assistant message may end on a
  ``tool_use``: nothing follows it yet).
* Gemini generateContent (:func:`check_gemini_tool_turns`): a content holding
  ``functionResponse`` parts comes right after a model content holding ``functionCall`` parts,
  each response names one of those calls, and the two counts are equal.

Every refusal is a :class:`~pptarena.models.sim.prompt.WireError` (status 400); ``param`` and
``code`` are the values OpenAI puts in its error body.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pptarena.models.sim.prompt import WireError

_OPENAI_ORPHAN = (  # "preceeding": OpenAI's own spelling
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
    "'tool_calls'."
)
_OPENAI_UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
_ANTHROPIC_UNEXPECTED = (
    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each "
    "`tool_result` block must have a corresponding `tool_use` block in the previous message."
)
_ANTHROPIC_UNANSWERED = (
    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)
_GEMINI_ORDER = "Please ensure that function response turn comes immediately after a function call turn."
_GEMINI_COUNT = (
    "Please ensure that the number of function response parts is equal to the number of function "
    "call parts of the function call turn."
)
_JSON_KINDS = {dict: "an object", list: "an array", int: "an integer", float: "a number", bool: "a boolean"}


def _kind_of(value: Any) -> str:
    """How OpenAI names the JSON type of a value in an ``Invalid type`` message."""
    if value is None:
        return "null"
    return _JSON_KINDS.get(type(value), "an object")


def _blocks(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def _openai_tool_calls(i: int, message: dict[str, Any]) -> list[str]:
    """The ids of an assistant message's ``tool_calls`` (their shapes checked on the way)."""
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise WireError(
            f"Invalid type for 'messages[{i}].tool_calls': expected an array, but got "
            f"{_kind_of(calls)} instead.",
            param=f"messages[{i}].tool_calls",
            code="invalid_type",
        )
    ids: list[str] = []
    for j, call in enumerate(calls):
        where = f"messages[{i}].tool_calls[{j}]"
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(fn, dict):
            raise WireError(f"Missing required parameter: '{where}.function'.", param=f"{where}.function")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise WireError(f"Missing required parameter: '{where}.id'.", param=f"{where}.id")
        if not isinstance(fn.get("name"), str):
            raise WireError(
                f"Missing required parameter: '{where}.function.name'.", param=f"{where}.function.name"
            )
        arguments = fn.get("arguments")
        if not isinstance(arguments, str):
            raise WireError(
                f"Invalid type for '{where}.function.arguments': expected a string, but got "
                f"{_kind_of(arguments)} instead.",
                param=f"{where}.function.arguments",
                code="invalid_type",
            )
        ids.append(call["id"])
    return ids


def _unanswered(ids: Iterable[str], answered: set[str]) -> list[str]:
    return [i for i in ids if i not in answered]


def check_chat_tool_turns(messages: list[Any]) -> None:
    """Refuse a chat-completions ``messages`` list whose tool messages do not answer its tool calls."""
    calls: list[str] | None = None  # the open assistant's tool_call ids (None: no tool message may come)
    answered: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue  # the message parser refuses it
        if m.get("role") == "tool":
            if calls is None:
                raise WireError(_OPENAI_ORPHAN, param=f"messages.[{i}].role")
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str):
                raise WireError(
                    f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                    param=f"messages[{i}].tool_call_id",
                    code="missing_required_parameter",
                )
            if call_id not in calls:
                raise WireError(
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of "
                    "previous message.",
                    param=f"messages.[{i}].tool_call_id",
                )
            answered.add(call_id)
            continue
        missing = _unanswered(calls or [], answered)
        if missing:
            raise WireError(_OPENAI_UNANSWERED.format(ids=", ".join(missing)), param=f"messages.[{i}].role")
        calls, answered = None, set()
        if m.get("role") == "assistant":
            ids = _openai_tool_calls(i, m)
            calls = ids or None
    missing = _unanswered(calls or [], answered)
    if missing:
        raise WireError(
            _OPENAI_UNANSWERED.format(ids=", ".join(missing)), param=f"messages.[{len(messages)}].role"
        )


def check_responses_tool_turns(items: list[Any], previous_response_id: Any) -> None:
    """Refuse Responses ``input`` items whose tool outputs name no earlier call (unless
    ``previous_response_id`` continues a stored response, whose calls the simulator does not keep)."""
    if previous_response_id:
        return
    calls: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call") and isinstance(item.get("call_id"), str):
            calls.add(item["call_id"])
        elif kind in ("function_call_output", "custom_tool_call_output") and item.get("call_id") not in calls:
            what = "function call" if kind == "function_call_output" else "custom tool call"
            raise WireError(
                f"No tool call found for {what} output with call_id {item.get('call_id')}.", param="input"
            )


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    return [
        str(b.get("id"))
        for b in _blocks(message.get("content"))
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def check_anthropic_tool_turns(messages: list[Any]) -> None:
    """Refuse Anthropic ``messages`` whose ``tool_result`` blocks do not pair with ``tool_use`` blocks."""
    open_ids: list[str] = []  # the previous assistant message's tool_use ids
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        answered: set[str] = set()
        for j, block in enumerate(_blocks(m.get("content"))):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            result_id = block.get("tool_use_id")
            if m.get("role") != "user" or result_id not in open_ids:
                raise WireError(_ANTHROPIC_UNEXPECTED.format(i=i, j=j, id=result_id))
            answered.add(str(result_id))
        missing = _unanswered(open_ids, answered)
        if missing:
            raise WireError(_ANTHROPIC_UNANSWERED.format(i=i - 1, ids=", ".join(missing)))
        open_ids = _tool_use_ids(m) if m.get("role") == "assistant" else []


def _gemini_parts(content: Any, camel: str, snake: str) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    out = []
    for part in parts if isinstance(parts, list) else []:
        value = part.get(camel, part.get(snake)) if isinstance(part, dict) else None
        if isinstance(value, dict):
            out.append(value)
    return out


def check_gemini_tool_turns(contents: list[Any]) -> None:
    """Refuse Gemini ``contents`` whose function responses do not follow a matching function call turn."""
    calls: list[dict[str, Any]] = []  # the previous content's functionCall parts, if it was a model turn
    for content in contents:
        responses = _gemini_parts(content, "functionResponse", "function_response")
        if responses and not calls:
            raise WireError(_GEMINI_ORDER)
        if calls and len(responses) != len(calls):
            raise WireError(_GEMINI_COUNT)
        names = {c.get("name") for c in calls}
        for response in responses:
            if response.get("name") not in names:
                raise WireError(
                    f"Function response name '{response.get('name')}' does not match any function call "
                    f"of the preceding function call turn ({', '.join(sorted(map(str, names)))})."
                )
        is_model = isinstance(content, dict) and content.get("role") == "model"
        calls = _gemini_parts(content, "functionCall", "function_call") if is_model else []


__all__ = [
    "check_anthropic_tool_turns",
    "check_chat_tool_turns",
    "check_gemini_tool_turns",
    "check_responses_tool_turns",
]
