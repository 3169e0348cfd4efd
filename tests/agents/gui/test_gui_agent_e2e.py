"""End-to-end tests of the gui agent: real Xvfb, xdotool and LibreOffice Impress.

A scripted model double-clicks into the title of a generated deck, selects
all, types a new title and says done; the agent saves through File ▸ Save As
and the saved .pptx must differ from the input in exactly that title.
Deselect locally with ``-m 'not gui'``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.enum.text import MSO_AUTO_SIZE
from pptx.util import Inches, Pt

from pptarena.models import ModelClient
from pptarena.types import AgentLog, ComponentContext, Task, Workspace

pytestmark = [pytest.mark.gui, pytest.mark.slow]
NEEDED = ("Xvfb", "xdotool", "soffice")
if any(shutil.which(p) is None for p in NEEDED):  # pragma: no cover - CI installs them
    pytest.skip(
        "needs Xvfb, xdotool and soffice (apt-get install xvfb xdotool libreoffice-impress)",
        allow_module_level=True,
    )

NEW_TITLE = "Quarterly Results — 2025 ü"
# The generated title box covers the top half of the 4:3 slide; at 1280x800 Impress shows the slide
# at about x 176..917, y 136..691, so this point is well inside the title on any recent Impress.
TITLE_POINT = (545, 300)


def make_deck(path: Path) -> None:
    """Two slides; the first title placeholder is large so one click point hits it reliably."""
    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[0])
    title = s1.shapes.title
    title.left, title.top, title.width, title.height = Inches(0.5), Inches(0.5), Inches(9), Inches(3.8)
    title.text = "Old title"
    sub = s1.placeholders[1]
    sub.left, sub.top, sub.width, sub.height = Inches(1), Inches(5), Inches(8), Inches(1.5)
    sub.text = "Subtitle stays"
    s2 = prs.slides.add_slide(prs.slide_layouts[1])
    s2.shapes.title.text = "Agenda"
    s2.placeholders[1].text = "First point"
    box = s2.shapes.add_textbox(Inches(1), Inches(6), Inches(4), Inches(0.6))
    box.text_frame.text = "A text box"
    # Impress shrinks auto-fitting boxes to their text when it saves: use a fixed-size, wrapping box
    box.text_frame.word_wrap = True
    box.text_frame.auto_size = MSO_AUTO_SIZE.NONE
    box.text_frame.paragraphs[0].runs[0].font.size = Pt(18)
    prs.save(str(path))


def deck_facts(path: Path) -> list[list[tuple]]:
    """Per slide, per shape: name, kind, geometry (rounded to 0.01 mm) and text."""
    prs = Presentation(str(path))
    facts = []
    for slide in prs.slides:
        shapes = []
        for sh in slide.shapes:
            geom = tuple(round((v or 0) / 360) for v in (sh.left, sh.top, sh.width, sh.height))
            shapes.append((sh.shape_type, geom, sh.text_frame.text if sh.has_text_frame else None))
        facts.append(shapes)
    return facts


def our_children() -> list[str]:
    """Command lines of live descendants of this test process that are the gui agent's Xvfb or soffice.

    (Other tests' renderers may keep a headless soffice alive in this process: they use other
    profile folders and no Xvfb.)"""
    from pptarena.plugins.agents.gui.env import _alive, _descendants

    out = []
    for pid in _descendants(os.getpid()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if _alive(pid) and (("Xvfb" in cmd and "-displayfd" in cmd) or "pptarena-gui-" in cmd):
            out.append(cmd)
    return out


def scripted_client(responses: list[str], tmp_path: Path) -> ModelClient:
    from pptarena.plugins.backends.scripted import ScriptedBackend

    context = ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: None)  # type: ignore[arg-type,return-value]
    backend = ScriptedBackend(ScriptedBackend.Options(responses=responses), context)
    return ModelClient(backend, "scripted", "gui-test")


@pytest.fixture(scope="module")
def deck_and_baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The generated deck, and the same deck opened and saved by Impress with no edit.

    Saving through Impress rewrites much of the package (theme, layouts, placeholder
    names...), so the agent's edit is measured against this round trip.
    """
    from pptarena.plugins.agents.gui.env import impress_round_trip

    folder = tmp_path_factory.mktemp("deck")
    src = folder / "input.pptx"
    make_deck(src)
    return src, impress_round_trip(src, folder / "baseline.pptx")


def assert_diff_is_exactly_the_title_edit(baseline: Path, prediction: Path) -> None:
    from pptarena.deck import diff_decks

    edits = diff_decks(baseline, prediction).edits
    assert [(e["kind"], e["slide"], e["path"], e["old"], e["new"]) for e in edits] == [
        ("text", 1, "text/p0", "Old title", NEW_TITLE)
    ], edits


def run_agent(
    tmp_path: Path, src_deck: Path, responses: list[str], client: ModelClient | None = None, **options
) -> tuple:
    from pptarena.plugins.agents.gui import GuiAgent

    src = tmp_path / "input.pptx"
    shutil.copyfile(src_deck, src)
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    client = client or scripted_client(responses, tmp_path)
    seen_running: list[list[str]] = []
    complete = client.complete

    def complete_and_look(messages, **params):
        # while the episode runs, the agent's Xvfb and soffice are visible to our_children()
        seen_running.append(our_children())
        return complete(messages, **params)

    client.complete = complete_and_look  # type: ignore[method-assign]
    client.seen_running = seen_running  # type: ignore[attr-defined]
    workspace = Workspace(
        dir=task_dir,
        input_deck=src,
        output_deck=task_dir / "prediction.pptx",
        renderer=None,
        model=lambda ref: client,
        log=AgentLog(task_dir / "agent.log.jsonl"),
        timeout=240,
    )
    context = ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: client)
    agent = GuiAgent(GuiAgent.Options(model="scripted/gui-test", step_delay=0.3, **options), context)
    task = Task(id="t1", instruction=f"Change the title of slide 1 to '{NEW_TITLE}'.", original=src)
    prediction = agent.edit(task, workspace)
    return src, task_dir, prediction, client


def assert_only_title_changed(src: Path, out: Path) -> None:
    """Slide 1's title text is NEW_TITLE; shape kinds, text and geometry (±0.01 mm) are otherwise as
    before."""
    before, after = deck_facts(src), deck_facts(out)
    assert len(after) == len(before) == 2
    assert after[0][0][2] == NEW_TITLE
    for slide_before, slide_after in zip(before, after, strict=True):
        assert len(slide_after) == len(slide_before)
        for (kind0, geom0, text0), (kind1, geom1, text1) in zip(slide_before, slide_after, strict=True):
            # Impress writes a text box back as a plain shape with a text body (no txBox flag):
            # a save artifact of LibreOffice, not part of the agent's edit
            assert kind1 == kind0 or {kind0, kind1} == {MSO_SHAPE_TYPE.TEXT_BOX, MSO_SHAPE_TYPE.AUTO_SHAPE}
            # LibreOffice stores lengths in 1/100 mm: allow one unit of rounding
            assert all(abs(a - b) <= 1 for a, b in zip(geom0, geom1, strict=True)), (geom0, geom1)
            if text0 != "Old title":
                assert text1 == text0


def test_json_actions_edit_the_title_through_impress(tmp_path: Path, deck_and_baseline) -> None:
    x, y = TITLE_POINT
    responses = [
        f'I will open the title for editing.\n```json\n{{"action": "double_click", "x": {x}, "y": {y}}}\n```',
        json.dumps(
            {"actions": [{"action": "key", "keys": "ctrl+a"}, {"action": "type", "text": NEW_TITLE}]},
            ensure_ascii=False,
        ),
        '{"action": "done", "note": "title replaced"}',
    ]
    src, task_dir, prediction, client = run_agent(tmp_path, deck_and_baseline[0], responses)

    assert prediction.path == task_dir / "prediction.pptx" and prediction.path.is_file()
    assert prediction.metadata["stop_reason"] == "done"
    assert prediction.metadata["steps"] == 3
    assert prediction.metadata["action_errors"] == 0
    assert_only_title_changed(src, prediction.path)
    assert_diff_is_exactly_the_title_edit(deck_and_baseline[1], prediction.path)

    lines = [json.loads(x) for x in (task_dir / "trajectory" / "trajectory.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2, "final"]
    assert lines[0]["actions"] == [{"kind": "click", "x": x, "y": y, "button": "left", "count": 2}]
    assert [a["kind"] for a in lines[1]["actions"]] == ["key", "type"]
    for line in lines:
        png = task_dir / "trajectory" / line["screenshot"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the model saw a screenshot at every step, the instruction at the first
    requests = client.backend.requests
    assert len(requests) == 3
    assert NEW_TITLE in requests[0].last_user_text and len(requests[0].images) == 1
    assert client.usage.calls == 3
    running = " ".join(client.seen_running[0])
    assert "Xvfb" in running and "soffice" in running
    assert our_children() == []


def test_anthropic_tool_use_replayed_with_scaled_screenshots(tmp_path: Path, deck_and_baseline) -> None:
    """Recorded Anthropic responses (as the scripted backend's text) drive the GUI; the model saw 1024x640."""
    sx, sy = TITLE_POINT[0] * 1024 // 1280, TITLE_POINT[1] * 640 // 800

    def message(*blocks: dict, stop: str = "tool_use") -> str:
        return json.dumps(
            {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": list(blocks),
                "stop_reason": stop,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
            ensure_ascii=False,
        )

    responses = [
        message(
            {"type": "text", "text": "Double-click the title."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "computer",
                "input": {"action": "double_click", "coordinate": [sx, sy]},
            },
        ),
        message(
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "computer",
                "input": {"action": "key", "text": "ctrl+a"},
            },
            {
                "type": "tool_use",
                "id": "toolu_3",
                "name": "computer",
                "input": {"action": "type", "text": NEW_TITLE},
            },
        ),
        message({"type": "text", "text": "The title is changed."}, stop="end_turn"),
    ]
    src, task_dir, prediction, client = run_agent(
        tmp_path, deck_and_baseline[0], responses, action_space="anthropic", image_size="1024x640"
    )
    assert prediction.metadata["stop_reason"] == "done" and prediction.notes == "The title is changed."
    assert_diff_is_exactly_the_title_edit(deck_and_baseline[1], prediction.path)
    first = json.loads((task_dir / "trajectory" / "trajectory.jsonl").read_text().splitlines()[0])
    assert first["image_size"] == [1024, 640]
    assert first["actions"][0]["x"] == TITLE_POINT[0] and first["actions"][0]["y"] == TITLE_POINT[1]
    from PIL import Image

    assert Image.open(task_dir / "trajectory" / "step_000.png").size == (1024, 640)
    assert client.backend.requests[0].images[0].data[:4] == b"\x89PNG"
    # native conversation: the model's tool calls come back as tool calls, answered by tool results
    from pptarena.models import ToolCall, ToolResult

    second = client.backend.requests[1]
    assert second.params["tools"][0]["type"] == "computer_20250124"
    (assistant,) = [m for m in second.messages if m.role == "assistant"]
    assert [(p.id, dict(p.input)) for p in assistant.parts() if isinstance(p, ToolCall)] == [
        ("toolu_1", {"action": "double_click", "coordinate": [sx, sy]})
    ]
    (result,) = second.messages[-1].parts()
    assert isinstance(result, ToolResult) and result.call_id == "toolu_1" and not result.is_error
    assert result.images()[0].data == (task_dir / "trajectory" / "step_001.png").read_bytes()
    assert our_children() == []


def _stub_client(backend_factory, ref_backend: str, model: str) -> ModelClient:
    return ModelClient(backend_factory(), ref_backend, model)


def test_anthropic_computer_use_over_the_sdk_edits_the_title(
    tmp_path: Path, deck_and_baseline, llm_server, anthropic_backend
) -> None:
    """The real anthropic SDK talks to the stub server, which replays a recorded computer-use session."""
    from tests.support.stub_llm_server import Native

    sx, sy = TITLE_POINT[0] * 1024 // 1280, TITLE_POINT[1] * 640 // 800
    use = lambda i, **a: {"type": "tool_use", "id": f"toolu_{i}", "name": "computer", "input": a}  # noqa: E731
    llm_server.enqueue(
        Native(
            {
                "content": [
                    {"type": "text", "text": "Double-click the title."},
                    use(1, action="double_click", coordinate=[sx, sy]),
                ],
                "stop_reason": "tool_use",
            }
        ),
        Native(
            {
                "content": [use(2, action="key", text="ctrl+a"), use(3, action="type", text=NEW_TITLE)],
                "stop_reason": "tool_use",
            }
        ),
        Native({"content": [{"type": "text", "text": "The title is changed."}], "stop_reason": "end_turn"}),
    )
    client = _stub_client(anthropic_backend, "anthropic", "claude-test")
    src, task_dir, prediction, _ = run_agent(
        tmp_path, deck_and_baseline[0], [], client=client, action_space="anthropic", image_size="1024x640"
    )
    assert prediction.metadata["stop_reason"] == "done" and prediction.metadata["action_errors"] == 0
    assert_diff_is_exactly_the_title_edit(deck_and_baseline[1], prediction.path)
    requests = llm_server.requests
    assert len(requests) == 3
    assert all(r.headers["anthropic-beta"] == "computer-use-2025-01-24" for r in requests)
    assert requests[0].tools()[0]["display_width_px"] == 1024
    assert [(r["call_id"], len(r["images"])) for r in requests[2].tool_results()[-2:]] == [
        ("toolu_2", 0),
        ("toolu_3", 1),
    ]
    assert (
        requests[2].tool_results()[-1]["images"][0][1]
        == (task_dir / "trajectory" / "step_002.png").read_bytes()
    )
    assert our_children() == []


def test_openai_computer_use_over_the_sdk_edits_the_title(
    tmp_path: Path, deck_and_baseline, llm_server, openai_backend
) -> None:
    """The real openai SDK calls the Responses API on the stub server, which replays computer_call items."""
    from tests.support.stub_llm_server import Native

    def call(i: int, action: dict) -> dict:
        return {
            "type": "computer_call",
            "id": f"cu_{i}",
            "call_id": f"call_{i}",
            "action": action,
            "pending_safety_checks": [],
            "status": "completed",
        }

    x, y = TITLE_POINT
    llm_server.enqueue(
        Native({"id": "resp_1", "output": [call(1, {"type": "double_click", "x": x, "y": y})]}),
        Native(
            {
                "id": "resp_2",
                "output": [
                    call(2, {"type": "keypress", "keys": ["CTRL", "A"]}),
                    call(3, {"type": "type", "text": NEW_TITLE}),
                ],
            }
        ),
        Native(
            {
                "id": "resp_3",
                "output": [
                    {
                        "type": "message",
                        "id": "msg_3",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                    }
                ],
            }
        ),
    )
    client = _stub_client(openai_backend, "openai", "computer-use-preview")
    src, task_dir, prediction, _ = run_agent(
        tmp_path, deck_and_baseline[0], [], client=client, action_space="openai"
    )
    assert prediction.metadata["stop_reason"] == "done" and prediction.notes == "Done."
    assert_diff_is_exactly_the_title_edit(deck_and_baseline[1], prediction.path)
    requests = llm_server.requests
    assert [r.path for r in requests] == ["/v1/responses"] * 3
    assert requests[0].body["tools"] == [
        {"type": "computer_use_preview", "display_width": 1280, "display_height": 800, "environment": "linux"}
    ]
    assert [r.body.get("previous_response_id") for r in requests] == [None, "resp_1", "resp_2"]
    outputs = requests[2].tool_results()
    assert [o["call_id"] for o in outputs] == ["call_2", "call_3"]
    assert outputs[0]["images"][0][1] == (task_dir / "trajectory" / "step_002.png").read_bytes()
    assert our_children() == []
