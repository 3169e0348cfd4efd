"""The agents end to end through the real runner (worker processes, config validation, run folder)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry
from pptarena.run.runner import Runner
from tests.support.config import fake_run_toml, use, write_run_config

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


@pytest.mark.slow
def test_code_xml_and_command_agents_in_a_run(tmp_path: Path, fake_plugins):
    script = tmp_path / "cli_agent.py"
    script.write_text(CLI_SCRIPT)
    rules = [{"match": ".", "model": "router", "reply": '{"route": "code", "reason": "title"}'}]
    rules += [{"match": f"New {i}'", "reply": PROGRAM.format(i=i)} for i in range(2)]
    pilot = {"model": "scripted/m", "render_check": False, "max_images": 0}
    cfg = write_run_config(
        tmp_path / "run.toml",
        fake_run_toml(
            2,
            [
                use("code", **pilot),
                use("hybrid", label="pilot", **pilot, router_model="scripted/router", router_default="code"),
                use("command", command=[sys.executable, str(script), "{output_dir}/{task_id}.pptx"]),
            ],
            backends={"scripted": {"rules": rules}},
        ),
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
    assert summary.agents["pilot"].judges["title"].mean == 1.0
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
