"""``arena author style-target`` through the scripted backend: grounded, restating and ungrounded drafts."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from pptarena.authoring.style import edit_terms, parse_style_reply, restated_share, style_target_problems
from pptarena.deck import diff_decks
from tests.support.author_fixtures import (
    DEMO_TASK,
    copy_demo_tasks,
    images_sent,
    last_user_text,
    requests,
    run_cli,
    scripted_config,
)

GOOD = (
    "On slide 2 (Agenda) correct exactly two misspellings in the bullet list: 'Quartely' becomes "
    "'Quarterly' and 'performence' becomes 'performance'. Every other word, the bullet order and levels, "
    "fonts and the other five slides stay unchanged."
)
RESTATED = (
    "The agenda lists: Revenue, margin and cash. Product highlights. Trailhead backpack launch. Risks and "
    "next steps. The title reads Agenda and the deck is the Q3 2024 Business Review of Northwind "
    "Outfitters for the leadership team briefing."
)


def _cache() -> Path:
    return Path(os.environ["PPTARENA_CACHE"])


def _setup(tmp_path: Path, responses: list[str]):
    tasks = copy_demo_tasks(_cache(), tmp_path / "tasks", DEMO_TASK)
    record = tmp_path / "requests.jsonl"
    return tasks / DEMO_TASK, scripted_config(tmp_path / "author.toml", responses, record), record


def test_good_style_target_is_written_inline_with_renders_of_the_changed_slide(tmp_path):
    folder, config, record = _setup(tmp_path, [json.dumps({"style_target": GOOD})])
    result = run_cli(
        "style-target", "--task", str(folder), "--model", "scripted/writer", "--config", str(config)
    )
    assert result.exit_code == 0, result.output
    assert tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))["style_target"] == GOOD
    from pptarena.authoring.files import load_task_folder
    from pptarena.run.configuration.registry import get_registry

    assert load_task_folder(get_registry(), folder, _cache()).task.style_target == GOOD
    (req,) = requests(record)
    user = last_user_text(req)
    assert "Slide 2 BEFORE the edit:" in user and "Slide 2 AFTER the edit (reference):" in user
    assert images_sent(req) == 2  # only the changed slide, before and after
    assert "Quartely" in user and "Quarterly" in user


def test_restatement_is_fed_back_then_file_mode_writes_style_md(tmp_path):
    folder, config, record = _setup(tmp_path, [json.dumps({"style_target": RESTATED}), f"```\n{GOOD}\n```"])
    result = run_cli(
        "style-target",
        "--task",
        str(folder),
        "--model",
        "scripted/writer",
        "--config",
        str(config),
        "--no-renders",
        "--file",
        "style.md",
    )
    assert result.exit_code == 0, result.output
    feedback = last_user_text(requests(record)[1])
    assert "repeats slide text word for word" in feedback
    assert (folder / "style.md").read_text(encoding="utf-8").strip() == GOOD
    data = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    assert data["style_target_file"] == "style.md" and "style_target" not in data
    assert images_sent(requests(record)[0]) == 0


def test_failing_drafts_write_nothing_and_tasks_without_target_are_refused(tmp_path):
    folder, config, _ = _setup(tmp_path, ["Too short."])
    before = (folder / "task.toml").read_text(encoding="utf-8")
    result = run_cli(
        "style-target",
        "--task",
        str(folder),
        "--model",
        "scripted/w",
        "--config",
        str(config),
        "--no-renders",
        "--attempts",
        "1",
    )
    assert result.exit_code == 1 and "FAILED validation" in result.output
    assert "write at least 40" in result.output
    assert (folder / "task.toml").read_text(encoding="utf-8") == before
    no_target = copy_demo_tasks(_cache(), tmp_path / "bare", DEMO_TASK, keep=()) / DEMO_TASK
    result = run_cli(
        "style-target", "--task", str(no_target), "--model", "scripted/w", "--config", str(config)
    )
    assert result.exit_code != 0 and "has no target deck" in result.output


def test_grounding_and_restatement_measures(tmp_path):
    folder = copy_demo_tasks(_cache(), tmp_path / "t", DEMO_TASK) / DEMO_TASK
    from pptarena.authoring.files import load_task_folder
    from pptarena.run.configuration.registry import get_registry

    task = load_task_folder(get_registry(), folder, _cache()).task
    diff = diff_decks(task.original, task.target)
    assert {"quarterly", "performance"} <= set(edit_terms(diff))
    assert restated_share(RESTATED, diff) > 0.4 and restated_share(GOOD, diff) < 0.2
    assert style_target_problems(GOOD, task, diff) == []
    vague = "Improve the wording of the bullets so that everything reads professionally and looks tidy."
    assert any("mentions nothing the edit changed" in p for p in style_target_problems(vague, task, diff))
    assert parse_style_reply('Sure: {"style_target": "  x  "}') == ("x", [])
    assert parse_style_reply("plain words") == ("plain words", [])
    text, problems = parse_style_reply('{"tasks": [{"instruction": "Quarterly performance"}]}')
    assert text == "" and 'without a "style_target" string' in problems[0]
