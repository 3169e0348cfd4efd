"""MCP servers for a CLI agent (``mcp = true``, ``mcp_servers``): what its jail shows, its config files,
the host render service, and the tool calls read back into the pair's log.

With ``mcp = true`` the harness's deck tool server (``arena mcp``, :mod:`pptarena.mcp`) runs *inside*
the CLI's jail, started by the CLI itself over stdio, on the jail's own workspace: its working copy
is ``output/<task_id><suffix>``, the file the CLI hands in, so the CLI's own edits and the tools'
edits are one file. The jail shows the harness's interpreter, pptarena's core and the distributions
it and the ``mcp`` SDK need (:func:`server_binds`, the same paths a jailed agent worker gets from
:mod:`pptarena.run.jail.agent_jail`), read-only. Renders cross the jail's wall as bytes: the server's
renderer is a client (:class:`pptarena.mcp.socket_renderer.SocketRenderer`) of a host render
service (:class:`~pptarena.mcp.socket_renderer.RenderService`) on a unix socket bound into the jail,
which renders a private copy with the pair's renderer under per-pair caps and logs each render
itself.

The CLI finds the servers in the config files the common CLIs read, written into the workspace
(:func:`write_configs`): ``.mcp.json`` (Claude Code, project scope), ``.codex/config.toml`` (Codex CLI,
with ``CODEX_HOME`` pointing at that folder) and ``.gemini/settings.json`` (Gemini CLI). A file of the
same name from ``customization_dir`` is merged: its own servers stay, entries named like the harness's
servers are replaced.

The server logs every tool call to ``.pptarena/deck-tools.log.jsonl`` in the workspace. That file
comes from the jail (the CLI can write it too): after the CLI exits it is read back bounded and
parsed defensively (:func:`read_tool_log`), and each call goes to the pair's log marked
``reported_by = "jail"``. The render count is the host service's own.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
import tempfile
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.types import AgentError, AgentLog, Renderer

DECK_SERVER = "deck"
"""The deck tools' name in every config and in the rows."""
STATE_DIR = ".pptarena"
TOOL_LOG = f"{STATE_DIR}/deck-tools.log.jsonl"
"""The deck server's log, relative to the workspace."""
CODEX_DIR = ".codex"
CONFIG_FILES = (".mcp.json", f"{CODEX_DIR}/config.toml", ".gemini/settings.json")
MAX_CONFIG_BYTES = 1 << 20
"""Largest customization config file merged."""
MAX_TOOL_LOG_BYTES = 8 << 20
"""Of the jail's tool log, bytes read back."""
MAX_TOOL_EVENTS = 10_000
"""Of the jail's tool log, events copied into the pair's log (all are counted up to the byte cap)."""
TOOL_TIMEOUT_S = 180  # a first LibreOffice render can take a while
STARTUP_TIMEOUT_S = 60
_TOOL_NAME = re.compile(r"^[a-z_]{1,40}$")


@dataclass(frozen=True)
class ServerEntry:
    """One stdio MCP server as written into the CLI's configs."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- the jail's view


def require_sdk() -> None:
    """``ComponentUnavailable`` when the ``mcp`` SDK is not installed (the deck server needs it)."""
    import importlib.util

    from pptarena.types import ComponentUnavailable

    if importlib.util.find_spec("mcp") is None:
        raise ComponentUnavailable(
            "mcp = true needs the MCP SDK in the harness's environment: pip install 'pptarena[mcp]'"
        )


@functools.cache
def _server_paths() -> tuple[Path, ...]:
    """:func:`server_binds` before the forbidden folders are left out (computed once: ~0.5 s)."""
    from pptarena.run import (
        distribution_closure,
        distribution_paths,
        interpreter_paths,
        plugin_paths,
        site_dirs,
    )
    from pptarena.trust import isolation

    binds, _pythonpath = plugin_paths("pptarena", builtin=True)
    sites = site_dirs()
    extra: set[Path] = set()
    for dist in distribution_closure(["mcp"]):
        extra |= distribution_paths(dist, sites)
    # the interpreter is in every CLI jail already (isolation.python_view, file by file: binding its
    # folder too would hide those file binds' mount points under a read-only folder)
    shown = set(isolation.python_view().read_only) | interpreter_paths()
    return tuple(
        path for path in sorted({*binds, *extra} - shown) if not any(s.is_relative_to(path) for s in shown)
    )


def server_binds() -> list[Path]:
    """Host paths the deck server needs in the jail (read-only): pptarena's core (never
    ``pptarena.plugins`` beyond its ``__init__``) and the installed distributions that pptarena and
    the ``mcp`` SDK require (the interpreter is in every CLI jail already); never anything under a
    folder no jail may show (the run's cache, run folder, datasets:
    :func:`pptarena.run.jail.agent_jail.forbid_in_jails`)."""
    from pptarena.run import forbidden_roots

    roots = forbidden_roots()
    out = []
    for path in _server_paths():
        resolved = path.resolve()
        if not any(resolved == r or r in resolved.parents for r in roots):
            out.append(path)
    return out


def deck_server(root: Path, paths: dict[str, Path], socket: Path | None) -> ServerEntry:
    """The deck server's stdio command for the workspace at ``root`` (absolute paths: a CLI may
    start its servers from another folder)."""
    command = [
        sys.executable,
        "-m",
        "pptarena.cli.main",
        "mcp",
        "--deck",
        str(paths["input"]),
        "--work",
        str(paths["output"]),
        "--log",
        str(root / TOOL_LOG),
    ]
    command += ["--renderer", "host", "--render-socket", str(socket)] if socket else ["--renderer", "none"]
    return ServerEntry(DECK_SERVER, command, {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"})


# --------------------------------------------------------------------------- the config files


def _existing(path: Path) -> bytes | None:
    """A customization file's bytes (None when absent); a link or an oversize file is refused."""
    from pptarena.trust.safeio import UnsafeFileError, read_regular

    if not os.path.lexists(path):
        return None
    try:
        return read_regular(path, MAX_CONFIG_BYTES, follow_links=False)
    except (UnsafeFileError, OSError) as exc:
        raise AgentError(
            f"customization file {path.name} cannot be merged with the MCP servers: {exc}"
        ) from None


def _merge_json(path: Path, servers: dict[str, dict[str, Any]]) -> None:
    """Write ``{"mcpServers": servers}`` into the JSON file ``path``, merged with what it holds."""
    data: dict[str, Any] = {}
    raw = _existing(path)
    if raw is not None:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise AgentError(
                f"customization file {path.name} is not JSON ({exc}); cannot add MCP servers"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
            raise AgentError(f"customization file {path.name}: expected an object with an mcpServers object")
    data["mcpServers"] = {**data.get("mcpServers", {}), **servers}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, ASCII only)."""
    return json.dumps(value, ensure_ascii=True)


def codex_tables(entries: list[ServerEntry]) -> str:
    """``[mcp_servers."<name>"]`` tables for Codex CLI's ``config.toml``."""
    lines: list[str] = []
    for entry in entries:
        key = f"mcp_servers.{_toml_string(entry.name)}"
        lines += [
            f"[{key}]",
            f"command = {_toml_string(entry.command[0])}",
            f"args = [{', '.join(_toml_string(a) for a in entry.command[1:])}]",
            f"startup_timeout_sec = {STARTUP_TIMEOUT_S}",
            f"tool_timeout_sec = {TOOL_TIMEOUT_S}",
            "",
        ]
        if entry.env:
            lines.append(f"[{key}.env]")
            lines += [f"{_toml_string(k)} = {_toml_string(v)}" for k, v in sorted(entry.env.items())]
            lines.append("")
    return "\n".join(lines)


def _merge_codex(path: Path, entries: list[ServerEntry]) -> None:
    """Append the servers' tables to ``config.toml`` (a customization's file kept as it is, unless
    it defines one of these servers itself: refused, there is no TOML writer to merge with)."""
    raw = _existing(path)
    text = raw.decode("utf-8", errors="replace") if raw is not None else ""
    if text:
        try:
            current = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise AgentError(f"customization file {CODEX_DIR}/config.toml is not TOML ({exc})") from None
        taken = sorted(set(current.get("mcp_servers") or {}) & {e.name for e in entries})
        if taken:
            raise AgentError(
                f"customization file {CODEX_DIR}/config.toml defines mcp_servers {taken}, which the "
                "command agent writes itself (mcp = true / mcp_servers); remove them there"
            )
    merged = (text.rstrip("\n") + "\n\n" if text else "") + codex_tables(entries)
    try:
        tomllib.loads(merged)
    except tomllib.TOMLDecodeError as exc:
        raise AgentError(
            f"customization file {CODEX_DIR}/config.toml cannot take [mcp_servers.*] tables ({exc})"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.write_text(merged, encoding="utf-8")


def write_configs(root: Path, entries: list[ServerEntry]) -> list[str]:
    """Write the servers into ``.mcp.json``, ``.codex/config.toml`` and ``.gemini/settings.json`` under
    ``root`` (merged with customization files of those names); the files written, relative."""
    claude = {
        e.name: {"type": "stdio", "command": e.command[0], "args": e.command[1:], "env": e.env}
        for e in entries
    }
    gemini = {
        e.name: {
            "command": e.command[0],
            "args": e.command[1:],
            "env": e.env,
            "timeout": TOOL_TIMEOUT_S * 1000,
        }
        for e in entries
    }
    _merge_json(root / ".mcp.json", claude)
    _merge_codex(root / CODEX_DIR / "config.toml", entries)
    _merge_json(root / ".gemini" / "settings.json", gemini)
    (root / STATE_DIR).mkdir(exist_ok=True)
    return list(CONFIG_FILES)


# --------------------------------------------------------------------------- the render service


@contextlib.contextmanager
def render_service(renderer: Renderer | None, log: AgentLog) -> Iterator[Any]:
    """A host render service for one pair (None without a renderer), its socket in a private folder
    (``0711``, named so a killed harness's leftovers are swept with the jail's)."""
    import shutil

    from pptarena.mcp.socket_renderer import RenderService

    if renderer is None:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix=f"pptarena-cli-{os.getpid()}-render-"))
    try:
        os.chmod(folder, 0o711)
        with RenderService(renderer, folder, log) as service:
            yield service
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- the calls, read back


def _clean_call(record: dict[str, Any]) -> dict[str, Any] | None:
    """A ``tool_call`` record of the jail's log with known fields only, each checked and bounded."""
    from pptarena.mcp.session import bounded_args

    tool = record.get("tool")
    if record.get("event") != "tool_call" or not isinstance(tool, str) or not _TOOL_NAME.match(tool):
        return None
    args = record.get("args")
    args = bounded_args(args) if isinstance(args, dict) and len(args) <= 20 else {}
    if len(json.dumps(args, default=str)) > 4000:
        args = {"note": "arguments too long to keep"}
    seconds = record.get("seconds")
    size = record.get("bytes_returned")
    error = record.get("error")
    return {
        "tool": tool,
        "args": args,
        "ok": record.get("ok") is True,
        "seconds": float(seconds)
        if isinstance(seconds, int | float) and not isinstance(seconds, bool)
        else None,
        "error": error[:2000] if isinstance(error, str) else None,
        "bytes_returned": size if isinstance(size, int) and not isinstance(size, bool) else None,
    }


def read_tool_log(root: Path, log: AgentLog) -> Counter[str]:
    """Copy the deck server's ``tool_call`` events from the workspace copied out of the jail into the
    pair's log (``reported_by = "jail"``, at most :data:`MAX_TOOL_EVENTS`); the calls per tool.

    The file is the jail's: a link, a FIFO or an oversize file is not read (a note says so), a line
    that is not a JSON object or not a well-formed ``tool_call`` is skipped and counted.
    """
    from pptarena.trust.safeio import UnsafeFileError, read_regular

    calls: Counter[str] = Counter()
    path = root / TOOL_LOG
    if not os.path.lexists(path):
        return calls
    try:
        raw = read_regular(path, MAX_TOOL_LOG_BYTES, follow_links=False)
    except (UnsafeFileError, OSError) as exc:
        log.write("tool_log_unread", reported_by="jail", path=TOOL_LOG, error=str(exc)[:500])
        return calls
    skipped = kept = 0
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        call = _clean_call(record) if isinstance(record, dict) else None
        if call is None:
            skipped += 1
            continue
        calls[call["tool"]] += 1
        if kept < MAX_TOOL_EVENTS:
            log.write("tool_call", reported_by="jail", server=DECK_SERVER, **call)
            kept += 1
    if skipped or kept < sum(calls.values()):
        log.write(
            "tool_log_note",
            reported_by="jail",
            lines_skipped=skipped,
            calls_not_copied=sum(calls.values()) - kept,
        )
    return calls


def deck_server_record() -> dict[str, Any]:
    """What a row keeps of the deck tools: their name and pptarena's version (the same shape as
    :func:`pptarena.mcp.servers.server_record`; no command hash, its paths differ per pair)."""
    from pptarena._version import __version__

    return {"name": DECK_SERVER, "version": f"pptarena {__version__}", "command_sha": None}
