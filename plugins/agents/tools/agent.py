"""The ``tools`` agent: a plain tool-calling loop over MCP tools, on any backend with tool use.

``edit`` starts a deck session over the pair's workspace (the input deck; the working copy is
``workspace.output_deck``, so every successful edit is already the prediction), serves it with the
harness's MCP server (:func:`pptarena.mcp.build_server`), connects to it in memory with the SDK's
own client, lists its tools (``tools`` narrows them), hands them to the model in its backend's
form and runs :func:`.loop.run_loop`. With ``deck_tools = false`` the model gets no tools at all:
it can only answer, and the input deck is handed in unchanged (the "agent alone" arm of a with /
without comparison).

The prediction is the working copy whatever way the loop ended: a budget stop keeps the edits
made so far and says so in ``Prediction.notes`` and ``metadata["stop_reason"]``. The metadata
holds the counts (steps, tool calls per tool, tool errors, the server's own counters) and the
loop's model usage (``model_usage``; ``Prediction.usage`` stays empty: the runner counts the
workspace's model calls itself).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import Field, field_validator

from pptarena.models import ModelRef
from pptarena.types import (
    AgentTask,
    Component,
    ComponentUnavailable,
    InfraError,
    Options,
    Prediction,
    Renderer,
    SlideImage,
    Workspace,
)

from .conversation import Conversation
from .loop import LoopLimits, LoopOutcome, run_loop
from .schemas import DECK_TOOL_NAMES, McpToolSpec, carries_tool_parts, tool_format_for, tool_specs

MAX_TOOL_PAGES = 20

SYSTEM_PROMPT = """\
You edit a PowerPoint deck through tools. The deck you are given is a working copy: every \
successful edit tool call changes it, and the working copy as you leave it is your answer.

How to work:
1. Look first: deck_summary gives the slides, shapes and texts; render_slides shows slides as images.
2. Edit with write_part (replace one OOXML part, e.g. ppt/slides/slide2.xml, after read_part) or \
run_python (a python-pptx program that edits the working copy).
3. Check: deck_diff lists what changed since the input deck; render_slides and validate show \
whether the deck still opens and looks right. Repair what is wrong.
4. Change only what the instruction asks for; keep everything else as it was.

When the edit is complete, answer with one short sentence saying what you changed, and call no tool."""

ALONE_PROMPT = """\
You are asked to edit a PowerPoint deck, but in this setting you have no tools: you cannot open, \
see or change the deck. Answer with one short sentence saying what you would change."""


class ToolsOptions(Options):
    """Options of the ``tools`` agent."""

    model: ModelRef = Field(
        description='"<backend>/<model>" that calls the tools (any backend with tool use)'
    )
    max_steps: int = Field(30, ge=1, le=500, description="model calls per task (each may call several tools)")
    max_tokens: int | None = Field(
        None,
        gt=0,
        description="token budget over the whole loop (input + output of every call); none: no cap",
    )
    max_output_tokens: int | None = Field(
        None, gt=0, description="output-token limit of each model call (default: the backend's)"
    )
    temperature: float | None = Field(
        None, ge=0, le=2, description="sampling temperature (default: the backend's)"
    )
    max_images_per_result: int = Field(4, ge=0, le=32, description="images kept from one tool result")
    history_images: int = Field(
        2, ge=0, le=32, description="tool answers whose images are resent (older renders become a note)"
    )
    max_result_chars: int = Field(30_000, ge=500, le=2_000_000, description="text kept from one tool result")
    tool_timeout: float = Field(
        600.0,
        gt=0,
        le=7200,
        description="seconds to wait for a tool's answer from an out-of-process server "
        "(the in-process deck server's tools are bounded by its own caps)",
    )
    system_prompt: str | None = Field(None, description="replaces the built-in system prompt")
    tools: list[str] | None = Field(
        None, description="the deck tools offered (allow-list of names); default: all of them"
    )
    deck_tools: bool = Field(
        True, description="serve the harness's deck tools; false: the model is alone, the deck unchanged"
    )
    tool_format: Literal["auto", "openai", "anthropic", "google"] = Field(
        "auto", description="wire form of the tool definitions; auto: from the model's backend"
    )

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        unknown = sorted(set(value) - set(DECK_TOOL_NAMES))
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}; the deck tools are {list(DECK_TOOL_NAMES)}")
        if not value:
            raise ValueError(
                "tools = [] offers nothing: leave it out for all tools, or set deck_tools = false"
            )
        return list(dict.fromkeys(value))


class _SharedRenderer:
    """The run's renderer as a session sees it: ``render`` only, so closing the session never closes it."""

    def __init__(self, renderer: Renderer):
        self._renderer = renderer

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        """Render through the run's renderer."""
        return self._renderer.render(deck_path, out_dir)


def task_text(task: AgentTask) -> str:
    """The task message: the instruction, after the earlier turns of a multi-turn session."""
    lines = []
    if task.turn_history:
        lines.append("Earlier instructions on this deck (already carried out):")
        lines += [
            f"- turn {h.get('turn', i)}: {h.get('instruction', '')}" for i, h in enumerate(task.turn_history)
        ]
        lines.append("")
    lines.append(f"Instruction: {task.instruction}")
    return "\n".join(lines)


class ToolsAgent(Component):
    """A model calling MCP tools in a loop until it says it is done or its budget runs out."""

    Options = ToolsOptions

    def edit(self, task: AgentTask, workspace: Workspace) -> Prediction:
        """Run the loop over the pair's deck (see the module doc)."""
        opts: ToolsOptions = self.options  # type: ignore[assignment]
        client = workspace.model(opts.model)
        fmt = tool_format_for(client) if opts.tool_format == "auto" else opts.tool_format
        conversation = Conversation(
            system=opts.system_prompt or (SYSTEM_PROMPT if opts.deck_tools else ALONE_PROMPT),
            task=task_text(task),
            carries_parts=carries_tool_parts(client),
            history_images=opts.history_images,
        )
        params: dict[str, Any] = {}
        if opts.temperature is not None:
            params["temperature"] = opts.temperature
        if opts.max_output_tokens is not None:
            params["max_tokens"] = opts.max_output_tokens
        limits = LoopLimits(
            max_steps=opts.max_steps,
            max_tokens=opts.max_tokens,
            max_images_per_result=opts.max_images_per_result,
            max_result_chars=opts.max_result_chars,
            tool_timeout=opts.tool_timeout,
            call_params=params,
        )
        workspace.log.write(
            "tools_start", model=opts.model, tool_format=fmt, deck_tools=opts.deck_tools, tools=opts.tools
        )
        server_counts: dict[str, Any] = {}
        # a deck left at the output path (an earlier attempt) must not become the starting point
        workspace.output_deck.unlink(missing_ok=True)
        if not opts.deck_tools:
            shutil.copyfile(workspace.input_deck, workspace.output_deck)
            outcome = anyio.run(run_loop, client, conversation, [], set(), None, limits, workspace.log)
            offered: list[str] = []
        else:
            with self.deck_server(workspace) as (server, counters):
                outcome, offered = anyio.run(
                    self._serve, server, client, conversation, fmt, limits, workspace
                )
                server_counts = counters()
        if not workspace.output_deck.is_file():  # a server that never wrote its working copy
            shutil.copyfile(workspace.input_deck, workspace.output_deck)
        metadata = {**outcome.as_dict(), "tools_offered": offered, "tool_format": fmt}
        if server_counts:
            metadata["server"] = server_counts
        workspace.log.write("tools_stop", **{k: v for k, v in metadata.items() if k != "final_text"})
        return Prediction(path=workspace.output_deck, notes=_notes(outcome, opts), metadata=metadata)

    @contextmanager
    def deck_server(self, workspace: Workspace) -> Iterator[tuple[Any, Any]]:
        """``(server, counters)``: the harness's MCP server over this pair's deck, and a callable
        giving the session's counters; the session is closed on exit (the working copy stays)."""
        try:
            from pptarena.mcp import DeckSession, build_server
        except ImportError as exc:
            raise ComponentUnavailable(
                f"the tools agent needs the MCP SDK: pip install 'pptarena[mcp]' ({exc})"
            ) from exc
        renderer = _SharedRenderer(workspace.renderer) if workspace.renderer is not None else None
        session = DeckSession(
            workspace.input_deck,
            work_deck=workspace.output_deck,
            renderer=renderer,
            renderer_note="" if renderer else "no renderer is configured for this run",
            log=workspace.log,
        )
        try:
            yield build_server(session), lambda: session.counters.to_json()
        finally:
            session.close()

    async def _serve(
        self,
        server: Any,
        client: Any,
        conversation: Conversation,
        fmt: Any,
        limits: LoopLimits,
        workspace: Workspace,
    ) -> tuple[LoopOutcome, list[str]]:
        """Connect to ``server`` with the SDK's client, list its tools and run the loop.

        A failure to connect is an :class:`InfraError`; an error raised inside the session comes
        out as itself, not wrapped in the transport's exception group."""
        from mcp import Client

        connected = False
        try:
            async with Client(server) as mcp_client:
                connected = True
                return await self._run_connected(mcp_client, client, conversation, fmt, limits, workspace)
        except Exception as exc:
            inner = _first_error(exc)
            if not connected:
                raise InfraError(
                    f"cannot connect to the MCP server: {type(inner).__name__}: {inner}"
                ) from exc
            if inner is not exc:
                raise inner from exc
            raise

    async def _run_connected(
        self,
        mcp_client: Any,
        client: Any,
        conversation: Conversation,
        fmt: Any,
        limits: LoopLimits,
        workspace: Workspace,
    ) -> tuple[LoopOutcome, list[str]]:
        """List the server's tools, keep the allowed ones and run the loop over them."""
        opts: ToolsOptions = self.options  # type: ignore[assignment]
        listed = await _list_tools(mcp_client)
        allowed = set(opts.tools) if opts.tools is not None else None
        specs = [t for t in listed if allowed is None or t.name in allowed]
        if allowed is not None and (missing := sorted(allowed - {t.name for t in specs})):
            raise InfraError(f"the MCP server offers no tool(s) {missing}")
        names = [t.name for t in specs]
        workspace.log.write("tools_listed", offered=names, listed=len(listed))
        outcome = await run_loop(
            client,
            conversation,
            tool_specs(specs, fmt),
            set(names),
            mcp_client.call_tool,
            limits,
            workspace.log,
        )
        return outcome, names


def _first_error(exc: BaseException) -> BaseException:
    """The error inside a (nested) exception group, a pptarena error first; ``exc`` when it is no group."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(exc)
    from pptarena.types import PptArenaError

    for leaf in leaves:
        if isinstance(leaf, PptArenaError):
            return leaf
    return leaves[0] if leaves else exc


async def _list_tools(mcp_client: Any) -> list[McpToolSpec]:
    """Every tool the server lists, page by page (at most :data:`MAX_TOOL_PAGES` pages)."""
    out: list[McpToolSpec] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        try:
            page = await mcp_client.list_tools(cursor=cursor)
        except Exception as exc:
            raise InfraError(f"the MCP server did not list its tools: {type(exc).__name__}: {exc}") from exc
        out += [McpToolSpec.from_mcp(t) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return out


def _notes(outcome: LoopOutcome, opts: ToolsOptions) -> str:
    calls = sum(outcome.tool_calls.values())
    per_tool = ", ".join(f"{name} {n}" for name, n in sorted(outcome.tool_calls.items()))
    counts = f"{outcome.steps} step(s), {calls} tool call(s)" + (f" ({per_tool})" if per_tool else "")
    if outcome.tool_errors:
        counts += f", {outcome.tool_errors} failed"
    if outcome.stop_reason == "max_steps":
        return f"stopped at the step budget ({opts.max_steps} model calls), working copy kept: {counts}"
    if outcome.stop_reason == "max_tokens":
        return (
            f"stopped at the token budget ({outcome.usage.total_tokens} of {opts.max_tokens} tokens used), "
            f"working copy kept: {counts}"
        )
    if not opts.deck_tools:
        return f"no deck tools: the deck is unchanged; {counts}"
    return f"done: {counts}"
