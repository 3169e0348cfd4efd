"""The plain tool-calling loop: model → tool calls → MCP ``call_tool`` → results → model.

:func:`run_loop` runs it over any MCP client session (the SDK's ``mcp.Client``, or anything with
an async ``call_tool(name, arguments)``): each step is one model call; the calls of its answer go
to the server one by one and their results back to the model. It ends when

* the model answers without a tool call (``done``),
* ``max_steps`` model calls were made and the last one still called tools (``max_steps``; the
  calls of that last answer are run, so its edits land), or
* the tokens of the loop's model calls (input + output) reached ``max_tokens`` (``max_tokens``;
  likewise the calls of the answer that crossed it are run).

A tool that fails (an error result, an MCP error, bad arguments, a tool not offered, a timeout)
is answered to the model as an error result; the loop goes on. A broken connection to the server
(the transport closed, the server process gone) is the harness's problem, not the agent's: it
raises :class:`~pptarena.types.InfraError`. Model errors propagate as the model client raises them
(:class:`~pptarena.models.ModelError` is an ``InfraError`` too).

Every step writes a ``tool_step`` event to the agent log (step, usage, the calls and whether each
failed), and a ``model_call`` when the model client does not log its calls itself (the runner's
clients do); the server logs the tool calls themselves.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import anyio
import anyio.to_thread

from pptarena.models import Completion, ToolCall, ToolResult, Usage
from pptarena.types import AgentLog, InfraError

from .conversation import Conversation
from .results import error_result, to_tool_result
from .schemas import ReadCall, read_tool_calls

StopReason = Literal["done", "max_steps", "max_tokens"]
CallTool = Callable[[str, dict[str, Any]], Awaitable[Any]]
MAX_LOGGED_TEXT = 2000


@dataclass(frozen=True)
class LoopLimits:
    """The loop's budget and the size of what goes back to the model."""

    max_steps: int = 30
    max_tokens: int | None = None
    max_images_per_result: int = 4
    max_result_chars: int = 30_000
    tool_timeout: float = 600.0
    call_params: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class LoopOutcome:
    """How the loop ended and what it did."""

    stop_reason: StopReason
    steps: int = 0
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0
    final_text: str = ""
    usage: Usage = field(default_factory=Usage)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready counts (what goes in ``Prediction.metadata``)."""
        return {
            "stop_reason": self.stop_reason,
            "steps": self.steps,
            "tool_calls": dict(sorted(self.tool_calls.items())),
            "tool_calls_total": sum(self.tool_calls.values()),
            "tool_errors": self.tool_errors,
            "final_text": self.final_text[:MAX_LOGGED_TEXT],
            "model_usage": self.usage.as_dict(),
        }


def is_connection_failure(exc: BaseException) -> bool:
    """Whether a ``call_tool`` exception means the server is gone (not a tool's error): the SDK's
    ``Connection closed`` error, a closed or broken stream, a dead pipe."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(is_connection_failure(e) for e in exc.exceptions)
    return isinstance(
        exc,
        anyio.ClosedResourceError
        | anyio.BrokenResourceError
        | anyio.EndOfStream
        | ConnectionError
        | EOFError
        | BrokenPipeError,
    )


async def _call_one(
    read: ReadCall, offered: set[str], call_tool: CallTool, limits: LoopLimits
) -> tuple[ToolResult, str]:
    """Run one call; ``(result, problem)`` where ``problem`` is "" or why it failed before the tool."""
    call = read.call
    if read.error:
        return error_result(call.id, f"tool {call.name!r} was not called: {read.error}"), read.error
    if call.name not in offered:
        names = ", ".join(sorted(offered)) or "none"
        problem = f"there is no tool {call.name!r} (tools: {names})"
        return error_result(call.id, problem), problem
    from mcp.shared.exceptions import MCPError

    try:
        with anyio.fail_after(limits.tool_timeout):
            result = await call_tool(call.name, dict(call.input))
    except TimeoutError:
        problem = f"tool {call.name!r} did not answer within {limits.tool_timeout:g} s"
        return error_result(call.id, problem), problem
    except Exception as exc:
        if is_connection_failure(exc):
            raise InfraError(f"the MCP server's connection broke during {call.name!r}: {exc!r}") from exc
        if isinstance(exc, MCPError):
            problem = f"tool {call.name!r} failed: {exc}"
            return error_result(call.id, problem), problem
        problem = f"tool {call.name!r} failed: {type(exc).__name__}: {exc}"
        return error_result(call.id, problem), problem
    converted = to_tool_result(
        call.id, result, max_chars=limits.max_result_chars, max_images=limits.max_images_per_result
    )
    return converted, ""


def _step_event(
    step: int, completion: Completion, calls: list[tuple[ToolCall, ToolResult, str]]
) -> dict[str, Any]:
    return {
        "step": step,
        "model": completion.model,
        "finish_reason": completion.finish_reason,
        "usage": completion.usage.as_dict(),
        "text": (completion.text or "")[:MAX_LOGGED_TEXT],
        "calls": [
            {
                "id": call.id,
                "tool": call.name,
                "arguments_chars": len(json.dumps(dict(call.input), default=str)),
                "error": result.is_error,
                **({"problem": problem[:MAX_LOGGED_TEXT]} if problem else {}),
            }
            for call, result, problem in calls
        ],
    }


async def run_loop(
    client: Any,
    conversation: Conversation,
    tool_specs: list[dict[str, Any]],
    offered: set[str],
    call_tool: CallTool | None,
    limits: LoopLimits,
    log: AgentLog,
) -> LoopOutcome:
    """Run the loop until done or out of budget (see the module doc); returns what happened.

    ``client`` is a :class:`~pptarena.models.ModelClient` (its blocking ``complete`` runs in a
    worker thread), ``tool_specs`` the tools in the backend's form (empty: the model gets none),
    ``offered`` their names, ``call_tool`` the MCP session's ``call_tool`` (None with no tools).
    """
    outcome = LoopOutcome("done")
    params = dict(limits.call_params)
    if tool_specs:
        params["tools"] = tool_specs
    while True:
        if outcome.steps >= limits.max_steps:
            outcome.stop_reason = "max_steps"
            break
        if limits.max_tokens is not None and outcome.usage.total_tokens >= limits.max_tokens:
            outcome.stop_reason = "max_tokens"
            break
        messages = conversation.messages()
        completion: Completion = await anyio.to_thread.run_sync(partial(client.complete, messages, **params))
        outcome.steps += 1
        outcome.usage.add(completion.usage)
        if getattr(client, "log", None) is None:  # the runner's clients log their own model_call
            log.write(
                "model_call",
                model=completion.model,
                usage=completion.usage.as_dict(),
                reply=(completion.text or "")[:MAX_LOGGED_TEXT],
                finish_reason=completion.finish_reason,
            )
        reads = read_tool_calls(completion) if tool_specs else []
        if not reads:
            outcome.final_text = completion.text or ""
            outcome.stop_reason = "done"
            log.write("tool_step", **_step_event(outcome.steps, completion, []))
            break
        done: list[tuple[ToolCall, ToolResult, str]] = []
        for read in reads:
            result, problem = (
                await _call_one(read, offered, call_tool, limits)
                if call_tool is not None
                else (error_result(read.call.id, "no tools are available"), "no tools are available")
            )
            outcome.tool_calls[read.call.name] += 1
            outcome.tool_errors += int(result.is_error)
            done.append((read.call, result, problem))
        log.write("tool_step", **_step_event(outcome.steps, completion, done))
        conversation.add_reply(completion.text or "", [c for c, _, _ in done])
        conversation.add_results([(c, r) for c, r, _ in done])
    return outcome
