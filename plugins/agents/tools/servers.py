"""The tools the model is offered, across the harness's deck server and the ``mcp_servers`` under test.

Naming rule: the harness's deck tools keep their names (``deck_summary``, ``render_slides``...); a
tool of a server listed in ``mcp_servers`` is offered as ``<server>__<tool>`` (the server's name, two
underscores, the tool's name as the server lists it), so two servers may both have a ``read`` tool.
A name offered twice (``a`` + ``b__c`` and ``a__b`` + ``c``, or a server listing a tool twice) is
refused before the model starts. A name the model providers cannot take (over
:data:`MAX_TOOL_NAME` characters, or other than letters, digits, ``_`` and ``-``) is not offered and
the log says so.

:class:`ToolTable` routes each call to its server under the server's own name. A third-party
server's failure during a call (an error, a reply the SDK cannot read, its process gone) is answered
to the model as a tool error: the server is what is under test. The deck server's broken connection
stays the harness's problem (:func:`.loop.is_connection_failure` → :class:`InfraError`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pptarena.types import InfraError

from .schemas import McpToolSpec

SEPARATOR = "__"
"""Between a third-party server's name and its tool's name in what the model is offered."""

MAX_TOOL_NAME = 64
"""The longest tool name the providers take (OpenAI, Anthropic and Gemini allow 64)."""

MAX_TOOLS_PER_SERVER = 256
"""Tools kept of one third-party server (the rest are not offered; the log says so)."""

_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def offered_name(server: str, tool: str) -> str:
    """The name a third-party server's tool is offered under (see the module doc)."""
    return f"{server}{SEPARATOR}{tool}"


@dataclass(frozen=True)
class Route:
    """Where an offered tool goes: its server's client, the server's name and the tool's own name."""

    client: Any
    server: str
    tool: str
    third_party: bool


@dataclass
class ToolTable:
    """The offered tools, in order, and their routes."""

    specs: list[McpToolSpec] = field(default_factory=list)
    routes: dict[str, Route] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def add_deck(self, client: Any, tools: list[McpToolSpec]) -> None:
        """The harness's deck tools, under their own names."""
        for tool in tools:
            self._add(tool, tool.name, Route(client, "deck", tool.name, third_party=False))

    def add_server(self, name: str, client: Any, tools: list[McpToolSpec]) -> None:
        """A third-party server's tools, as ``<name>__<tool>``."""
        if len(tools) > MAX_TOOLS_PER_SERVER:
            self.skipped.append(
                f"{name}: {len(tools) - MAX_TOOLS_PER_SERVER} tools past {MAX_TOOLS_PER_SERVER}"
            )
            tools = tools[:MAX_TOOLS_PER_SERVER]
        for tool in tools:
            offered = offered_name(name, tool.name)
            if len(offered) > MAX_TOOL_NAME or not _PROVIDER_NAME.match(offered):
                self.skipped.append(f"{offered[:100]!r}: not a name the model providers take")
                continue
            self._add(tool, offered, Route(client, name, tool.name, third_party=True))

    def _add(self, tool: McpToolSpec, offered: str, route: Route) -> None:
        if offered in self.routes:
            other = self.routes[offered]
            raise InfraError(
                f"MCP tool name clash: {offered!r} is both {other.server}'s {other.tool!r} and "
                f"{route.server}'s {route.tool!r}; rename one of the servers"
            )
        self.routes[offered] = route
        self.specs.append(McpToolSpec(offered, tool.description, tool.input_schema))

    @property
    def names(self) -> list[str]:
        """The offered names, in order."""
        return [s.name for s in self.specs]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call an offered tool on its server (the loop checked ``name`` is offered)."""
        from .loop import is_connection_failure

        route = self.routes[name]
        if not route.third_party:
            return await route.client.call_tool(route.tool, arguments)
        try:
            return await route.client.call_tool(route.tool, arguments)
        except Exception as exc:
            if is_connection_failure(exc):
                raise ServerCallFailed(
                    f"the MCP server {route.server!r} is gone (its connection closed): {exc}"
                ) from exc
            raise


class ServerCallFailed(RuntimeError):
    """A third-party server failed during a call (answered to the model as a tool error)."""
