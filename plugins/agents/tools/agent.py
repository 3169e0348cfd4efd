"""The ``tools`` agent: a plain tool-calling loop over MCP tools, on any backend with tool use.

``edit`` starts a deck session over the pair's workspace (the input deck; the working copy is
``workspace.output_deck``, so every successful edit is already the prediction), serves it with the
harness's MCP server (:func:`pptarena.mcp.build_server`), connects to it in memory with the SDK's
own client, lists its tools (``tools`` narrows them), hands them to the model in its backend's
form and runs :func:`.loop.run_loop`. With ``deck_tools = false`` the model gets no tools at all:
it can only answer, and the input deck is handed in unchanged (the "agent alone" arm of a with /
without comparison).

With ``mcp_servers`` each listed server is started for the pair, jailed
(:class:`pptarena.mcp.jailed_stdio.JailedServer`: bubblewrap, no network, the pair's server folder
``<pair>/mcp_workspace`` its only writable folder and working directory, cgroup limits), and its tools
are offered as ``<server>__<tool>`` next to the deck tools (:mod:`.servers`). The working copy then
lives in that folder (the servers edit it by path; the task message names it) and is copied out as a
regular file at the end. With ``deck_tools = false`` and servers, the model gets only theirs.

The prediction is the working copy whatever way the loop ended: a budget stop keeps the edits
made so far and says so in ``Prediction.notes`` and ``metadata["stop_reason"]``. The metadata
holds the counts (steps, tool calls per tool, tool errors, the server's own counters) and the
loop's model usage (``model_usage``; ``Prediction.usage`` stays empty: the runner counts the
workspace's model calls itself) and ``tools`` (:func:`tools_record`: the servers the attempt had, calls
per offered tool, errors, renders), which the row keeps as its ``tools`` field.

Why it is long: it holds both the agent and its options (:class:`ToolsOptions`, with the validators
of ``tools``, ``mcp_servers`` and ``mcp_read_only``), and the agent wires two kinds of server (the
in-process deck server, the jailed ``mcp_servers`` with their folder and working copy) into one
loop; the options could move to their own module as the ``command`` agent's did (not done yet).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import Field, field_validator, model_validator

from pptarena.mcp.servers import McpServerSpec, check_server_list, server_record
from pptarena.models import ModelRef
from pptarena.run import WEAK_ISOLATION_ENV, weak_isolation_allowed  # noqa: F401 - re-exported
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
from .servers import ToolTable

if TYPE_CHECKING:
    from pptarena.mcp.jailed_stdio import JailedServer

MAX_TOOL_PAGES = 20
DECK_RECORD_NAME = "deck"
"""What the rows call the harness's own deck tools among the servers of an attempt."""
SERVER_FOLDER = "mcp_workspace"
"""The pair's folder the ``mcp_servers`` run in (their only writable folder); the working copy lives there."""
MAX_DECK_BYTES = 512 * 1024 * 1024
"""The largest working copy taken back from the servers' folder."""
"""Set to ``1`` in the agent's process when the run allows weak isolation: ``mcp_servers`` then run
under the sandbox's weaker mechanism where bubblewrap is unusable, instead of being refused."""

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


SERVERS_PROMPT = """\
You edit a PowerPoint deck through the tools you are given (MCP servers). The deck's working copy is \
the file named in the task: edit that file with the tools; the file as you leave it is your answer. \
Change only what the instruction asks for. When the edit is complete, answer with one short sentence \
saying what you changed, and call no tool."""


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
    mcp_servers: list[McpServerSpec] = Field(
        default_factory=list,
        description="stdio MCP servers under test, each started jailed for the pair; their tools are "
        "offered as <server>__<tool>",
    )
    mcp_read_only: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="more host folders the mcp_servers may read (e.g. their installation); the system, "
        "the Python interpreter with the MCP SDK and the folder of a program named by an absolute path "
        "are visible already",
    )
    server_memory_mb: int = Field(
        2048, ge=64, le=65536, description="memory of each server (all its processes)"
    )
    server_max_processes: int = Field(128, ge=4, le=4096, description="processes of each server at once")

    @field_validator("mcp_servers")
    @classmethod
    def _servers_valid(cls, value: list[McpServerSpec]) -> list[McpServerSpec]:
        return check_server_list(value)

    @model_validator(mode="after")
    def _deck_name_free(self) -> ToolsOptions:
        if self.deck_tools and any(s.name == DECK_RECORD_NAME for s in self.mcp_servers):
            raise ValueError(
                f"mcp_servers: the name {DECK_RECORD_NAME!r} is the harness's deck tools' in the rows; "
                "rename the server"
            )
        return self

    @field_validator("mcp_read_only")
    @classmethod
    def _absolute_folders(cls, value: list[str]) -> list[str]:
        relative = [p for p in value if not os.path.isabs(p)]
        if relative:
            raise ValueError(f"mcp_read_only: give absolute paths ({relative[:3]})")
        return value

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


def task_text(task: AgentTask, deck_path: Path | None = None) -> str:
    """The task message: the instruction, after the earlier turns of a multi-turn session; with
    ``deck_path`` (third-party servers take a file path) where the working copy is."""
    lines = []
    if deck_path is not None:
        lines += [
            f"The deck's working copy is the file {deck_path} (its folder is the tools' working folder). "
            "Edit that file; it is your answer.",
            "",
        ]
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
        work_deck = self.work_deck(workspace)
        has_tools = opts.deck_tools or bool(opts.mcp_servers)
        conversation = Conversation(
            system=opts.system_prompt
            or (SYSTEM_PROMPT if opts.deck_tools else SERVERS_PROMPT if has_tools else ALONE_PROMPT),
            task=task_text(task, work_deck if opts.mcp_servers else None),
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
            "tools_start",
            model=opts.model,
            tool_format=fmt,
            deck_tools=opts.deck_tools,
            tools=opts.tools,
            mcp_servers=[s.name for s in opts.mcp_servers],
        )
        server_counts: dict[str, Any] = {}
        # a deck left at the output path (an earlier attempt) must not become the starting point
        workspace.output_deck.unlink(missing_ok=True)
        if opts.mcp_servers:
            self._fresh_server_folder(workspace, work_deck)
        if not has_tools:
            shutil.copyfile(workspace.input_deck, workspace.output_deck)
            outcome = anyio.run(run_loop, client, conversation, [], set(), None, limits, workspace.log)
            offered: list[str] = []
        else:
            with ExitStack() as stack:
                jailed = [stack.enter_context(s) for s in self.jailed_servers(workspace)]
                server, counters = (
                    stack.enter_context(self.deck_server(workspace)) if opts.deck_tools else (None, None)
                )
                outcome, offered = anyio.run(
                    self._serve, server, jailed, client, conversation, fmt, limits, workspace
                )
                server_counts = counters() if counters is not None else {}
                for js in jailed:
                    workspace.log.write("mcp_server_stop", server=js.spec.name, limits=js.events())
        notes_extra = ""
        if opts.mcp_servers:
            notes_extra = self._take_work_deck(work_deck, workspace)
        if not workspace.output_deck.is_file():  # a server that never wrote its working copy
            shutil.copyfile(workspace.input_deck, workspace.output_deck)
        metadata = {**outcome.as_dict(), "tools_offered": offered, "tool_format": fmt}
        if server_counts:
            metadata["server"] = server_counts
        metadata["tools"] = tools_record(opts, outcome, server_counts)
        workspace.log.write("tools_stop", **{k: v for k, v in metadata.items() if k != "final_text"})
        notes = _notes(outcome, opts) + (f"; {notes_extra}" if notes_extra else "")
        return Prediction(path=workspace.output_deck, notes=notes, metadata=metadata)

    def work_deck(self, workspace: Workspace) -> Path:
        """Where the working copy lives: the output deck, or with ``mcp_servers`` a file of their folder."""
        opts: ToolsOptions = self.options  # type: ignore[assignment]
        if not opts.mcp_servers:
            return workspace.output_deck
        name = workspace.input_deck.name or "deck.pptx"
        return (workspace.dir / SERVER_FOLDER).absolute() / name

    def _fresh_server_folder(self, workspace: Workspace, work_deck: Path) -> None:
        """An empty server folder holding a copy of the input deck (an earlier attempt's removed)."""
        folder = work_deck.parent
        if folder.is_symlink() or folder.exists():
            if folder.is_symlink() or not folder.is_dir():
                folder.unlink()
            else:
                shutil.rmtree(folder)
        folder.mkdir(parents=True)
        shutil.copyfile(workspace.input_deck, work_deck)

    def _take_work_deck(self, work_deck: Path, workspace: Workspace) -> str:
        """Copy the servers' working copy to the output deck (a regular file only); "" or why not."""
        from pptarena.trust.safeio import UnsafeFileError, copy_regular

        try:
            copy_regular(work_deck, workspace.output_deck, MAX_DECK_BYTES)
        except (UnsafeFileError, OSError) as exc:
            workspace.output_deck.unlink(missing_ok=True)
            workspace.log.write("tools_work_deck_refused", reason=str(exc)[:500])
            return f"the working copy was not taken ({exc}): the input deck is handed in"
        return ""

    def jailed_servers(self, workspace: Workspace) -> list[JailedServer]:
        """The ``mcp_servers`` as :class:`JailedServer` s for this pair (not started yet)."""
        from pptarena.mcp.jailed_stdio import JailedServer, ServerLimits

        opts: ToolsOptions = self.options  # type: ignore[assignment]
        cpu = int(workspace.timeout) + 1 if workspace.timeout else ServerLimits.cpu_seconds
        limits = ServerLimits(
            memory_mb=opts.server_memory_mb, max_processes=opts.server_max_processes, cpu_seconds=cpu
        )
        allow_weak = weak_isolation_allowed()
        folder = (workspace.dir / SERVER_FOLDER).absolute()
        return [
            JailedServer(
                spec,
                folder,
                workspace.dir,
                limits=limits,
                read_only=[Path(p) for p in opts.mcp_read_only],
                allow_weak=allow_weak,
            )
            for spec in opts.mcp_servers
        ]

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
            work_deck=self.work_deck(workspace),
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
        jailed: list[JailedServer],
        client: Any,
        conversation: Conversation,
        fmt: Any,
        limits: LoopLimits,
        workspace: Workspace,
    ) -> tuple[LoopOutcome, list[str]]:
        """Connect to the deck ``server`` (None: no deck tools) and each jailed server with the SDK's
        client, list their tools and run the loop over them.

        A failure to connect (or to list tools) is an :class:`InfraError` naming the server; an error
        raised inside the session comes out as itself, not wrapped in the transport's exception group."""
        from mcp import Client

        opts: ToolsOptions = self.options  # type: ignore[assignment]
        table = ToolTable()
        connecting = "the MCP server"
        try:
            async with AsyncExitStack() as stack:
                if server is not None:
                    connecting = "the deck tools' MCP server"
                    deck_client = await stack.enter_async_context(Client(server))
                    listed = await _list_tools(deck_client, connecting)
                    table.add_deck(deck_client, self._allowed_deck_tools(listed))
                for js in jailed:
                    connecting = f"the MCP server {js.spec.name!r}"
                    workspace.log.write(
                        "mcp_server_start",
                        server=js.spec.name,
                        command=js.spec.command,
                        env_keys=sorted(js.spec.env),
                        isolation=js.isolation,
                        notes=js.notes,
                    )
                    server_client = await stack.enter_async_context(
                        Client(js.transport(), read_timeout_seconds=opts.tool_timeout)
                    )
                    table.add_server(
                        js.spec.name, server_client, await _list_tools(server_client, connecting)
                    )
                connecting = ""
                names = table.names
                workspace.log.write("tools_listed", offered=names, skipped=table.skipped)
                outcome = await run_loop(
                    client,
                    conversation,
                    tool_specs(table.specs, fmt),
                    set(names),
                    table.call_tool,
                    limits,
                    workspace.log,
                )
                return outcome, names
        except Exception as exc:
            inner = _first_error(exc)
            if connecting:
                tail = "".join(
                    js.stderr_tail(600) for js in jailed if connecting.endswith(repr(js.spec.name))
                )
                said = (
                    str(inner)
                    if isinstance(inner, InfraError)
                    else (f"cannot connect to {connecting}: {type(inner).__name__}: {inner}")
                )
                raise InfraError(
                    said + (f"; its stderr ends: {tail.strip()}" if tail.strip() else "")
                ) from exc
            if inner is not exc:
                raise inner from exc
            raise

    def _allowed_deck_tools(self, listed: list[McpToolSpec]) -> list[McpToolSpec]:
        """The deck tools the ``tools`` allow-list keeps (all without one)."""
        opts: ToolsOptions = self.options  # type: ignore[assignment]
        allowed = set(opts.tools) if opts.tools is not None else None
        specs = [t for t in listed if allowed is None or t.name in allowed]
        if allowed is not None and (missing := sorted(allowed - {t.name for t in specs})):
            raise InfraError(f"the MCP server offers no tool(s) {missing}")
        return specs


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


async def _list_tools(mcp_client: Any, which: str = "the MCP server") -> list[McpToolSpec]:
    """Every tool a server lists, page by page (at most :data:`MAX_TOOL_PAGES` pages)."""
    out: list[McpToolSpec] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        try:
            page = await mcp_client.list_tools(cursor=cursor)
        except Exception as exc:
            raise InfraError(f"cannot list the tools of {which}: {type(exc).__name__}: {exc}") from exc
        out += [McpToolSpec.from_mcp(t) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return out


def tools_record(opts: ToolsOptions, outcome: LoopOutcome, server_counts: dict[str, Any]) -> dict[str, Any]:
    """``metadata["tools"]`` (the row's ``tools``): ``servers`` (the deck tools as server ``deck``, then
    each ``mcp_servers`` entry's :func:`~pptarena.mcp.servers.server_record`), ``calls`` per offered
    tool, ``errors`` (failed calls) and ``renders`` (slides the deck tools rendered)."""
    from pptarena import __version__

    servers: list[dict[str, Any]] = []
    if opts.deck_tools:
        servers.append({"name": DECK_RECORD_NAME, "version": __version__, "command_sha": None})
    servers += [server_record(spec) for spec in opts.mcp_servers]
    renders = server_counts.get("renders", 0)
    return {
        "servers": servers,
        "calls": dict(sorted(outcome.tool_calls.items())),
        "errors": outcome.tool_errors,
        "renders": renders if isinstance(renders, int) else 0,
    }


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
    if not opts.deck_tools and not opts.mcp_servers:
        return f"no deck tools: the deck is unchanged; {counts}"
    if not opts.deck_tools:
        return f"done with the servers' tools only ({', '.join(s.name for s in opts.mcp_servers)}): {counts}"
    return f"done: {counts}"
