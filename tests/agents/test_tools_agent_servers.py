"""The ``tools`` agent's ``mcp_servers``: a third-party-style stdio server, jailed for the pair.

The server (tests/fixtures/mcp_servers/prober.py, on the real MCP SDK) has two tools, ``read_path``
and ``write_path``; the scripted model calls them, as ``prober__read_path`` and
``prober__write_path``, as the attack: read a host secret, another pair's folder and the pair's own
log, write outside the server's folder. Everything outside the folder must fail, from inside the
jail; the row's ``tools`` names the server. Also: a server that exits at start is an infrastructure
error naming it, a server that dies mid-loop is a tool error to the model, ``deck_tools = false``
offers only the server's tools, tool-name clashes are refused, and without bubblewrap the server is
refused unless weak isolation is allowed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from pptarena.mcp.servers import McpServerSpec, server_record  # noqa: E402
from pptarena.plugins.agents.tools.agent import (  # noqa: E402
    SERVER_FOLDER,
    SERVERS_PROMPT,
    WEAK_ISOLATION_ENV,
    ToolsAgent,
    ToolsOptions,
)
from pptarena.plugins.agents.tools.schemas import McpToolSpec  # noqa: E402
from pptarena.plugins.agents.tools.servers import ToolTable  # noqa: E402
from pptarena.run.folder.records import tools_usage  # noqa: E402
from pptarena.trust import isolation  # noqa: E402
from pptarena.types import AgentTask, ComponentContext, InfraError  # noqa: E402
from tests.support.agents_fixtures import scripted_workspace  # noqa: E402

PROBER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "prober.py"
needs_bwrap = pytest.mark.skipif(isolation.base_flags() is None, reason="bubblewrap is not usable here")


def prober(name: str = "prober", *extra: str) -> McpServerSpec:
    return McpServerSpec(name=name, command=[sys.executable, str(PROBER), *extra], version="0.1")


def tool_use(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "reply": "",
        "raw": {"content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}]},
    }


def make_agent(tmp: Path, **options: Any) -> ToolsAgent:
    opts = ToolsOptions(model="scripted/tool-model", mcp_read_only=[str(PROBER.parent)], **options)
    return ToolsAgent(opts, ComponentContext(cache_dir=tmp, model=None))  # type: ignore[arg-type]


def answers(backend: Any) -> list[str]:
    """The text of every tool result the model was sent, in order."""
    out = []
    for request in backend.requests[1:]:
        part = request.messages[-1].parts()[0]
        out.append(str(part.content[0]))
    return out


def run_pair(tmp_path: Path, script: list[Any], **options: Any) -> tuple[Any, Any, Any]:
    ws, backend = scripted_workspace(tmp_path / "run" / "tasks" / "agent" / "pair", script)
    task = AgentTask(id="t1", instruction="Look around.", original=ws.input_deck)
    pred = make_agent(tmp_path, **options).edit(task, ws)
    return ws, backend, pred


# ----------------------------------------------------------------------------- the attack


@needs_bwrap
@pytest.mark.parametrize("cgroups", ["on", "off"])
def test_a_jailed_server_reads_and_writes_only_its_folder(tmp_path, monkeypatch, cgroups):
    """With cgroups, and without (as root: the server runs as a host uid of its own, its binds staged)."""
    import os

    if cgroups == "off":
        if os.geteuid() != 0:
            pytest.skip("the uid level needs the harness to run as root")
        monkeypatch.setenv("PPTARENA_CGROUPS", "off")
    pair_root = tmp_path / "run" / "tasks" / "agent"
    other = pair_root / "other-pair"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("OTHER PAIR SECRET")
    pair = pair_root / "pair" / "task"  # scripted_workspace's task folder
    folder = pair / SERVER_FOLDER
    outside = tmp_path / "escape.txt"
    script = [
        tool_use("prober__read_path", {"path": "/etc/shadow"}, "r1"),
        tool_use("prober__read_path", {"path": str(other / "secret.txt")}, "r2"),
        tool_use("prober__read_path", {"path": str(pair / "agent.log.jsonl")}, "r3"),
        tool_use("prober__read_path", {"path": str(pair / "input" / "deck.pptx")}, "r4"),
        tool_use("prober__read_path", {"path": str(folder / "deck.pptx")}, "r5"),
        tool_use("prober__write_path", {"path": str(outside), "text": "escaped"}, "w1"),
        tool_use("prober__write_path", {"path": "/usr/pptarena-escape.txt", "text": "escaped"}, "w2"),
        tool_use("prober__write_path", {"path": str(pair / "prediction.pptx"), "text": "x"}, "w3"),
        tool_use("prober__write_path", {"path": str(folder / "notes.txt"), "text": "kept"}, "w4"),
        "Done looking.",
    ]
    ws, backend, pred = run_pair(tmp_path, script, mcp_servers=[prober()])

    said = answers(backend)
    assert len(said) == 9, said
    for text in said[:4]:  # host secret, another pair, the pair's own log and input: not there
        assert text.startswith("READ FAILED"), said
    assert "OTHER PAIR SECRET" not in "".join(said)
    assert said[4].startswith("READ OK: PK"), said[4]  # the working copy in its own folder
    assert said[6].startswith("WRITE FAILED") and "Read-only file system" in said[6]
    assert said[8] == "WRITE OK"
    # what the jail let it write elsewhere (its own /tmp tmpfs, where the folders above its own
    # folder are empty stand-ins) never reached the host: the prediction below is the input deck
    assert not outside.exists() and not Path("/usr/pptarena-escape.txt").exists()
    assert (folder / "notes.txt").read_text() == "kept"
    # the prediction is the working copy, still the input deck (nothing edited it)
    assert pred.path == ws.output_deck
    assert pred.path.read_bytes() == ws.input_deck.read_bytes()

    record = pred.metadata["tools"]
    assert [s["name"] for s in record["servers"]] == ["deck", "prober"]
    assert record["servers"][1] == server_record(prober())
    assert record["calls"] == {"prober__read_path": 5, "prober__write_path": 4}
    assert record["errors"] == 0 and record["renders"] == 0
    assert tools_usage(record) == (record, "")  # the row keeps it as it is
    started = [e for e in ws.log.events if e["event"] == "mcp_server_start"]
    assert started[0]["server"] == "prober" and started[0]["isolation"] == "bwrap"
    if cgroups == "off":
        assert any("runs as host uid" in note for note in started[0]["notes"]), started[0]["notes"]
    offered = pred.metadata["tools_offered"]
    assert "deck_summary" in offered and offered[-2:] == ["prober__read_path", "prober__write_path"]


@needs_bwrap
def test_without_deck_tools_the_model_gets_only_the_servers_tools(tmp_path):
    script = [tool_use("deck_summary", {}, "d1"), "Nothing to do."]
    ws, backend, pred = run_pair(tmp_path, script, mcp_servers=[prober()], deck_tools=False)

    assert pred.metadata["tools_offered"] == ["prober__read_path", "prober__write_path"]
    offered = [t["name"] for t in backend.requests[0].params["tools"]]
    assert offered == ["prober__read_path", "prober__write_path"]
    assert backend.requests[0].messages[0].content == SERVERS_PROMPT
    # the task message names the working copy the servers edit
    assert str(ws.dir / SERVER_FOLDER / "deck.pptx") in str(backend.requests[0].messages[-1].content)
    assert "there is no tool 'deck_summary'" in answers(backend)[0]
    record = pred.metadata["tools"]
    assert [s["name"] for s in record["servers"]] == ["prober"]
    assert record["calls"] == {"deck_summary": 1} and record["errors"] == 1
    assert pred.path.read_bytes() == ws.input_deck.read_bytes()


# ----------------------------------------------------------------------------- failures


@needs_bwrap
def test_a_server_that_exits_at_start_is_an_infrastructure_error_naming_it(tmp_path):
    broken = prober("broken", "--exit-at-start")
    with pytest.raises(InfraError, match="MCP server 'broken'") as caught:
        run_pair(tmp_path, ["unused"], mcp_servers=[prober(), broken])
    assert "refusing to start" in str(caught.value)  # the end of its stderr


@needs_bwrap
def test_a_server_dying_mid_loop_is_a_tool_error_to_the_model(tmp_path):
    script = [
        tool_use("prober__read_path", {"path": "EXIT-NOW"}, "x1"),
        tool_use("prober__read_path", {"path": "/etc/hostname"}, "x2"),
        "The server is gone; stopping.",
    ]
    ws, backend, pred = run_pair(tmp_path, script, mcp_servers=[prober()], deck_tools=False)
    said = answers(backend)
    assert all("MCP server 'prober' is gone" in text or "failed" in text for text in said), said
    assert pred.metadata["tools"]["errors"] == 2
    assert pred.metadata["stop_reason"] == "done"


def test_a_server_is_refused_without_bubblewrap_unless_weak_isolation_is_allowed(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "base_flags", lambda: None)
    monkeypatch.delenv(WEAK_ISOLATION_ENV, raising=False)
    with pytest.raises(InfraError, match="MCP server 'prober': bubblewrap is not usable"):
        run_pair(tmp_path / "a", ["unused"], mcp_servers=[prober()])

    monkeypatch.setenv(WEAK_ISOLATION_ENV, "1")
    ws, _, pred = run_pair(tmp_path / "b", ["Nothing to do."], mcp_servers=[prober()])
    (started,) = [e for e in ws.log.events if e["event"] == "mcp_server_start"]
    assert started["isolation"] in ("unshare", "rlimits")
    assert any("bubblewrap unavailable" in note for note in started["notes"])
    assert pred.metadata["tools"]["servers"][1]["name"] == "prober"


# ----------------------------------------------------------------------------- naming


def spec(name: str) -> McpToolSpec:
    return McpToolSpec(name, "", {"type": "object"})


def test_server_tools_are_prefixed_and_deck_tools_keep_their_names():
    table = ToolTable()
    table.add_deck(object(), [spec("deck_summary")])
    table.add_server("pptx", object(), [spec("deck_summary"), spec("open")])
    assert table.names == ["deck_summary", "pptx__deck_summary", "pptx__open"]
    assert table.routes["pptx__open"].tool == "open" and table.routes["pptx__open"].server == "pptx"


def test_a_name_offered_twice_is_refused():
    table = ToolTable()
    table.add_server("a", object(), [spec("b__c")])
    with pytest.raises(InfraError, match="clash: 'a__b__c'"):
        table.add_server("a__b", object(), [spec("c")])


def test_names_the_providers_refuse_are_not_offered():
    table = ToolTable()
    table.add_server("s", object(), [spec("x" * 80), spec("has space"), spec("ok")])
    assert table.names == ["s__ok"] and len(table.skipped) == 2


def test_mcp_servers_options_are_checked():
    with pytest.raises(ValueError, match="names used twice"):
        ToolsOptions(model="scripted/m", mcp_servers=[prober(), prober()])
    with pytest.raises(ValueError, match="the name 'deck'"):
        ToolsOptions(model="scripted/m", mcp_servers=[prober("deck")])
    assert ToolsOptions(model="scripted/m", mcp_servers=[prober("deck")], deck_tools=False)
    with pytest.raises(ValueError, match="absolute"):
        ToolsOptions(model="scripted/m", mcp_read_only=["relative/folder"])
    opts = ToolsOptions.model_validate(
        json.loads(json.dumps({"model": "scripted/m", "mcp_servers": [{"name": "p", "command": ["x"]}]}))
    )
    assert opts.mcp_servers[0].name == "p"


# ----------------------------------------------------------------------------- through arena run

RUN_CONFIG = """
[run]
jobs = 1

[dataset]
use = "demo"

[[agents]]
use = "tools"
label = "prober-only"
model = "scripted/m"
deck_tools = false
mcp_read_only = ["{folder}"]
mcp_servers = [{{ name = "prober", command = ["{python}", "{script}"], version = "0.1" }}]

[[agents]]
use = "tools"
label = "deck-only"
model = "scripted/m"
max_steps = 3

[[judges]]
use = "structural"

[[backends.scripted.rules]]
match = "READ FAILED"
reply = "Done."

[[backends.scripted.rules]]
match = "there is no tool"
reply = "Done."

[[backends.scripted.rules]]
match = "Instruction"
[backends.scripted.rules.reply]
reply = ""
[backends.scripted.rules.reply.raw]
stop_reason = "tool_use"
[[backends.scripted.rules.reply.raw.content]]
type = "tool_use"
id = "r1"
name = "prober__read_path"
[backends.scripted.rules.reply.raw.content.input]
path = "/etc/shadow"
"""


@needs_bwrap
def test_arena_run_records_the_servers_in_rows_and_groups_the_summary_by_them(tmp_path):
    import os
    import subprocess

    config = tmp_path / "servers.toml"
    config.write_text(RUN_CONFIG.format(folder=PROBER.parent, python=sys.executable, script=PROBER))
    run_dir = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "run", "--config", str(config), "--out", str(run_dir)]
        + ["--quiet", "--task", "qbr-fix-typos"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {r["agent"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    assert all(r["status"] == "scored" for r in rows.values()), rows
    assert rows["prober-only"]["tools"] == {
        "servers": [server_record(prober())],
        "calls": {"prober__read_path": 1},
        "errors": 0,
        "renders": 0,
    }
    assert [s["name"] for s in rows["deck-only"]["tools"]["servers"]] == ["deck"]
    assert rows["deck-only"]["tools"]["errors"] == 1  # it asked for the prober's tool, not offered to it
    log = (run_dir / "tasks" / "prober-only" / "qbr-fix-typos" / "agent.log.jsonl").read_text()
    started = [json.loads(line) for line in log.splitlines() if '"mcp_server_start"' in line]
    assert started[0]["isolation"] == "bwrap"

    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary["agents"]["prober-only"]["groups"]["mcp_servers"]) == {"prober"}
    assert set(summary["agents"]["deck-only"]["groups"]["mcp_servers"]) == {"deck"}
    shown = subprocess.run(
        [sys.executable, "-m", "pptarena.cli", "report", str(run_dir), "--no-render"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    html = (run_dir / "report.html").read_text()
    assert "By MCP servers" in html and "prober" in html.split("By MCP servers", 1)[1]


# ----------------------------------------------------------------------------- the jail's limits


@needs_bwrap
def test_a_jailed_server_runs_under_its_limits_and_dies_with_the_block(tmp_path):
    """The server's own /proc/self/limits (read through its tool) shows the CPU, memory and file-size
    caps; its processes are in the server's cgroup (or run as its uid) and are gone after the block."""
    import os

    import anyio
    from mcp import Client

    from pptarena.mcp.jailed_stdio import JailedServer, ServerLimits

    limits = ServerLimits(memory_mb=700, max_processes=32, cpu_seconds=77, file_size_mb=5)
    seen: dict[str, Any] = {}

    async def talk(js: JailedServer) -> None:
        async with Client(js.transport()) as client:
            result = await client.call_tool("read_path", {"path": "/proc/self/limits"})
            seen["limits"] = result.content[0].text
            big = await client.call_tool("write_path", {"path": "big.txt", "text": "x" * (6 * 1024 * 1024)})
            seen["big"] = big.content[0].text
            seen["pids"] = js._group.pids() if js._group is not None else []  # noqa: SLF001
            seen["level"] = js.events().get("level")

    js = JailedServer(prober(), tmp_path / "work", tmp_path, limits=limits, read_only=[PROBER.parent])
    with js:
        anyio.run(talk, js)
    text = seen["limits"]
    assert text.startswith("READ OK"), text
    assert "Max cpu time              77" in text
    assert "Max file size             5242880" in text
    # the 6 MB write stopped at the 5 MB file-size cap
    assert (
        seen["big"].startswith("WRITE FAILED") or (tmp_path / "work" / "big.txt").stat().st_size <= 5 * 2**20
    )
    if js.events().get("level") in ("cgroup1", "cgroup2"):
        assert seen["pids"], "the server's processes are in its cgroup"
    for pid in seen["pids"]:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
