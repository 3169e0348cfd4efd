"""What a PPTPilot-style agent sees, and how it talks to its models.

An agent sees the instruction, the deck's JSON summary (``pptarena.deck.summarize``),
renders of its slides and, on the XML branch, the XML of the parts it picked. It
never sees a task's ``target`` or ``style_target``: :class:`EditRequest` is built
from the instruction alone and is the only task data the branches receive.

:class:`ModelCaller` sends messages through the workspace's model clients and
writes one ``model_call`` event per call to ``agent.log.jsonl``.
"""

from __future__ import annotations

import io
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.models import ImagePart, Message, Usage
from pptarena.replyjson import first_json_object
from pptarena.types import AgentTask, SlideImage, Workspace

REPLY_LOG_CHARS = 20_000


@dataclass(frozen=True)
class EditRequest:
    """The task as an agent may see it: its id and instruction, plus repair feedback.

    ``feedback`` and ``diff`` are set in repair rounds (the verifier's words and the
    edits made so far, as text).
    """

    task_id: str
    instruction: str
    feedback: str | None = None
    diff: str | None = None

    @classmethod
    def from_task(cls, task: AgentTask) -> EditRequest:
        """Only the id and the instruction are taken: never the target or style target."""
        return cls(task_id=task.id, instruction=task.instruction)

    def repair(self, feedback: str, diff: str) -> EditRequest:
        """The same request with a reviewer's feedback and the edits made so far."""
        return EditRequest(self.task_id, self.instruction, feedback=feedback, diff=diff)


@dataclass(frozen=True)
class ViewLimits:
    """How much of a deck goes into one prompt."""

    max_summary_chars: int = 60_000
    max_images: int = 8
    image_max_px: int = 1024


# --------------------------------------------------------------------------- summary


def summary_text(summary: dict[str, Any], max_chars: int) -> str:
    """The summary as compact JSON, at most ``max_chars`` long.

    When the whole summary is too long, slides are dropped from the end (listed by
    number and title instead) until it fits; as a last resort the text is cut.
    """
    full = json.dumps(summary, ensure_ascii=False, separators=(",", ":"))
    if len(full) <= max_chars:
        return full
    slides = list(summary.get("slides") or [])
    kept = dict(summary)
    while slides:
        slides.pop()
        kept["slides"] = slides
        kept["omitted_slides"] = [
            {"number": s.get("number"), "title": s.get("title")}
            for s in (summary.get("slides") or [])[len(slides) :]
        ]
        text = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
        if len(text) <= max_chars:
            return text
    return full[: max(0, max_chars - 40)] + " …[summary truncated]"


def deck_outline(summary: dict[str, Any]) -> str:
    """One line per slide: number, title and layout (for the router)."""
    lines = [f"{len(summary.get('slides') or [])} slides:"]
    for s in summary.get("slides") or []:
        title = s.get("title") or "(no title)"
        lines.append(f"  {s.get('number')}. {title} [{s.get('layout') or 'no layout'}]")
    return "\n".join(lines)


_SLIDE_REF = re.compile(r"\bslides?\s+((?:\d+\s*(?:,|-|–|to|and|&)?\s*)+)", re.IGNORECASE)


def mentioned_slides(text: str, n_slides: int) -> list[int]:
    """Slide numbers an instruction names ("slide 3", "slides 2-4", "slides 1 and 5"), in order."""
    found: list[int] = []
    for match in _SLIDE_REF.finditer(text):
        chunk = match.group(1)
        for a, b in re.findall(r"(\d+)\s*(?:(?:-|–|to)\s*(\d+))?", chunk):
            lo = int(a)
            hi = int(b) if b else lo
            for n in range(lo, min(hi, lo + 200) + 1):
                if 1 <= n <= n_slides and n not in found:
                    found.append(n)
    return found


def pick_slides(n_slides: int, first: list[int], limit: int) -> list[int]:
    """Up to ``limit`` slide numbers: ``first`` (in order), then the rest from slide 1."""
    out = [n for n in first if 1 <= n <= n_slides][:limit]
    for n in range(1, n_slides + 1):
        if len(out) >= limit:
            break
        if n not in out:
            out.append(n)
    return sorted(out)


def image_part(slide: SlideImage, max_px: int) -> ImagePart:
    """A slide render as a PNG message part, scaled down to ``max_px`` on its long edge."""
    from PIL import Image

    with Image.open(slide.path) as opened:
        img: Image.Image = opened
        if max(img.size) > max_px:
            scale = max_px / max(img.size)
            img = img.convert("RGB").resize(
                (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
            )
        buf = io.BytesIO()
        img.save(buf, "PNG")
    return ImagePart(buf.getvalue(), "image/png")


def slide_images(renders: list[SlideImage], numbers: list[int], max_px: int) -> list[str | ImagePart]:
    """Labelled images of the chosen slides: ``["Slide 2:", <png>, ...]``."""
    by_number = {r.number: r for r in renders}
    parts: list[str | ImagePart] = []
    for n in numbers:
        r = by_number.get(n)
        if r is None:
            continue
        parts.append(f"Slide {n}{' (hidden)' if r.hidden else ''}:")
        parts.append(image_part(r, max_px))
    return parts


def request_text(request: EditRequest) -> str:
    """The instruction block of a prompt (with repair feedback in repair rounds)."""
    from pptarena.plugins.agents.pptpilot.prompts import REPAIR_NOTE

    text = f"Request:\n{request.instruction}"
    if request.feedback is not None:
        text += "\n\n" + REPAIR_NOTE.format(diff=request.diff or "(no edits)", feedback=request.feedback)
    return text


# --------------------------------------------------------------------------- model calls


@dataclass
class ModelCaller:
    """Calls models through the workspace and logs every call to ``agent.log.jsonl``.

    Each call writes a ``model_step`` event (which step of the agent, model, prompt
    size, usage, time). A ``model_call`` event with the reply text is written too,
    unless the client logs calls itself (the runner's clients write their own
    ``model_call`` with the messages and the reply). ``temperature``/``max_tokens``
    are passed when set. :attr:`usage` sums every call.
    """

    workspace: Workspace
    temperature: float | None = None
    max_tokens: int | None = None
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    _clients: dict[str, Any] = field(default_factory=dict)

    def client(self, ref: str) -> Any:
        """One client per model reference, made on first use."""
        if ref not in self._clients:
            self._clients[ref] = self.workspace.model(ref)
        return self._clients[ref]

    def call(self, step: str, ref: str, messages: list[Message]) -> str:
        """Send ``messages`` to ``ref``; return the reply text. Model errors propagate (logged first)."""
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        started = time.monotonic()
        self.calls += 1
        prompt = _prompt_stats(messages)
        client = self.client(ref)
        # The runner's clients already log a full ``model_call`` (messages and reply) to this log;
        # other clients (tests, library use) get one from here.
        full_log = getattr(client, "log", None) is None
        try:
            completion = client.complete(messages, **params)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.workspace.log.write(
                "model_step",
                step=step,
                model=ref,
                prompt=prompt,
                error=error,
                duration_s=round(time.monotonic() - started, 3),
            )
            if full_log:
                self.workspace.log.write("model_call", step=step, model=ref, error=error)
            raise
        self.usage.add(completion.usage)
        text = completion.text or ""
        self.workspace.log.write(
            "model_step",
            step=step,
            model=ref,
            prompt=prompt,
            reply_chars=len(text),
            usage=completion.usage.as_dict(),
            duration_s=round(time.monotonic() - started, 3),
        )
        if full_log:
            self.workspace.log.write(
                "model_call",
                step=step,
                model=ref,
                prompt=prompt,
                usage=completion.usage.as_dict(),
                cached=completion.cached,
                reply=text[:REPLY_LOG_CHARS] + ("…[cut]" if len(text) > REPLY_LOG_CHARS else ""),
            )
        return text


def _prompt_stats(messages: list[Message]) -> dict[str, Any]:
    texts = [p for m in messages for p in m.parts() if isinstance(p, str)]
    images = sum(1 for m in messages for p in m.parts() if isinstance(p, ImagePart))
    last_user = next((m for m in reversed(messages) if m.role == "user"), None)
    last = "" if last_user is None else "\n".join(p for p in last_user.parts() if isinstance(p, str))
    return {
        "messages": len(messages),
        "text_chars": sum(len(t) for t in texts),
        "images": images,
        "last_user": last[:2000] + ("…" if len(last) > 2000 else ""),
    }


def find_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model reply (inside a ``` fence, else bare), else None."""
    return first_json_object(text)


def deck_dir(workspace: Workspace) -> Path:
    """The folder (in the task folder) where intermediate decks and renders go."""
    path = workspace.dir / "pilot"
    path.mkdir(parents=True, exist_ok=True)
    return path
