"""``arena author rubric`` through the scripted backend: good, broken-Python and undefined-name drafts."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from pptarena.authoring.lint import CONTEXT_NAMES
from pptarena.authoring.rubric import authoring_problems, parse_rubric_reply
from tests.support.author_fixtures import (
    BROKEN_PYTHON,
    DEMO_TASK,
    UNDEFINED_NAMES,
    copy_demo_tasks,
    demo_rubric,
    fenced,
    last_user_text,
    leaf,
    requests,
    rubric_of,
    run_cli,
    scripted_config,
)


def _cache() -> Path:
    return Path(os.environ["PPTARENA_CACHE"])


def _setup(tmp_path: Path, responses: list[str]) -> tuple[Path, Path, Path]:
    tasks = copy_demo_tasks(_cache(), tmp_path / "tasks", DEMO_TASK)
    record = tmp_path / "requests.jsonl"
    config = scripted_config(tmp_path / "author.toml", responses, record)
    return tasks / DEMO_TASK, config, record


def test_good_draft_is_written_referenced_and_checked(tmp_path):
    good = demo_rubric(_cache())
    folder, config, record = _setup(tmp_path, [fenced(good)])
    result = run_cli("rubric", "--task", str(folder), "--model", "scripted/drafter", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "attempt 1: ok" in result.output
    assert "1 rubric(s) checked, 0 flagged" in result.output
    written = json.loads((folder / "rubric.json").read_text(encoding="utf-8"))
    assert written["root"] == good["root"]
    assert tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))["rubric"] == "rubric.json"
    # the folder dataset loads the task with its new rubric
    from pptarena.authoring.files import load_task_folder
    from pptarena.run.configuration.registry import get_registry

    assert load_task_folder(get_registry(), folder, _cache()).task.rubric == written
    # the prompt taught the context API and showed the reference edits
    (req,) = requests(record)
    system = req["messages"][0]["content"][0]
    for name in CONTEXT_NAMES:
        assert name in system
    assert "added_slides" in system and "slide_number" in system
    user = last_user_text(req)
    assert "Quartely" in user and "Quarterly" in user  # the typo and its fix, from the diff
    assert req["params"] == {"max_tokens": 8000}
    log = json.loads((folder / "_author" / "rubric.json").read_text(encoding="utf-8"))
    assert log["ok"] is True and log["check"]["flags"] == []


def test_broken_python_is_fed_back_and_the_retry_succeeds(tmp_path):
    folder, config, record = _setup(tmp_path, [fenced(BROKEN_PYTHON), fenced(demo_rubric(_cache()))])
    result = run_cli("rubric", "--task", str(folder), "--model", "scripted/drafter", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "attempt 1: 1 problem(s)" in result.output and "not valid Python" in result.output
    assert "attempt 2: ok" in result.output
    reqs = requests(record)
    assert len(reqs) == 2
    feedback = last_user_text(reqs[1])
    assert "not valid Python: line 1" in feedback and "Fix every problem" in feedback
    assert [m["role"] for m in reqs[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert (folder / "rubric.json").is_file()


def test_undefined_names_fail_after_bounded_attempts_with_a_clear_report(tmp_path):
    folder, config, record = _setup(tmp_path, [fenced(UNDEFINED_NAMES)] * 2)
    result = run_cli(
        "rubric",
        "--task",
        str(folder),
        "--model",
        "scripted/drafter",
        "--config",
        str(config),
        "--attempts",
        "2",
    )
    assert result.exit_code == 1
    assert "undefined name 'target_ppt_path'" in result.output
    assert "undefined name 'agenda_text'" in result.output
    assert "draft FAILED validation" in result.output
    assert len(requests(record)) == 2
    assert (folder / "rubric.draft.json").is_file() and not (folder / "rubric.json").exists()
    assert "rubric" not in tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_draft_that_misjudges_the_target_is_caught_by_running_it(tmp_path):
    wrong = rubric_of(
        leaf(
            "typos fixed",
            "def compute_score():\n    from pptx import Presentation\n"
            "    text = Presentation(modified_ppt_path).slides[1].placeholders[1].text_frame.text\n"
            "    return ('checked Quartely', 1.0 if 'Quarterly results at a glance!' in text else 0.0)\n",
        )
    )
    folder, config, record = _setup(tmp_path, [fenced(wrong), fenced(demo_rubric(_cache()))])
    result = run_cli("rubric", "--task", str(folder), "--model", "scripted/drafter", "--config", str(config))
    assert result.exit_code == 0, result.output
    feedback = last_user_text(requests(record)[1])
    assert "the target scores 0.000 (expected 1.0)" in feedback


def test_unparseable_replies_write_nothing(tmp_path):
    folder, config, _ = _setup(tmp_path, ["I cannot help with that."])
    result = run_cli(
        "rubric",
        "--task",
        str(folder),
        "--model",
        "scripted/drafter",
        "--config",
        str(config),
        "--attempts",
        "1",
    )
    assert result.exit_code == 1
    assert "no valid JSON" in result.output and "nothing written" in result.output
    assert not list(folder.glob("rubric*.json"))


def test_out_file_leaves_task_toml_alone_and_config_task_id_works(tmp_path):
    folder, config, _ = _setup(tmp_path, [fenced(demo_rubric(_cache()))])
    cfg = (
        config.read_text(encoding="utf-8")
        + f'\n[dataset]\nuse = "folder"\nroot = {json.dumps(str(folder.parent))}\n'
    )
    config.write_text(cfg, encoding="utf-8")
    before = (folder / "task.toml").read_text(encoding="utf-8")
    out = tmp_path / "drafts" / "r.json"
    out.parent.mkdir()
    result = run_cli(
        "rubric",
        "--config",
        str(config),
        "--task-id",
        DEMO_TASK,
        "--model",
        "scripted/x",
        "--out",
        str(out),
        "--no-run",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text(encoding="utf-8"))["root"]["name"] == DEMO_TASK
    assert (folder / "task.toml").read_text(encoding="utf-8") == before


def test_reply_parsing_and_drafting_rules():
    code = "def compute_score():\n    return ('x', 1.0)\n"
    bare_node = {
        "name": "n",
        "description": "",
        "is_critical": True,
        "metadata": {},
        "children": [leaf("a", code)],
    }
    rubric, problems = parse_rubric_reply("Sure!\n" + json.dumps(bare_node) + "\nDone.", "Do it")
    assert rubric["metadata"] == {"task": "Do it"} and rubric["root"]["name"] == "n"
    assert (
        "no leaf reads the edited deck (modified_ppt_path, ppt_diff or modified_ppt_screenshots)" in problems
    )
    visual = rubric_of(
        leaf("v", "def compute_score():\n    a = vlm_call('ok?', [modified_ppt_path])\n    return (a, 1.0)\n")
    )
    assert any("never reads original_ppt_screenshots" in p for p in authoring_problems(visual))
    soft = rubric_of(
        leaf("s", "def compute_score():\n    return (str(len(ppt_diff.added_slides)), 1.0)\n", critical=False)
    )
    assert any("no leaf is critical" in p for p in authoring_problems(soft))
