"""The agents end to end through the real runner (worker processes, config validation, run folder)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pptarena.run.config import load_config
from pptarena.run.registry import get_registry
from pptarena.run.runner import Runner

PROGRAM = """```python
from pptx import Presentation
prs = Presentation(INPUT_PATH)
prs.slides[0].shapes.title.text = "New {i}"
prs.save(OUTPUT_PATH)
```"""

CLI_SCRIPT = """\
import pathlib, re, sys
from pptx import Presentation
goal = pathlib.Path("TASK.md").read_text()
title = re.search(r"'(New \\d+)'", goal).group(1)
prs = Presentation(next(pathlib.Path("inputs").iterdir()))
prs.slides[0].shapes.title.text = title
prs.save(sys.argv[1])
"""


def test_code_xml_and_command_agents_in_a_run(tmp_path: Path, fake_plugins):
    script = tmp_path / "cli_agent.py"
    script.write_text(CLI_SCRIPT)
    rules = "".join(
        f"[[backends.scripted.rules]]\nmatch = \"New {i}'\"\nreply = '''{PROGRAM.format(i=i)}'''\n"
        for i in range(2)
    )
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        '[dataset]\nuse = "fake"\nroot = "data"\ncount = 2\n'
        '[renderer]\nuse = "dummy"\n[[judges]]\nuse = "title"\n'
        '[[agents]]\nuse = "code"\nmodel = "scripted/m"\nrender_check = false\nmax_images = 0\n'
        '[[agents]]\nuse = "hybrid"\nlabel = "pilot"\nmodel = "scripted/m"\n'
        "render_check = false\nmax_images = 0\n"
        'router_model = "scripted/router"\nrouter_default = "code"\n'
        '[[agents]]\nuse = "command"\n'
        f'command = ["{sys.executable}", "{script}", "{{output_dir}}/{{task_id}}.pptx"]\n'
        + '[[backends.scripted.rules]]\nmatch = "."\nmodel = "router"\n'
        'reply = \'{"route": "code", "reason": "title"}\'\n' + rules
    )
    config = load_config(cfg, get_registry())
    summary = Runner(config, get_registry(), tmp_path / "out", jobs=2, quiet=True).run()
    rows = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 6
    assert {(r["agent"], r["status"]) for r in rows} == {
        ("code", "scored"),
        ("pilot", "scored"),
        ("command", "scored"),
    }
    assert all(r["scores"]["title"]["score"] == 1.0 for r in rows), rows
    assert summary["agents"]["pilot"]["judges"]["title"]["mean"] == 1.0
    log = [
        json.loads(x)
        for x in (tmp_path / "out" / "tasks" / "pilot" / "task-01" / "agent.log.jsonl")
        .read_text()
        .splitlines()
    ]
    assert [e["event"] for e in log if e["event"] in ("route", "code_run", "done")] == [
        "route",
        "code_run",
        "done",
    ]
    # the runner's clients log each call once (with the reply); the agent adds which step it was
    assert [e["model"] for e in log if e["event"] == "model_call"] == ["scripted/router", "scripted/m"]
    assert [e["step"] for e in log if e["event"] == "model_step"] == ["route", "code_edit"]
    assert '"route": "code"' in next(e for e in log if e["event"] == "model_call")["reply"]
    row = next(r for r in rows if r["agent"] == "pilot" and r["task_id"] == "task-01")
    assert row["usage"]["calls"] == 2  # counted once, by the runner
    assert (tmp_path / "out" / "tasks" / "command" / "task-00" / "cli" / "TASK.md").is_file()
