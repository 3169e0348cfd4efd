"""Action-space adapters: model output → validated :class:`~.actions.Action` lists.

Three action spaces:

``json``
    The model answers in text that contains one JSON action (or a list of up
    to :data:`MAX_ACTIONS_PER_STEP`), e.g. ``{"action": "click", "x": 412, "y": 230}``.
    For open models served through an OpenAI-compatible endpoint. The Qwen-VL
    "computer_use" function-call form
    (``<tool_call>{"name": "computer_use", "arguments":
    {"action": "left_click", "coordinate": [x, y]}}</tool_call>``)
    and bare Anthropic-style objects are accepted too.
``openai``
    OpenAI Responses API output items of type ``computer_call`` (from
    ``Completion.raw["output"]``), actions ``click``/``double_click``/``drag``/
    ``keypress``/``move``/``scroll``/``type``/``wait``/``screenshot``.
``anthropic``
    Anthropic Messages API ``tool_use`` content blocks for the ``computer``
    tool (from ``Completion.raw["content"]``), actions ``left_click``,
    ``type``, ``key``, ``scroll``, ``left_click_drag``... with ``coordinate``.

Coordinates are in the pixels of the screenshot the model saw (or a 0..N
normalized grid for the json space); a :class:`~.actions.Scaler` maps them to
screen pixels.

Why it is long: each action space is a full translation table from one provider's action vocabulary
to the same :class:`~.actions.Action` list, and the tables share their pieces (coordinate scaling,
xdotool key parsing, the Anthropic table that the json space reuses for Qwen's ``computer_use``), so
the three are kept side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pptarena.models import Completion
from pptarena.replyjson import embedded_json

from . import actions as A
from .actions import Action, ActionError, Scaler, Screen

MAX_ACTIONS_PER_STEP = 5
MAX_REPLY_CHARS = 200_000
"""Longer model replies are cut before parsing."""
SCROLL_PIXELS_PER_CLICK = 100
"""Providers that scroll in pixels (OpenAI, Qwen) get one wheel click per this many pixels."""
OPENAI_WAIT_SECONDS = 2.0
"""OpenAI's ``wait`` action has no duration."""


@dataclass
class Decision:
    """What the model decided in one step."""

    actions: list[Action] = field(default_factory=list)
    done: bool = False
    note: str = ""
    errors: list[str] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    action_calls: list[str] = field(default_factory=list)
    """Provider spaces: the call id each action came from (parallel to ``actions``, without the
    final done).
    """
    call_errors: dict[str, str] = field(default_factory=dict)
    """Provider spaces: call id → why its action was invalid (nothing of it, or after it, was run)."""
    safety_checks: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI: the ``pending_safety_checks`` of the calls (``id``, ``code``, ``message``)."""


# --------------------------------------------------------------------------- shared mapping


def _point(scaler: Scaler, value: Any, what: str) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ActionError(f"{what} must be [x, y], got {value!r}")
    return scaler.point(value[0], value[1])


def _pixels_to_clicks(pixels: Any) -> int:
    value = A._number(pixels, "scroll amount")
    if value == 0:
        return 0
    clicks = max(1, round(abs(value) / SCROLL_PIXELS_PER_CLICK))
    return int(min(clicks, A.MAX_SCROLL) * (1 if value > 0 else -1))


def _key_actions(text: Any, repeat: Any = 1) -> list[Action]:
    """xdotool ``key`` syntax: space-separated combinations, each pressed in turn."""
    if isinstance(text, (list, tuple)):
        chords: list[Any] = [list(text)]
    elif isinstance(text, str) and text.strip():
        chords = text.split() if text.strip() != "+" else ["+"]
    else:
        raise ActionError(f"key needs key names, got {text!r}")
    times = int(A._number(repeat, "repeat")) if repeat is not None else 1
    if not 1 <= times <= 20:
        raise ActionError("key repeat must be between 1 and 20")
    out = [A.key(c) for c in chords] * times
    if len(out) > 20:
        raise ActionError("too many key presses in one action (at most 20)")
    return out


_ANTHROPIC_CLICKS = {
    "left_click": ("left", 1),
    "right_click": ("right", 1),
    "middle_click": ("middle", 1),
    "double_click": ("left", 2),
    "triple_click": ("left", 3),
}


def computer_tool_actions(data: dict[str, Any], scaler: Scaler) -> tuple[list[Action], bool]:
    """Anthropic ``computer`` tool input (also Qwen's ``computer_use`` arguments) → (actions, done)."""
    name = data.get("action")
    if not isinstance(name, str):
        raise ActionError(f"missing 'action' in {json.dumps(data)[:200]}")
    coord = data.get("coordinate")
    mods = tuple(str(data["text"]).split("+")) if name in _ANTHROPIC_CLICKS and data.get("text") else ()
    if name in _ANTHROPIC_CLICKS:
        button, count = _ANTHROPIC_CLICKS[name]
        point = _point(scaler, coord, "coordinate") if coord is not None else None
        return [A.click(point, button, count, mods)], False
    if name == "mouse_move":
        return [A.move(_point(scaler, coord, "coordinate"))], False
    if name == "left_click_drag":
        start = data.get("start_coordinate")
        if start is None:
            raise ActionError("left_click_drag needs start_coordinate and coordinate")
        return [
            A.drag([_point(scaler, start, "start_coordinate"), _point(scaler, coord, "coordinate")])
        ], False
    if name in ("left_mouse_down", "left_mouse_up"):
        return [A.mouse_button("mouse_down" if name.endswith("down") else "mouse_up")], False
    if name == "type":
        return [A.type_text(data.get("text"))], False
    if name == "key":
        keys = data.get("keys") if data.get("keys") is not None else data.get("text")
        return _key_actions(keys, data.get("repeat", 1)), False
    if name == "scroll":
        point = _point(scaler, coord, "coordinate") if coord is not None else None  # None: at the pointer
        if "pixels" in data:  # Qwen: positive scrolls up
            return [A.scroll(point, 0, -_pixels_to_clicks(data["pixels"]))], False
        amount = int(A._number(data.get("scroll_amount", 3), "scroll_amount"))
        direction = data.get("scroll_direction", "down")
        vectors = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
        if direction not in vectors:
            raise ActionError(f"scroll_direction {direction!r} is not up/down/left/right")
        vx, vy = vectors[direction]
        return [A.scroll(point, vx * amount, vy * amount)], False
    if name == "wait":
        return [A.wait(data.get("duration", data.get("time", 1.0)))], False
    if name in ("screenshot", "cursor_position", "zoom"):
        return [A.noop()], False
    if name in ("terminate", "answer", "done"):
        note = data.get("status") or data.get("text") or ""
        return [A.done(str(note))], True
    if name == "hold_key":
        raise ActionError("hold_key is not supported in this environment; use key")
    raise ActionError(f"unknown computer action {name!r}")


# --------------------------------------------------------------------------- json


JSON_ACTIONS_HELP = (
    """\
Reply with your reasoning (optional) followed by ONE JSON object describing the next action,
or a JSON list of up to {max_actions} actions to run in order. Coordinates are {coords}.
  {{"action": "click", "x": 100, "y": 200}}                    (optional "button": "left"|"right"|"middle")
  {{"action": "double_click", "x": 100, "y": 200}}             (also "triple_click", "right_click")
  {{"action": "move", "x": 100, "y": 200}}
  {{"action": "drag", "from": [100, 200], "to": [300, 400]}}
  {{"action": "scroll", "x": 640, "y": 400, "direction": "down", "amount": 3}}
  {{"action": "type", "text": "Quarterly results"}}
"""
    '  {{"action": "key", "keys": "ctrl+a"}}                          '
    "(xdotool names: Return, Escape, Tab, Delete, ctrl+z ...)\n"
    '  {{"action": "wait", "seconds": 1}}\n'
    '  {{"action": "done"}}                                           '
    "(when the task is complete; the deck is saved for you)"
)

_OWN_CLICKS = {
    "click": ("left", 1),
    "double_click": ("left", 2),
    "triple_click": ("left", 3),
    "right_click": ("right", 1),
    "middle_click": ("middle", 1),
}


def own_json_actions(data: dict[str, Any], scaler: Scaler) -> tuple[list[Action], bool]:
    """One object of pptarena's plain JSON format (see :data:`JSON_ACTIONS_HELP`) → (actions, done)."""
    name = data.get("action")
    if "coordinate" in data or name in ("left_click", "mouse_move", "left_click_drag", "terminate", "answer"):
        return computer_tool_actions(data, scaler)
    if name in _OWN_CLICKS:
        button, count = _OWN_CLICKS[name]
        button = data.get("button", button)
        return [A.click(scaler.point(data.get("x"), data.get("y")), button, count)], False
    if name == "move":
        return [A.move(scaler.point(data.get("x"), data.get("y")))], False
    if name == "drag":
        if "path" in data:
            pts = data["path"]
            if not isinstance(pts, list):
                raise ActionError("drag path must be a list of [x, y]")
            return [A.drag([_point(scaler, p, "path point") for p in pts[: A.MAX_DRAG_POINTS + 1]])], False
        return [
            A.drag([_point(scaler, data.get("from"), "from"), _point(scaler, data.get("to"), "to")])
        ], False
    if name == "scroll":
        point = scaler.point(data.get("x"), data.get("y"))
        if "dx" in data or "dy" in data:
            return [A.scroll(point, data.get("dx", 0), data.get("dy", 0))], False
        return computer_tool_actions(
            {
                "action": "scroll",
                "coordinate": [data.get("x"), data.get("y")],
                "scroll_direction": data.get("direction", "down"),
                "scroll_amount": data.get("amount", 3),
            },
            scaler,
        )
    if name == "type":
        return [A.type_text(data.get("text"))], False
    if name in ("key", "hotkey", "press"):
        return _key_actions(data.get("keys", data.get("key")), data.get("repeat", 1)), False
    if name == "wait":
        return [A.wait(data.get("seconds", 1.0))], False
    if name in ("done", "finish", "fail"):
        return [A.done(str(data.get("note") or data.get("text") or name))], True
    if name in ("noop", "screenshot"):
        return [A.noop()], False
    raise ActionError(f"unknown action {name!r}")


def extract_json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array found in ``text`` (fenced or inline), in order."""
    return embedded_json(text[:MAX_REPLY_CHARS], openers="{[", limit=1000)


def _action_objects(value: Any) -> list[dict[str, Any]] | None:
    """The action objects in one decoded JSON value, or None if it holds none."""
    if isinstance(value, dict):
        if isinstance(value.get("arguments"), dict) and "action" in value["arguments"]:
            return [value["arguments"]]
        if isinstance(value.get("actions"), list):
            return _action_objects(value["actions"])
        if "action" in value:
            return [value]
        return None
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out: list[dict[str, Any]] = []
        for v in value:
            objs = _action_objects(v)
            if objs is None:
                return None
            out += objs
        return out
    return None


class JsonAdapter:
    """Plain-text JSON actions (open models behind an OpenAI-compatible endpoint)."""

    name = "json"

    def __init__(self, coordinate_scale: int = 0):
        self.coordinate_scale = coordinate_scale

    def system_prompt(self, image: Screen) -> str:
        """Instructions telling the model the action format and the screenshot size."""
        coords = (
            f"on a 0..{self.coordinate_scale} grid over the screenshot (0,0 = top left)"
            if self.coordinate_scale
            else f"pixels of the {image.width}x{image.height} screenshot (0,0 = top left)"
        )
        return (
            "You operate LibreOffice Impress on a Linux desktop through screenshots, the mouse and the "
            "keyboard, to edit the open presentation as the user asks. After each of your actions you get "
            "a new screenshot. Do not close Impress and do not save to another file: the presentation is "
            "saved automatically when you answer done.\n\n"
            + JSON_ACTIONS_HELP.format(max_actions=MAX_ACTIONS_PER_STEP, coords=coords)
        )

    def request_params(self, image: Screen) -> dict[str, Any]:
        """No extra request parameters: the format is taught in the system prompt."""
        return {}

    def parse(self, completion: Completion, scaler: Scaler) -> Decision:
        """Find the last JSON value holding actions in the reply text and map it."""
        text = completion.text or ""
        decision = Decision(note=text[:2000])
        candidates = [objs for v in extract_json_values(text) if (objs := _action_objects(v))]
        if not candidates:
            decision.errors.append(
                'no JSON action found in the reply; answer with e.g. {"action": "click", "x": 10, "y": 20}'
            )
            return decision
        objs = candidates[-1]
        if len(objs) > MAX_ACTIONS_PER_STEP:
            decision.errors.append(f"only the first {MAX_ACTIONS_PER_STEP} of {len(objs)} actions were run")
            objs = objs[:MAX_ACTIONS_PER_STEP]
        _collect(decision, objs, lambda o: own_json_actions(o, scaler))
        return decision


MAX_PROVIDER_ACTIONS = 2 * MAX_ACTIONS_PER_STEP
"""Most tool-call actions run from one provider response (providers batch more than a JSON reply)."""


def _capped(decision: Decision, objs: list[Any]) -> list[Any]:
    if len(objs) > MAX_PROVIDER_ACTIONS:
        decision.errors.append(f"only the first {MAX_PROVIDER_ACTIONS} of {len(objs)} actions were run")
    return objs[:MAX_PROVIDER_ACTIONS]


def _collect(
    decision: Decision, objs: list[dict[str, Any]], mapper: Any, owners: list[str] | None = None
) -> None:
    """Map objects in order; stop at the first invalid one (later actions depended on it).

    ``owners`` (parallel to ``objs``) are the provider call ids the objects came from.
    """
    for i, obj in enumerate(objs):
        owner = owners[i] if owners is not None else None
        try:
            acts, done = mapper(obj)
        except ActionError as exc:
            message = f"invalid action {json.dumps(obj, ensure_ascii=False)[:300]}: {exc}"
            decision.errors.append(message)
            if owner is not None:
                decision.call_errors[owner] = message
            return
        if owner is not None:
            decision.action_calls += [owner] * sum(1 for a in acts if a.kind != "done")
        decision.actions += acts
        if done:
            decision.done = True
            return


# --------------------------------------------------------------------------- openai


def openai_action(action: dict[str, Any], scaler: Scaler) -> tuple[list[Action], bool]:
    """One OpenAI ``computer_call`` action object → (actions, done)."""
    kind = action.get("type")
    if kind == "click":
        button = {"left": "left", "right": "right", "wheel": "middle", "middle": "middle"}.get(
            action.get("button", "left")
        )
        if button is None:
            raise ActionError(
                f"mouse button {action.get('button')!r} is not supported (only left, right, wheel)"
            )
        return [
            A.click(
                scaler.point(action.get("x"), action.get("y")), button, 1, tuple(action.get("keys") or ())
            )
        ], False
    if kind == "double_click":
        return [
            A.click(
                scaler.point(action.get("x"), action.get("y")), "left", 2, tuple(action.get("keys") or ())
            )
        ], False
    if kind in ("move", "drag", "scroll") and action.get("keys"):
        raise ActionError(f"holding keys during {kind} is not supported")
    if kind == "move":
        return [A.move(scaler.point(action.get("x"), action.get("y")))], False
    if kind == "drag":
        path = action.get("path")
        if not isinstance(path, list):
            raise ActionError("drag path must be a list of {x, y}")
        pts = [
            scaler.point(p.get("x"), p.get("y")) if isinstance(p, dict) else _point(scaler, p, "path point")
            for p in path[: A.MAX_DRAG_POINTS + 1]
        ]
        return [A.drag(pts)], False
    if kind == "scroll":
        point = scaler.point(action.get("x"), action.get("y"))
        return [
            A.scroll(
                point,
                _pixels_to_clicks(action.get("scroll_x", 0)),
                _pixels_to_clicks(action.get("scroll_y", 0)),
            )
        ], False
    if kind == "type":
        return [A.type_text(action.get("text"))], False
    if kind == "keypress":
        keys = action.get("keys")
        if not isinstance(keys, list) or not keys:
            raise ActionError("keypress needs a non-empty keys list")
        return [A.key([str(k) for k in keys])], False
    if kind == "wait":
        return [A.wait(OPENAI_WAIT_SECONDS)], False
    if kind == "screenshot":
        return [A.noop()], False
    raise ActionError(f"unknown computer_call action type {kind!r}")


def _raw_items(raw: Any, key: str) -> list[Any] | None:
    if isinstance(raw, list):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get(key), list):
        return raw[key]
    return None


def provider_items(completion: Completion, key: str) -> list[Any]:
    """The provider's output items: ``completion.raw[key]``, else (replay) a JSON response in the text.

    Replay: a backend without ``raw`` (e.g. ``scripted``) may answer with the
    recorded provider response as JSON text (``{"output": [...]}`` for OpenAI,
    ``{"content": [...]}`` for Anthropic, or just the list of items).
    """
    items = _raw_items(completion.raw, key)
    if items is not None:
        return items
    for value in reversed(extract_json_values(completion.text or "")):
        items = _raw_items(value, key)
        if items is not None and all(isinstance(i, dict) and "type" in i for i in items):
            return items
    return []


class OpenAIComputerAdapter:
    """OpenAI computer use: ``computer_call`` items of a Responses API result (``Completion.raw``)."""

    name = "openai"

    def system_prompt(self, image: Screen) -> str:
        """Short context; the tool itself carries the display size."""
        return (
            "You operate LibreOffice Impress on a Linux desktop to edit the open presentation as the user "
            "asks. Do not close Impress or save to another file: the presentation is saved when you stop "
            "calling the computer tool."
        )

    def request_params(self, image: Screen) -> dict[str, Any]:
        """The Responses API computer tool definition for a backend that forwards ``tools``."""
        return {
            "tools": [
                {
                    "type": "computer_use_preview",
                    "display_width": image.width,
                    "display_height": image.height,
                    "environment": "linux",
                }
            ],
            "truncation": "auto",
        }

    def parse(self, completion: Completion, scaler: Scaler) -> Decision:
        """Map every ``computer_call`` (its ``action`` or batched ``actions``); none means the model
        is done.
        """
        decision = Decision()
        items = provider_items(completion, "output")
        calls = [i for i in items if isinstance(i, dict) and i.get("type") == "computer_call"]
        texts = []
        for item in items:
            if isinstance(item, dict) and item.get("type") == "message":
                for part in item.get("content") or []:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        texts.append(part["text"])
        decision.note = ("\n".join(texts) or completion.text or "")[:2000]
        if not calls:
            decision.done = True
            decision.actions.append(A.done(decision.note))
            return decision
        objs: list[dict[str, Any]] = []
        owners: list[str] = []
        for call in calls:
            call_id = str(call.get("call_id", ""))
            decision.call_ids.append(call_id)
            checks = call.get("pending_safety_checks") or []
            decision.safety_checks += [c for c in checks if isinstance(c, dict)]
            actions = call.get("actions")
            batch: list[Any] = actions if isinstance(actions, list) else [call.get("action")]
            mine = [a for a in batch if isinstance(a, dict)]
            objs += mine
            owners += [call_id] * len(mine)
        n = len(_capped(decision, objs))
        _collect(decision, objs[:n], lambda o: openai_action(o, scaler), owners[:n])
        return decision


# --------------------------------------------------------------------------- anthropic


class AnthropicComputerAdapter:
    """Anthropic computer use: ``tool_use`` blocks of the ``computer`` tool (``Completion.raw``)."""

    name = "anthropic"
    tool_type = "computer_20250124"
    beta = "computer-use-2025-01-24"

    def system_prompt(self, image: Screen) -> str:
        """Short context; the tool itself carries the display size."""
        return OpenAIComputerAdapter.system_prompt(self, image)  # type: ignore[arg-type]

    def request_params(self, image: Screen) -> dict[str, Any]:
        """The Messages API computer tool definition for a backend that forwards ``tools`` and ``betas``."""
        return {
            "tools": [
                {
                    "type": self.tool_type,
                    "name": "computer",
                    "display_width_px": image.width,
                    "display_height_px": image.height,
                }
            ],
            "betas": [self.beta],
        }

    def parse(self, completion: Completion, scaler: Scaler) -> Decision:
        """Map every ``tool_use`` block named ``computer``; none means the model is done."""
        decision = Decision()
        blocks = provider_items(completion, "content")
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        texts = [
            b["text"]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        decision.note = ("\n".join(texts) or completion.text or "")[:2000]
        if not uses:
            decision.done = True
            decision.actions.append(A.done(decision.note))
            return decision
        objs: list[dict[str, Any]] = []
        owners: list[str] = []
        for block in uses:
            call_id = str(block.get("id", ""))
            decision.call_ids.append(call_id)
            given = block.get("input")
            data: dict[str, Any] = given if isinstance(given, dict) else {}
            if block.get("name") == "computer":  # single computer tool: the action is in the input
                objs.append(data)
                owners.append(call_id)
            elif block.get("toolset_name") == "computer":  # computer toolset: one tool per action
                objs.append({**data, "action": block.get("name")})
                owners.append(call_id)
            else:
                message = f"tool {block.get('name')!r} is not available (only 'computer')"
                decision.errors.append(message)
                decision.call_errors[call_id] = message
        n = len(_capped(decision, objs))
        _collect(decision, objs[:n], lambda o: computer_tool_actions(o, scaler), owners[:n])
        return decision


ADAPTERS = {"json": JsonAdapter, "openai": OpenAIComputerAdapter, "anthropic": AnthropicComputerAdapter}


def make_adapter(
    action_space: str, coordinate_scale: int = 0
) -> JsonAdapter | OpenAIComputerAdapter | AnthropicComputerAdapter:
    """The adapter for an action space name."""
    if action_space == "json":
        return JsonAdapter(coordinate_scale)
    if action_space in ADAPTERS:
        return ADAPTERS[action_space]()
    raise ValueError(f"unknown action space {action_space!r}; choose one of {', '.join(ADAPTERS)}")
