"""The tool loop's conversation: the messages sent to the model at each step.

Two ways to carry tool traffic:

* **parts** (``carries_parts=True``; every built-in backend: ``openai``, ``anthropic``, ``google``
  and ``scripted``): the model's turn is an assistant message with its text and
  :class:`~pptarena.models.ToolCall` parts, the answers a user message of
  :class:`~pptarena.models.ToolResult` parts (text and images).
* **text** (a backend declaring ``accepts_tool_parts = False``): the model's turn is written back
  as assistant text naming each call and its arguments, the answers as a user message of text
  blocks (``Result of <tool> (call <id>)``) followed by their images. The tools are still offered
  natively at every step, so the model still calls them as functions.

Images older than the last ``history_images`` answers that hold any are replaced by a note, so a
long loop does not resend every render.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pptarena.models import ImagePart, Message, ToolCall, ToolResult
from pptarena.models.messages import prune_images

OMITTED = "(image omitted: an older render)"
MAX_ECHOED_ARGUMENT_CHARS = 20_000


@dataclass
class Conversation:
    """System prompt, the task message, then the model's turns and the tool answers."""

    system: str
    task: str
    carries_parts: bool = True
    history_images: int = 2
    turns: list[Message] = field(default_factory=list)

    def messages(self) -> list[Message]:
        """What the next model call is sent."""
        head = [Message.system(self.system, cache_prefix=False), Message.user(self.task, cache_prefix=True)]
        return head + _prune_images(self.turns, self.history_images)

    def add_reply(self, text: str, calls: list[ToolCall]) -> None:
        """The model's turn: its text and the calls it made."""
        if self.carries_parts:
            self.turns.append(Message.assistant(text, *calls))
            return
        lines = [text] if text else []
        for call in calls:
            args = json.dumps(dict(call.input), ensure_ascii=False, default=str)
            if len(args) > MAX_ECHOED_ARGUMENT_CHARS:
                args = args[:MAX_ECHOED_ARGUMENT_CHARS] + " …(cut)"
            lines.append(f"[called tool {call.name} (call {call.id}) with arguments {args}]")
        self.turns.append(Message.assistant("\n".join(lines) or "(no text)"))

    def add_results(self, results: list[tuple[ToolCall, ToolResult]]) -> None:
        """The answers to the model's calls, in the order of the calls."""
        if self.carries_parts:
            self.turns.append(Message.user(*(r for _, r in results)))
            return
        texts: list[str] = []
        images: list[ImagePart] = []
        for call, result in results:
            status = "error" if result.is_error else "result"
            body = "\n".join(p for p in result.content if isinstance(p, str))
            shown = result.images()
            note = f"\n({len(shown)} image(s) below)" if shown else ""
            texts.append(f"[{status} of tool {call.name} (call {call.id})]\n{body}{note}")
            images.extend(shown)
        self.turns.append(Message.user("\n\n".join(texts), *images))


def _prune_images(turns: list[Message], keep: int) -> list[Message]:
    """Turns with images only in the last ``keep`` user turns holding any (others get a note)."""
    return prune_images(turns, keep, OMITTED)
