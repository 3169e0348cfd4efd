"""The options of the ``command`` agent."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from pptarena.mcp.servers import McpServerSpec, check_server_list
from pptarena.types import Options

from .proxy import parse_entry

PLACEHOLDERS = ("task_md", "input", "output_dir", "output", "workspace", "task_id", "prompt")


class CommandOptions(Options):
    """Options of the ``command`` agent."""

    command: list[str] | str = Field(
        description="the CLI to run; placeholders {task_md} {input} {output_dir} ..."
    )
    env: dict[str, str | SecretStr] = Field(
        default_factory=dict, description='variables the CLI gets (values may be { env = "VAR" } secrets)'
    )
    inherit_env: bool = Field(
        False,
        description="start from the harness's whole environment, keys included (else PATH/HOME/LANG...)",
    )
    timeout: float | None = Field(None, gt=0, description="seconds; default: the task timeout minus 5%")
    cwd: Path | None = Field(None, description="working directory; default: the CLI workspace folder")
    customization_dir: Path | None = Field(
        None, description="copied into the workspace first (e.g. CLAUDE.md)"
    )
    sandbox: Literal["auto", "off"] = Field(
        "auto", description="auto: run under bubblewrap where it works; off: no sandbox"
    )
    network: Literal["allowlist", "none", "open"] = Field(
        "allowlist",
        description="allowlist: only allow_hosts and the hosts of URLs in env, through a proxy; none: no "
        "network; open: any internet host (slirp4netns), never this machine's loopback",
    )
    allow_hosts: list[str] = Field(
        default_factory=list,
        description='hosts reachable with network = "allowlist": "host", "host:port", "*.domain", a URL',
    )
    read_only_paths: list[Path] = Field(
        default_factory=list,
        description="extra host paths the sandboxed command may read (its install, config)",
    )
    workspace_mb: int = Field(1024, gt=0, description="size of the workspace tmpfs (and of /tmp) in the jail")
    max_processes: int = Field(512, gt=0, description="processes and threads the jail may have at once")
    memory_mb: int = Field(4096, gt=0, description="memory of the whole jail, its tmpfs files included")
    max_output_mb: int = Field(300, gt=0, description="largest output deck accepted, in MB")
    keep_mb: int = Field(
        64, ge=0, description="of the jailed workspace's other files, MB copied out to the pair folder"
    )
    log_mb: int = Field(
        32,
        gt=0,
        description="of the jailed CLI's stdout and of its stderr, MB kept in the pair folder (each)",
    )

    mcp: bool = Field(
        False,
        description="give the CLI the harness's deck tools: an MCP server named `deck` in its jail, "
        "on its workspace, written into .mcp.json, $CODEX_HOME/config.toml and .gemini/settings.json",
    )
    mcp_servers: list[McpServerSpec] = Field(
        default_factory=list,
        description="stdio MCP servers ({ name, command, env, version }) written into the same configs; "
        "they run in the CLI's jail, as untrusted as the CLI",
    )

    @field_validator("mcp_servers")
    @classmethod
    def _servers_valid(cls, value: list[McpServerSpec]) -> list[McpServerSpec]:
        return check_server_list(value)

    @model_validator(mode="after")
    def _deck_name_free(self) -> CommandOptions:
        from .deck_tools import DECK_SERVER

        if self.mcp and any(s.name == DECK_SERVER for s in self.mcp_servers):
            raise ValueError(
                f"mcp_servers: the name {DECK_SERVER!r} is the deck tools' (mcp = true); rename it"
            )
        return self

    @field_validator("command")
    @classmethod
    def _command_valid(cls, value: list[str] | str) -> list[str] | str:
        argv = shlex.split(value) if isinstance(value, str) else list(value)
        if not argv or not argv[0].strip():
            raise ValueError("command is empty")
        for arg in argv:
            try:
                arg.format(**{p: "" for p in PLACEHOLDERS})
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"command argument {arg!r}: bad placeholder ({exc}); known: "
                    + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                    + " (write {{ }} for literal braces)"
                ) from None
        return value

    @field_validator("allow_hosts")
    @classmethod
    def _hosts_valid(cls, value: list[str]) -> list[str]:
        for host in value:
            parse_entry(host)
        return value
