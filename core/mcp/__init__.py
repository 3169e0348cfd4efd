"""``arena mcp``: the harness's deck tools as an MCP server on the official ``mcp`` SDK (docs/mcp.md).

Public API::

    from pptarena.mcp import DeckSession, ToolLimits, build_server, connect_in_memory

    with DeckSession("deck.pptx", renderer=renderer) as session:
        server = build_server(session)
        async with connect_in_memory(server) as client:
            await client.call_tool("deck_summary", {})

:class:`DeckSession` (:mod:`.session`) holds one deck being edited: the input deck, the working
copy every edit tool replaces atomically, the renderer, the log and the counters;
:class:`ToolLimits` (:mod:`.limits`) its caps; :mod:`.tools` what each tool does, without the SDK;
:mod:`.server` the SDK server (the ``mcp`` package is imported only there). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pptarena._imports import lazy_exports

_LAZY = {
    "DeckSession": "session",
    "Reply": "session",
    "SessionCounters": "session",
    "ToolFailure": "session",
    "ToolLimits": "limits",
    "McpServerSpec": "servers",
    "server_record": "servers",
    "TOOL_NAMES": "server",
    "build_server": "server",
    "connect_in_memory": "server",
    "require_sdk": "server",
    "serve_http": "server",
    "serve_stdio": "server",
}

if TYPE_CHECKING:  # pragma: no cover
    from .limits import ToolLimits
    from .server import TOOL_NAMES, build_server, connect_in_memory, require_sdk, serve_http, serve_stdio
    from .servers import McpServerSpec, server_record
    from .session import DeckSession, Reply, SessionCounters, ToolFailure

__all__ = [
    "TOOL_NAMES",
    "DeckSession",
    "McpServerSpec",
    "Reply",
    "SessionCounters",
    "ToolFailure",
    "ToolLimits",
    "build_server",
    "connect_in_memory",
    "require_sdk",
    "serve_http",
    "serve_stdio",
    "server_record",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
