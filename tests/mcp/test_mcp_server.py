"""``arena mcp`` through the official SDK's own client: over stdio against a real ``arena mcp``
subprocess (one per module, real LibreOffice renders), one streamable-HTTP round trip on loopback,
in-process sessions for the rest, and the attacks written as attacks.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from PIL import Image

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio  # noqa: E402
from anyio.from_thread import start_blocking_portal  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from pptarena.deck import DeckError, summarize  # noqa: E402
from pptarena.mcp import (  # noqa: E402
    TOOL_NAMES,
    DeckSession,
    ToolLimits,
    build_server,
    connect_in_memory,
)
from pptarena.plugins.datasets.demo.decks import build_birds, build_qbr  # noqa: E402
from pptarena.types import AgentLog, SlideImage  # noqa: E402
from tests.support.render_fixtures import needs_soffice  # noqa: E402

SECRET = "the-answer-key-4711"
TITLE_PROGRAM = """
from pptx import Presentation
prs = Presentation(DECK_PATH)
prs.slides[{index}].shapes.title.text = {text!r}
prs.save(DECK_PATH)
print("saved")
"""


def text_of(result) -> str:
    """The text blocks of a tool result, joined."""
    return "\n".join(c.text for c in result.content if c.type == "text")


def slide_title(deck: Path, number: int) -> str | None:
    """The title of slide ``number`` of ``deck`` (deck engine summary)."""
    return summarize(deck)["slides"][number - 1].get("title")


class Remote:
    """A connected SDK client driven from synchronous tests through a blocking portal."""

    def __init__(self, portal, client):
        self.portal, self.client = portal, client

    def call(self, name: str, args: dict | None = None):
        return self.portal.call(self.client.call_tool, name, args or {})

    def tools(self):
        return self.portal.call(self.client.list_tools).tools


def in_memory(session: DeckSession, *calls: tuple[str, dict]) -> list:
    """Call tools on ``session`` through the in-memory client; the results in order."""

    async def go():
        async with connect_in_memory(build_server(session)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


@pytest.fixture(scope="module")
def demo_deck(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "qbr.pptx"
    build_qbr(path)
    return path


@pytest.fixture(scope="module")
def stdio(tmp_path_factory, demo_deck):
    """A real ``arena mcp --deck qbr.pptx --out OUT`` subprocess over stdio, with the SDK's client."""
    folder = tmp_path_factory.mktemp("stdio")
    out, log = folder / "out.pptx", folder / "agent.log.jsonl"
    renderer = "libreoffice" if shutil.which("soffice") else "none"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pptarena.cli", "mcp", "--deck", str(demo_deck), "--out", str(out)]
        + ["--renderer", renderer, "--log", str(log)],
        env={**os.environ},
    )
    with start_blocking_portal() as portal:
        # legacy: the initialize handshake the common CLI agents use (HTTP below negotiates "auto")
        with portal.wrap_async_context_manager(Client(params, mode="legacy")) as client:
            remote = Remote(portal, client)
            remote.out, remote.log, remote.deck = out, log, demo_deck
            yield remote


# ------------------------------------------------------------------ the tools over stdio


@pytest.mark.slow
def test_stdio_lists_every_tool_with_its_schema_and_description(stdio):
    tools = {t.name: t for t in stdio.tools()}
    assert set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert len(tool.description or "") > 60, tool.name
        assert tool.input_schema["type"] == "object"
    assert tools["read_part"].input_schema["required"] == ["name"]
    assert sorted(tools["write_part"].input_schema["required"]) == ["name", "xml"]
    assert tools["run_python"].input_schema["required"] == ["code"]
    slides = tools["render_slides"].input_schema["properties"]["slides"]
    assert "1-based" in slides["description"] and "required" not in tools["render_slides"].input_schema
    assert tools["deck_diff"].input_schema["properties"] == {}
    assert tools["write_part"].annotations.read_only_hint is False
    assert tools["deck_summary"].annotations.read_only_hint is True


@pytest.mark.slow
def test_stdio_reading_tools_on_the_demo_deck(stdio):
    summary = json.loads(text_of(stdio.call("deck_summary")))
    assert summary["slide_count"] == 6 and len(summary["slides"]) == 6
    assert summary["file"] == "qbr.pptx"
    two = json.loads(text_of(stdio.call("deck_summary", {"slides": [2]})))
    assert [s["number"] for s in two["slides"]] == [2]

    parts = json.loads(text_of(stdio.call("list_parts")))
    rows = {p["name"]: p for p in parts["parts"]}
    assert rows["ppt/slides/slide1.xml"]["editable"] is True
    assert rows["[Content_Types].xml"]["editable"] is False
    assert parts["count"] == len(rows)

    xml = text_of(stdio.call("read_part", {"name": "ppt/slides/slide1.xml"}))
    assert xml.startswith("<?xml") and "<p:sld " in xml
    rels = text_of(stdio.call("read_part", {"name": "ppt/slides/_rels/slide1.xml.rels"}))
    assert "Relationship " in rels
    media = next(n for n in rows if n.startswith("ppt/media/"))
    refused = stdio.call("read_part", {"name": media})
    assert refused.is_error and "binary part" in text_of(refused)

    report = json.loads(text_of(stdio.call("validate")))
    assert report["opens"] is True and report["slides"] == 6 and report["unreadable_parts"] == []
    assert report["ok"] is True


@pytest.mark.slow
@needs_soffice
def test_stdio_render_slides_returns_png_images_within_the_caps(stdio):
    limits = ToolLimits()
    result = stdio.call("render_slides", {"slides": [1, 4]})
    assert not result.is_error, text_of(result)
    images = [c for c in result.content if c.type == "image"]
    assert len(images) == 2 and all(i.mime_type == "image/png" for i in images)
    import base64

    for block in images:
        data = base64.b64decode(block.data)
        assert len(data) <= limits.max_image_bytes
        with Image.open(io.BytesIO(data)) as png:
            assert png.format == "PNG"
            assert max(png.size) <= limits.max_image_edge
            assert png.width > png.height  # a 4:3 slide
            assert len(png.getcolors(maxcolors=1 << 20) or []) > 10  # drawn, not a blank page
    assert "slide 1: image 1" in text_of(result) and "slide 4: image 2" in text_of(result)
    report = json.loads(text_of(stdio.call("validate")))
    assert report["render"] == {"ok": True, "slides_rendered": 6}


@pytest.mark.slow
def test_stdio_write_part_shows_in_deck_diff_and_in_out(stdio):
    old = text_of(stdio.call("read_part", {"name": "ppt/slides/slide3.xml"}))
    title = slide_title(stdio.deck, 3)
    assert title and title in old
    result = stdio.call(
        "write_part", {"name": "ppt/slides/slide3.xml", "xml": old.replace(title, "Rewritten")}
    )
    assert not result.is_error, text_of(result)
    diff = json.loads(text_of(stdio.call("deck_diff")))
    assert any(e["slide"] == 3 and e["new"] == "Rewritten" for e in diff["edits"]), diff["edits"]
    assert slide_title(stdio.out, 3) == "Rewritten"
    assert slide_title(stdio.deck, 3) == title  # the input deck is never written


@pytest.mark.slow
def test_stdio_run_python_edits_a_title(stdio):
    result = stdio.call("run_python", {"code": TITLE_PROGRAM.format(index=4, text="Edited by a program")})
    assert not result.is_error, text_of(result)
    reply = json.loads(text_of(result))
    assert reply["ok"] and reply["stdout"] == "saved\n" and reply["deck"].startswith("saved")
    diff = json.loads(text_of(stdio.call("deck_diff")))
    assert any(e["slide"] == 5 and e["new"] == "Edited by a program" for e in diff["edits"])
    assert slide_title(stdio.out, 5) == "Edited by a program"


@pytest.mark.slow
def test_stdio_every_call_is_logged(stdio):
    stdio.call("deck_summary", {"slides": [1]})
    events = [json.loads(line) for line in stdio.log.read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    assert calls and {"tool", "args", "ok", "seconds", "error"} <= set(calls[-1])
    assert calls[-1]["tool"] == "deck_summary" and calls[-1]["args"] == {"slides": [1]} and calls[-1]["ok"]


# ------------------------------------------------------------------ HTTP, a corpus deck, the SDK


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_streamable_http_round_trip_on_loopback(tmp_path, demo_deck):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pptarena.cli", "mcp", "--deck", str(demo_deck), "--renderer", "none"]
        + ["--http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "arena mcp --http did not listen"
                time.sleep(0.2)

        async def go():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                summary = await client.call_tool("deck_summary", {"slides": [1]})
                render = await client.call_tool("render_slides", {"slides": [1]})
                return names, summary, render

        names, summary, render = anyio.run(go)
        assert names == set(TOOL_NAMES)
        assert json.loads(text_of(summary))["slides"][0]["number"] == 1
        assert render.is_error and "no renderer" in text_of(render) and "--renderer none" in text_of(render)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


def test_http_refuses_a_non_loopback_address(demo_deck):
    from pptarena.mcp import serve_http

    with DeckSession(demo_deck) as session:
        with pytest.raises(ValueError, match="loopback only"):
            serve_http(build_server(session), 8999, host="0.0.0.0")


def test_a_corpus_deck_through_the_in_memory_client(corpus_dir):
    deck = corpus_dir / "openxmlsdk_Bug571679_Brownbag.pptx"
    if not deck.is_file():
        pytest.skip(f"{deck.name} is not in the corpus")
    with DeckSession(deck) as session:
        summary, parts, report, diff = in_memory(
            session, ("deck_summary", {}), ("list_parts", {}), ("validate", {}), ("deck_diff", {})
        )
        assert not summary.is_error and json.loads(text_of(summary))["slide_count"] >= 1
        assert json.loads(text_of(parts))["count"] > 5
        checked = json.loads(text_of(report))
        assert checked["opens"] and checked["render"].startswith("not checked: no renderer")
        assert json.loads(text_of(diff))["edit_count"] == 0


def test_connect_in_memory_is_the_sdk_client(demo_deck):
    with DeckSession(demo_deck) as session:
        assert isinstance(connect_in_memory(build_server(session)), Client)


def test_without_the_sdk_the_message_says_how_to_install_it(monkeypatch):
    from click.testing import CliRunner

    from pptarena.cli.mcp import mcp_command
    from pptarena.mcp import require_sdk

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'pptarena\[mcp\]'"):
        require_sdk()
    result = CliRunner().invoke(mcp_command, ["--deck", __file__])
    assert result.exit_code == 1
    assert "arena mcp is not available: the `mcp` package is not installed" in result.output


def test_the_xml_branch_uses_the_deck_engine_guard():
    from pptarena.deck import parts
    from pptarena.plugins.agents.pptpilot import package_parts

    assert package_parts.check_part is parts.check_part
    assert package_parts.write_package is parts.write_package
    assert package_parts.DeckParts is parts.DeckParts


# ------------------------------------------------------------------ failed edits change nothing


@pytest.mark.slow
def test_failed_edits_leave_the_working_copy_as_it_was(tmp_path, demo_deck):
    out = tmp_path / "out.pptx"
    log = AgentLog(None)  # events kept in memory
    with DeckSession(demo_deck, out=out, log=log) as session:
        before = session.work_deck.read_bytes()
        old = in_memory(session, ("read_part", {"name": "ppt/slides/slide5.xml"}))[0]
        assert 'r:embed="' in text_of(old)
        results = in_memory(
            session,
            ("write_part", {"name": "ppt/slides/slide2.xml", "xml": "<p:sld"}),  # not well-formed
            (
                "write_part",
                {"name": "ppt/slides/slide5.xml", "xml": text_of(old).replace('r:embed="', 'r:embed="X')},
            ),
            ("write_part", {"name": "[Content_Types].xml", "xml": "<Types/>"}),  # not editable
            ("run_python", {"code": "raise SystemExit('I give up')"}),
            (
                "run_python",
                {"code": TITLE_PROGRAM.format(index=0, text="half done") + "\nraise ValueError('late')"},
            ),
            ("run_python", {"code": "open(DECK_PATH, 'wb').write(b'not a deck')"}),  # saves garbage
            ("run_python", {"code": "def broken(:\n  pass"}),
        )
        messages = [text_of(r) for r in results]
        assert all(r.is_error for r in results), messages
        assert "not well-formed" in messages[0]
        assert "relationship ids that do not exist" in messages[1]
        assert "not an editable part" in messages[2]
        assert "I give up" in messages[3] and "late" in messages[4]
        assert "does not open" in messages[5] and "unchanged" in messages[5]
        assert "does not compile" in messages[6]
        assert session.work_deck.read_bytes() == before
        assert not out.exists()  # no successful edit, nothing published
        assert session.counters.edits == 0 and session.counters.failures["run_python"] == 4
        logged = [e for e in log.events if e["event"] == "tool_call"]
        assert [e["ok"] for e in logged] == [True] + [False] * 7
        assert logged[4]["error"] == messages[3].removeprefix("Error executing tool run_python: ")
        assert logged[1]["args"]["xml"] == "<p:sld"


@pytest.mark.slow
def test_run_python_time_limit(demo_deck):
    with DeckSession(demo_deck, limits=ToolLimits(run_python_seconds=2)) as session:
        before = session.work_deck.read_bytes()
        (result,) = in_memory(session, ("run_python", {"code": "while True:\n    pass"}))
        assert result.is_error and '"timed_out":true' in text_of(result)
        assert session.work_deck.read_bytes() == before


# ------------------------------------------------------------------ attacks


@pytest.mark.parametrize(
    "name",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "ppt/../../../etc/passwd",
        "ppt/slides/../../../../etc/passwd",
        "C:\\Windows\\win.ini",
        "ppt\\slides\\slide1.xml",
        "ppt//slides/slide1.xml",
        "ppt/slides/slide1.xml\x00.png",
        "x" * 5000,
        "",
    ],
)
def test_read_and_write_part_take_zip_member_names_never_paths(demo_deck, name):
    with DeckSession(demo_deck) as session:
        before = session.work_deck.read_bytes()
        read, write = in_memory(
            session, ("read_part", {"name": name}), ("write_part", {"name": name, "xml": "<x/>"})
        )
        for result in (read, write):
            assert result.is_error
            assert "root:" not in text_of(result)
            assert "part name" in text_of(result) or "non-empty" in text_of(result)
        assert session.work_deck.read_bytes() == before


def test_a_part_that_is_not_in_the_deck_is_refused(demo_deck):
    with DeckSession(demo_deck) as session:
        (result,) = in_memory(session, ("read_part", {"name": "etc/passwd"}))
        assert result.is_error and "has no part 'etc/passwd'" in text_of(result)


def test_a_swapped_working_folder_is_refused(tmp_path, demo_deck):
    work = tmp_path / "workspace"
    work.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    build_birds(elsewhere / "qbr.pptx")  # the deck the attacker wants the server to read or overwrite
    secret = (elsewhere / "qbr.pptx").read_bytes()
    with DeckSession(demo_deck, work_deck=work / "qbr.pptx") as session:
        work.rename(tmp_path / "moved")
        work.symlink_to(elsewhere, target_is_directory=True)
        results = in_memory(
            session,
            ("deck_summary", {}),
            ("read_part", {"name": "ppt/slides/slide1.xml"}),
            ("run_python", {"code": TITLE_PROGRAM.format(index=0, text="pwned")}),
        )
        for result in results:
            assert result.is_error and "working folder" in text_of(result), text_of(result)
            assert "Bird" not in text_of(result)
        assert (elsewhere / "qbr.pptx").read_bytes() == secret


def test_a_working_copy_swapped_for_a_link_or_a_fifo_is_refused(tmp_path, demo_deck):
    work = tmp_path / "workspace"
    work.mkdir()
    secret = tmp_path / "secret.pptx"
    build_birds(secret)
    with DeckSession(demo_deck, work_deck=work / "deck.pptx") as session:
        (work / "deck.pptx").unlink()
        (work / "deck.pptx").symlink_to(secret)
        (linked,) = in_memory(session, ("deck_summary", {}))
        assert linked.is_error and "symbolic link" in text_of(linked) and "Bird" not in text_of(linked)
        (work / "deck.pptx").unlink()
        os.mkfifo(work / "deck.pptx")
        (fifo,) = in_memory(session, ("list_parts", {}))  # would block for ever if opened blindly
        assert fifo.is_error and "not a regular file" in text_of(fifo)


def test_huge_parts_are_refused_both_ways(demo_deck):
    limits = ToolLimits(max_part_bytes=2_000)
    with zipfile.ZipFile(demo_deck) as zf:
        biggest = max((i for i in zf.infolist() if i.filename.endswith(".xml")), key=lambda i: i.file_size)
    assert biggest.file_size > 2_000
    with DeckSession(demo_deck, limits=limits) as session:
        before = session.work_deck.read_bytes()
        read, write = in_memory(
            session,
            ("read_part", {"name": biggest.filename}),
            ("write_part", {"name": "ppt/slides/slide1.xml", "xml": "<p:sld>" + " " * 5_000 + "</p:sld>"}),
        )
        assert read.is_error and "over the limit" in text_of(read)
        assert write.is_error and "over the 2000-byte limit" in text_of(write)
        assert session.work_deck.read_bytes() == before


def _zip_bomb(src: Path, dst: Path, megabytes: int = 48) -> None:
    """``src`` with slide 1 padded by ``megabytes`` MB of blanks (inflating about 1000:1)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "ppt/slides/slide1.xml":
                end = data.rindex(b"</p:sld>")
                with zout.open(info.filename, "w", force_zip64=True) as fh:
                    fh.write(data[:end])
                    block = b" " * (1 << 20)
                    for _ in range(megabytes):
                        fh.write(block)
                    fh.write(data[end:])
            else:
                zout.writestr(info, data)


@pytest.mark.slow
def test_a_zip_bomb_deck_is_refused_at_start_and_as_a_swapped_working_copy(tmp_path, demo_deck):
    bomb = tmp_path / "bomb.pptx"
    _zip_bomb(demo_deck, bomb)
    assert bomb.stat().st_size < 5 << 20
    with pytest.raises(DeckError, match="zip bomb"):
        DeckSession(bomb)
    work = tmp_path / "workspace"
    work.mkdir()
    with DeckSession(demo_deck, work_deck=work / "deck.pptx") as session:
        shutil.copyfile(bomb, work / "deck.pptx")  # the agent side swaps the working copy
        results = in_memory(
            session,
            ("deck_summary", {}),
            ("read_part", {"name": "ppt/slides/slide1.xml"}),
            ("validate", {}),
            ("write_part", {"name": "ppt/slides/slide2.xml", "xml": "<p:sld/>"}),
        )
        assert all(r.is_error for r in results[:2]) and "zip bomb" in text_of(results[0])
        assert not json.loads(text_of(results[2]))["ok"]
        assert results[3].is_error


class PillowRenderer:
    """A renderer drawing one noisy 400x300 PNG per slide (for the render caps, without an office):
    noise does not compress, so each image is about as big as a real slide render."""

    def __init__(self):
        self.decks = 0

    def render(self, deck_path: Path, out_dir: Path) -> list[SlideImage]:
        self.decks += 1
        out_dir.mkdir(parents=True, exist_ok=True)
        images = []
        for n in range(1, len(summarize(deck_path)["slides"]) + 1):
            path = out_dir / f"slide-{n:03d}.png"
            Image.effect_noise((400, 300), 40 + n).convert("RGB").save(path)
            images.append(SlideImage(n, None, path, 400, 300))
        return images


@pytest.mark.slow
def test_thousands_of_render_calls_hit_the_session_cap(demo_deck):
    renderer = PillowRenderer()
    limits = ToolLimits(max_renders=100)
    with DeckSession(demo_deck, renderer=renderer, limits=limits) as session:

        async def go():
            async with connect_in_memory(build_server(session)) as client:
                return [await client.call_tool("render_slides", {"slides": [1]}) for _ in range(1_000)]

        results = anyio.run(go)
        assert sum(not r.is_error for r in results) == 100
        refused = results[100:]
        assert all(
            r.is_error and "render limit reached (100 renders per session)" in text_of(r) for r in refused
        )
        assert session.counters.renders == 100 and renderer.decks == 1  # one deck version: rendered once


@pytest.mark.slow
def test_one_render_call_is_capped_in_slides_and_bytes(tmp_path, demo_deck):
    from pptarena.mcp.images import fit_png

    probe = PillowRenderer().render(demo_deck, tmp_path / "probe")
    sizes = [len(fit_png(i.path, 1280, 10**7)[0]) for i in probe[:3]]
    assert max(sizes) < 1.3 * min(sizes)
    limits = ToolLimits(max_slides_per_render=3, max_call_image_bytes=int(1.5 * max(sizes)))
    with DeckSession(demo_deck, renderer=PillowRenderer(), limits=limits) as session:
        many, whole = in_memory(
            session, ("render_slides", {"slides": [1, 2, 3, 4]}), ("render_slides", {"slides": [1, 2, 3]})
        )
        assert many.is_error and "over the limit of 3 per call" in text_of(many)
        shown = [c for c in whole.content if c.type == "image"]
        assert len(shown) == 1 and f"capped at {limits.max_call_image_bytes} bytes" in text_of(whole)
        assert text_of(whole).count("left out") == 2


def test_the_call_cap_stops_a_flood(demo_deck):
    with DeckSession(demo_deck, limits=ToolLimits(max_calls=5)) as session:
        results = in_memory(session, *[("list_parts", {})] * 8)
        assert [r.is_error for r in results] == [False] * 5 + [True] * 3
        assert "tool call limit reached: 5 calls" in text_of(results[-1])


def test_no_renderer_is_a_clear_error(demo_deck):
    with DeckSession(demo_deck, renderer_note="started with --renderer none") as session:
        (result,) = in_memory(session, ("render_slides", {}))
        assert result.is_error and "no renderer (started with --renderer none)" in text_of(result)


@pytest.mark.slow
def test_run_python_sees_only_the_working_copy(tmp_path, demo_deck):
    home = tmp_path / "dataset"
    home.mkdir()
    deck = home / "task.pptx"
    shutil.copyfile(demo_deck, deck)
    (home / "target.pptx").write_text(SECRET)  # the answer key beside the input deck
    out = tmp_path / "out" / "out.pptx"
    probe = f"""
import json, os
paths = {[str(deck), str(home / "target.pptx"), str(home), str(out.parent), str(tmp_path), "/etc/shadow"]!r}
seen = {{}}
for p in paths:
    try:
        seen[p] = open(p).read()[:100] if os.path.isfile(p) else os.listdir(p)
    except OSError as exc:
        seen[p] = type(exc).__name__
seen["cwd"] = sorted(os.listdir("."))
try:
    open({str(home / "planted.txt")!r}, "w").write("x")
    seen["write"] = "written"
except OSError as exc:
    seen["write"] = type(exc).__name__
print(json.dumps(seen))
"""
    with DeckSession(deck, out=out) as session:
        (result,) = in_memory(session, ("run_python", {"code": probe}))
        assert not result.is_error, text_of(result)
        reply = json.loads(text_of(result))
        if reply["isolation"] != "bwrap":
            pytest.skip(f"no bubblewrap here ({reply['isolation']}): the sandbox view is not private")
        seen = json.loads(reply["stdout"])
        assert SECRET not in text_of(result)
        for path in (
            str(deck),
            str(home / "target.pptx"),
            str(home),
            str(out.parent),
            str(tmp_path),
            "/etc/shadow",
        ):
            assert seen[path] == "FileNotFoundError", (path, seen[path])
        assert seen["write"] in ("FileNotFoundError", "PermissionError", "OSError")
        assert not (home / "planted.txt").exists()
        assert set(seen["cwd"]) <= {
            "input.pptx",
            "deck.pptx",
            "program.py",
            ".sandbox_main.py",
            ".sandbox_input.json",
        }
        assert str(session.scratch) not in text_of(result)


def test_arena_mcp_refuses_an_unreadable_deck_before_serving(tmp_path, demo_deck):
    from click.testing import CliRunner

    from pptarena.cli.mcp import mcp_command

    bomb = tmp_path / "bomb.pptx"
    _zip_bomb(demo_deck, bomb, megabytes=8)
    result = CliRunner().invoke(mcp_command, ["--deck", str(bomb), "--renderer", "none"])
    assert result.exit_code == 1 and "cannot serve" in result.output and "zip bomb" in result.output
    nowhere = tmp_path / "missing" / "deck.pptx"
    result = CliRunner().invoke(mcp_command, ["--deck", str(demo_deck), "--work", str(nowhere)])
    assert result.exit_code == 1 and "its folder does not exist" in result.output
