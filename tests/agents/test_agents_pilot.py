"""The code, xml and hybrid agents on a small deck through the scripted backend."""

from __future__ import annotations

import json
import zipfile

import pytest

from pptarena.models import ImagePart
from pptarena.types import AgentError, InfraError
from tests.support.agents_fixtures import (
    BROKEN_PROGRAM,
    FIX_TYPO_PROGRAM,
    STYLE_TARGET,
    TARGET_TEXT,
    FakeRenderer,
    all_prompt_text,
    build_agent,
    deck_texts,
    events,
    make_deck,
    make_task,
    scripted_workspace,
)


def slide2_xml(deck) -> str:
    return zipfile.ZipFile(deck).read("ppt/slides/slide2.xml").decode("utf-8")


def xml_reply(xml: str, part: str = "ppt/slides/slide2.xml") -> str:
    return f"I changed one part.\n\nMODIFIED_XML_FILE: {part}\n```xml\n{xml}\n```\n"


SELECT_SLIDE2 = '{"parts": ["ppt/slides/slide2.xml"], "reason": "the typo is on slide 2"}'


# ----------------------------------------------------------------------------- code


def test_code_agent_retries_after_a_traceback(tmp_path):
    ws, backend = scripted_workspace(tmp_path, [BROKEN_PROGRAM, FIX_TYPO_PROGRAM], renderer=FakeRenderer())
    pred = build_agent("code", tmp_path).edit(make_task(tmp_path), ws)
    assert pred.path == ws.output_deck
    assert "Revenue growth" in deck_texts(pred.path) and "Revnue growth" not in deck_texts(pred.path)
    assert pred.metadata["branches"] == [
        {"branch": "code", "ok": True, "attempts": 2, "error": None, "unchanged": False}
    ]
    assert pred.metadata["model_usage"]["calls"] == 2 and pred.metadata["model_usage"]["input_tokens"] > 0
    assert pred.usage == {}  # the runner counts usage through the workspace's clients
    # the traceback went back to the model in the second request, after its own first answer
    second = backend.requests[1].messages
    assert [m.role for m in second] == ["system", "user", "assistant", "user"]
    assert "IndexError" in second[-1].content and "slide index out of range" in second[-1].content
    runs = events(ws, "code_run")
    assert [r["returncode"] for r in runs] == [1, 0]
    assert (
        (tmp_path / "task" / "pilot" / "code" / "edit-code-a2" / "program.py")
        .read_text()
        .startswith("from pptx")
    )
    assert not (tmp_path / "task" / "pilot" / "code" / "edit-code-a2" / "input.pptx").exists()
    assert [e["ok"] for e in events(ws, "attempt")] == [False, True]
    # every line of the log file is JSON and the model calls are in it
    lines = [json.loads(x) for x in ws.log.path.read_text().splitlines()]
    assert [x["step"] for x in lines if x["event"] == "model_call"] == ["code_edit", "code_edit"]
    # the edit prompt carried the summary and the renders of both slides
    first = backend.requests[0]
    assert '"title":"Agenda"' in first.messages[1].parts()[1]
    assert len([p for p in first.messages[1].parts() if isinstance(p, ImagePart)]) == 2


def test_code_agent_gives_up_after_garbage(tmp_path):
    ws, backend = scripted_workspace(tmp_path, ["I cannot help with that.", "still no code", "nope"])
    agent = build_agent("code", tmp_path, retries=2)
    with pytest.raises(AgentError, match="code edit failed after 3 attempt"):
        agent.edit(make_task(tmp_path), ws)
    assert len(backend.requests) == 3
    assert "no ```python block" in backend.requests[1].messages[-1].content
    assert not ws.output_deck.exists()
    assert events(ws, "failed")


def test_code_agent_can_hand_in_the_input_on_failure(tmp_path):
    ws, _ = scripted_workspace(tmp_path, ["```python\nthis is not python(\n```", BROKEN_PROGRAM])
    pred = build_agent("code", tmp_path, retries=1, on_failure="input").edit(make_task(tmp_path), ws)
    assert pred.metadata["failed"] is True and "IndexError" in pred.metadata["error"]
    assert ws.output_deck.read_bytes() == ws.input_deck.read_bytes()
    assert events(ws, "handed_in_input")


@pytest.mark.slow
def test_code_timeout_and_missing_output_go_back_to_the_model(tmp_path):
    hang = "```python\nwhile True:\n    pass\n```"
    no_save = (
        "```python\nfrom pptx import Presentation\nPresentation(INPUT_PATH)\nprint('forgot to save')\n```"
    )
    ws, backend = scripted_workspace(tmp_path, [hang, no_save, FIX_TYPO_PROGRAM])
    pred = build_agent("code", tmp_path, code_timeout=1.5).edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    assert "timed out" in backend.requests[1].messages[-1].content
    assert "did not save the deck to OUTPUT_PATH" in backend.requests[2].messages[-1].content
    assert [r["timed_out"] for r in events(ws, "code_run")] == [True, False, False]
    assert "forgot to save" in events(ws, "code_run")[1]["stdout"]


def test_candidate_that_does_not_render_is_rejected(tmp_path):
    renderer = FakeRenderer(fail_on="edit-code-a1")
    ws, backend = scripted_workspace(tmp_path, [FIX_TYPO_PROGRAM, FIX_TYPO_PROGRAM], renderer=renderer)
    pred = build_agent("code", tmp_path).edit(make_task(tmp_path), ws)
    assert pred.metadata["branches"][0]["attempts"] == 2
    assert "does not render" in backend.requests[1].messages[-1].content
    assert events(ws, "render_failed")


def test_broken_renderer_is_an_infra_error(tmp_path):
    ws, _ = scripted_workspace(tmp_path, [FIX_TYPO_PROGRAM], renderer=FakeRenderer(fail_on=".pptx"))
    with pytest.raises(InfraError, match="renderer fails on the task's input deck"):
        build_agent("code", tmp_path).edit(make_task(tmp_path), ws)


# ----------------------------------------------------------------------------- xml


def test_xml_agent_recovers_from_garbage_and_broken_xml(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    xml = slide2_xml(deck)
    fixed = xml.replace("Revnue", "Revenue")
    broken = fixed[: len(fixed) // 2]
    ws, backend = scripted_workspace(
        tmp_path,
        [SELECT_SLIDE2, "Sure! Here you go.", xml_reply(broken), xml_reply(fixed)],
        renderer=FakeRenderer(),
        deck=deck,
    )
    pred = build_agent("xml", tmp_path).edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    assert pred.metadata["branches"][0]["attempts"] == 3
    assert events(ws, "xml_parts")[0]["parts"] == ["ppt/slides/slide2.xml"]
    assert events(ws, "xml_parts")[0]["source"] == "model"
    assert "holds no parts" in backend.requests[2].messages[-1].content
    assert "not well-formed XML" in backend.requests[3].messages[-1].content
    patch = events(ws, "xml_patch")
    assert len(patch) == 1 and list(patch[0]["parts"]) == ["ppt/slides/slide2.xml"]
    # the edit prompt shows the part's XML and its relationships
    edit_prompt = backend.requests[1].messages[1].parts()
    assert any(
        "=== ppt/slides/slide2.xml ===" in p and "rId1 → slideLayout" in p
        for p in edit_prompt
        if isinstance(p, str)
    )
    # every other member of the package is byte-identical, in the same order
    with zipfile.ZipFile(ws.input_deck) as a, zipfile.ZipFile(pred.path) as b:
        assert a.namelist() == b.namelist()
        for name in a.namelist():
            if name != "ppt/slides/slide2.xml":
                assert a.read(name) == b.read(name), name


def test_xml_agent_rejects_unknown_rids_and_lost_namespaces(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    xml = slide2_xml(deck)
    fixed = xml.replace("Revnue", "Revenue")
    bad_rid = fixed.replace(
        "<p:cSld>",
        '<p:cSld><p:bg><p:bgPr><a:blipFill><a:blip r:embed="rId99"/></a:blipFill>'
        "<a:effectLst/></p:bgPr></p:bg>",
        1,
    )
    no_ns = fixed.replace(
        ' xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"', "", 1
    )
    wrong_part = xml_reply(fixed, "ppt/presentation.xml")
    ws, backend = scripted_workspace(
        tmp_path,
        [SELECT_SLIDE2, xml_reply(bad_rid), xml_reply(no_ns), wrong_part, xml_reply(fixed)],
        deck=deck,
    )
    pred = build_agent("xml", tmp_path, retries=3).edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    feedback = [r.messages[-1].content for r in backend.requests[2:]]
    assert "rId99" in feedback[0] and "do not exist" in feedback[0]
    assert "xmlns:r" in feedback[1]
    assert "not an editable part" in feedback[2]


def test_xml_agent_no_change_and_heuristic_selection(tmp_path):
    ws, backend = scripted_workspace(tmp_path, ["No changes needed."])
    pred = build_agent("xml", tmp_path, selection="heuristic").edit(make_task(tmp_path), ws)
    assert pred.metadata["unchanged"] is True and pred.notes == "the model made no change"
    assert ws.output_deck.read_bytes() == ws.input_deck.read_bytes()
    assert len(backend.requests) == 1  # no planning call
    assert events(ws, "xml_parts")[0] == {
        **events(ws, "xml_parts")[0],
        "source": "heuristic",
        "parts": ["ppt/slides/slide2.xml"],
    }


def test_xml_planner_garbage_falls_back_to_heuristic(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    fixed = slide2_xml(deck).replace("Revnue", "Revenue")
    ws, _ = scripted_workspace(tmp_path, ["the parts are the ones with text", xml_reply(fixed)], deck=deck)
    pred = build_agent("xml", tmp_path).edit(make_task(tmp_path, "Fix every typo in the deck."), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    chosen = events(ws, "xml_parts")[0]
    assert chosen["source"] == "heuristic" and chosen["parts"] == [
        "ppt/slides/slide1.xml",
        "ppt/slides/slide2.xml",
    ]


# ----------------------------------------------------------------------------- hybrid


def test_hybrid_routes_verifies_and_repairs(tmp_path):
    half_fix = FIX_TYPO_PROGRAM.replace('"Revenue"', '"Revenu"')
    repair = FIX_TYPO_PROGRAM.replace('"Revnue", "Revenue"', '"Revenu", "Revenue"')
    responses = [
        '{"route": "code", "reason": "a text replacement"}',
        half_fix,
        '{"done": false, "feedback": "The word is still misspelled: Revenu."}',
        repair,
        '{"done": true}',
    ]
    ws, backend = scripted_workspace(tmp_path, responses, renderer=FakeRenderer())
    agent = build_agent(
        "hybrid", tmp_path, loops=3, router_model="scripted/cheap", verifier_model="scripted/judge"
    )
    pred = agent.edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    assert pred.metadata["route"] == "code" and pred.metadata["router_reason"] == "a text replacement"
    assert [r["done"] for r in pred.metadata["rounds"]] == [False, True]
    assert pred.metadata["loops_completed"] == 2
    assert [r.model for r in backend.requests] == ["cheap", "m", "judge", "m", "judge"]
    assert events(ws, "route")[0]["route"] == "code"
    # the verifier saw the edits from the original and renders of the current deck
    verify = backend.requests[2].messages[1].parts()
    assert any("Revnue growth" in p and "Revenu growth" in p for p in verify if isinstance(p, str))
    assert any(isinstance(p, ImagePart) for p in verify)
    # the repair prompt carried the feedback and started from the current state
    repair_prompt = backend.requests[3].messages[1].parts()[0]
    assert "still misspelled" in repair_prompt and "repair round" in repair_prompt
    assert '"Revenu growth"' in backend.requests[3].messages[1].parts()[1]
    assert [e["round"] for e in events(ws, "repair")] == [1]


def test_hybrid_default_route_and_fallback(tmp_path):
    ws, backend = scripted_workspace(tmp_path, ["hmm, hard to say", "<not xml>", FIX_TYPO_PROGRAM])
    agent = build_agent("hybrid", tmp_path, retries=0, selection="heuristic")
    pred = agent.edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    assert events(ws, "route")[0]["source"] == "default" and pred.metadata["route"] == "xml"
    assert [b["branch"] for b in pred.metadata["branches"]] == ["xml", "code"]
    assert [b["ok"] for b in pred.metadata["branches"]] == [False, True]
    assert events(ws, "fallback")[0] == {**events(ws, "fallback")[0], "frm": "xml", "to": "code"}


def test_failed_repair_keeps_the_last_good_deck(tmp_path):
    responses = [
        '{"route": "code", "reason": "text"}',
        FIX_TYPO_PROGRAM,
        "REVISE: make the title bold",
        BROKEN_PROGRAM,
    ]
    ws, _ = scripted_workspace(tmp_path, responses)
    pred = build_agent("hybrid", tmp_path, loops=2, retries=0).edit(make_task(tmp_path), ws)
    assert "Revenue growth" in deck_texts(pred.path)
    assert pred.metadata["rounds"][0]["repair_ok"] is False
    assert events(ws, "repair_failed") and pred.metadata["loops_completed"] == 1


def test_unreadable_verifier_reply_stops_the_loop(tmp_path):
    ws, _ = scripted_workspace(tmp_path, [FIX_TYPO_PROGRAM, "looks fine i guess?"])
    pred = build_agent("code", tmp_path, loops=3).edit(make_task(tmp_path), ws)
    assert pred.metadata["rounds"] == [{"round": 1, "done": False, "parsed": False, "feedback": ""}]
    assert events(ws, "verify_stop")


def test_agents_never_see_the_target_or_style_target(tmp_path):
    deck = make_deck(tmp_path / "deck.pptx")
    fixed = slide2_xml(deck).replace("Revnue", "Revenue")
    responses = [
        '{"route": "xml", "reason": "one slide"}',
        SELECT_SLIDE2,
        xml_reply(fixed),
        '{"done": false, "feedback": "bold it"}',
        SELECT_SLIDE2,
        "No changes needed.",
        '{"done": true}',
    ]
    ws, backend = scripted_workspace(tmp_path, responses, renderer=FakeRenderer(), deck=deck)
    task = make_task(tmp_path)
    pred = build_agent("hybrid", tmp_path, loops=3).edit(task, ws)
    assert pred.path is not None and len(backend.requests) == 6
    text = all_prompt_text(backend)
    assert task.instruction in text
    assert TARGET_TEXT not in text and STYLE_TARGET not in text and "target.pptx" not in text
    assert TARGET_TEXT not in ws.log.path.read_text() and STYLE_TARGET not in ws.log.path.read_text()


def test_options_are_validated():
    from pptarena.run.configuration.registry import get_registry

    spec = get_registry().get("agents", "hybrid")
    opts = spec.options_model(model="openai/gpt-5.2", router_model="openai/gpt-5-nano", loops=3)
    assert opts.loops == 3 and opts.retries == 2 and opts.router_default == "xml"
    with pytest.raises(ValueError, match="router_model"):
        get_registry().get("agents", "code").options_model(model="a/b", router_model="a/c")
    with pytest.raises(ValueError, match="backend"):
        spec.options_model(model="gpt-5")
    with pytest.raises(ValueError):
        spec.options_model(model="a/b", loops=11)
