"""The GUI agent's action vocabulary: what can be done to the virtual screen.

Every adapter (plain JSON, OpenAI computer use, Anthropic computer use) turns
a model's output into a list of :class:`Action` objects in *screen* pixels;
the environment executes them with xdotool. Actions are validated here, once,
with hard limits, because they come from untrusted model output.

Action kinds (``Action.kind``):

==============  =====================================================
``click``       ``x, y``, ``button`` (left/right/middle), ``count`` 1-3, optional ``modifiers``
``move``        ``x, y``
``drag``        ``path``: two or more points, mouse held with the left button
``mouse_down``  ``button`` pressed at the current pointer position
``mouse_up``    ``button`` released
``scroll``      ``x, y``, ``dx, dy`` in wheel clicks (positive = right / down)
``type``        ``text`` (Unicode)
``key``         ``keys``: one xdotool key combination such as ``ctrl+s``
``wait``        ``seconds``
``noop``        nothing (e.g. a provider's "screenshot" request)
``done``        the model says the task is finished (``text``: its final note)
==============  =====================================================
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = ("click", "move", "drag", "mouse_down", "mouse_up", "scroll", "type", "key", "wait", "noop", "done")
BUTTONS = ("left", "middle", "right")
MAX_TEXT = 2000
"""Longest text one ``type`` action may enter."""
MAX_WAIT = 10.0
"""Longest single ``wait`` in seconds."""
MAX_SCROLL = 30
"""Most wheel clicks in one direction per ``scroll``."""
MAX_DRAG_POINTS = 50
MAX_KEY_CHORD = 5
"""Most keys pressed together in one combination."""

_KEY_ALIASES = {
    # modifiers
    "control": "ctrl",
    "ctl": "ctrl",
    "ctrl": "ctrl",
    "lctrl": "ctrl",
    "rctrl": "ctrl",
    "alt": "alt",
    "option": "alt",
    "opt": "alt",
    "shift": "shift",
    "cmd": "super",
    "command": "super",
    "meta": "super",
    "super": "super",
    "win": "super",
    "windows": "super",
    # named keys
    "enter": "Return",
    "return": "Return",
    "ret": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "space",
    "spacebar": "space",
    "backspace": "BackSpace",
    "back_space": "BackSpace",
    "bksp": "BackSpace",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "ins": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "page_up": "Prior",
    "pgup": "Prior",
    "prior": "Prior",
    "pagedown": "Next",
    "page_down": "Next",
    "pgdn": "Next",
    "next": "Next",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "capslock": "Caps_Lock",
    "menu": "Menu",
    "plus": "plus",
    "minus": "minus",
    "equal": "equal",
    "comma": "comma",
    "period": "period",
    "slash": "slash",
    "backslash": "backslash",
    "semicolon": "semicolon",
    "apostrophe": "apostrophe",
    "bracketleft": "bracketleft",
    "bracketright": "bracketright",
    "grave": "grave",
}
_PUNCT_KEYS = {
    "+": "plus",
    "-": "minus",
    "=": "equal",
    ",": "comma",
    ".": "period",
    "/": "slash",
    "\\": "backslash",
    ";": "semicolon",
    "'": "apostrophe",
    "[": "bracketleft",
    "]": "bracketright",
    "`": "grave",
    " ": "space",
}
_KEYSYM_RE = re.compile(
    r"^(?:[A-Za-z0-9]|F(?:[1-9]|1[0-9]|2[0-4])|KP_[A-Za-z0-9_]{1,12}|[A-Z][A-Za-z_]{1,20})$"
)


class ActionError(ValueError):
    """A model asked for an action that is malformed or out of bounds (the message says which)."""


def normalize_key(name: str) -> str:
    """One key name from any provider's spelling to an xdotool keysym (``"ENTER"`` → ``"Return"``)."""
    raw = str(name)
    if raw in _PUNCT_KEYS:
        return _PUNCT_KEYS[raw]
    key = raw.strip()
    if not key:
        raise ActionError("empty key name")
    alias = _KEY_ALIASES.get(key.lower())
    if alias:
        return alias
    if len(key) == 1:
        return key.lower() if key.isalpha() else key
    if re.fullmatch(r"[fF]([1-9]|1[0-9]|2[0-4])", key):
        return key.upper()
    if _KEYSYM_RE.match(key):
        return key
    raise ActionError(f"unknown key name {name!r}")


def normalize_chord(keys: str | list[str] | tuple[str, ...]) -> str:
    """A key combination (``"ctrl+s"``, ``["CTRL", "S"]``, ``"Control_L+a"``) as xdotool ``key`` syntax."""
    if isinstance(keys, str):
        text = keys.strip()
        if text == "+":
            parts = ["+"]
        elif text.endswith("++"):  # "ctrl++" is ctrl and plus
            parts = [*text[:-2].split("+"), "+"]
        else:
            parts = text.split("+")
        if any(not p.strip() for p in parts if p != "+"):
            raise ActionError(f"malformed key combination {keys!r}")
    else:
        parts = list(keys)
    if not parts:
        raise ActionError("empty key combination")
    if len(parts) > MAX_KEY_CHORD:
        raise ActionError(f"key combination {keys!r} has more than {MAX_KEY_CHORD} keys")
    normalized = []
    for part in parts:
        lower = str(part).strip().lower()
        if lower in ("control_l", "control_r"):
            normalized.append("ctrl")
        elif lower in ("shift_l", "shift_r"):
            normalized.append("shift")
        elif lower in ("alt_l", "alt_r"):
            normalized.append("alt")
        elif lower in ("super_l", "super_r"):
            normalized.append("super")
        else:
            normalized.append(normalize_key(part))
    return "+".join(normalized)


@dataclass(frozen=True)
class Action:
    """One validated environment action in screen pixels (see the module docstring for the kinds)."""

    kind: str
    x: int | None = None
    y: int | None = None
    button: str = "left"
    count: int = 1
    path: tuple[tuple[int, int], ...] = ()
    dx: int = 0
    dy: int = 0
    text: str = ""
    keys: str = ""
    modifiers: tuple[str, ...] = ()
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Compact JSON form (only the fields that matter for this kind)."""
        data = asdict(self)
        out: dict[str, Any] = {"kind": self.kind}
        wanted = {
            "click": ("x", "y", "button", "count", "modifiers"),
            "move": ("x", "y"),
            "drag": ("path",),
            "mouse_down": ("button",),
            "mouse_up": ("button",),
            "scroll": ("x", "y", "dx", "dy"),
            "type": ("text",),
            "key": ("keys",),
            "wait": ("seconds",),
            "noop": (),
            "done": ("text",),
        }[self.kind]
        for name in wanted:
            value = data[name]
            if name == "modifiers" and not value:
                continue
            out[name] = (
                [list(p) for p in value]
                if name == "path"
                else (list(value) if isinstance(value, tuple) else value)
            )
        return out


@dataclass(frozen=True)
class Screen:
    """Size of the virtual screen in pixels."""

    width: int
    height: int

    @classmethod
    def parse(cls, text: str) -> Screen:
        """``"1280x800"`` → Screen(1280, 800), bounded to sane sizes."""
        m = re.fullmatch(r"\s*(\d{3,4})\s*[xX]\s*(\d{3,4})\s*", text or "")
        if not m:
            raise ValueError(f"screen size {text!r} must look like '1280x800'")
        w, h = int(m.group(1)), int(m.group(2))
        if not (320 <= w <= 3840 and 240 <= h <= 2160):
            raise ValueError(f"screen size {text!r} is outside 320x240 .. 3840x2160")
        return cls(w, h)

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


@dataclass
class Scaler:
    """Maps coordinates from the image the model saw to screen pixels.

    ``image`` is the size of the screenshot sent to the model; ``norm`` > 0
    means the model answers in a normalized 0..norm grid (e.g. 1000 for
    Qwen3-VL style models) instead of image pixels.
    """

    screen: Screen
    image: Screen
    norm: int = 0
    _fx: float = field(init=False)
    _fy: float = field(init=False)

    def __post_init__(self) -> None:
        src_w, src_h = (self.norm, self.norm) if self.norm else (self.image.width, self.image.height)
        self._fx = self.screen.width / src_w
        self._fy = self.screen.height / src_h

    def point(self, x: Any, y: Any) -> tuple[int, int]:
        """A model coordinate → a screen pixel; raises :class:`ActionError` when off the image."""
        fx, fy = _number(x, "x"), _number(y, "y")
        limit_w = self.norm or self.image.width
        limit_h = self.norm or self.image.height
        if not (0 <= fx <= limit_w and 0 <= fy <= limit_h):
            raise ActionError(f"point ({x}, {y}) is outside the {limit_w}x{limit_h} coordinate space")
        sx = min(self.screen.width - 1, int(round(fx * self._fx)))
        sy = min(self.screen.height - 1, int(round(fy * self._fy)))
        return sx, sy

    def back(self, x: int, y: int) -> tuple[int, int]:
        """A screen pixel → the model's coordinate space (inverse of :meth:`point`, rounded)."""
        return int(round(x / self._fx)), int(round(y / self._fy))


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise ActionError(f"{name} must be a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise ActionError(f"{name} must be finite")
    return float(value)


# --------------------------------------------------------------------------- constructors


def click(
    point: tuple[int, int] | None, button: str = "left", count: int = 1, modifiers: tuple[str, ...] = ()
) -> Action:
    """A click (``count`` 2 = double, 3 = triple) at a screen point (None: where the pointer is),
    optionally holding modifier keys such as ``("ctrl",)``."""
    if button not in BUTTONS:
        raise ActionError(f"mouse button {button!r} is not one of {', '.join(BUTTONS)}")
    if count not in (1, 2, 3):
        raise ActionError(f"click count {count!r} must be 1, 2 or 3")
    if len(modifiers) > MAX_KEY_CHORD:
        raise ActionError(f"at most {MAX_KEY_CHORD} modifier keys")
    mods = tuple(normalize_chord([m]) for m in modifiers)
    x, y = (None, None) if point is None else point
    return Action("click", x=x, y=y, button=button, count=count, modifiers=mods)


def move(point: tuple[int, int]) -> Action:
    """Move the pointer."""
    return Action("move", x=point[0], y=point[1])


def drag(points: list[tuple[int, int]]) -> Action:
    """Press the left button at the first point, move through the rest, release at the last."""
    if len(points) < 2:
        raise ActionError("a drag needs at least two points")
    if len(points) > MAX_DRAG_POINTS:
        raise ActionError(f"a drag may have at most {MAX_DRAG_POINTS} points")
    return Action("drag", path=tuple((int(x), int(y)) for x, y in points))


def mouse_button(kind: str, button: str = "left") -> Action:
    """``mouse_down`` or ``mouse_up``."""
    if button not in BUTTONS:
        raise ActionError(f"mouse button {button!r} is not one of {', '.join(BUTTONS)}")
    return Action(kind, button=button)


def scroll(point: tuple[int, int] | None, dx: Any, dy: Any) -> Action:
    """Scroll at a point (None: where the pointer is); ``dx``/``dy`` in wheel clicks
    (positive = right/down).
    """
    ix, iy = int(round(_number(dx, "scroll dx"))), int(round(_number(dy, "scroll dy")))
    if abs(ix) > MAX_SCROLL or abs(iy) > MAX_SCROLL:
        raise ActionError(f"scroll of ({ix}, {iy}) clicks exceeds the limit of {MAX_SCROLL}")
    x, y = (None, None) if point is None else point
    return Action("scroll", x=x, y=y, dx=ix, dy=iy)


def type_text(text: Any) -> Action:
    """Type Unicode text (at most :data:`MAX_TEXT` characters, no control characters except newline/tab)."""
    if not isinstance(text, str):
        raise ActionError(f"text to type must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ActionError(f"text to type has {len(text)} characters, more than {MAX_TEXT}")
    bad = [c for c in text if ord(c) < 32 and c not in "\n\t"]
    if bad:
        raise ActionError(f"text to type contains control character {bad[0]!r}")
    return Action("type", text=text)


def key(keys: str | list[str] | tuple[str, ...]) -> Action:
    """Press one key combination."""
    return Action("key", keys=normalize_chord(keys))


def wait(seconds: Any = 1.0) -> Action:
    """Pause (capped at :data:`MAX_WAIT`)."""
    value = _number(seconds, "wait seconds")
    if value < 0:
        raise ActionError("wait seconds must not be negative")
    return Action("wait", seconds=min(value, MAX_WAIT))


def noop() -> Action:
    """Do nothing (the next screenshot is taken anyway)."""
    return Action("noop")


def done(note: str = "") -> Action:
    """The model declares the task finished."""
    return Action("done", text=str(note)[:MAX_TEXT])
