"""The GUI agent's step loop: screenshot → model → actions, within a step budget and a deadline.

Each step takes a screenshot, asks the conversation (:mod:`.native`) for the
request — plain text turns for the json space; the provider's own computer-use
conversation, with tool calls answered by tool results carrying the new
screenshot, for the openai and anthropic spaces — parses the reply with the
action-space adapter, runs the actions and records the step in the trajectory
folder:

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

from pptarena.models import ModelClient
from pptarena.types import AgentLog

from .actions import Action, Scaler, Screen
from .env import ActionFailed, ImpressScreen


@dataclass
class EpisodeResult:
    """How the episode ended."""

    steps: int
    stop_reason: str  # "done" | "max_steps" | "deadline" | "safety_check"
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
    native: bool = True,
    safety_checks: str = "stop",
) -> EpisodeResult:
    """Run up to ``max_steps`` model steps (until the model says done or ``deadline``, a monotonic time).

    ``native`` (openai/anthropic spaces): run the provider's computer-use
    conversation (see :mod:`.native`); the tool definition is added to the call
    parameters. ``safety_checks`` (OpenAI ``pending_safety_checks``): ``"stop"``
    ends the episode without running the call, ``"acknowledge"`` runs it and
    acknowledges the checks in the next request.
    """
    from .native import CallOutcome, make_conversation

    image_screen = image_size or env.screen
    scaler = Scaler(env.screen, image_screen, coordinate_scale)
    params = dict(request_params or {})
    native = native and adapter.name != "json"
    if native:
        params.update(adapter.request_params(image_screen))
    convo = make_conversation(
        adapter.name, native, adapter.system_prompt(image_screen), instruction, history_images, params
    )
    feedback = ""
    errors_total = 0
    note = ""
    for step in range(max_steps):
        if deadline is not None and time.monotonic() >= deadline:
            return _finish(env, trajectory, step, "deadline", note, errors_total)
        started = time.monotonic()
        png, seen = encode_png(env.screenshot(), image_screen)
        shot = trajectory.save_image(f"step_{step:03d}.png", png)
        messages, call_params = convo.request(step, max_steps, png, (seen.width, seen.height), feedback)
        completion = client.complete(messages, **call_params)
        decision = adapter.parse(completion, scaler)
        note = decision.note or note
        convo.observe(completion, decision, _summary(decision, scaler), adapter.name == "json")
        errors = list(decision.errors)
        acknowledged: list[dict[str, Any]] = []
        if decision.safety_checks:
            codes = [c.get("code") for c in decision.safety_checks]
            if not native or safety_checks != "acknowledge":
                errors.append(f"pending safety checks not acknowledged: {codes}")
            else:
                acknowledged = list(decision.safety_checks)
        if native and decision.safety_checks and safety_checks != "acknowledge":
            errors_total += len(errors)
            _record_step(trajectory, log, step, shot, seen, completion, decision, [], errors, True, started)
            return _finish(env, trajectory, step + 1, "safety_check", note or "; ".join(errors), errors_total)
        done_requested = decision.done
        done_actions: list[Action] = []
        failed: tuple[int, str] | None = None
        for i, action in enumerate(decision.actions):
            if action.kind == "done":
                done_requested = True
                break
            try:
                env.execute(action)
                done_actions.append(action)
            except ActionFailed as exc:
                message = f"{describe(action, scaler)} failed: {exc}"
                errors.append(message)
                failed = (i, message)
                break
            time.sleep(min(step_delay, 2.0) if action.kind not in ("wait", "noop") else 0)
            env.settle()
        errors_total += len(errors)
        if step_delay:
            time.sleep(step_delay)
        env.settle()
        _record_step(
            trajectory,
            log,
            step,
            shot,
            seen,
            completion,
            decision,
            done_actions,
            errors,
            done_requested,
            started,
        )
        convo.report(_outcomes(decision, len(done_actions), failed, CallOutcome), acknowledged)
        done_text = "; ".join(describe(a, scaler) for a in done_actions) or "nothing"
        feedback = f"Executed: {done_text}." + (f" Errors: {' | '.join(errors)}" if errors else "")
        if done_requested:
            return _finish(env, trajectory, step + 1, "done", note, errors_total)
    return _finish(env, trajectory, max_steps, "max_steps", note, errors_total)


def _record_step(
    trajectory: Trajectory,
    log: AgentLog,
    step: int,
    shot: str,
    seen: Screen,
    completion: Any,
    decision: Any,
    done_actions: list[Action],
    errors: list[str],
    done: bool,
    started: float,
) -> None:
    executed = [a.to_json() for a in done_actions]
    trajectory.write(
        {
            "step": step,
            "screenshot": shot,
            "image_size": [seen.width, seen.height],
            "reply": (completion.text or decision.note or "")[:4000],
            "actions": executed,
            "errors": errors,
            "done": done,
            "call_ids": decision.call_ids,
            "duration_s": round(time.monotonic() - started, 3),
        }
    )
    log.write("gui_step", step=step, actions=executed, errors=errors, done=done)


def _outcomes(decision: Any, n_run: int, failed: tuple[int, str] | None, outcome_cls: Any) -> list[Any]:
    """One outcome per provider tool call: ok, its own error, or not run because an earlier action failed."""
    out = []
    owners = decision.action_calls
    for call_id in decision.call_ids:
        mine = [i for i, owner in enumerate(owners) if owner == call_id]
        if call_id in decision.call_errors:
            out.append(outcome_cls(call_id, False, decision.call_errors[call_id]))
        elif failed is not None and failed[0] in mine:
            out.append(outcome_cls(call_id, False, failed[1]))
        elif not mine or any(i >= n_run for i in mine):
            out.append(
                outcome_cls(
                    call_id, False, "not run: an earlier action failed or the step's action limit was reached"
                )
            )
        else:
            out.append(outcome_cls(call_id, True))
    return out


def _summary(decision: Any, scaler: Scaler) -> str:
    calls = "; ".join(describe(a, scaler) for a in decision.actions)
    return "\n".join(p for p in (decision.note, calls and f"Actions: {calls}") if p)


def _finish(
    env: ImpressScreen, trajectory: Trajectory, steps: int, reason: str, note: str, errors: int
) -> EpisodeResult:
    png, seen = encode_png(env.screenshot())
    trajectory.save_image("final.png", png)
    trajectory.write(
        {
            "step": "final",
            "screenshot": "final.png",
            "image_size": [seen.width, seen.height],
            "steps": steps,
            "stop_reason": reason,
        }
    )
    return EpisodeResult(steps=steps, stop_reason=reason, note=note, action_errors=errors)
