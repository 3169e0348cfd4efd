"""The GUI agent's step loop: screenshot → model → actions, within a step budget and a deadline.

Each step sends the conversation so far (every earlier reply as text, the
screenshots of only the last ``history_images`` steps) plus the current
screenshot, parses the reply with the action-space adapter, runs the actions
and records the step in the trajectory folder:

    trajectory/step_000.png ...   the screenshot the model saw at each step
    trajectory/final.png          the screen after the last action
    trajectory/trajectory.jsonl   one line per step (see :class:`Trajectory`)
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.models import ImagePart, Message, ModelClient
from pptarena.types import AgentLog

from .actions import Action, Scaler, Screen
from .env import ActionFailed, ImpressScreen

MAX_NOTE_IN_HISTORY = 2000


@dataclass
class EpisodeResult:
    """How the episode ended."""

    steps: int
    stop_reason: str  # "done" | "max_steps" | "deadline"
    note: str = ""
    action_errors: int = 0


@dataclass
class Trajectory:
    """Writes the screenshots and one JSON line per step into ``folder``.

    A step line: ``{"step", "screenshot", "image_size", "reply", "actions",
    "errors", "done", "duration_s"}``; ``actions`` are in screen pixels. The
    last line has ``"step": "final"``, the final screenshot and the stop reason.
    """

    folder: Path
    lines: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "trajectory.jsonl"

    def save_image(self, name: str, png: bytes) -> str:
        """Store one PNG and return its file name."""
        (self.folder / name).write_bytes(png)
        return name

    def write(self, record: dict[str, Any]) -> None:
        """Append one line (flushed at once)."""
        self.lines.append(record)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def encode_png(image: Any, size: Screen | None = None) -> tuple[bytes, Screen]:
    """A PIL image (resized to ``size`` when given) as PNG bytes, with its size."""
    from PIL import Image

    if size is not None and (image.width, image.height) != (size.width, size.height):
        image = image.resize((size.width, size.height), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue(), Screen(image.width, image.height)


def describe(action: Action, scaler: Scaler | None = None) -> str:
    """A short readable form of an action, e.g. ``click(x=412, y=230, ...)``.

    With ``scaler``, points are given in the model's coordinate space (what it asked for).
    """
    data = action.to_json()
    if scaler is not None:
        if data.get("x") is not None:
            data["x"], data["y"] = scaler.back(data["x"], data["y"])
        if "path" in data:
            data["path"] = [list(scaler.back(x, y)) for x, y in data["path"]]
    kind = data.pop("kind")
    args = ", ".join(f"{k}={v!r}" for k, v in data.items())
    return f"{kind}({args})"


def run_episode(
    env: ImpressScreen,
    client: ModelClient,
    adapter: Any,
    instruction: str,
    *,
    trajectory: Trajectory,
    log: AgentLog,
    max_steps: int = 30,
    image_size: Screen | None = None,
    coordinate_scale: int = 0,
    history_images: int = 2,
    step_delay: float = 0.5,
    deadline: float | None = None,
    request_params: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Run up to ``max_steps`` model steps (until the model says done or ``deadline``, a monotonic time)."""
    image_screen = image_size or env.screen
    scaler = Scaler(env.screen, image_screen, coordinate_scale)
    system = adapter.system_prompt(image_screen)
    params = dict(request_params or {})
    turns: list[tuple[Message, Message | None]] = []  # (user turn, assistant reply)
    feedback = ""
    errors_total = 0
    note = ""
    for step in range(max_steps):
        if deadline is not None and time.monotonic() >= deadline:
            return _finish(env, trajectory, step, "deadline", note, errors_total)
        started = time.monotonic()
        png, seen = encode_png(env.screenshot(), image_screen)
        shot = trajectory.save_image(f"step_{step:03d}.png", png)
        header = (
            f"Task: {instruction}\n\nThis is the screen now ({seen.width}x{seen.height})."
            if step == 0
            else f"{feedback}\nStep {step + 1} of {max_steps}. This is the screen now."
        )
        turns.append((Message.user(header, ImagePart(png)), None))
        messages = _conversation(system, turns, history_images)
        completion = client.complete(messages, **params)
        decision = adapter.parse(completion, scaler)
        note = decision.note or note
        # provider action spaces: the reply may be a whole tool-call response; keep a readable summary
        reply_text = completion.text if adapter.name == "json" else _summary(decision, scaler)
        reply_text = reply_text or _summary(decision, scaler)
        turns[-1] = (turns[-1][0], Message.assistant(reply_text[:MAX_NOTE_IN_HISTORY] or "(no text)"))
        done_requested = decision.done
        done_actions: list[Action] = []
        errors = list(decision.errors)
        for action in decision.actions:
            if action.kind == "done":
                done_requested = True
                break
            try:
                env.execute(action)
                done_actions.append(action)
            except ActionFailed as exc:
                errors.append(f"{describe(action, scaler)} failed: {exc}")
                break
            time.sleep(min(step_delay, 2.0) if action.kind not in ("wait", "noop") else 0)
            env.settle()
        executed = [a.to_json() for a in done_actions]
        errors_total += len(errors)
        if step_delay:
            time.sleep(step_delay)
        env.settle()
        record = {
            "step": step,
            "screenshot": shot,
            "image_size": [seen.width, seen.height],
            "reply": (completion.text or decision.note or "")[:4000],
            "actions": executed,
            "errors": errors,
            "done": done_requested,
            "call_ids": decision.call_ids,
            "duration_s": round(time.monotonic() - started, 3),
        }
        trajectory.write(record)
        log.write("gui_step", step=step, actions=executed, errors=errors, done=done_requested)
        done_text = "; ".join(describe(a, scaler) for a in done_actions) or "nothing"
        feedback = f"Executed: {done_text}." + (f" Errors: {' | '.join(errors)}" if errors else "")
        if done_requested:
            return _finish(env, trajectory, step + 1, "done", note, errors_total)
    return _finish(env, trajectory, max_steps, "max_steps", note, errors_total)


def _summary(decision: Any, scaler: Scaler) -> str:
    calls = "; ".join(describe(a, scaler) for a in decision.actions)
    return "\n".join(p for p in (decision.note, calls and f"Actions: {calls}") if p)


def _conversation(system: str, turns: list[tuple[Message, Message | None]], history_images: int) -> list[Message]:
    """System prompt + every turn; images kept only in the last ``history_images`` user turns."""
    messages = [Message.system(system)]
    keep_from = len(turns) - max(1, history_images)
    for i, (user, reply) in enumerate(turns):
        if i < keep_from:
            texts = [p for p in user.parts() if isinstance(p, str)]
            user = Message.user(*texts, "(screenshot omitted)") if texts else Message.user("(screenshot omitted)")
        messages.append(user)
        if reply is not None:
            messages.append(reply)
    return messages


def _finish(env: ImpressScreen, trajectory: Trajectory, steps: int, reason: str, note: str, errors: int) -> EpisodeResult:
    png, seen = encode_png(env.screenshot())
    trajectory.save_image("final.png", png)
    trajectory.write({"step": "final", "screenshot": "final.png", "image_size": [seen.width, seen.height],
                      "steps": steps, "stop_reason": reason})
    return EpisodeResult(steps=steps, stop_reason=reason, note=note, action_errors=errors)
