"""The PPTPilot agents on the bundled demo tasks (scripted backend, fake renderer)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from agents_fixtures import (
    FIX_QBR_TYPOS,
    FakeRenderer,
    all_prompt_text,
    build_agent,
    deck_texts,
    scripted_workspace,
)
from pptarena.types import ComponentContext, Task


@pytest.fixture(scope="module")
def demo_tasks(tmp_path_factory) -> list[Task]:
    from pptarena.registry import get_registry

    try:
        get_registry().get("datasets", "demo")
    except LookupError:
        pytest.skip("the demo dataset is not available")
    ctx = ComponentContext(cache_dir=tmp_path_factory.mktemp("demo-cache"), model=None)  # type: ignore[arg-type]
    return list(get_registry().create("datasets", "demo", {}, ctx).tasks())


def _texts(summary: object) -> set[str]:
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "text" and isinstance(item, str) and len(item.strip()) >= 6:
                    found.add(item.strip())
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(summary)
    return found


def target_only_texts(task: Task) -> set[str]:
    """Texts of the target deck found nowhere in the original or the instruction (an agent must not see them)."""
    from pptarena.deck import summarize

    assert task.target is not None
    original = json.dumps(summarize(task.original), ensure_ascii=False)
    return {t for t in _texts(summarize(task.target)) if t not in original and t not in task.instruction}


def test_no_demo_prompt_contains_the_target_or_style_target(tmp_path, demo_tasks):
    checked_target_texts = 0
    for task in demo_tasks:
        work = tmp_path / task.id
        work.mkdir()
        ws, backend = scripted_workspace(work, ["no idea", "No changes needed."], renderer=FakeRenderer(),
                                         deck=task.original)
        agent = build_agent("hybrid", work, selection="heuristic", max_xml_chars=400_000)
        pred = agent.edit(task, ws)
        assert pred.metadata["unchanged"] is True
        text = all_prompt_text(backend)
        assert task.instruction in text
        assert task.style_target and task.style_target not in text, task.id
        for secret in target_only_texts(task):
            assert secret not in text, (task.id, secret)
            checked_target_texts += 1
        assert task.style_target not in ws.log.path.read_text()
    assert checked_target_texts >= 5  # the demo targets do add text the agent must not see


def test_code_agent_fixes_the_demo_typos(tmp_path, demo_tasks):
    task = next(t for t in demo_tasks if t.id == "qbr-fix-typos")
    ws, backend = scripted_workspace(tmp_path, [FIX_QBR_TYPOS], renderer=FakeRenderer(), deck=task.original)
    pred = build_agent("code", tmp_path).edit(task, ws)
    texts = deck_texts(pred.path)
    assert "Quarterly results at a glance" in texts and "Regional performance" in texts
    assert not any(re.search("Quartely|performence", t) for t in texts)
    # only the two runs with typos changed
    from pptarena.deck.diff import diff_decks

    edits = diff_decks(task.original, pred.path).edits
    assert {e["slide"] for e in edits} == {2} and len(edits) == 2, json.dumps(edits)[:500]
    assert Path(task.original).read_bytes() != pred.path.read_bytes()
    assert [e["returncode"] for e in ws.log.events if e["event"] == "code_run"] == [0]
