"""The MCP server of one deck session, on the official ``mcp`` SDK (``MCPServer``).

:func:`build_server` registers the eight deck tools (names, JSON schemas and descriptions come
from the typed functions below); :func:`connect_in_memory` is the one way an in-process client
(the ``tools`` agent, tests) talks to it; :func:`serve_stdio` and :func:`serve_http` run it for
an outside client (``arena mcp``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from pptarena.mcp import tools
from pptarena.mcp.session import DeckSession, Reply, ToolFailure

if TYPE_CHECKING:  # the SDK is imported only when a server is built
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

SERVER_NAME = "pptarena-deck"
INSTRUCTIONS = (
    "Tools on one PowerPoint deck: a working copy that every edit tool changes atomically (a failed "
    "edit changes nothing). Look with deck_summary, render_slides and read_part; edit with write_part "
    "(one OOXML part) or run_python (a python-pptx program that saves DECK_PATH); check with deck_diff "
    "(edits since the input deck) and validate. Parts are named by their zip member name "
    "(ppt/slides/slide1.xml); no tool takes a file path."
)
TOOL_NAMES = (
    "deck_summary",
    "deck_diff",
    "render_slides",
    "validate",
    "list_parts",
    "read_part",
    "write_part",
    "run_python",
)

SlideList = Annotated[
    list[int] | None,
    Field(description="1-based slide numbers; omit for every slide", default=None),
]
PartName = Annotated[
    str,
    Field(description="the part's zip member name, e.g. 'ppt/slides/slide1.xml' (list_parts names them)"),
]


def require_sdk() -> None:
    """Import the ``mcp`` SDK, or fail saying how to install it.

    :raises ModuleNotFoundError: with the install hint.
    """
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            "arena mcp is not available: the `mcp` package is not installed (pip install 'pptarena[mcp]')",
            name="mcp",
        ) from exc


def _content(reply: Reply) -> list[Any]:
    from mcp.server.mcpserver import Image

    return [reply.text, *(Image(data=png, format="png") for png in reply.images)]


def build_server(session: DeckSession) -> MCPServer:
    """An ``mcp.server.mcpserver.MCPServer`` serving ``session``'s deck tools.

    Each tool call runs through :meth:`DeckSession.call` (one at a time, counted, logged); a
    failure comes back as a tool result with ``isError`` set and a message saying why.
    """
    require_sdk()
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    from pptarena._version import __version__

    server: MCPServer = MCPServer(
        name=SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    def run(tool: str, args: dict[str, Any], fn: Any) -> list[Any]:
        try:
            return _content(session.call(tool, args, fn))
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    edits = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

    def deck_summary(slides: SlideList = None) -> list[Any]:
        """The working copy's summary as JSON (the deck engine's schema: slide size, themes, masters,
        and per slide its number, title, layout, shapes with text, positions, fills, tables, charts,
        pictures, notes). Pass `slides` to get only those slides. Past the character cap, slides are
        left out from the end and named in `omitted_slides`."""
        return run("deck_summary", {"slides": slides}, lambda: tools.deck_summary(session, slides))

    def deck_diff() -> list[Any]:
        """The structural edits from the input deck to the working copy, as JSON: `edit_count`, `edits`
        (kind, slide, shape, path, old, new) and `slide_matches`. Past the character cap, edits are left
        out from the end and named in `omitted_edits`."""
        return run("deck_diff", {}, lambda: tools.deck_diff(session))

    def render_slides(slides: SlideList = None) -> list[Any]:
        """PNG images of slides of the working copy (MCP image content), one per slide asked for, after
        a text line per slide. Images are downscaled to the server's size caps; a call takes at most a
        few slides (without `slides`: the first ones) and a session a bounded number of renders."""
        return run("render_slides", {"slides": slides}, lambda: tools.render_slides(session, slides))

    def validate() -> list[Any]:
        """Check the working copy: does it open and summarise, which XML parts could not be read, and
        (when the server has a renderer) does it render every slide. Returns JSON with `ok`."""
        return run("validate", {}, lambda: tools.validate(session))

    def list_parts() -> list[Any]:
        """The working copy's OOXML parts (zip members) as JSON: name, uncompressed bytes, and
        `editable` (write_part may replace it: slides, layouts, masters, themes, notes, charts,
        SmartArt parts)."""
        return run("list_parts", {}, lambda: tools.list_parts(session))

    def read_part(name: PartName) -> list[Any]:
        """The XML text of one part of the working copy (`.xml` or `.rels`; binary parts are refused).
        Parts over the part size cap are refused."""
        return run("read_part", {"name": name}, lambda: tools.read_part(session, name))

    def write_part(
        name: PartName,
        xml: Annotated[str, Field(description="the whole new XML of the part")],
    ) -> list[Any]:
        """Replace one editable XML part of the working copy. The new XML must be well-formed (no DTD or
        entities), keep the root element and its namespace declarations, and use only relationship ids
        the part already has; parts cannot be added. On success the working copy is saved; on any
        failure it is unchanged and the message says why."""
        return run("write_part", {"name": name, "xml": xml}, lambda: tools.write_part(session, name, xml))

    def run_python(
        code: Annotated[
            str,
            Field(
                description="a Python program; DECK_PATH is the deck's path: open it with "
                "pptx.Presentation(DECK_PATH), edit, and save to DECK_PATH"
            ),
        ],
    ) -> list[Any]:
        """Run a python-pptx program on the working copy in a sandbox (no network, only the deck in
        its folder, time and memory capped). When the program saves DECK_PATH and exits cleanly, that
        deck (if it opens) becomes the working copy. Returns JSON with the end of stdout and stderr;
        a failing program is an error result and changes nothing."""
        return run("run_python", {"code": code}, lambda: tools.run_python(session, code))

    for fn, hints in (
        (deck_summary, read_only),
        (deck_diff, read_only),
        (render_slides, read_only),
        (validate, read_only),
        (list_parts, read_only),
        (read_part, read_only),
        (write_part, edits),
        (run_python, edits),
    ):
        server.add_tool(fn, annotations=hints, structured_output=False)
    return server


def connect_in_memory(server: MCPServer) -> Client:
    """The SDK's client connected in-process to ``server``: ``async with connect_in_memory(server) as
    client: await client.list_tools(); await client.call_tool("deck_summary", {})``.

    This is ``mcp.Client(server)``: no transport, no subprocess; the session's tools run in the
    calling process.
    """
    require_sdk()
    from mcp import Client

    return Client(server)


def serve_stdio(server: MCPServer) -> None:
    """Serve over stdin/stdout until the client closes the pipe (the default of ``arena mcp``)."""
    import anyio

    anyio.run(server.run_stdio_async)


def serve_http(server: MCPServer, port: int, host: str = "127.0.0.1") -> None:
    """Serve over streamable HTTP at ``http://127.0.0.1:PORT/mcp``, loopback only.

    :raises ValueError: ``host`` is not a loopback address.
    """
    import ipaddress

    import anyio

    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"arena mcp serves HTTP on loopback only, not on {host}")
    anyio.run(lambda: server.run_streamable_http_async(host=host, port=port))
