"""Native computer use over the wire: the GUI loop drives the real openai/anthropic SDKs against
the stub server.

No screen: a fake environment hands out screenshots (a different colour per
step) and records the actions it is asked to run. The stub server answers
with recorded provider bodies (``tool_use`` blocks, ``computer_call`` items);
the tests check what the SDKs put on the wire: the tool definition with the
display size, the anthropic-beta header, ``truncation``, the screenshots as
``tool_result`` / ``computer_call_output``, ``previous_response_id`` and the
acknowledged safety checks, and that the recorded tool calls became actions.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from pptarena.models import ImagePart, Message, ModelClient, ToolCall, ToolResult
from pptarena.plugins.agents.gui.actions import Action, Screen
from pptarena.plugins.agents.gui.adapters import make_adapter
from pptarena.plugins.agents.gui.env import ActionFailed
from pptarena.plugins.agents.gui.loop import Trajectory, run_episode
from pptarena.types import AgentLog
from tests.support.stub_llm_server import Native

SCREEN = Screen(1280, 800)
IMAGE = Screen(1024, 640)


class FakeScreen:
    """Screenshots of one flat colour per step; records actions; can fail a chosen action kind."""

    def __init__(self, fail_kind: str | None = None):
        self.screen = SCREEN
        self.executed: list[dict[str, Any]] = []
        self.shots = 0
        self.fail_kind = fail_kind

    def screenshot(self) -> Any:
        from PIL import Image

        self.shots += 1
        return Image.new("RGB", (SCREEN.width, SCREEN.height), (10 * self.shots % 256, 80, 160))

    def execute(self, action: Action) -> None:
        if action.kind == self.fail_kind:
            raise ActionFailed("xdotool said no")
        self.executed.append(action.to_json())

    def settle(self) -> None:
        pass


def png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    return Image.open(io.BytesIO(data)).size


def episode(
    tmp_path: Path, client: ModelClient, space: str, env: FakeScreen | None = None, **kw: Any
) -> tuple:
    env = env or FakeScreen()
    trajectory = Trajectory(tmp_path / "trajectory")
    result = run_episode(
        env,
        client,
        make_adapter(space),
        "Change the title to 'New'.",
        trajectory=trajectory,  # type: ignore[arg-type]
        log=AgentLog(tmp_path / "agent.log.jsonl"),
        image_size=IMAGE,
        step_delay=0,
        **kw,
    )
    return result, env, trajectory


def anthropic_message(*blocks: dict, stop: str = "tool_use") -> Native:
    return Native({"content": list(blocks), "stop_reason": stop, "model": "claude-test"})


def tool_use(call_id: str, **action: Any) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "computer", "input": action}


# --------------------------------------------------------------------------- anthropic


def test_anthropic_conversation_on_the_wire(tmp_path: Path, anthropic_backend, llm_server) -> None:
    llm_server.enqueue(
        anthropic_message(
            {"type": "text", "text": "Double-click the title."},
            tool_use("toolu_1", action="double_click", coordinate=[436, 240]),
        ),
        anthropic_message(
            tool_use("toolu_2", action="key", text="ctrl+a"), tool_use("toolu_3", action="type", text="New")
        ),
        anthropic_message({"type": "text", "text": "Done: the title is New."}, stop="end_turn"),
    )
    client = ModelClient(anthropic_backend(), "anthropic", "claude-test")
    result, env, trajectory = episode(tmp_path, client, "anthropic", history_images=1)

    assert (result.stop_reason, result.steps, result.note) == ("done", 3, "Done: the title is New.")
    assert env.executed == [
        {"kind": "click", "x": 545, "y": 300, "button": "left", "count": 2},
        {"kind": "key", "keys": "ctrl+a"},
        {"kind": "type", "text": "New"},
    ]
    requests = llm_server.requests
    assert len(requests) == 3
    for req in requests:
        assert req.path == "/v1/messages"
        assert req.headers["anthropic-beta"] == "computer-use-2025-01-24"
        assert req.tools() == [
            {
                "type": "computer_20250124",
                "name": "computer",
                "display_width_px": 1024,
                "display_height_px": 640,
            }
        ]
        assert "LibreOffice Impress" in (req.system() or "")
    first = requests[0].messages()
    assert len(first) == 1 and "Change the title" in first[0]["content"][0]["text"]
    assert [png_size(img) for _, img in requests[0].images()] == [(1024, 640)]

    # step 2: the model's turn comes back verbatim, then a tool_result holding the new screenshot
    second = requests[1].messages()
    assert second[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Double-click the title."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "computer",
                "input": {"action": "double_click", "coordinate": [436, 240]},
            },
        ],
    }
    results = requests[1].tool_results()
    assert [(r["call_id"], r["is_error"]) for r in results] == [("toolu_1", False)]
    step1_png = (trajectory.folder / "step_001.png").read_bytes()
    assert results[0]["images"] == [("image/png", step1_png)]

    # step 3: one result per call, the screenshot in the last; older screenshots pruned (history_images=1)
    results = requests[2].tool_results()
    assert [(r["call_id"], r["is_error"], len(r["images"])) for r in results] == [
        ("toolu_1", False, 0),
        ("toolu_2", False, 0),
        ("toolu_3", False, 1),
    ]
    assert results[2]["images"][0][1] == (trajectory.folder / "step_002.png").read_bytes()
    assert requests[2].images() == []  # the first screenshot (a top-level image block) was pruned too
    assert "(screenshot omitted)" in str(requests[2].messages()[0])
    assert client.usage.calls == 3


def test_anthropic_failed_action_is_an_error_tool_result(
    tmp_path: Path, anthropic_backend, llm_server
) -> None:
    llm_server.enqueue(
        anthropic_message(
            tool_use("toolu_a", action="key", text="ctrl+a"),
            tool_use("toolu_b", action="type", text="x"),
            tool_use("toolu_c", action="key", text="Return"),
        ),
        anthropic_message({"type": "text", "text": "Giving up."}, stop="end_turn"),
    )
    client = ModelClient(anthropic_backend(), "anthropic", "claude-test")
    result, env, _ = episode(tmp_path, client, "anthropic", env=FakeScreen(fail_kind="type"))
    assert env.executed == [{"kind": "key", "keys": "ctrl+a"}]
    assert result.action_errors == 1
    results = llm_server.requests[1].tool_results()
    assert [(r["call_id"], r["is_error"]) for r in results] == [
        ("toolu_a", False),
        ("toolu_b", True),
        ("toolu_c", True),
    ]
    assert "xdotool said no" in results[1]["texts"][0]
    assert "not run" in results[2]["texts"][0] and len(results[2]["images"]) == 1


def test_anthropic_plain_calls_stay_on_the_messages_endpoint(anthropic_backend, llm_server) -> None:
    client = ModelClient(anthropic_backend(), "anthropic", "claude-test")
    assert client.complete([Message.user("hi")]).text == "ok"
    assert (
        "anthropic-beta" not in llm_server.requests[-1].headers
        and "tools" not in llm_server.requests[-1].body
    )
    client.complete(
        [Message.user("hi")],
        tools=[{"name": "f", "input_schema": {"type": "object"}}],
        betas=["token-efficient-tools-2025-02-19"],
    )
    assert llm_server.requests[-1].headers["anthropic-beta"] == "token-efficient-tools-2025-02-19"


# --------------------------------------------------------------------------- openai


def computer_call(call_id: str, action: dict, checks: list[dict] | None = None) -> dict:
    return {
        "type": "computer_call",
        "id": f"cu_{call_id}",
        "call_id": call_id,
        "action": action,
        "pending_safety_checks": checks or [],
        "status": "completed",
    }


def response(rid: str, *items: dict) -> Native:
    reasoning = {"type": "reasoning", "id": f"rs_{rid}", "summary": []}
    return Native({"id": rid, "model": "computer-use-preview", "output": [reasoning, *items]})


def message_item(text: str) -> dict:
    return {
        "type": "message",
        "id": "msg_x",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def test_openai_responses_conversation_on_the_wire(tmp_path: Path, openai_backend, llm_server) -> None:
    llm_server.enqueue(
        response("resp_1", computer_call("call_1", {"type": "double_click", "x": 436, "y": 240})),
        response(
            "resp_2",
            computer_call("call_2", {"type": "keypress", "keys": ["CTRL", "A"]}),
            computer_call("call_3", {"type": "type", "text": "New"}),
        ),
        response("resp_3", message_item("The title now reads New.")),
    )
    client = ModelClient(openai_backend(), "openai", "computer-use-preview")
    result, env, trajectory = episode(tmp_path, client, "openai")

    assert (result.stop_reason, result.steps, result.note) == ("done", 3, "The title now reads New.")
    assert env.executed == [
        {"kind": "click", "x": 545, "y": 300, "button": "left", "count": 2},
        {"kind": "key", "keys": "ctrl+a"},
        {"kind": "type", "text": "New"},
    ]
    requests = llm_server.requests
    assert [r.path for r in requests] == ["/v1/responses"] * 3
    for req in requests:
        assert req.body["tools"] == [
            {
                "type": "computer_use_preview",
                "display_width": 1024,
                "display_height": 640,
                "environment": "linux",
            }
        ]
        assert req.body["truncation"] == "auto"
        assert "LibreOffice Impress" in req.body["instructions"]
    assert "previous_response_id" not in requests[0].body
    first = requests[0].body["input"]
    assert first[0]["role"] == "user" and first[0]["content"][0]["type"] == "input_text"
    assert [png_size(img) for _, img in requests[0].images()] == [(1024, 640)]

    assert requests[1].body["previous_response_id"] == "resp_1"
    assert requests[1].body["input"] == [
        {
            "type": "computer_call_output",
            "call_id": "call_1",
            "output": {
                "type": "computer_screenshot",
                "image_url": ImagePart((trajectory.folder / "step_001.png").read_bytes()).data_url(),
            },
        }
    ]
    assert requests[2].body["previous_response_id"] == "resp_2"
    assert [r["call_id"] for r in requests[2].tool_results()] == ["call_2", "call_3"]
    assert all(
        r["images"][0][1] == (trajectory.folder / "step_002.png").read_bytes()
        for r in requests[2].tool_results()
    )


SAFETY = {"id": "cu_sc_1", "code": "malicious_instructions", "message": "Please acknowledge."}


def test_openai_pending_safety_check_stops_by_default(tmp_path: Path, openai_backend, llm_server) -> None:
    llm_server.enqueue(response("resp_1", computer_call("call_1", {"type": "type", "text": "x"}, [SAFETY])))
    client = ModelClient(openai_backend(), "openai", "computer-use-preview")
    result, env, trajectory = episode(tmp_path, client, "openai")
    assert result.stop_reason == "safety_check" and "malicious_instructions" in result.note
    assert env.executed == [] and len(llm_server.requests) == 1
    assert trajectory.lines[-1]["stop_reason"] == "safety_check"


def test_openai_safety_check_acknowledged_when_allowed(tmp_path: Path, openai_backend, llm_server) -> None:
    llm_server.enqueue(
        response("resp_1", computer_call("call_1", {"type": "type", "text": "x"}, [SAFETY])),
        response("resp_2", message_item("ok")),
    )
    client = ModelClient(openai_backend(), "openai", "computer-use-preview")
    result, env, _ = episode(tmp_path, client, "openai", safety_checks="acknowledge")
    assert result.stop_reason == "done" and env.executed == [{"kind": "type", "text": "x"}]
    (item,) = llm_server.requests[1].body["input"]
    assert item["acknowledged_safety_checks"] == [SAFETY]
    assert result.action_errors == 0


def test_openai_chat_stays_default_and_rejects_orphan_tool_results(openai_backend, llm_server) -> None:
    client = ModelClient(openai_backend(), "openai", "gpt-4o")
    assert client.complete([Message.user("hi")]).text == "ok"
    assert llm_server.requests[-1].path == "/v1/chat/completions"
    with pytest.raises(TypeError, match="answers no tool call"):
        client.complete([Message.user(ToolResult("call_1", (ImagePart(b"png"),)))])
    reply = client.complete([Message.user("hi")], truncation="auto")  # Responses path, plain text reply
    assert llm_server.requests[-1].path == "/v1/responses" and reply.text == "ok"
    assert reply.raw is not None and reply.raw["output"][0]["type"] == "message"


def test_cache_key_includes_tools_and_tool_parts(openai_backend, llm_server) -> None:
    client = ModelClient(openai_backend(cache=True), "openai", "computer-use-preview")
    tool = {
        "type": "computer_use_preview",
        "display_width": 1024,
        "display_height": 640,
        "environment": "linux",
    }
    messages = [Message.user("go", ImagePart(b"\x89PNG a"))]
    client.complete(messages, tools=[tool])
    client.complete(messages, tools=[tool])
    assert len(llm_server.requests) == 1 and client.usage.cached_calls == 1
    client.complete(messages, tools=[{**tool, "display_width": 1280}])
    assert len(llm_server.requests) == 2
    a = client.cache_key([Message.user(ToolResult("c1", (ImagePart(b"one"),)))], {})
    b = client.cache_key([Message.user(ToolResult("c1", (ImagePart(b"two"),)))], {})
    c = client.cache_key([Message.assistant("", ToolCall("c1", "computer", {"action": "key"}))], {})
    assert len({a, b, c}) == 3


def test_scripted_backend_replays_a_recorded_raw_response(tmp_path: Path, scripted_backend) -> None:
    raw = {
        "id": "msg_1",
        "content": [tool_use("toolu_1", action="key", text="ctrl+a")],
        "stop_reason": "tool_use",
    }
    backend = scripted_backend(responses=[{"raw": raw}, "all done"])
    client = ModelClient(backend, "scripted", "replay")
    result, env, _ = episode(tmp_path, client, "anthropic")
    assert env.executed == [{"kind": "key", "keys": "ctrl+a"}] and result.stop_reason == "done"
    second = backend.requests[1]
    assert second.params["tools"][0]["type"] == "computer_20250124"
    results = [p for p in second.messages[-1].parts() if isinstance(p, ToolResult)]
    assert [r.call_id for r in results] == ["toolu_1"] and len(second.images) == 2
