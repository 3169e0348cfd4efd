"""MCP servers under test: how an ``[[agents]]`` table names the servers a pair's agent gets.

``mcp_servers = [{ name = "pptx", command = ["uvx", "some-pptx-mcp"], env = { K = "V" } }]`` in an
agent's table (the ``tools`` agent, the ``command`` agent) lists stdio MCP servers. Each runs for one
pair, inside that pair's jail, with the pair's workspace as its working folder: as untrusted as the
agent itself. The harness's own deck tools are not listed here (``deck_tools`` / ``mcp = true``).

A row records which servers an attempt had (:func:`server_record`), so the leaderboard can tell
"model + server A" from "model + server B".
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A server's name: what a CLI's MCP config and the rows call it (letters, digits, ``_.-``)."""

MAX_SERVERS = 16
"""Most MCP servers one agent table may list."""


class McpServerSpec(BaseModel):
    """One stdio MCP server an agent gets for each pair (an entry of ``mcp_servers``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the server's name in the CLI's MCP config and in the rows")
    command: list[str] = Field(
        min_length=1, max_length=256, description="argv started in the pair's jail (stdio transport)"
    )
    env: dict[str, str] = Field(default_factory=dict, description="extra environment of the server")
    version: str | None = Field(
        None, description="what the rows record as the server's version (default: none recorded)"
    )

    @field_validator("name")
    @classmethod
    def _name_valid(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError(f"MCP server name {value!r}: use 1-64 letters, digits, '_', '.', '-'")
        return value

    @field_validator("command")
    @classmethod
    def _command_valid(cls, value: list[str]) -> list[str]:
        if not value[0].strip():
            raise ValueError("MCP server command: the program (first element) is empty")
        if any("\0" in arg for arg in value):
            raise ValueError("MCP server command: an argument holds a NUL byte")
        return value


def check_server_list(servers: list[McpServerSpec]) -> list[McpServerSpec]:
    """``servers`` when their names are unique and at most :data:`MAX_SERVERS`; else ``ValueError``."""
    if len(servers) > MAX_SERVERS:
        raise ValueError(f"mcp_servers: {len(servers)} servers listed, at most {MAX_SERVERS}")
    names = [s.name for s in servers]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"mcp_servers: names used twice: {', '.join(dupes)}")
    return servers


def server_record(spec: McpServerSpec) -> dict[str, Any]:
    """What a result row keeps of one server: name, version (when given) and a hash of its command
    and environment names (values may hold secrets, so only their names are hashed)."""
    ident = json.dumps({"command": spec.command, "env": sorted(spec.env)}, sort_keys=True)
    return {
        "name": spec.name,
        "version": spec.version,
        "command_sha": hashlib.sha256(ident.encode()).hexdigest()[:16],
    }
