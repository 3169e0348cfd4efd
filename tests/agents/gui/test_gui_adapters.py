"""Action adapters of the gui agent: recorded provider outputs and JSON replies → screen actions.

The OpenAI and Anthropic fixtures in tests/fixtures/gui are full API responses
written from the providers' documented formats; they are first checked against
the official SDKs' response types, then mapped. No screen is needed here.
"""

from __future__ import annotations

import json

import pytest

from pptarena.models import Completion
from pptarena.plugins.agents.gui import actions as A
from pptarena.plugins.agents.gui.actions import ActionError, Scaler, Screen
from pptarena.plugins.agents.gui.adapters import (
    AnthropicComputerAdapter,
    JsonAdapter,
    OpenAIComputerAdapter,
    extract_json_values,
    make_adapter,
)
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "gui"
SCREEN = Screen(1280, 800)
IMAGE = Screen(1024, 640)  # the model saw screenshots scaled by 0.8
SCALER = Scaler(SCREEN, IMAGE)


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def raw_completion(data: dict) -> Completion:
    return Completion(text="", model="m", raw=data)


def kinds(decision) -> list[dict]:
    return [a.to_json() for a in decision.actions]


# --------------------------------------------------------------------------- fixtures match the SDK types


def test_openai_fixtures_are_valid_responses_api_output_items() -> None:
    openai_types = pytest.importorskip("openai.types.responses")
    from pydantic import TypeAdapter

    items = TypeAdapter(openai_types.ResponseOutputItem)
    for path in sorted(FIXTURES.glob("openai_*.json")):
        for item in json.loads(path.read_text())["output"]:
            parsed = items.validate_python(item)
            assert parsed.type == item["type"], path.name


def test_anthropic_fixtures_are_valid_messages() -> None:
    beta = pytest.importorskip("anthropic.types.beta")
    from pydantic import TypeAdapter

    for path in sorted(FIXTURES.glob("anthropic_*.json")):
        message = beta.BetaMessage.model_validate(json.loads(path.read_text()))
        assert message.role == "assistant", path.name
    toolset = TypeAdapter(beta.BetaComputerToolUseBlock)
    for block in fixture("anthropic_message_toolset.json")["content"][1:]:
        assert toolset.validate_python(block).name == block["name"]


# --------------------------------------------------------------------------- openai


def test_openai_double_click_is_scaled_to_the_screen() -> None:
    decision = OpenAIComputerAdapter().parse(raw_completion(fixture("openai_response_click.json")), SCALER)
    assert kinds(decision) == [{"kind": "click", "x": 545, "y": 300, "button": "left", "count": 2}]
    assert decision.call_ids == ["call_zXwXp2Dm8qFAkq3tVwK6mHbE"]
    assert not decision.done and not decision.errors


def test_openai_batched_actions_map_in_order() -> None:
    decision = OpenAIComputerAdapter().parse(raw_completion(fixture("openai_response_batch.json")), SCALER)
    assert not decision.errors
    assert kinds(decision) == [
        {"kind": "key", "keys": "ctrl+a"},
        {"kind": "type", "text": "Quarterly Results — 2025"},
        {"kind": "key", "keys": "Escape"},
        {"kind": "click", "x": 640, "y": 750, "button": "right", "count": 1, "modifiers": ["shift"]},
        {"kind": "drag", "path": [[125, 125], [188, 150], [375, 250]]},
        {"kind": "scroll", "x": 640, "y": 400, "dx": 0, "dy": 3},
        {"kind": "move", "x": 1279, "y": 799},
        {"kind": "wait", "seconds": 2.0},
        {"kind": "noop"},
    ]


def test_openai_message_without_computer_call_means_done() -> None:
    decision = OpenAIComputerAdapter().parse(raw_completion(fixture("openai_response_message.json")), SCALER)
    assert decision.done
    assert "Quarterly Results" in decision.note
    assert [a.kind for a in decision.actions] == ["done"]


def test_openai_unsupported_button_and_safety_checks_are_reported() -> None:
    decision = OpenAIComputerAdapter().parse(raw_completion(fixture("openai_response_safety.json")), SCALER)
    assert decision.actions == []
    # the loop decides what a pending check means (stop, or acknowledge in the next request)
    assert [c["code"] for c in decision.safety_checks] == ["malicious_instructions"]
    assert decision.safety_checks[0]["id"] == "cu_sc_67ccb0329a6c8190b7c6d5e4f3a2b1c0"
    assert any("'back'" in e for e in decision.errors)
    assert "'back'" in decision.call_errors["call_9hTqR2vLx8mWk4YpZs6NbCdE"]


def test_openai_replay_from_text_when_the_backend_has_no_raw() -> None:
    text = json.dumps(fixture("openai_response_click.json"))
    decision = OpenAIComputerAdapter().parse(Completion(text=text, model="m"), SCALER)
    assert kinds(decision) == [{"kind": "click", "x": 545, "y": 300, "button": "left", "count": 2}]


def test_openai_tool_definition_carries_the_image_size() -> None:
    params = OpenAIComputerAdapter().request_params(IMAGE)
    assert params["tools"] == [
        {"type": "computer_use_preview", "display_width": 1024, "display_height": 640, "environment": "linux"}
    ]


# --------------------------------------------------------------------------- anthropic


def test_anthropic_tool_use_click_is_scaled() -> None:
    decision = AnthropicComputerAdapter().parse(
        raw_completion(fixture("anthropic_message_click.json")), SCALER
    )
    assert kinds(decision) == [{"kind": "click", "x": 545, "y": 300, "button": "left", "count": 2}]
    assert decision.call_ids == ["toolu_01A09q90qw90lq917835lq9"]
    assert "double-click the title" in decision.note


def test_anthropic_every_action_kind_maps() -> None:
    decision = AnthropicComputerAdapter().parse(
        raw_completion(fixture("anthropic_message_multi.json")), SCALER
    )
    assert not decision.errors
    assert kinds(decision) == [
        {"kind": "key", "keys": "ctrl+a"},
        {"kind": "type", "text": "Quarterly Results — 2025"},
        {"kind": "drag", "path": [[125, 125], [375, 250]]},
        {"kind": "scroll", "x": 640, "y": 400, "dx": 0, "dy": -5},
        {"kind": "click", "x": 1279, "y": 799, "button": "left", "count": 3, "modifiers": ["shift"]},
        {"kind": "wait", "seconds": 1.5},
        {"kind": "key", "keys": "Next"},  # Page_Down, repeat 2
        {"kind": "key", "keys": "Next"},
        {"kind": "noop"},
    ]
    assert len(decision.call_ids) == 8


def test_anthropic_toolset_blocks_map_with_the_name_as_action() -> None:
    decision = AnthropicComputerAdapter().parse(
        raw_completion(fixture("anthropic_message_toolset.json")), SCALER
    )
    assert not decision.errors
    assert kinds(decision) == [
        {"kind": "click", "x": 640, "y": 625, "button": "right", "count": 1},
        {"kind": "scroll", "x": None, "y": None, "dx": 0, "dy": 2},  # at the pointer
    ]


def test_anthropic_end_turn_without_tool_use_means_done() -> None:
    decision = AnthropicComputerAdapter().parse(raw_completion(fixture("anthropic_message_end.json")), SCALER)
    assert decision.done and "complete" in decision.note


def test_anthropic_rejects_other_tools_and_hold_key() -> None:
    raw = {
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "rm -rf /"}},
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "computer",
                "input": {"action": "hold_key", "text": "shift", "duration": 2},
            },
        ]
    }
    decision = AnthropicComputerAdapter().parse(raw_completion(raw), SCALER)
    assert decision.actions == []
    assert any("'bash' is not available" in e for e in decision.errors)
    assert any("hold_key" in e for e in decision.errors)


# --------------------------------------------------------------------------- json


def parse_json(text: str, scaler: Scaler = SCALER, scale: int = 0):
    return JsonAdapter(scale).parse(Completion(text=text, model="m"), scaler)


def test_json_fenced_action_after_reasoning() -> None:
    decision = parse_json('The title is at the top.\n```json\n{"action": "click", "x": 512, "y": 320}\n```')
    assert kinds(decision) == [{"kind": "click", "x": 640, "y": 400, "button": "left", "count": 1}]
    assert "title is at the top" in decision.note


def test_json_list_and_actions_key() -> None:
    decision = parse_json('[{"action": "key", "keys": ["ctrl", "a"]}, {"action": "type", "text": "Hi"}]')
    assert kinds(decision) == [{"kind": "key", "keys": "ctrl+a"}, {"kind": "type", "text": "Hi"}]
    decision = parse_json(
        '{"actions": [{"action": "drag", "from": [0, 0], "to": [1024, 640]}, {"action": "done"}]}'
    )
    assert kinds(decision)[0] == {"kind": "drag", "path": [[0, 0], [1279, 799]]}
    assert decision.done


def test_json_last_action_object_wins() -> None:
    text = (
        'Earlier I tried {"action": "click", "x": 1, "y": 1}; '
        'now: {"action": "double_click", "x": 10, "y": 10}'
    )
    assert kinds(parse_json(text))[0]["count"] == 2


def test_json_qwen_tool_call_and_normalized_coordinates() -> None:
    text = (
        '<tool_call>\n{"name": "computer_use", '
        '"arguments": {"action": "left_click", "coordinate": [500, 250]}}\n</tool_call>'
    )
    decision = parse_json(text, Scaler(SCREEN, IMAGE, norm=1000), scale=1000)
    assert kinds(decision) == [{"kind": "click", "x": 640, "y": 200, "button": "left", "count": 1}]
    text = (
        '<tool_call>{"name": "computer_use", '
        '"arguments": {"action": "scroll", "coordinate": [10, 10], "pixels": -250}}</tool_call>'
    )
    assert kinds(parse_json(text))[0]["dy"] == 2  # negative pixels scroll down
    text = (
        '<tool_call>{"name": "computer_use", '
        '"arguments": {"action": "terminate", "status": "success"}}</tool_call>'
    )
    decision = parse_json(text)
    assert decision.done and decision.actions[-1].text == "success"


def test_json_scroll_forms() -> None:
    assert (
        kinds(parse_json('{"action": "scroll", "x": 0, "y": 0, "direction": "left", "amount": 2}'))[0]["dx"]
        == -2
    )
    assert kinds(parse_json('{"action": "scroll", "x": 0, "y": 0, "dy": -4}'))[0]["dy"] == -4


@pytest.mark.parametrize(
    "text, message",
    [
        ("I am not sure what to do.", "no JSON action"),
        ('{"action": "click", "x": 2000, "y": 10}', "outside the 1024x640"),
        ('{"action": "click", "x": "left", "y": 10}', "x must be a number"),
        ('{"action": "fly", "x": 1, "y": 1}', "unknown action 'fly'"),
        ('{"action": "type", "text": "' + "a" * 2001 + '"}', "more than 2000"),
        ('{"action": "type", "text": "bell\\u0007"}', "control character"),
        ('{"action": "key", "keys": "ctrl+NoSuch key!"}', "unknown key name"),
        ('{"action": "scroll", "x": 1, "y": 1, "dy": 500}', "exceeds the limit"),
        ('{"action": "click", "x": 1, "y": 1, "button": "thumb"}', "mouse button"),
    ],
)
def test_json_invalid_actions_become_errors_for_the_model(text: str, message: str) -> None:
    decision = parse_json(text)
    assert decision.actions == [] and not decision.done
    assert any(message in e for e in decision.errors), decision.errors


def test_json_stops_at_the_first_invalid_action_and_caps_the_batch() -> None:
    decision = parse_json(
        '[{"action": "type", "text": "a"}, {"action": "nope"}, {"action": "type", "text": "b"}]'
    )
    assert kinds(decision) == [{"kind": "type", "text": "a"}] and len(decision.errors) == 1
    many = json.dumps([{"action": "wait", "seconds": 0}] * 8)
    decision = parse_json(many)
    assert len(decision.actions) == 5 and "first 5 of 8" in decision.errors[0]


def test_json_system_prompt_states_the_coordinate_space() -> None:
    assert "1024x640 screenshot" in JsonAdapter().system_prompt(IMAGE)
    assert "0..1000 grid" in JsonAdapter(1000).system_prompt(IMAGE)


def test_extract_json_values_skips_broken_fragments() -> None:
    assert extract_json_values('x {broken {"a": 1} [1, 2] {"b": [}') == [{"a": 1}, [1, 2]]


def test_make_adapter_rejects_unknown_spaces() -> None:
    assert make_adapter("anthropic").name == "anthropic"
    with pytest.raises(ValueError, match="unknown action space"):
        make_adapter("pyautogui")


# --------------------------------------------------------------------------- actions


@pytest.mark.parametrize(
    "keys, expected",
    [
        ("ctrl+s", "ctrl+s"),
        (["CTRL", "SHIFT", "S"], "ctrl+shift+s"),
        (["ENTER"], "Return"),
        ("Control_L+a", "ctrl+a"),
        ("cmd+z", "super+z"),
        ("ctrl++", "ctrl+plus"),
        ("F5", "F5"),
        (["ArrowLeft"], "Left"),
        ("Page_Up", "Prior"),
        ("KP_0", "KP_0"),
    ],
)
def test_key_names_normalize_to_xdotool(keys, expected) -> None:
    assert A.normalize_chord(keys) == expected


def test_key_chord_limits() -> None:
    with pytest.raises(ActionError, match="more than 5"):
        A.normalize_chord(["ctrl", "alt", "shift", "super", "a", "b"])
    with pytest.raises(ActionError, match="malformed"):
        A.normalize_chord("ctrl++a+")


def test_scaler_maps_edges_and_rejects_outside_points() -> None:
    assert SCALER.point(0, 0) == (0, 0)
    assert SCALER.point(1024, 640) == (1279, 799)
    assert Scaler(SCREEN, SCREEN, norm=1000).point(1000, 500) == (1279, 400)
    with pytest.raises(ActionError, match="outside"):
        SCALER.point(-1, 5)
    with pytest.raises(ActionError, match="finite"):
        SCALER.point(float("nan"), 5)


def test_screen_size_parsing() -> None:
    assert Screen.parse("1280x800") == Screen(1280, 800)
    for bad in ("1280", "10x10", "99999x800", "axb"):
        with pytest.raises(ValueError):
            Screen.parse(bad)
