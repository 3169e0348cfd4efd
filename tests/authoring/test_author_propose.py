"""``arena author propose`` through the scripted backend: validation, retries, the folder dataset it
writes."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from pptarena.authoring.propose import slugify, validate_proposal
from pptarena.deck import summarize
from tests.support.author_fixtures import (
    demo_root,
    fenced,
    images_sent,
    last_user_text,
    requests,
    run_cli,
    scripted_config,
)

GOOD = {
    "id": "fix-agenda-typos",
    "instruction": "On the Agenda slide, correct the misspellings 'Quartely' and 'performence'.",
    "difficulty": "easy",
    "category": ["Content"],
    "edit_type": "Text & Typography",
    "slides": [2],
    "shapes": ["Content Placeholder 2"],
    "rationale": "two real typos",
}
SECOND = {
    "instruction": "Give the revenue table on slide 3 a header row filled with #1F3864 and white bold text.",
    "difficulty": "Medium",
    "category": "styling",
    "edit_type": "tables",
    "slides": [3],
    "shapes": ["Table"],
}
UNGROUNDED = {
    "instruction": "Animate the org chart on slide 9.",
    "difficulty": "extreme",
    "category": ["Design"],
    "edit_type": "Fancy",
    "slides": [9],
    "shapes": ["Org Chart"],
}


def _deck() -> Path:
    return demo_root(Path(os.environ["PPTARENA_CACHE"])) / "_decks" / "qbr.pptx"


def _propose(tmp_path: Path, responses: list[str], *extra: str):
    record = tmp_path / "requests.jsonl"
    config = scripted_config(tmp_path / "author.toml", responses, record)
    out = tmp_path / "proposed"
    result = run_cli(
        "propose",
        "--deck",
        str(_deck()),
        "--model",
        "scripted/proposer",
        "--config",
        str(config),
        "--out",
        str(out),
        *extra,
    )
    return result, out, record


def test_valid_proposals_become_a_loadable_folder_dataset_and_invalid_ones_are_reported(tmp_path):
    result, out, record = _propose(
        tmp_path, [fenced({"tasks": [GOOD, UNGROUNDED, SECOND]})], "--n", "2", "--no-renders"
    )
    assert result.exit_code == 0, result.output
    assert "2 of 2 task(s) proposed after 1 model call(s)" in result.output
    rejected = next(
        line for line in result.output.splitlines() if line.startswith("rejected: reply 1, task 2:")
    )
    for problem in (
        "'difficulty' 'extreme'",
        "category 'Design'",
        "'edit_type' 'Fancy'",
        "slide 9 does not exist",
    ):
        assert problem in rejected
    from pptarena.authoring.files import load_dataset_tasks
    from pptarena.run.configuration.registry import get_registry

    tasks = {t.id: t for t in load_dataset_tasks(get_registry(), "folder", {"root": out}, tmp_path / "c")}
    assert set(tasks) == {"fix-agenda-typos", "give-the-revenue-table-on-slide-3-a-header-row"}
    typo = tasks["fix-agenda-typos"]
    assert typo.instruction == GOOD["instruction"] and typo.target is None and typo.rubric is None
    assert typo.metadata["category"] == ["Content"] and typo.metadata["difficulty"] == "easy"
    assert typo.metadata["slides"] == [2] and typo.metadata["shapes"] == ["Content Placeholder 2"]
    second = tasks["give-the-revenue-table-on-slide-3-a-header-row"]
    assert second.metadata["category"] == ["Styling"] and second.metadata["edit_type"] == "Tables"
    assert (out / "_decks" / "qbr.pptx").read_bytes() == _deck().read_bytes()
    text = (out / "fix-agenda-typos" / "task.toml").read_text(encoding="utf-8")
    assert "# TODO target" in text and "# TODO rubric" in text and "# TODO style target" in text
    (req,) = requests(record)
    assert images_sent(req) == 0
    assert "Quartely results at a glance" in last_user_text(req)  # the deck brief
    log = json.loads((out / "_author" / "propose-qbr.json").read_text(encoding="utf-8"))
    assert log["rejected"][0]["index"] == 1 and len(log["replies"]) == 1


def test_broken_json_and_missing_tasks_are_asked_again(tmp_path):
    result, out, record = _propose(
        tmp_path,
        ['```json\n{"tasks": [ {"instruction": \n```', fenced([GOOD]), fenced({"tasks": [GOOD, SECOND]})],
        "--n",
        "2",
        "--no-renders",
    )
    assert result.exit_code == 0, result.output
    reqs = requests(record)
    assert len(reqs) == 3
    assert "no valid JSON found in the reply" in last_user_text(reqs[1])
    assert "1 more needed" in last_user_text(reqs[2]) and "Propose 1 NEW task(s)" in last_user_text(reqs[2])
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("_")) == [
        "fix-agenda-typos",
        "give-the-revenue-table-on-slide-3-a-header-row",
    ]


def test_too_few_valid_tasks_exit_non_zero_after_the_attempts(tmp_path):
    result, out, record = _propose(
        tmp_path, [fenced({"tasks": [UNGROUNDED]})] * 2, "--n", "1", "--no-renders", "--attempts", "2"
    )
    assert result.exit_code == 1
    assert "0 of 1 task(s) proposed after 2 model call(s)" in result.output
    assert not out.exists() or not [p for p in out.iterdir() if not p.name.startswith("_")]


def test_renders_are_sent_to_the_model(tmp_path):
    result, out, record = _propose(tmp_path, [fenced({"tasks": [GOOD]})], "--n", "1", "--max-images", "3")
    assert result.exit_code == 0, result.output
    (req,) = requests(record)
    assert images_sent(req) == 3
    assert "Render of slide 1:" in last_user_text(req) and "Render of slide 3:" in last_user_text(req)


def test_proposal_validation_rules():
    summary = summarize(_deck())
    ok, problems = validate_proposal({**GOOD, "shapes": ["Table"]}, summary)
    assert ok is None and problems == ["shape 'Table' does not exist on slide(s) [2]"]
    ok, problems = validate_proposal({**GOOD, "slides": [], "shapes": ["Table"]}, summary)
    assert problems == [] and ok.slides == []  # without slides a shape may be anywhere in the deck
    ok, problems = validate_proposal({**GOOD, "instruction": " "}, summary)
    assert "'instruction' must be a non-empty string" in problems
    assert validate_proposal("task", summary)[1] == ["a task must be a JSON object, got str"]
    assert slugify("  Fix Typos!! on slide 2 ") == "fix-typos-on-slide-2"


def test_task_toml_edits_keep_everything_else_and_refuse_unsafe_files(tmp_path):
    import pytest

    from pptarena.authoring.files import set_top_level_keys, write_new_task_toml
    from pptarena.authoring.llm import AuthorError
    from pptarena.authoring.propose import TODO_COMMENTS

    path = tmp_path / "task.toml"
    write_new_task_toml(
        path, {"instruction": 'Say "hi"', "original": "a.pptx"}, {"difficulty": "easy"}, TODO_COMMENTS
    )
    set_top_level_keys(path, {"rubric": "rubric.json"}, done_todo="rubric")
    text = path.read_text(encoding="utf-8")
    assert "# TODO rubric" not in text and "writes rubric.json" not in text and "# TODO style target" in text
    assert tomllib.loads(text) == {
        "instruction": 'Say "hi"',
        "original": "a.pptx",
        "rubric": "rubric.json",
        "metadata": {"difficulty": "easy"},
    }
    set_top_level_keys(path, {"rubric": None, "style_target": "line one\nline two"})
    assert tomllib.loads(path.read_text(encoding="utf-8"))["style_target"] == "line one\nline two"
    multi = tmp_path / "multi.toml"
    multi.write_text(
        'instruction = "x"\noriginal = "a.pptx"\nstyle_target = """\nold\nrubric = "fake"\n"""\n',
        encoding="utf-8",
    )
    before = multi.read_text(encoding="utf-8")
    with pytest.raises(AuthorError, match="could not update"):
        set_top_level_keys(multi, {"rubric": "rubric.json"})
    assert multi.read_text(encoding="utf-8") == before


def test_a_failing_backend_is_reported_as_such(tmp_path):
    record = tmp_path / "requests.jsonl"
    config = tmp_path / "author.toml"
    config.write_text(
        '[backends.scripted]\nresponses = [{ error = "fatal", message = "quota exceeded" }]\n',
        encoding="utf-8",
    )
    result = run_cli(
        "propose",
        "--deck",
        str(_deck()),
        "--model",
        "scripted/p",
        "--config",
        str(config),
        "--out",
        str(tmp_path / "o"),
        "--no-renders",
    )
    assert result.exit_code == 1 and "quota exceeded" in result.output
    assert not (tmp_path / "o").exists() and not record.exists()


def test_out_defaults_to_a_folder_named_after_the_deck(tmp_path, monkeypatch):
    config = scripted_config(tmp_path / "author.toml", [fenced({"tasks": [GOOD]})], tmp_path / "r.jsonl")
    monkeypatch.chdir(tmp_path)
    result = run_cli(
        "propose",
        "--deck",
        str(_deck()),
        "--n",
        "1",
        "--model",
        "scripted/proposer",
        "--config",
        str(config),
        "--no-renders",
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "qbr-tasks" / "fix-agenda-typos" / "task.toml").is_file()
