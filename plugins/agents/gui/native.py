"""Provider-native computer-use conversations for the GUI loop (``action_space`` openai / anthropic).

The loop asks a conversation for the next request (messages and call
parameters), hands it the model's answer, and after running the actions
reports what happened to each tool call. Three kinds:

:class:`TextConversation`
    Every step is a fresh user turn (text + screenshot); earlier replies come
    back as assistant text. For the ``json`` space, and for provider spaces
    with ``native = false``.
:class:`AnthropicConversation`
    The Messages API computer tool: the ``computer_20250124`` tool definition
    (the backend adds the ``computer-use-2025-01-24`` beta), the model's
    ``tool_use`` blocks echoed back as :class:`~pptarena.models.ToolCall`
    parts, and one ``tool_result`` per call, the last one holding the new
    screenshot. The whole conversation is resent each step; screenshots older
    than the last ``history_images`` turns are replaced by a note.
:class:`OpenAIConversation`
    The Responses API ``computer_use_preview`` tool with ``truncation =
    "auto"``: after the first request each step sends only
    ``computer_call_output`` items (the new screenshot per call, with
    ``acknowledged_safety_checks`` when allowed) and ``previous_response_id``;
    the server keeps the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pptarena.models import Completion, ImagePart, Message, ToolCall, ToolResult
from pptarena.models.messages import prune_images

from .adapters import Decision, provider_items

MAX_NOTE_IN_HISTORY = 2000
OMITTED = "(screenshot omitted)"


@dataclass
class CallOutcome:
    """What running one tool call's actions gave: ``ok``, or ``error`` with a message for the model."""

    call_id: str
    ok: bool
    message: str = ""


class TextConversation:
    """Plain turns: instruction/feedback text + screenshot; replies kept as assistant text."""

    native = False

    def __init__(self, system: str, instruction: str, history_images: int, params: dict[str, Any]):
        self.system = system
        self.instruction = instruction
        self.history_images = history_images
        self.params = dict(params)
        self.turns: list[tuple[Message, Message | None]] = []

    def request(
        self, step: int, max_steps: int, png: bytes, size: tuple[int, int], feedback: str
    ) -> tuple[list[Message], dict[str, Any]]:
        """The messages and call parameters of this step."""
        header = (
            f"Task: {self.instruction}\n\nThis is the screen now ({size[0]}x{size[1]})."
            if step == 0
            else f"{feedback}\nStep {step + 1} of {max_steps}. This is the screen now."
        )
        self.turns.append((Message.user(header, ImagePart(png)), None))
        messages = [Message.system(self.system)]
        keep_from = len(self.turns) - max(1, self.history_images)
        for i, (user, reply) in enumerate(self.turns):
            if i < keep_from:
                texts = [p for p in user.parts() if isinstance(p, str)]
                user = Message.user(*texts, OMITTED) if texts else Message.user(OMITTED)
            messages.append(user)
            if reply is not None:
                messages.append(reply)
        return messages, dict(self.params)

    def observe(self, completion: Completion, decision: Decision, summary: str, text_reply: bool) -> None:
        """Keep the reply (the text itself, or ``summary`` for provider outputs) for the next turns."""
        reply = (completion.text if text_reply else summary) or summary
        self.turns[-1] = (self.turns[-1][0], Message.assistant(reply[:MAX_NOTE_IN_HISTORY] or "(no text)"))

    def report(self, outcomes: list[CallOutcome], acknowledged: list[dict[str, Any]]) -> None:
        """Nothing to do: the feedback text of the next request says what happened."""


class AnthropicConversation:
    """The Anthropic computer-use conversation (tool_use → tool_result with screenshots)."""

    native = True

    def __init__(self, system: str, instruction: str, history_images: int, params: dict[str, Any]):
        self.system = system
        self.instruction = instruction
        self.history_images = history_images
        self.params = dict(params)
        self.messages: list[Message] = []
        self._outcomes: list[CallOutcome] = []

    def request(
        self, step: int, max_steps: int, png: bytes, size: tuple[int, int], feedback: str
    ) -> tuple[list[Message], dict[str, Any]]:
        """Step 0: the instruction and the screenshot; later: the tool results, the last with the
        screenshot.
        """
        shot = ImagePart(png)
        if step == 0 or not self._outcomes:
            text = f"Task: {self.instruction}" if step == 0 else f"{feedback}\nThis is the screen now."
            self.messages.append(Message.user(text, shot))
        else:
            results = []
            for i, outcome in enumerate(self._outcomes):
                last = i == len(self._outcomes) - 1
                content: tuple[str | ImagePart, ...] = (outcome.message,) if outcome.message else ()
                if last:
                    content += (shot,)
                results.append(ToolResult(outcome.call_id, content or ("done",), is_error=not outcome.ok))
            self.messages.append(Message.user(*results))
        self._outcomes = []
        return [Message.system(self.system), *_prune_images(self.messages, self.history_images)], dict(
            self.params
        )

    def observe(self, completion: Completion, decision: Decision, summary: str, text_reply: bool) -> None:
        """Append the model's turn: its text and its tool_use blocks as :class:`ToolCall` parts."""
        parts: list[Any] = []
        for block in provider_items(completion, "content"):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                parts.append(str(block["text"]))
            elif block.get("type") == "tool_use":
                given = block.get("input")
                parts.append(
                    ToolCall(
                        str(block.get("id", "")),
                        str(block.get("name", "")),
                        given if isinstance(given, dict) else {},
                        native=block,
                    )
                )
        self.messages.append(Message("assistant", tuple(parts) or (summary or "(no text)",)))

    def report(self, outcomes: list[CallOutcome], acknowledged: list[dict[str, Any]]) -> None:
        """Remember the outcome of every tool call for the next request."""
        self._outcomes = list(outcomes)


class OpenAIConversation:
    """The OpenAI Responses computer-use conversation (computer_call → computer_call_output)."""

    native = True

    def __init__(self, system: str, instruction: str, history_images: int, params: dict[str, Any]):
        self.system = system
        self.instruction = instruction
        self.params = dict(params)
        self._previous: str | None = None
        self._outcomes: list[CallOutcome] = []
        self._acknowledged: list[dict[str, Any]] = []

    def request(
        self, step: int, max_steps: int, png: bytes, size: tuple[int, int], feedback: str
    ) -> tuple[list[Message], dict[str, Any]]:
        """Step 0: the instruction and the screenshot; later: one computer_call_output per call."""
        params = dict(self.params)
        shot = ImagePart(png)
        if step == 0 or not self._outcomes:
            text = f"Task: {self.instruction}" if step == 0 else f"{feedback}\nThis is the screen now."
            parts: list[Any] = [text, shot]
        else:
            parts = []
            errors = []
            for outcome in self._outcomes:
                native: dict[str, Any] = {}
                if self._acknowledged:
                    native["acknowledged_safety_checks"] = [
                        {k: c[k] for k in ("id", "code", "message") if c.get(k) is not None}
                        for c in self._acknowledged
                    ]
                parts.append(
                    ToolResult(outcome.call_id, (shot,), is_error=not outcome.ok, native=native or None)
                )
                if not outcome.ok and outcome.message:
                    errors.append(outcome.message)
            if errors:  # a computer_call_output has no place for text: tell the model in a message after it
                parts.append("Errors: " + " | ".join(errors))
        if self._previous:
            params["previous_response_id"] = self._previous
        self._outcomes, self._acknowledged = [], []
        return [Message.system(self.system), Message.user(*parts)], params

    def observe(self, completion: Completion, decision: Decision, summary: str, text_reply: bool) -> None:
        """Remember the response id: the next request continues from it."""
        raw = completion.raw if isinstance(completion.raw, dict) else None
        rid = raw.get("id") if raw else None
        if rid is None:  # replay without raw: the recorded response may be in the text
            from .adapters import extract_json_values

            for value in reversed(extract_json_values(completion.text or "")):
                if isinstance(value, dict) and isinstance(value.get("id"), str):
                    rid = value["id"]
                    break
        self._previous = str(rid) if rid else None

    def report(self, outcomes: list[CallOutcome], acknowledged: list[dict[str, Any]]) -> None:
        """Remember the outcomes and the safety checks to acknowledge for the next request."""
        self._outcomes = list(outcomes)
        self._acknowledged = list(acknowledged)


def _prune_images(messages: list[Message], keep: int) -> list[Message]:
    """Messages with screenshots only in the last ``keep`` (at least one) user turns holding any."""
    return prune_images(messages, max(1, keep), OMITTED)


Conversation = TextConversation | AnthropicConversation | OpenAIConversation
CONVERSATIONS: dict[str, type[Conversation]] = {
    "json": TextConversation,
    "openai": OpenAIConversation,
    "anthropic": AnthropicConversation,
}


def make_conversation(
    action_space: str,
    native: bool,
    system: str,
    instruction: str,
    history_images: int,
    params: dict[str, Any],
) -> Conversation:
    """The conversation for an action space (``native`` false: plain text turns for any space)."""
    cls = CONVERSATIONS[action_space] if native else TextConversation
    return cls(system, instruction, history_images, params)
