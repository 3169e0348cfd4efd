"""The PPTPilot agents on the bundled demo tasks (scripted backend, fake renderer)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pptarena.types import ComponentContext, Task
from tests.support.agents_fixtures import (
    FIX_QBR_TYPOS,
    FakeRenderer,
    all_prompt_text,
    build_agent,
    deck_texts,
    scripted_workspace,
)


@pytest.fixture(scope="module")
def demo_tasks(tmp_path_factory) -> list[Task]:
    from pptarena.run.configuration.registry import get_registry

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
    """Texts of the target deck found nowhere in the original or the instruction (an agent must not
    see them).
    """
    from pptarena.deck import summarize

    assert task.target is not None
    original = json.dumps(summarize(task.original), ensure_ascii=False)
    return {t for t in _texts(summarize(task.target)) if t not in original and t not in task.instruction}


@pytest.mark.slow
def test_no_demo_prompt_contains_the_target_or_style_target(tmp_path, demo_tasks):
    checked_target_texts = 0
    for task in demo_tasks:
        work = tmp_path / task.id
        work.mkdir()
        ws, backend = scripted_workspace(
            work, ["no idea", "No changes needed."], renderer=FakeRenderer(), deck=task.original
        )
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


def _part(deck: Path, name: str) -> str:
    import zipfile

    with zipfile.ZipFile(deck) as z:
        return z.read(name).decode("utf-8")


def _xml_reply(xml: str, part: str = "ppt/slides/slide2.xml") -> str:
    return f"MODIFIED_XML_FILE: {part}\n```xml\n{xml}\n```\n"


SELECT_SLIDE2 = '{"parts": ["ppt/slides/slide2.xml"], "reason": "the typos are on slide 2"}'


def _fixed_slide2(task: Task) -> str:
    xml = _part(task.original, "ppt/slides/slide2.xml")
    fixed = xml.replace("Quartely", "Quarterly").replace("performence", "performance")
    assert fixed != xml and "Quartely" not in fixed
    return fixed


def _assert_only_the_typos_changed(task: Task, pred_path: Path) -> None:
    from pptarena.deck import diff_decks

    texts = deck_texts(pred_path)
    assert "Quarterly results at a glance" in texts and "Regional performance" in texts
    edits = diff_decks(task.original, pred_path).edits
    assert {e["slide"] for e in edits} == {2} and len(edits) == 2, json.dumps(edits)[:500]


def test_xml_agent_fixes_the_demo_typos_after_garbage_and_broken_xml(tmp_path, demo_tasks):
    task = next(t for t in demo_tasks if t.id == "qbr-fix-typos")
    fixed = _fixed_slide2(task)
    responses = [SELECT_SLIDE2, "Happy to help!", _xml_reply(fixed[: len(fixed) // 2]), _xml_reply(fixed)]
    ws, backend = scripted_workspace(tmp_path, responses, renderer=FakeRenderer(), deck=task.original)
    pred = build_agent("xml", tmp_path).edit(task, ws)
    _assert_only_the_typos_changed(task, pred.path)
    assert pred.metadata["branches"][0]["attempts"] == 3
    feedback = [r.messages[-1].content for r in backend.requests[2:]]
    assert "holds no parts" in feedback[0] and "not well-formed XML" in feedback[1]


def test_hybrid_agent_routes_the_demo_task_and_fixes_it(tmp_path, demo_tasks):
    task = next(t for t in demo_tasks if t.id == "qbr-fix-typos")
    route = '{"route": "xml", "reason": "two words on one slide"}'
    responses = [route, SELECT_SLIDE2, _xml_reply(_fixed_slide2(task)), '{"done": true}']
    ws, backend = scripted_workspace(tmp_path, responses, renderer=FakeRenderer(), deck=task.original)
    pred = build_agent("hybrid", tmp_path, loops=1).edit(task, ws)
    _assert_only_the_typos_changed(task, pred.path)
    routed = [e for e in ws.log.events if e["event"] == "route"]
    assert routed and routed[0]["route"] == "xml" and "two words" in routed[0]["reason"]
    assert len(backend.requests) == 4  # router, part selection, edit, verifier
