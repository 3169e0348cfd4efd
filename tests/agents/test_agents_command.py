"""The command agent with small Python scripts as the CLI agent."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import SecretStr

from pptarena.types import AgentError, ComponentUnavailable
from tests.support.agents_fixtures import deck_texts, events, make_task, scripted_workspace

EDIT_SCRIPT = textwrap.dedent(
    """\
    import os, pathlib, re, sys
    from pptx import Presentation
    task = pathlib.Path(sys.argv[1]).read_text()
    contract = pathlib.Path("OUTPUT_INSTRUCTIONS.md").read_text()
    out = re.search(r"exactly\\*\\* as `([^`]+)`", contract).group(1)
    deck = next(pathlib.Path("inputs").iterdir())
    prs = Presentation(deck)
    prs.slides[1].placeholders[1].text_frame.paragraphs[0].runs[0].text = "Revenue growth"
    prs.save(out)
    print("goal was:", task.split("## Goal")[1].strip().splitlines()[0])
    print("secret length", len(os.environ["MY_TOKEN"]))
    print("warning on stderr", file=sys.stderr)
    """
)


def _jail_usable() -> bool:
    from pptarena.trust import isolation

    return isolation.base_flags() is not None


def make_agent(tmp_path, **options):
    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path, model=None, name="command", label="cli")  # type: ignore[arg-type]
    return get_registry().create("agents", "command", options, ctx)


@pytest.mark.slow
def test_cli_agent_edits_the_deck(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(EDIT_SCRIPT)
    ws, _ = scripted_workspace(tmp_path, [])
    agent = make_agent(
        tmp_path,
        command=[sys.executable, str(script), "{task_md}"],
        env={"MY_TOKEN": SecretStr("s3cr3t-value-123")},
    )
    task = make_task(tmp_path)
    pred = agent.edit(task, ws)
    assert "Revenue growth" in deck_texts(pred.path) and pred.metadata["returncode"] == 0
    cli = ws.dir / "cli"
    assert (cli / "inputs" / "deck.pptx").read_bytes() == ws.input_deck.read_bytes()
    assert (cli / "output" / "demo-001.pptx").is_file()
    task_md = (cli / "TASK.md").read_text()
    assert task_md.startswith("# Task: demo-001\n") and task.instruction in task_md
    assert "output/demo-001.pptx" in (cli / "OUTPUT_INSTRUCTIONS.md").read_text()
    stdout = (ws.dir / "cli.stdout.txt").read_text()
    assert "goal was: Fix the typo 'Revnue' on slide 2." in stdout and "secret length 16" in stdout
    assert "warning on stderr" in (ws.dir / "cli.stderr.txt").read_text()
    assert "s3cr3t-value-123" not in ws.log.path.read_text()
    assert events(ws, "command_start")[0]["env_keys"] == ["MY_TOKEN"]


def test_string_command_placeholders_and_customization(tmp_path):
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "CLAUDE.md").write_text("be careful")
    (custom / "TASK.md").write_text("must not overwrite the task")
    ws, _ = scripted_workspace(tmp_path, [])
    code = "import shutil,sys; shutil.copy(sys.argv[1], sys.argv[2] + '/demo-001.pptx')"
    agent = make_agent(
        tmp_path,
        command=f'{sys.executable} -c "{code}" {{input}} {{output_dir}}',
        customization_dir=str(custom),
    )
    pred = agent.edit(make_task(tmp_path), ws)
    assert pred.path.read_bytes() == ws.input_deck.read_bytes()
    assert (ws.dir / "cli" / "CLAUDE.md").read_text() == "be careful"
    assert (ws.dir / "cli" / "TASK.md").read_text().startswith("# Task: demo-001")


def test_missing_output_names_the_expected_path(tmp_path):
    ws, _ = scripted_workspace(tmp_path, [])
    agent = make_agent(
        tmp_path, command=[sys.executable, "-c", "open('output/wrong.pptx','w').write('x'); exit(3)"]
    )
    with pytest.raises(AgentError) as info:
        agent.edit(make_task(tmp_path), ws)
    message = str(info.value)
    assert "cli/output/demo-001.pptx" in message and "exit status 3" in message and "wrong.pptx" in message


@pytest.mark.slow
def test_broken_output_and_timeout(tmp_path):
    ws, _ = scripted_workspace(tmp_path, [])
    agent = make_agent(
        tmp_path, command=[sys.executable, "-c", "open('output/demo-001.pptx','w').write('not a deck')"]
    )
    with pytest.raises(AgentError, match="does not open"):
        agent.edit(make_task(tmp_path), ws)
    slow = make_agent(tmp_path, command=[sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)
    with pytest.raises(AgentError, match="timed out after 1s"):
        slow.edit(make_task(tmp_path), ws)
    assert events(ws, "command_end")[-1]["timed_out"] is True


def test_command_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match="bad placeholder"):
        make_agent(tmp_path, command=["run", "{inptu}"])
    with pytest.raises(ValueError, match="empty"):
        make_agent(tmp_path, command="")
    ws, _ = scripted_workspace(tmp_path, [])
    with pytest.raises(ComponentUnavailable, match="command not found"):
        make_agent(tmp_path, command=["/no/such/agent-binary"]).edit(make_task(tmp_path), ws)


def test_environment_is_minimal_unless_inherited(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_ONLY_TOKEN", "judge-token-123456789")
    agent = make_agent(tmp_path, command=["x"], env={"MY_TOKEN": SecretStr("s3cr3t-value-123")})
    env = agent.environment()
    assert "JUDGE_ONLY_TOKEN" not in env and env["MY_TOKEN"] == "s3cr3t-value-123"
    assert set(env) <= {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "MY_TOKEN"}
    inherited = make_agent(tmp_path, command=["x"], inherit_env=True).environment()
    assert inherited["JUDGE_ONLY_TOKEN"] == "judge-token-123456789"


def test_allow_list_entries_and_matching():
    from pptarena.plugins.agents.command.network import allow_entries
    from pptarena.plugins.agents.command.proxy import parse_entry

    assert parse_entry("api.anthropic.com").ports == (443, 80)
    assert parse_entry("http://127.0.0.1:8000/v1") == parse_entry("127.0.0.1:8000")
    assert parse_entry("[::1]:9000").host == "::1" and parse_entry("[::1]:9000").loopback
    wild = parse_entry("*.example.com:443")
    assert wild.matches("api.example.com", 443) and not wild.matches("example.com", 443)
    assert not wild.matches("api.example.com.evil.org", 443) and not wild.matches("api.example.com", 80)
    exact = parse_entry("example.com")
    assert exact.matches("EXAMPLE.com.", 443) and not exact.matches("example.com.evil.org", 443)
    for bad in ("", "a b", "host:99999", "user@host", "ho*st"):
        with pytest.raises(ValueError):
            parse_entry(bad)
    with pytest.raises(ValueError, match="allow_hosts entry"):
        make_agent(Path("/tmp"), command=["x"], allow_hosts=["a b"])
    entries = allow_entries(["api.openai.com"], ["http://127.0.0.1:4000/v1", "not a url", "secret-value"])
    assert [(e.host, e.ports) for e in entries] == [("api.openai.com", (443, 80)), ("127.0.0.1", (4000,))]


FETCH = textwrap.dedent(
    """\
    import os, shutil, sys, urllib.request, urllib.error
    shutil.copyfile(sys.argv[1], sys.argv[2])
    try:
        body = urllib.request.urlopen(sys.argv[3], timeout=10).read().decode()
        print("FETCHED", body)
    except urllib.error.HTTPError as exc:
        print("HTTP", exc.code, exc.read().decode())
    import socket  # the same server through a CONNECT tunnel (what HTTPS clients do)
    target = sys.argv[3].split("/")[2]
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    head = s.recv(200).decode()
    if head.startswith("HTTP/1.1 200"):
        s.sendall(b"GET /v1/models HTTP/1.0\\r\\n\\r\\n")
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
        print("TUNNEL", reply.decode().splitlines()[-1])
    else:
        print("TUNNEL refused", head.splitlines()[0])
    """
)


@pytest.mark.skipif(not _jail_usable(), reason="bubblewrap is not usable here")
def test_allow_hosts_opens_a_loopback_port_through_the_proxy(tmp_path):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"model says hi")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/models"
    script = tmp_path / "fetch.py"
    script.write_text(FETCH)
    try:
        outputs = {}
        for name, hosts in (("allowed", [f"127.0.0.1:{server.server_address[1]}"]), ("refused", [])):
            ws, _ = scripted_workspace(tmp_path / name, [])
            agent = make_agent(
                tmp_path, command=[sys.executable, str(script), "{input}", "{output}", url], allow_hosts=hosts
            )
            agent.edit(make_task(tmp_path / name), ws)
            outputs[name] = (ws.dir / "cli.stdout.txt").read_text()
    finally:
        server.shutdown()
    assert "FETCHED model says hi" in outputs["allowed"] and "TUNNEL model says hi" in outputs["allowed"]
    assert "HTTP 403" in outputs["refused"] and "allow-list" in outputs["refused"]
    assert "TUNNEL refused HTTP/1.1 403 Forbidden" in outputs["refused"]


@pytest.mark.slow
@pytest.mark.skipif(not _jail_usable(), reason="bubblewrap is not usable here")
def test_output_written_before_a_timeout_is_taken_and_a_killed_launcher_is_the_agents_error(tmp_path):
    ws, _ = scripted_workspace(tmp_path, [])
    code = "import shutil,sys,time; shutil.copy(sys.argv[1], sys.argv[2]); time.sleep(60)"
    agent = make_agent(tmp_path, command=[sys.executable, "-c", code, "{input}", "{output}"], timeout=2)
    pred = agent.edit(make_task(tmp_path), ws)
    assert pred.metadata["timed_out"] is True and "timed out after writing" in pred.notes
    ws2, _ = scripted_workspace(tmp_path / "second", [])
    killer = "import os,signal,shutil,sys; shutil.copy(sys.argv[1], sys.argv[2]); os.kill(os.getppid(), 9)"
    agent = make_agent(tmp_path, command=[sys.executable, "-c", killer, "{input}", "{output}"])
    with pytest.raises(AgentError, match="jail ended before its workspace could be copied out"):
        agent.edit(make_task(tmp_path / "second"), ws2)


def test_the_program_follower_on_the_host(tmp_path):
    """How a program is followed before its jail starts (no jail needed): a version manager's shim on
    PATH is passed over, a link loop and an ``env`` interpreter missing from PATH are errors, and an
    npm file shows its (scoped) package folder."""
    from pptarena.plugins.agents.command.programs import ProgramFollower, Shown, UnshownProgram, package_of

    shims, real = tmp_path / "pyenv" / "shims", tmp_path / "tools"
    for folder in (shims, real):
        folder.mkdir(parents=True)
        (folder / "python9").write_text("#!/bin/sh\n")
        (folder / "python9").chmod(0o755)
    follower = ProgramFollower(Shown(folders=(Path("/usr"),)), f"{shims}:{real}")
    assert follower.find("python9") == real / "python9"
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    with pytest.raises(UnshownProgram, match="too many levels"):
        follower.command(str(tmp_path / "loop-a"))
    script = tmp_path / "agent"
    script.write_text("#!/usr/bin/env -S no-such-interpreter-xyz -u\n")
    with pytest.raises(UnshownProgram, match="'no-such-interpreter-xyz' through env"):
        follower.command(str(script))
    modules = Path("/p/lib/node_modules")
    assert package_of(modules / "@acme/cli/bin/cli.js") == modules / "@acme/cli"
    assert package_of(modules / "tool/node_modules/dep/index.js") == modules / "tool"
    assert package_of(modules / "tool") is None
