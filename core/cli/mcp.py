"""``arena mcp``: serve one deck's tools (summary, diff, renders, parts, python-pptx) over MCP.

See docs/mcp.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

NO_RENDERER = "none"
HOST_RENDERER = "host"


def _renderer(name: str, render_socket: Path | None = None) -> tuple[Any, str]:
    """(the renderer, '') or (None, why there is none) for ``--renderer NAME``; ``host`` renders
    through the harness's render service at ``render_socket`` (inside a command agent's jail)."""
    if (name == HOST_RENDERER) != (render_socket is not None):
        raise click.ClickException("--renderer host and --render-socket PATH go together")
    if name == HOST_RENDERER:
        from pptarena.mcp.socket_renderer import SocketRenderer

        return SocketRenderer(render_socket), ""  # type: ignore[arg-type]
    if name == NO_RENDERER:
        return None, "started with --renderer none"
    from pptarena.cli.render import make_renderer
    from pptarena.types import ComponentUnavailable, PptArenaError

    try:
        return make_renderer(name, {}), ""
    except ComponentUnavailable as exc:
        click.echo(f"warning: renderer {name!r} is unavailable ({exc}); render tools will fail", err=True)
        return None, f"renderer {name!r} is unavailable: {exc}"
    except (PptArenaError, LookupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("mcp")
@click.option(
    "--deck",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The deck to serve (never modified: edits go to a working copy).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Copy the working copy here after every successful edit (atomic).",
)
@click.option(
    "--work",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the working copy at this path (its folder must exist; default: a private scratch folder).",
)
@click.option(
    "--renderer",
    "renderer_name",
    default="libreoffice",
    show_default=True,
    help="Registered renderer for render_slides and validate; `none`: no renders; `host`: the "
    "harness's render service (with --render-socket).",
)
@click.option(
    "--render-socket",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --renderer host: the unix socket of the harness's render service (a command agent's "
    "jail with mcp = true).",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append every tool call to this JSON-lines log (agent.log.jsonl format).",
)
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP port (with --http)."
)
def mcp_command(
    deck: Path,
    out: Path | None,
    work: Path | None,
    renderer_name: str,
    render_socket: Path | None,
    log_path: Path | None,
    http: bool,
    port: int,
) -> None:
    """Serve DECK's tools over MCP: stdio by default, streamable HTTP on loopback with --http.

    Tools: deck_summary, deck_diff, render_slides, validate, list_parts, read_part, write_part,
    run_python (`arena docs mcp` has the table and client configs).
    """
    try:
        from pptarena.mcp import require_sdk

        require_sdk()
    except ModuleNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    from pptarena.deck import DeckError
    from pptarena.mcp import DeckSession
    from pptarena.types import AgentLog, PptArenaError

    if work is not None and not work.absolute().parent.is_dir():
        raise click.ClickException(f"--work {work}: its folder does not exist")
    renderer, note = _renderer(renderer_name, render_socket)
    try:
        session = DeckSession(
            deck.resolve(),
            work_deck=work,
            out=out,
            renderer=renderer,
            renderer_note=note,
            log=AgentLog(log_path) if log_path else None,
        )
    except (DeckError, PptArenaError, OSError) as exc:
        _close(renderer)
        raise click.ClickException(f"cannot serve {deck}: {exc}") from exc
    try:
        _serve(session, http, port, deck.name)
    finally:
        session.close()
        _close(renderer)


def _close(renderer: Any) -> None:
    close = getattr(renderer, "close", None)
    if callable(close):
        close()


def _serve(session: Any, http: bool, port: int, name: str) -> None:
    """Publish ``--out``, build the server and serve until the client goes (stdio) or Ctrl-C (HTTP)."""
    from pptarena.mcp import build_server, serve_http, serve_stdio

    session.publish()  # OUT holds a whole deck from the start: a killed server loses nothing
    server = build_server(session)
    if http:
        click.echo(f"arena mcp: serving {name} at http://127.0.0.1:{port}/mcp", err=True)
        serve_http(server, port)
    else:
        serve_stdio(server)
    click.echo(f"arena mcp: {session.counters.to_json()}", err=True)
