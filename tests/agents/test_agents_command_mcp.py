"""The command agent with ``mcp = true``: the deck tools in the CLI's jail, renders by the host.

The "CLI" is a Python script run by the real command agent under real bubblewrap. It reads the
``.mcp.json`` the harness wrote into its workspace, starts the server named there over stdio with the
SDK's own client, and calls the tools; the pair's renders go through the host render service to a
real LibreOffice. The attacks are made the same way, from inside the jail: through the tools and
through the render socket directly.
"""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from pptarena.mcp.socket_renderer import RenderCaps, RenderService, RenderServiceError, SocketRenderer  # noqa: E402
from pptarena.types import AgentLog  # noqa: E402
from tests.support.agents_fixtures import deck_texts, events, make_task, scripted_workspace  # noqa: E402
from tests.support.render_fixtures import needs_soffice  # noqa: E402
from tests.support.trust_fixtures import needs_bwrap  # noqa: E402

CLIENT_HEAD = textwrap.dedent(
    """\
    import asyncio, json, pathlib, socket, sys
    from mcp import Client, StdioServerParameters

    config = json.loads(pathlib.Path(".mcp.json").read_text())["mcpServers"]["deck"]
    params = StdioServerParameters(command=config["command"], args=config["args"], env=config["env"])
    results = {}

    def text(result):
        return "".join(getattr(c, "text", "") for c in result.content)

    async def call(client, name, args=None):
        result = await client.call_tool(name, args or {})
        images = [c for c in result.content if getattr(c, "type", "") == "image"]
        return {"error": bool(result.is_error), "text": text(result)[:200000], "images": len(images)}
    """
)

TOOLS_SCRIPT = CLIENT_HEAD + textwrap.dedent(
    """\
    async def main():
        async with Client(params, mode="legacy") as client:
            results["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            results["summary"] = await call(client, "deck_summary")
            results["render"] = await call(client, "render_slides", {"slides": [1, 2]})
            xml = text(await client.call_tool("read_part", {"name": "ppt/slides/slide2.xml"}))
            results["write"] = await call(
                client, "write_part",
                {"name": "ppt/slides/slide2.xml", "xml": xml.replace("Revnue", "Revenue")},
            )
    asyncio.run(main())
    pathlib.Path("results.json").write_text(json.dumps(results))
    print(json.dumps(results))
    """
)


def make_agent(tmp_path, **options):
    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path, model=None, name="command", label="cli")  # type: ignore[arg-type]
    return get_registry().create("agents", "command", options, ctx)


def libreoffice(tmp_path):
    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path / "render-cache", model=None)  # type: ignore[arg-type]
    return get_registry().create("renderers", "libreoffice", {}, ctx)


def run_script(tmp_path, script: str, renderer=None, **options):
    """(prediction or the exception, workspace, the script's results.json) for ``script`` as the CLI."""
    path = tmp_path / "cli_agent.py"
    path.write_text(script)
    ws, _ = scripted_workspace(tmp_path, [], renderer=renderer)
    agent = make_agent(tmp_path, command=[sys.executable, str(path)], mcp=True, timeout=240, **options)
    try:
        outcome = agent.edit(make_task(tmp_path), ws)
    except Exception as exc:  # noqa: BLE001 - the test looks at it
        outcome = exc
    results_file = ws.dir / "cli" / "results.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else None
    return outcome, ws, results


def stderr_of(ws) -> str:
    return (ws.dir / "cli.stderr.txt").read_text(errors="replace")[-3000:]


# ------------------------------------------------------------------ the configs


def test_configs_name_the_deck_server_and_the_listed_servers(tmp_path):
    from pptarena.plugins.agents.command import deck_tools

    custom = tmp_path / "custom"
    (custom / ".codex").mkdir(parents=True)
    (custom / ".mcp.json").write_text(json.dumps({"mcpServers": {"mine": {"command": "x"}}, "other": 1}))
    (custom / ".codex" / "config.toml").write_text('model = "o4"\n[mcp_servers.mine]\ncommand = "x"\n')
    ws, _ = scripted_workspace(tmp_path, [])
    agent = make_agent(
        tmp_path,
        command=["x"],
        mcp=True,
        customization_dir=str(custom),
        mcp_servers=[{"name": "third.party", "command": ["/bin/true", "--x"], "env": {"K": 'v"1'}}],
    )
    root = tmp_path / "ws"
    root.mkdir()
    from pptarena.plugins.agents.command.workspace import prepare_workspace, workspace_paths

    paths = workspace_paths(root, make_task(tmp_path), ws.input_deck)
    prepare_workspace(root, make_task(tmp_path), ws.input_deck, custom)
    entries = agent.server_entries(root, paths, Path("/tmp/x/render.sock"))
    deck_tools.write_configs(root, entries)

    claude = json.loads((root / ".mcp.json").read_text())
    assert claude["other"] == 1 and set(claude["mcpServers"]) == {"mine", "deck", "third.party"}
    deck = claude["mcpServers"]["deck"]
    assert deck["type"] == "stdio" and deck["command"] == sys.executable
    assert deck["args"][:3] == ["-m", "pptarena.cli.main", "mcp"]
    args = deck["args"]
    assert args[args.index("--deck") + 1] == str(paths["input"])
    assert args[args.index("--work") + 1] == str(paths["output"])
    assert args[args.index("--render-socket") + 1] == "/tmp/x/render.sock"
    codex = tomllib.loads((root / ".codex" / "config.toml").read_text())
    assert codex["model"] == "o4" and set(codex["mcp_servers"]) == {"mine", "deck", "third.party"}
    assert codex["mcp_servers"]["third.party"] == {
        "command": "/bin/true",
        "args": ["--x"],
        "startup_timeout_sec": deck_tools.STARTUP_TIMEOUT_S,
        "tool_timeout_sec": deck_tools.TOOL_TIMEOUT_S,
        "env": {"K": 'v"1'},
    }
    gemini = json.loads((root / ".gemini" / "settings.json").read_text())
    assert gemini["mcpServers"]["deck"]["args"] == args and "type" not in gemini["mcpServers"]["deck"]


def test_a_customization_that_defines_deck_itself_or_is_broken_is_refused(tmp_path):
    from pptarena.plugins.agents.command import deck_tools
    from pptarena.types import AgentError

    entry = deck_tools.ServerEntry("deck", ["python", "-m", "x"])
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text("[mcp_servers.deck]\ncommand = 'mine'\n")
    with pytest.raises(AgentError, match="defines mcp_servers"):
        deck_tools.write_configs(tmp_path, [entry])
    (tmp_path / ".codex" / "config.toml").unlink()
    (tmp_path / ".mcp.json").write_text("{not json")
    with pytest.raises(AgentError, match="is not JSON"):
        deck_tools.write_configs(tmp_path, [entry])
    (tmp_path / ".mcp.json").unlink()
    (tmp_path / ".mcp.json").symlink_to("/etc/passwd")
    with pytest.raises(AgentError, match="cannot be merged"):
        deck_tools.write_configs(tmp_path, [entry])


def test_options_refuse_a_listed_server_named_deck(tmp_path):
    with pytest.raises(ValueError, match="deck tools"):
        make_agent(tmp_path, command=["x"], mcp=True, mcp_servers=[{"name": "deck", "command": ["y"]}])
    with pytest.raises(ValueError, match="names used twice"):
        make_agent(
            tmp_path,
            command=["x"],
            mcp_servers=[{"name": "a", "command": ["y"]}, {"name": "a", "command": ["z"]}],
        )


# ------------------------------------------------------------------ the log read back


def test_the_jails_tool_log_is_read_back_bounded_and_marked(tmp_path):
    from pptarena.plugins.agents.command import deck_tools

    log = AgentLog(tmp_path / "agent.log.jsonl")
    (tmp_path / ".pptarena").mkdir()
    lines = [
        json.dumps({"event": "tool_call", "tool": "deck_summary", "ok": True, "seconds": 0.1, "args": {}}),
        json.dumps(
            {"event": "tool_call", "tool": "write_part", "ok": "yes", "seconds": "never", "args": [1]}
        ),
        "not json at all",
        json.dumps({"event": "tool_call", "tool": "../../etc/passwd"}),
        json.dumps(["a list"]),
        json.dumps({"event": "tool_call", "tool": "render_slides", "args": {"x": "y" * 10_000}, "error": 5}),
    ]
    (tmp_path / deck_tools.TOOL_LOG).write_text("\n".join(lines))
    calls = deck_tools.read_tool_log(tmp_path, log)
    assert calls == {"deck_summary": 1, "write_part": 1, "render_slides": 1}
    written = [e for e in log.events if e["event"] == "tool_call"]
    assert all(e["reported_by"] == "jail" for e in written)
    assert written[1]["ok"] is False and written[1]["seconds"] is None and written[1]["args"] == {}
    assert written[2]["error"] is None and len(json.dumps(written[2]["args"])) < 1000
    assert [e for e in log.events if e["event"] == "tool_log_note"][0]["lines_skipped"] == 3
    # a link planted in place of the log is not followed
    (tmp_path / deck_tools.TOOL_LOG).unlink()
    (tmp_path / deck_tools.TOOL_LOG).symlink_to("/etc/passwd")
    assert deck_tools.read_tool_log(tmp_path, log) == {}
    assert log.events[-1]["event"] == "tool_log_unread"


# ------------------------------------------------------------------ the render service on its own


class CountingRenderer:
    """A renderer that writes one tiny PNG per call and counts what it was given."""

    def __init__(self):
        self.decks: list[bytes] = []

    def render(self, deck_path, out_dir):
        from PIL import Image

        from pptarena.types import SlideImage

        self.decks.append(Path(deck_path).read_bytes())
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (4, 3), "white").save(out / "s1.png")
        return [SlideImage(number=1, sld_id=256, path=out / "s1.png", width=4, height=3)]


def raw_request(path: Path, payload: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(path))
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return json.loads(data.split(b"\n", 1)[0])


def test_render_service_attacks_on_its_socket(tmp_path):
    from pptarena.plugins.datasets.demo.decks import build_qbr

    deck = tmp_path / "qbr.pptx"
    build_qbr(deck)
    renderer = CountingRenderer()
    log = AgentLog(tmp_path / "agent.log.jsonl")
    folder = tmp_path / "svc"
    folder.mkdir()
    caps = RenderCaps(max_deck_bytes=2_000_000, max_renders=2)
    with RenderService(renderer, folder, log, caps) as service:
        sock = service.socket_path
        # asking for a path: there is no such field, nothing is opened
        answer = raw_request(
            sock, json.dumps({"op": "render", "path": "/etc/passwd", "size": 10}).encode() + b"\n"
        )
        assert answer["ok"] is False and "opens no path" in answer["error"]
        answer = raw_request(sock, json.dumps({"op": "read", "path": "/etc/shadow"}).encode() + b"\n")
        assert answer["ok"] is False and "one request" in answer["error"]
        # oversize deck bytes: refused before they are read
        answer = raw_request(sock, json.dumps({"op": "render", "size": 50_000_000}).encode() + b"\n")
        assert answer["ok"] is False and "over the service's limit of 2000000 bytes" in answer["error"]
        # a header without end
        answer = raw_request(sock, b"x" * 10_000)
        assert answer["ok"] is False and "longer than" in answer["error"]
        # a zip bomb: refused by the deck engine's limits, never rendered
        bomb = tmp_path / "bomb.pptx"
        with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("[Content_Types].xml", "<Types/>")
            z.writestr("ppt/media/big.bin", b"\0" * 300_000_000)
        with pytest.raises(RenderServiceError, match="cannot be rendered"):
            SocketRenderer(sock).render(bomb, tmp_path / "out-bomb")
        # a deck that is a link to the target: the client sends bytes, the service never sees the path
        images = SocketRenderer(sock).render(deck, tmp_path / "out1")
        assert [i.number for i in images] == [1] and images[0].path.read_bytes()[:4] == b"\x89PNG"
        # past the per-pair cap: refused with a clear error
        with pytest.raises(RenderServiceError, match="render limit reached: 2 renders per pair"):
            SocketRenderer(sock).render(deck, tmp_path / "out3")
        assert service.renders == 2 and service.refused == 6
    # the bomb counted as a render (it cost the host a check), but never reached the renderer
    assert renderer.decks == [deck.read_bytes()]
    renders = [e for e in log.events if e["event"] == "render"]
    assert sum(e["ok"] for e in renders) == 1 and sum(not e["ok"] for e in renders) == 6


# ------------------------------------------------------------------ in the jail, for real


@needs_bwrap
@needs_soffice
@pytest.mark.slow
def test_cli_uses_the_deck_tools_in_its_jail(tmp_path):
    outcome, ws, results = run_script(
        tmp_path,
        TOOLS_SCRIPT,
        renderer=libreoffice(tmp_path),
        mcp_servers=[{"name": "extra", "command": [sys.executable, "-c", "pass"], "version": "1.0"}],
    )
    assert results is not None, stderr_of(ws)
    assert not isinstance(outcome, Exception), f"{outcome}\n{stderr_of(ws)}"
    assert {"deck_summary", "render_slides", "write_part"} <= set(results["tools"])
    assert json.loads(results["summary"]["text"])["slide_count"] == 2
    assert results["render"] == {"error": False, "text": results["render"]["text"], "images": 2}
    assert results["write"]["error"] is False, results["write"]
    assert "Revenue" in " ".join(deck_texts(outcome.path)) and "Revnue" not in " ".join(
        deck_texts(outcome.path)
    )
    tools = outcome.metadata["tools"]
    assert tools["calls"] == {"deck_summary": 1, "render_slides": 1, "read_part": 1, "write_part": 1}
    assert tools["renders"] == 1
    assert [s["name"] for s in tools["servers"]] == ["deck", "extra"]
    assert tools["servers"][1]["version"] == "1.0"
    calls = events(ws, "tool_call")
    assert [c["tool"] for c in calls] == ["deck_summary", "render_slides", "read_part", "write_part"]
    assert all(c["reported_by"] == "jail" for c in calls)
    assert [e["ok"] for e in events(ws, "render")] == [True]


ATTACK_SCRIPT = CLIENT_HEAD + textwrap.dedent(
    """\
    TARGET = sys.argv[1]
    OTHER = sys.argv[2]
    async def main():
        async with Client(params, mode="legacy") as client:
            for name in ["../../" + TARGET, TARGET, "/etc/passwd", "ppt/../../../etc/passwd"]:
                results["read_" + name] = await call(client, "read_part", {"name": name})
            code = (
                "import json, os\\n"
                f"found = {{p: os.path.exists(p) for p in [{TARGET!r}, {OTHER!r}, '/root']}}\\n"
                "print(json.dumps(found))\\n"
            )
            results["python"] = await call(client, "run_python", {"code": code})
            # the working copy swapped for a link to the target, then for a zip bomb
            work = pathlib.Path(config["args"][config["args"].index("--work") + 1])
            work.unlink(missing_ok=True)
            work.symlink_to(TARGET)
            results["summary_link"] = await call(client, "deck_summary")
            results["render_link"] = await call(client, "render_slides")
            work.unlink()
            import zipfile
            with zipfile.ZipFile(work, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("[Content_Types].xml", "<Types/>")
                z.writestr("ppt/media/big.bin", b"\\0" * 300_000_000)
            results["summary_bomb"] = await call(client, "deck_summary")
            results["render_bomb"] = await call(client, "render_slides")
        sock_path = config["args"][config["args"].index("--render-socket") + 1]
        def ask(payload):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            return json.loads(data.split(b"\\n", 1)[0])
        header = {"op": "render", "path": TARGET, "size": 1}
        results["socket_path"] = ask(json.dumps(header).encode() + b"\\n")
        results["socket_big"] = ask(json.dumps({"op": "render", "size": 10**9}).encode() + b"\\n")
        deck = next(pathlib.Path("inputs").iterdir()).read_bytes()
        request = json.dumps({"op": "render", "size": len(deck)}).encode() + b"\\n" + deck
        flood = [ask(request) for _ in range(4)]
        results["flood"] = [a.get("error") for a in flood]
        results["target_visible"] = pathlib.Path(TARGET).exists()
        results["other_visible"] = pathlib.Path(OTHER).exists()
        import shutil
        shutil.copyfile("inputs/" + next(pathlib.Path("inputs").iterdir()).name, str(work))
    asyncio.run(main())
    pathlib.Path("results.json").write_text(json.dumps(results))
    """
)


@needs_bwrap
@needs_soffice
@pytest.mark.slow
def test_attacks_through_the_tools_and_the_render_socket(tmp_path, monkeypatch):
    import pptarena.plugins.agents.command.deck_tools as deck_tools
    from pptarena.mcp import socket_renderer

    monkeypatch.setattr(
        socket_renderer, "RenderCaps", lambda: RenderCaps(max_deck_bytes=5_000_000, max_renders=3)
    )
    target = Path(make_task(tmp_path).target)  # the answer key, on this host
    assert target.is_file()
    other = tmp_path / "tasks" / "agent" / "other-task" / "prediction.pptx"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"another pair's deck")
    script = ATTACK_SCRIPT.replace("sys.argv[1]", repr(str(target))).replace("sys.argv[2]", repr(str(other)))
    outcome, ws, results = run_script(tmp_path, script, renderer=libreoffice(tmp_path))
    assert results is not None, stderr_of(ws)
    for key in [k for k in results if k.startswith("read_")]:
        assert results[key]["error"] is True and "answer key" not in results[key]["text"], key
    # run_python runs in the CLI's jail (its own sandbox falls back to rlimits there: the jail's user
    # namespace maps no sandbox uid) and sees neither the target nor another pair's deck
    ran = json.loads(results["python"]["text"])
    assert ran["ok"] and not results["python"]["error"], ran
    found = json.loads(ran["stdout"])
    assert found[str(target)] is False and found[str(other)] is False, found
    assert results["target_visible"] is False and results["other_visible"] is False
    assert results["summary_link"]["error"] and "link" in results["summary_link"]["text"]
    assert results["render_link"]["error"] and results["render_link"]["images"] == 0
    assert results["summary_bomb"]["error"] and results["render_bomb"]["error"]
    assert "opens no path" in results["socket_path"]["error"]
    assert "over the service's limit" in results["socket_big"]["error"]
    assert any("render limit reached: 3 renders per pair" in (e or "") for e in results["flood"])
    assert not isinstance(outcome, Exception), f"{outcome}\n{stderr_of(ws)}"
    assert outcome.metadata["tools"]["renders"] == 3
    assert deck_tools.DECK_SERVER == outcome.metadata["tools"]["servers"][0]["name"]


@needs_soffice
@pytest.mark.slow
def test_unjailed_cli_gets_the_same_tools_and_host_renders(tmp_path):
    outcome, ws, results = run_script(tmp_path, TOOLS_SCRIPT, renderer=libreoffice(tmp_path), sandbox="off")
    assert results is not None, stderr_of(ws)
    assert not isinstance(outcome, Exception), f"{outcome}\n{stderr_of(ws)}"
    assert outcome.metadata["isolation"] == "none" and results["render"]["images"] == 2
    assert outcome.metadata["tools"]["renders"] == 1
    assert outcome.metadata["tools"]["calls"]["write_part"] == 1
    assert "Revnue" not in " ".join(deck_texts(outcome.path))


def test_the_jail_shows_the_server_its_code_and_never_a_forbidden_folder_or_a_plugin(tmp_path, monkeypatch):
    import importlib.util

    import pptarena.plugins
    from pptarena.plugins.agents.command import deck_tools
    from pptarena.run.jail import agent_jail

    binds = deck_tools.server_binds()
    names = {p.name for p in binds}
    assert {"mcp", "cryptography"} <= names  # the SDK and what an extra of its requirements brings
    plugins = Path(pptarena.plugins.__file__).parent
    assert [p for p in binds if p.is_relative_to(plugins)] in ([], [plugins / "__init__.py"])
    anyio = next(p for p in binds if p.name == "anyio")
    monkeypatch.setattr(agent_jail, "_FORBIDDEN", {anyio.resolve()})
    assert anyio not in deck_tools.server_binds()

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    from pptarena.types import ComponentUnavailable

    with pytest.raises(ComponentUnavailable, match=r"pptarena\[mcp\]"):
        deck_tools.require_sdk()


def test_render_service_bounds_connections_and_its_log(tmp_path, monkeypatch):
    from pptarena.mcp import socket_renderer

    monkeypatch.setattr(socket_renderer, "MAX_LOGGED_REFUSALS", 3)
    log = AgentLog(tmp_path / "agent.log.jsonl")
    folder = tmp_path / "svc"
    folder.mkdir()
    with RenderService(CountingRenderer(), folder, log, RenderCaps(max_connections=2)) as service:
        held = []
        for _ in range(2):  # two connections that never send: they hold both slots
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(service.socket_path))
            held.append(sock)
        import time

        answer: dict = {}
        for _ in range(100):  # until the service has taken both (its accept loop runs on its own)
            answer = raw_request(service.socket_path, b'{"op": "render", "size": 1}\n')
            if "too many render requests at once (at most 2)" in answer.get("error", ""):
                break
            time.sleep(0.05)
        assert "too many render requests at once (at most 2)" in answer["error"]
        for sock in held:
            sock.close()
        for _ in range(5):
            raw_request(service.socket_path, b"not json\n")
    refusals = [e for e in log.events if e["event"] == "render"]
    assert len(refusals) == 3 and all(not e["ok"] for e in refusals)
    summary = [e for e in log.events if e["event"] == "render_service"][0]
    # the "too many" answer and the 5 bad lines are refusals for sure; the two held connections are
    # counted too once the service has read their end, which may come after it stopped (a race)
    assert summary["renders"] == 0 and summary["refused"] >= 6
    assert summary["refusals_not_logged"] == summary["refused"] - 3


THIRD_PARTY_SERVER = textwrap.dedent(
    """\
    import os, pathlib
    import anyio
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="pptx-third-party")

    def peek(path: str) -> str:
        \"\"\"Whether a path exists where this server runs, and its first bytes.\"\"\"
        p = pathlib.Path(path)
        return f"{p.exists()} {p.read_bytes()[:20] if p.is_file() else b''}"

    def slide_count() -> str:
        \"\"\"The input deck's slide count (python-pptx), from the workspace the server runs in.\"\"\"
        from pptx import Presentation
        deck = next(pathlib.Path(os.environ["WORKSPACE"], "inputs").iterdir())
        return str(len(Presentation(deck).slides))

    server.add_tool(peek, structured_output=False)
    server.add_tool(slide_count, structured_output=False)
    anyio.run(server.run_stdio_async)
    """
)

THIRD_PARTY_CLIENT = CLIENT_HEAD.replace(
    '["mcpServers"]["deck"]', '["mcpServers"]["pptx"]'
) + textwrap.dedent(
    """\
    async def main():
        async with Client(params, mode="legacy") as client:
            results["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            results["count"] = await call(client, "slide_count")
            results["peek_target"] = await call(client, "peek", {"path": sys.argv[1]})
            results["peek_host"] = await call(client, "peek", {"path": sys.argv[2]})
        import shutil
        deck = next(pathlib.Path("inputs").iterdir())
        shutil.copyfile(deck, "output/demo-001.pptx")
    asyncio.run(main())
    pathlib.Path("results.json").write_text(json.dumps(results))
    """
)


@needs_bwrap
@pytest.mark.slow
def test_a_listed_third_party_server_runs_in_the_jail_with_the_workspace_only(tmp_path):
    server = tmp_path / "pptx_server.py"
    server.write_text(THIRD_PARTY_SERVER)
    target = Path(make_task(tmp_path).target)
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    script = THIRD_PARTY_CLIENT.replace("sys.argv[1]", repr(str(target))).replace(
        "sys.argv[2]", repr(str(secret))
    )
    path = tmp_path / "cli_agent.py"
    path.write_text(script)
    ws, _ = scripted_workspace(tmp_path, [])
    spec = {
        "name": "pptx",
        "command": [sys.executable, str(server)],
        "env": {"WORKSPACE": str(ws.dir / "cli")},
        "version": "0.4.2",
    }
    # mcp = true too: the jail then shows the SDK the script and this server import (a real
    # third-party server would bring its own installation, shown through read_only_paths)
    agent = make_agent(
        tmp_path, command=[sys.executable, str(path)], mcp=True, mcp_servers=[spec], timeout=120
    )
    pred = agent.edit(make_task(tmp_path), ws)
    results = json.loads((ws.dir / "cli" / "results.json").read_text())
    assert results["tools"] == ["peek", "slide_count"] and results["count"]["text"] == "2"
    assert (
        results["peek_target"]["text"].startswith("False") and "answer" not in results["peek_target"]["text"]
    )
    assert results["peek_host"]["text"].startswith("False")
    assert target.is_file() and secret.is_file()  # they exist on the host, not in the jail
    tools = pred.metadata["tools"]
    assert tools["calls"] == {} and tools["renders"] == 0  # the deck tools were not used
    assert [x["name"] for x in tools["servers"]] == ["deck", "pptx"]
    assert tools["servers"][1]["version"] == "0.4.2" and len(tools["servers"][1]["command_sha"]) == 16
    codex = tomllib.loads((ws.dir / "cli" / ".codex" / "config.toml").read_text())
    assert list(codex["mcp_servers"]) == ["deck", "pptx"]
    assert codex["mcp_servers"]["pptx"]["env"] == {"WORKSPACE": str(ws.dir / "cli")}
