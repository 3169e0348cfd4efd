"""Turning a prompt into a simulated completion: the reply, the output-token limit, the usage.

Shared by live requests and batch requests. Output tokens are estimated like prompt tokens
(``ceil(characters / 4)`` of the text plus each tool call's name and arguments). When the
reply is longer than the request's output limit, its text is cut to the limit and the
finish reason says so (tool calls are dropped then).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pptarena.models.sim.caching import CacheUsage, PromptCache
from pptarena.models.sim.prompt import CHARS_PER_TOKEN, Prompt, text_tokens
from pptarena.models.sim.replies import Reply, Responder


@dataclass(frozen=True)
class Completion:
    """A simulated answer: the reply, ``finish`` (``"stop"``, ``"length"`` or ``"tool_calls"``),
    prompt and output tokens, and the prompt-cache usage."""

    reply: Reply
    finish: str
    prompt_tokens: int
    output_tokens: int
    cache: CacheUsage


def output_tokens(reply: Reply) -> int:
    """The output-token estimate of ``reply``."""
    return text_tokens(reply.text) + sum(text_tokens(c.name + c.arguments) for c in reply.tool_calls)


class Answerer:
    """Replies (:class:`Responder`) plus usage (:class:`PromptCache`) for a prompt."""

    def __init__(self, responder: Responder, cache: PromptCache):
        self.responder = responder
        self.cache = cache

    def answer(self, prompt: Prompt, api_key: str, *, bad_tool_args: bool = False) -> Completion:
        """The completion of ``prompt`` sent with ``api_key`` (whose cache it reads and writes)."""
        reply = self.responder.reply(prompt, bad_tool_args=bad_tool_args)
        finish = "tool_calls" if reply.tool_calls else "stop"
        limit = prompt.max_tokens
        if limit is not None and output_tokens(reply) > limit:
            reply = replace(reply, text=reply.text[: limit * CHARS_PER_TOKEN], tool_calls=())
            finish = "length"
        usage = self.cache.usage(prompt, api_key)
        return Completion(reply, finish, prompt.total_tokens, output_tokens(reply), usage)


__all__ = ["Answerer", "Completion", "output_tokens"]
