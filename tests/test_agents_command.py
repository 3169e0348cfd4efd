"""The command agent with small Python scripts as the CLI agent."""

from __future__ import annotations

import sys
import textwrap

import pytest
from agents_fixtures import deck_texts, events, make_task, scripted_workspace
from pydantic import SecretStr

from pptarena.types import AgentError, ComponentUnavailable

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


def make_agent(tmp_path, **options):
    from pptarena.run.registry import get_registry
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path, model=None, name="command", label="cli")  # type: ignore[arg-type]
    return get_registry().create("agents", "command", options, ctx)


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
