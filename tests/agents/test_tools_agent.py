"""The ``tools`` agent: the loop over MCP tools with the scripted backend, a budget stop, tool errors
answered to the model, a broken server as an infrastructure error, the OpenAI wire path against the
provider simulator, and demo tasks solved through the harness's deck tools in a real ``arena run``.

The loop tests use a small MCP server written here with the real SDK (``MCPServer``, in-memory
transport, and a stdio server for the broken connection); the demo tests use the harness's own
deck server (``pptarena.mcp``).
"""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver import Image, MCPServer  # noqa: E402  (module level: tool annotations resolve)

from pptarena.mcp import TOOL_NAMES  # noqa: E402
from pptarena.models import ToolCall, ToolResult  # noqa: E402
from pptarena.plugins.agents.tools.agent import ToolsAgent, ToolsOptions  # noqa: E402
from pptarena.plugins.agents.tools.conversation import OMITTED, Conversation  # noqa: E402
from pptarena.plugins.agents.tools.schemas import read_tool_calls, tool_format_for  # noqa: E402
from pptarena.types import AgentTask, ComponentContext, InfraError  # noqa: E402
from tests.support.agents_fixtures import deck_texts, scripted_workspace  # noqa: E402

INSTRUCTION = "Rename the agenda slide's title to 'Plan for 2025'."


def tool_use(name: str, args: dict[str, Any], call_id: str, text: str = "") -> dict[str, Any]:
    """A scripted answer calling one tool, in the Anthropic form (``tool_use`` content block)."""
    return {
        "reply": text,
        "raw": {
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
            "stop_reason": "tool_use",
        },
    }


def png(color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, "PNG")
    return buf.getvalue()


def small_server(deck: Path) -> Any:
    """An MCP server of four tools over ``deck``: set a slide's title, read the titles, fail, draw."""
    server = MCPServer("test-deck")

    @server.tool()
    def titles() -> str:
        """The title of every slide, one per line."""
        from pptx import Presentation

        prs = Presentation(str(deck))
        return "\n".join(f"{i}: {s.shapes.title.text}" for i, s in enumerate(prs.slides, 1))

    @server.tool()
    def set_title(slide: int, text: str) -> str:
        """Set the title of slide ``slide`` (1-based)."""
        from pptx import Presentation

        prs = Presentation(str(deck))
        prs.slides[slide - 1].shapes.title.text = text
        prs.save(str(deck))
        return f"slide {slide} title set"

    @server.tool()
    def explode() -> str:
        """Always fails."""
        raise ValueError("the tool blew up on purpose")

    @server.tool()
    def pictures(count: int) -> list[Image]:
        """``count`` small images."""
        return [Image(data=png((i * 30, 0, 0)), format="png") for i in range(count)]

    return server


class SmallServerAgent(ToolsAgent):
    """The tools agent over :func:`small_server` (the working copy is the pair's output deck)."""

    @contextmanager
    def deck_server(self, workspace):  # type: ignore[override]
        import shutil

        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        yield small_server(workspace.output_deck), lambda: {}


def make_agent(tmp: Path, cls: type[ToolsAgent] = SmallServerAgent, **options: Any) -> ToolsAgent:
    opts = ToolsOptions(model="scripted/tool-model", **options)
    return cls(opts, ComponentContext(cache_dir=tmp, model=None))  # type: ignore[arg-type]


def agent_task(ws: Any, instruction: str = INSTRUCTION) -> AgentTask:
    return AgentTask(id="t1", instruction=instruction, original=ws.input_deck)


def events(ws: Any, name: str) -> list[dict[str, Any]]:
    return [e for e in ws.log.events if e["event"] == name]


# ----------------------------------------------------------------------------- the loop


def test_loop_edits_through_tools_then_stops_when_the_model_answers(tmp_path):
    responses = [
        tool_use("titles", {}, "c1"),
        tool_use("set_title", {"slide": 2, "text": "Plan for 2025"}, "c2", text="Renaming it."),
        "I renamed the agenda title to 'Plan for 2025'.",
    ]
    ws, backend = scripted_workspace(tmp_path, responses)
    pred = make_agent(tmp_path).edit(agent_task(ws), ws)

    assert pred.path == ws.output_deck
    assert deck_texts(pred.path)[2] == "Plan for 2025"
    assert deck_texts(ws.input_deck)[2] == "Agenda"  # the input deck is never written
    meta = pred.metadata
    assert meta["stop_reason"] == "done" and meta["steps"] == 3
    assert meta["tool_calls"] == {"set_title": 1, "titles": 1} and meta["tool_errors"] == 0
    assert meta["final_text"].startswith("I renamed")
    assert pred.notes.startswith("done: 3 step(s), 2 tool call(s)")

    # the tools went to the model in the Anthropic form (the scripted backend's), every step
    specs = backend.requests[0].params["tools"]
    assert {s["name"] for s in specs} == {"titles", "set_title", "explode", "pictures"}
    assert specs[0]["input_schema"]["type"] == "object"
    # step 2 saw the result of step 1 as a tool result answering call c1
    second = backend.requests[1].messages
    assert isinstance(second[-2].parts()[0], ToolCall) and second[-2].parts()[0].id == "c1"
    result = second[-1].parts()[0]
    assert isinstance(result, ToolResult) and result.call_id == "c1" and "2: Agenda" in result.content[0]
    # logged: one tool_step per model call, the stop with its counts
    steps = events(ws, "tool_step")
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert len(events(ws, "model_call")) == 3  # the test's model client does not log: the loop does
    assert [c["tool"] for c in steps[1]["calls"]] == ["set_title"]
    stop = events(ws, "tools_stop")[-1]
    assert stop["stop_reason"] == "done" and stop["tool_calls_total"] == 2


def test_step_budget_stops_the_loop_and_keeps_the_working_copy(tmp_path):
    responses = [
        tool_use("set_title", {"slide": 1, "text": "First edit"}, "c1"),
        tool_use("titles", {}, "c2"),
        tool_use("titles", {}, "c3"),
        "never reached",
    ]
    ws, backend = scripted_workspace(tmp_path, responses)
    pred = make_agent(tmp_path, max_steps=2).edit(agent_task(ws), ws)

    assert len(backend.requests) == 2
    assert pred.metadata["stop_reason"] == "max_steps" and pred.metadata["steps"] == 2
    assert deck_texts(pred.path)[0] == "First edit"  # the edit made before the stop is kept
    assert pred.notes.startswith("stopped at the step budget (2 model calls), working copy kept")
    assert events(ws, "tools_stop")[-1]["stop_reason"] == "max_steps"


def test_token_budget_stops_the_loop(tmp_path):
    big = {"input_tokens": 600, "output_tokens": 10}
    responses = [
        {**tool_use("set_title", {"slide": 1, "text": "Budget edit"}, "c1"), **big},
        {**tool_use("titles", {}, "c2"), **big},
        "never reached",
    ]
    ws, backend = scripted_workspace(tmp_path, responses)
    pred = make_agent(tmp_path, max_tokens=1000).edit(agent_task(ws), ws)

    # 610 tokens after call 1 (< 1000: go on), 1220 after call 2 (its call runs, then stop)
    assert len(backend.requests) == 2
    assert pred.metadata["stop_reason"] == "max_tokens"
    assert pred.metadata["tool_calls"] == {"set_title": 1, "titles": 1}
    assert pred.metadata["model_usage"]["input_tokens"] == 1200
    assert deck_texts(pred.path)[0] == "Budget edit"
    assert "token budget (1220 of 1000 tokens used)" in pred.notes


def test_tool_errors_go_back_to_the_model_and_the_loop_goes_on(tmp_path):
    responses = [
        tool_use("explode", {}, "c1"),
        tool_use("set_title", {"slide": "two"}, "c2"),  # a bad argument: the SDK's validation error
        tool_use("format_disk", {}, "c3"),  # no such tool: refused before the server
        {  # arguments that are not JSON (OpenAI form, as a provider may send them)
            "reply": "",
            "raw": {
                "choices": [
                    {
                        "message": {
                            "tool_calls": [
                                {
                                    "id": "c4",
                                    "type": "function",
                                    "function": {"name": "titles", "arguments": "{oops"},
                                }
                            ]
                        }
                    }
                ]
            },
        },
        tool_use("set_title", {"slide": 2, "text": "Recovered"}, "c5"),
        "Done after the errors.",
    ]
    ws, backend = scripted_workspace(tmp_path, responses)
    pred = make_agent(tmp_path).edit(agent_task(ws), ws)

    assert pred.metadata["stop_reason"] == "done"
    assert deck_texts(pred.path)[2] == "Recovered"
    assert pred.metadata["tool_errors"] == 4
    answers = [r.messages[-1].parts()[0] for r in backend.requests[1:5]]
    assert all(isinstance(a, ToolResult) and a.is_error for a in answers)
    texts = [a.content[0] for a in answers]
    assert "Error executing tool explode" in texts[0]
    assert "slide" in texts[1] and "valid integer" in texts[1]
    assert "there is no tool 'format_disk'" in texts[2] and "set_title" in texts[2]
    assert "not valid JSON" in texts[3]
    problems = [c.get("problem", "") for s in events(ws, "tool_step") for c in s["calls"]]
    assert any("format_disk" in p for p in problems) and any("not valid JSON" in p for p in problems)


def test_images_are_capped_per_result_and_old_ones_dropped_from_the_history(tmp_path):
    responses = [
        tool_use("pictures", {"count": 5}, "c1"),
        tool_use("pictures", {"count": 1}, "c2"),
        tool_use("pictures", {"count": 1}, "c3"),
        "Seen enough.",
    ]
    ws, backend = scripted_workspace(tmp_path, responses)
    make_agent(tmp_path, max_images_per_result=2, history_images=1).edit(agent_task(ws), ws)

    first = backend.requests[1].messages[-1].parts()[0]
    assert isinstance(first, ToolResult) and len(first.images()) == 2
    assert "3 more image(s) dropped: at most 2 per result" in first.content[0]
    last = backend.requests[3].messages
    results = [p for m in last if m.role == "user" for p in m.parts() if isinstance(p, ToolResult)]
    assert [len(r.images()) for r in results] == [0, 0, 1]  # only the newest answer keeps its image
    assert OMITTED in results[0].content


def hostile_server() -> Any:
    """A server whose one tool answers with what a careless or hostile server might send."""
    from mcp_types import AudioContent, BlobResourceContents, EmbeddedResource, ImageContent, TextContent

    server = MCPServer("hostile")

    @server.tool(structured_output=False)
    def flood() -> list[Any]:
        """A huge text, images that are not images, audio and a binary resource."""
        return [
            TextContent(type="text", text="A" * 3_000_000),
            ImageContent(type="image", data="not base64 at all!", mime_type="image/png"),
            ImageContent(type="image", data=base64.b64encode(b"<svg/>").decode(), mime_type="image/svg+xml"),
            AudioContent(type="audio", data=base64.b64encode(b"RIFF").decode(), mime_type="audio/wav"),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///etc/shadow", blob=base64.b64encode(b"x").decode()),
            ),
            ImageContent(type="image", data=base64.b64encode(png()).decode(), mime_type="image/png"),
        ]

    return server


class HostileServerAgent(ToolsAgent):
    @contextmanager
    def deck_server(self, workspace):  # type: ignore[override]
        yield hostile_server(), dict


def test_a_hostile_servers_answer_reaches_the_model_bounded(tmp_path):
    ws, backend = scripted_workspace(tmp_path, [tool_use("flood", {}, "c1"), "ok"])
    make_agent(tmp_path, cls=HostileServerAgent, max_result_chars=5000).edit(agent_task(ws), ws)
    answer = backend.requests[1].messages[-1].parts()[0]
    text = answer.content[0]
    assert len(text) < 5200 and "more characters]" in text
    assert [i.data for i in answer.images()] == [png()]  # only the real PNG survives
    assert len(answer.content) == 2  # the cut text and the one image


def test_results_name_what_was_dropped():
    from mcp_types import AudioContent, CallToolResult, ImageContent, TextContent

    from pptarena.plugins.agents.tools.results import to_tool_result

    result = CallToolResult(
        content=[
            TextContent(type="text", text="hello"),
            ImageContent(type="image", data="%%%", mime_type="image/png"),
            ImageContent(type="image", data=base64.b64encode(b"<svg/>").decode(), mime_type="image/svg+xml"),
            AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
        ],
        is_error=True,
    )
    converted = to_tool_result("c9", result, max_chars=10_000, max_images=4)
    assert converted.is_error and converted.call_id == "c9" and converted.images() == []
    text = converted.content[0]
    assert "hello" in text and "not base64" in text and "image/svg+xml was dropped" in text
    assert "[audio content dropped" in text


def test_allow_list_names_must_be_deck_tools():
    with pytest.raises(ValueError, match="unknown tool"):
        ToolsOptions(model="scripted/m", tools=["explode"])
    with pytest.raises(ValueError, match="offers nothing"):
        ToolsOptions(model="scripted/m", tools=[])
    opts = ToolsOptions(model="scripted/m", tools=["read_part", "write_part", "read_part"])
    assert opts.tools == ["read_part", "write_part"]


def test_without_deck_tools_the_model_is_alone_and_the_deck_unchanged(tmp_path):
    ws, backend = scripted_workspace(tmp_path, ["I would rename the agenda title."])
    agent = make_agent(tmp_path, cls=ToolsAgent, deck_tools=False)
    pred = agent.edit(agent_task(ws), ws)

    assert pred.path.read_bytes() == ws.input_deck.read_bytes()
    assert "tools" not in backend.requests[0].params
    assert "no tools" in backend.requests[0].messages[0].content
    assert pred.metadata["steps"] == 1 and pred.metadata["tools_offered"] == []
    assert pred.notes.startswith("no deck tools: the deck is unchanged")


class DeadServerAgent(ToolsAgent):
    """The tools agent over a stdio 'server' that exits at once."""

    @contextmanager
    def deck_server(self, workspace):  # type: ignore[override]
        from mcp.client.stdio import StdioServerParameters

        yield StdioServerParameters(command=sys.executable, args=["-c", "import sys; sys.exit(3)"]), dict


CRASHING_SERVER = """
import os
from mcp.server.mcpserver import MCPServer

server = MCPServer("crashing")

@server.tool()
def crash() -> str:
    \"\"\"The server process dies.\"\"\"
    os._exit(1)

server.run("stdio")
"""


class CrashingServerAgent(ToolsAgent):
    """The tools agent over a stdio server whose one tool kills the server process."""

    @contextmanager
    def deck_server(self, workspace) -> Iterator[Any]:  # type: ignore[override]
        from mcp.client.stdio import StdioServerParameters

        script = workspace.dir / "crashing_server.py"
        script.write_text(CRASHING_SERVER)
        yield StdioServerParameters(command=sys.executable, args=[str(script)]), dict


SLOW_SERVER = """
import time
from mcp.server.mcpserver import MCPServer

server = MCPServer("slow")

@server.tool()
def slow() -> str:
    \"\"\"Answers after a long time.\"\"\"
    time.sleep(5)
    return "late"

server.run("stdio")
"""


class SlowServerAgent(ToolsAgent):
    """The tools agent over a stdio server whose one tool takes 5 s."""

    @contextmanager
    def deck_server(self, workspace) -> Iterator[Any]:  # type: ignore[override]
        from mcp.client.stdio import StdioServerParameters

        script = workspace.dir / "slow_server.py"
        script.write_text(SLOW_SERVER)
        yield StdioServerParameters(command=sys.executable, args=[str(script)]), dict


def test_a_tool_slower_than_tool_timeout_is_answered_as_an_error(tmp_path):
    ws, backend = scripted_workspace(tmp_path, [tool_use("slow", {}, "c1"), "It timed out; stopping."])
    pred = make_agent(tmp_path, cls=SlowServerAgent, tool_timeout=1).edit(agent_task(ws), ws)
    answer = backend.requests[1].messages[-1].parts()[0]
    assert answer.is_error and "did not answer within 1 s" in answer.content[0]
    assert pred.metadata["stop_reason"] == "done" and pred.metadata["tool_errors"] == 1


def test_a_server_that_cannot_start_is_an_infrastructure_error(tmp_path):
    ws, backend = scripted_workspace(tmp_path, ["unused"])
    with pytest.raises(InfraError, match="cannot connect to the deck tools' MCP server"):
        make_agent(tmp_path, cls=DeadServerAgent).edit(agent_task(ws), ws)
    assert backend.requests == []  # the model was never called


def test_a_server_dying_mid_loop_is_an_infrastructure_error_not_a_tool_error(tmp_path):
    ws, backend = scripted_workspace(tmp_path, [tool_use("crash", {}, "c1"), "unused"])
    with pytest.raises(InfraError, match="connection broke during 'crash'"):
        make_agent(tmp_path, cls=CrashingServerAgent).edit(agent_task(ws), ws)
    assert len(backend.requests) == 1


# ----------------------------------------------------------------------------- wire forms


def test_tool_calls_are_read_from_every_provider_shape():
    from pptarena.models import Completion

    anthropic = {
        "content": [
            {"type": "text", "text": "x"},
            {"type": "tool_use", "id": "a", "name": "t", "input": {"k": 1}},
        ]
    }
    openai = {
        "choices": [
            {
                "message": {
                    "tool_calls": [
                        {"id": "b", "type": "function", "function": {"name": "t", "arguments": '{"k": 2}'}}
                    ]
                }
            }
        ]
    }
    responses = {"output": [{"type": "function_call", "call_id": "c", "name": "t", "arguments": '{"k": 3}'}]}
    gemini = {"candidates": [{"content": {"parts": [{"function_call": {"name": "t", "args": {"k": 4}}}]}}]}
    read = [
        read_tool_calls(Completion(text="", model="m", raw=raw))
        for raw in (anthropic, openai, responses, gemini)
    ]
    assert [(r[0].call.id, r[0].call.input["k"]) for r in read] == [
        ("a", 1),
        ("b", 2),
        ("c", 3),
        ("call_0", 4),
    ]
    assert all(r[0].error is None for r in read)
    bad = read_tool_calls(
        Completion(
            text="",
            model="m",
            raw={"content": [{"type": "tool_use", "id": "d", "name": "t", "input": "[1]"}]},
        )
    )
    assert bad[0].error and "JSON object" in bad[0].error
    assert read_tool_calls(Completion(text="just text", model="m")) == []


def test_text_conversation_carries_calls_and_results_as_text():
    conv = Conversation("sys", "task", carries_parts=False, history_images=1)
    call = ToolCall("c1", "read_part", {"name": "ppt/slides/slide1.xml"})
    conv.add_reply("Reading.", [call])
    conv.add_results([(call, ToolResult("c1", ("<p:sld/>", _image()), is_error=False))])
    msgs = conv.messages()
    assert not any(isinstance(p, ToolCall | ToolResult) for m in msgs for p in m.parts())
    assert "[called tool read_part (call c1) with arguments" in msgs[2].content
    user = msgs[3].parts()
    assert "[result of tool read_part (call c1)]\n<p:sld/>" in user[0] and len(user) == 2


def _image():
    from pptarena.models import ImagePart

    return ImagePart(png())


def test_tool_format_follows_the_backend():
    class FakeOpenAI:
        pass

    FakeOpenAI.__module__ = "pptarena.plugins.backends.openai"

    class Client:
        backend = FakeOpenAI()

    assert tool_format_for(Client()) == "openai"
    Client.backend = object()
    assert tool_format_for(Client()) == "anthropic"


# ----------------------------------------------------------------------------- the harness's deck server

SLIDE2 = "ppt/slides/slide2.xml"


@pytest.fixture(scope="module")
def demo_tasks(tmp_path_factory) -> dict[str, Any]:
    from pptarena.run.configuration.registry import get_registry

    try:
        get_registry().get("datasets", "demo")
    except LookupError:
        pytest.skip("the demo dataset is not available")
    ctx = ComponentContext(cache_dir=tmp_path_factory.mktemp("demo-cache"), model=None)  # type: ignore[arg-type]
    return {t.id: t for t in get_registry().create("datasets", "demo", {}, ctx).tasks()}


def fixed_slide2(deck: Path) -> str:
    import zipfile

    with zipfile.ZipFile(deck) as z:
        xml = z.read(SLIDE2).decode("utf-8")
    fixed = xml.replace("Quartely", "Quarterly").replace("performence", "performance")
    assert fixed != xml
    return fixed


def typo_script(deck: Path) -> list[dict[str, Any] | str]:
    """Read slide 2, write it back fixed, check the diff, say done."""
    return [
        tool_use("read_part", {"name": SLIDE2}, "c1", text="Let me read the agenda slide."),
        tool_use("write_part", {"name": SLIDE2, "xml": fixed_slide2(deck)}, "c2"),
        tool_use("deck_diff", {}, "c3"),
        "Fixed 'Quartely' and 'performence' on slide 2.",
    ]


def test_demo_typos_fixed_through_the_deck_tools(tmp_path, demo_tasks):
    from pptarena.deck import diff_decks

    task = demo_tasks["qbr-fix-typos"]
    ws, backend = scripted_workspace(tmp_path, typo_script(task.original), deck=task.original)
    pred = make_agent(tmp_path, cls=ToolsAgent).edit(agent_task(ws, task.instruction), ws)

    edits = diff_decks(task.original, pred.path).edits
    assert {e["slide"] for e in edits} == {2} and len(edits) == 2, json.dumps(edits)[:500]
    assert "Quarterly results at a glance" in deck_texts(pred.path)
    meta = pred.metadata
    assert meta["stop_reason"] == "done" and meta["tool_errors"] == 0
    assert meta["tools_offered"] == list(TOOL_NAMES)
    assert meta["server"]["calls"] == {"read_part": 1, "write_part": 1, "deck_diff": 1}
    assert meta["server"]["edits"] == 1
    # the model saw the part's XML and then the diff of its edit
    read_answer = backend.requests[1].messages[-1].parts()[0]
    assert "Quartely" in read_answer.content[0]
    diff_answer = backend.requests[3].messages[-1].parts()[0]
    assert '"edit_count":2' in diff_answer.content[0]
    # the server logged every tool call to the pair's log
    assert [e["tool"] for e in events(ws, "tool_call")] == ["read_part", "write_part", "deck_diff"]


def test_an_earlier_attempt_left_at_the_output_path_is_not_the_starting_point(tmp_path, demo_tasks):
    task = demo_tasks["qbr-fix-typos"]
    ws, backend = scripted_workspace(tmp_path, typo_script(task.original), deck=task.original)
    ws.output_deck.write_bytes(b"a stale or broken deck from an earlier attempt")
    pred = make_agent(tmp_path, cls=ToolsAgent).edit(agent_task(ws, task.instruction), ws)
    assert "Quartely" in backend.requests[1].messages[-1].parts()[0].content[0]  # read from the input
    assert "Quarterly results at a glance" in deck_texts(pred.path)


def test_allow_list_narrows_the_deck_tools(tmp_path, demo_tasks):
    task = demo_tasks["qbr-fix-typos"]
    responses = [tool_use("run_python", {"code": "print(1)"}, "c1"), "I cannot run programs here."]
    ws, backend = scripted_workspace(tmp_path, responses, deck=task.original)
    pred = make_agent(tmp_path, cls=ToolsAgent, tools=["read_part", "write_part"]).edit(
        agent_task(ws, task.instruction), ws
    )
    assert [s["name"] for s in backend.requests[0].params["tools"]] == ["read_part", "write_part"]
    refused = backend.requests[1].messages[-1].parts()[0]
    assert refused.is_error and "there is no tool 'run_python'" in refused.content[0]
    assert events(ws, "tool_call") == []  # never reached the server
    assert pred.path.read_bytes() == Path(task.original).read_bytes()


def test_a_failed_edit_is_answered_to_the_model_and_changes_nothing(tmp_path, demo_tasks):
    task = demo_tasks["qbr-fix-typos"]
    responses = [
        tool_use("write_part", {"name": SLIDE2, "xml": "<p:sld>not closed"}, "c1"),
        tool_use("read_part", {"name": "../../etc/passwd"}, "c2"),
        "Giving up.",
    ]
    ws, backend = scripted_workspace(tmp_path, responses, deck=task.original)
    pred = make_agent(tmp_path, cls=ToolsAgent).edit(agent_task(ws, task.instruction), ws)
    answers = [r.messages[-1].parts()[0] for r in backend.requests[1:3]]
    assert all(a.is_error for a in answers)
    assert pred.metadata["tool_errors"] == 2 and pred.metadata["stop_reason"] == "done"
    assert deck_texts(pred.path) == deck_texts(task.original)


# ----------------------------------------------------------------------------- provider simulator


def sim_rules(deck: Path) -> list[Any]:
    from pptarena.models.sim import Rule

    return [
        Rule(match="Fix the spelling", tool_call={"name": "read_part", "arguments": {"name": SLIDE2}}),
        Rule(
            match="Quartely",
            tool_call={"name": "write_part", "arguments": {"name": SLIDE2, "xml": fixed_slide2(deck)}},
        ),
        Rule(match=r"replaced \(", reply="Both typos on slide 2 are fixed."),
    ]


def sim_workspace(tmp: Path, backend_name: str, backend: Any, deck: Path):
    from pptarena.models import ModelHub
    from pptarena.types import AgentLog, Workspace

    task_dir = tmp / "task"
    (task_dir / "input").mkdir(parents=True)
    input_deck = task_dir / "input" / "deck.pptx"
    input_deck.write_bytes(deck.read_bytes())
    hub = ModelHub({backend_name: backend})
    return Workspace(
        dir=task_dir,
        input_deck=input_deck,
        output_deck=task_dir / "prediction.pptx",
        renderer=None,
        model=hub.factory(),
        log=AgentLog(task_dir / "agent.log.jsonl"),
        timeout=300,
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
def test_demo_typos_fixed_over_the_provider_simulator(tmp_path, demo_tasks, provider):
    pytest.importorskip("google.genai" if provider == "google" else provider)
    from pptarena.deck import diff_decks
    from pptarena.models.sim import ProviderSim, SimConfig

    task = demo_tasks["qbr-fix-typos"]
    with ProviderSim(SimConfig(rules=tuple(sim_rules(task.original)))) as sim:
        ctx = ComponentContext(cache_dir=tmp_path, model=None)  # type: ignore[arg-type]
        if provider == "openai":
            from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions

            backend = OpenAIBackend(OpenAIOptions(base_url=sim.openai_base_url, api_key="sk-sim"), ctx)
        elif provider == "google":
            from pptarena.plugins.backends.google import GoogleBackend, GoogleOptions

            backend = GoogleBackend(GoogleOptions(base_url=sim.gemini_base_url, api_key="sim-key"), ctx)
        else:
            from pptarena.plugins.backends.anthropic import AnthropicBackend, AnthropicOptions

            backend = AnthropicBackend(
                AnthropicOptions(base_url=sim.anthropic_base_url, api_key="sk-sim"), ctx
            )
        ws = sim_workspace(tmp_path, provider, backend, Path(task.original))
        agent = ToolsAgent(ToolsOptions(model=f"{provider}/sim-model"), ctx)
        pred = agent.edit(agent_task(ws, task.instruction), ws)
        bodies = [r.body for r in sim.requests]

    edits = diff_decks(task.original, pred.path).edits
    assert {e["slide"] for e in edits} == {2} and len(edits) == 2
    assert pred.metadata["stop_reason"] == "done" and pred.metadata["steps"] == 3
    assert pred.metadata["tool_calls"] == {"read_part": 1, "write_part": 1}
    assert pred.metadata["tool_format"] == provider
    assert len(bodies) == 3
    if provider == "openai":  # chat completions: assistant tool_calls answered by role tool messages
        assert bodies[0]["tools"][0]["type"] == "function"
        assert {t["function"]["name"] for t in bodies[0]["tools"]} == set(TOOL_NAMES)
        for body, tool, said in ((bodies[1], "read_part", "Quartely"), (bodies[2], "write_part", "replaced")):
            call, answer = body["messages"][-2:]
            (made,) = call["tool_calls"]
            assert call["role"] == "assistant" and call["content"] is None
            assert made["type"] == "function" and made["function"]["name"] == tool
            assert made["id"].startswith("call_")  # the id the simulator gave the call, sent back
            assert answer["role"] == "tool" and answer["tool_call_id"] == made["id"]
            assert said in answer["content"]
        assert bodies[2]["messages"][-4:-2] == bodies[1]["messages"][-2:]  # the history is resent as is
        from types import SimpleNamespace

        from pptarena.plugins.agents.tools.schemas import carries_tool_parts

        assert carries_tool_parts(SimpleNamespace(backend=backend))
        backend.accepts_tool_parts = False  # a backend refusing the parts gets the text conversation
        assert not carries_tool_parts(SimpleNamespace(backend=backend))
    elif provider == "google":  # function declarations; function_call parts answered by function_response
        declared = bodies[0]["tools"][0]["functionDeclarations"]
        assert {d["name"] for d in declared} == set(TOOL_NAMES)
        turns = bodies[2]["contents"]
        assert "functionCall" in turns[-2]["parts"][0]
        response = turns[-1]["parts"][0]["functionResponse"]
        assert response["name"] == "write_part" and "replaced" in response["response"]["output"]
    else:  # the Messages API: tool_use blocks answered by tool_result blocks
        assert {t["name"] for t in bodies[0]["tools"]} == set(TOOL_NAMES)
        last = bodies[2]["messages"]
        assert last[-2]["content"][-1]["type"] == "tool_use"
        assert last[-1]["content"][0]["type"] == "tool_result"
        assert last[-1]["content"][0]["tool_use_id"] == last[-2]["content"][-1]["id"]


# ----------------------------------------------------------------------------- arena run: tools vs alone

#: The 12 demo tasks; the example's scripted model solves every one through run_python.
DEMO_TASKS = (
    "birds-align-pictures",
    "birds-fade-transitions",
    "birds-title-colour",
    "onboarding-animate-bullets",
    "onboarding-reference-section",
    "onboarding-table-header",
    "onboarding-two-columns",
    "qbr-add-region-row",
    "qbr-chart-target",
    "qbr-fix-typos",
    "qbr-link-report",
    "qbr-move-next-steps",
)


def arena(args: list[str], cwd: Path) -> Any:
    import os
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "pptarena.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=900,
    )


@pytest.mark.slow
def test_example_with_and_without_tools_runs_and_compares(tmp_path):
    """examples/tools-vs-alone.toml through `arena run` on the 12 demo tasks: the scripted model
    solves every one through run_python with the tools (python-pptx, lxml for transitions,
    animations and the layout change) and cannot edit alone; judged by the structural and rubric
    judges, the paired comparison says what the tools were worth."""
    import shutil

    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    from tests.support.paths import ROOT

    config = ROOT / "examples" / "tools-vs-alone.toml"
    run_dir = tmp_path / "run"
    out = arena(["run", "--config", str(config), "--out", str(run_dir), "--quiet"], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]

    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    by = {(r["agent"], r["task_id"]): r for r in rows}
    assert len(by) == 24 and all(r["status"] == "scored" for r in rows), [r.get("error") for r in rows]
    assert {task for _, task in by} == set(DEMO_TASKS)
    for task in DEMO_TASKS:
        tools = by["with-tools", task]
        assert tools["scores"]["structural"]["score"] == 1.0, (task, tools["scores"]["structural"])
        assert tools["scores"]["rubric"]["score"] == 1.0, (task, tools["scores"]["rubric"])
        assert by["alone", task]["scores"]["structural"]["score"] == 0.0, task

    # each with-tools pair's log: the server's one run_python call and the loop's stop
    for task in DEMO_TASKS:
        log_path = run_dir / "tasks" / "with-tools" / task / "agent.log.jsonl"
        log = [json.loads(line) for line in log_path.read_text().splitlines()]
        assert [e["tool"] for e in log if e["event"] == "tool_call"] == ["run_python"], task
        stop = [e for e in log if e["event"] == "tools_stop"][-1]
        assert stop["stop_reason"] == "done" and stop["steps"] == 2, task
        assert stop["tool_calls"] == {"run_python": 1}, task

    # the paired comparison: with-tools beats alone on every task, on both judges
    summary = json.loads((run_dir / "summary.json").read_text())
    for judge in ("structural", "rubric"):
        (pair,) = summary["comparisons"][judge].values()  # one pair of agents, keyed "a|b"
        tools_first = pair["a"] == "with-tools"
        assert {pair["a"], pair["b"]} == {"with-tools", "alone"} and pair["n"] == 12, judge
        assert pair["diff"] == pytest.approx(1.0 if tools_first else -1.0), judge
        assert (pair["wins"], pair["losses"]) == ((12, 0) if tools_first else (0, 12)), judge

    report = arena(["report", str(run_dir)], tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "with-tools" in report.stdout and "alone" in report.stdout
