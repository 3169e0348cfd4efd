"""The provider-neutral form of a generation request, and the simulator's token estimate.

Each wire module turns its request body into a :class:`Prompt`: an ordered list of
:class:`Block` objects (tool definitions, system text, message text, images) in the order
the provider reads them, which is the order prompt caching sees them too. Everything else
(limits, caching, replies, usage) works on this form.

Token estimate (deterministic, the same for every provider): a text costs
``ceil(characters / 4)`` tokens, an image ``SimConfig.image_tokens`` (85 by default,
whatever its size), a tool definition the estimate of its JSON text.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 4


def text_tokens(text: str) -> int:
    """The simulator's token count of ``text``: one token per 4 characters, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


class WireError(Exception):
    """A request the provider would refuse: answered with ``status`` in the provider's error form.

    ``param`` and ``code`` fill OpenAI's ``error.param`` / ``error.code`` (the other providers'
    error bodies have no such fields)."""

    def __init__(
        self,
        message: str,
        status: int = 400,
        kind: str = "invalid_request",
        *,
        param: str | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.param = param
        self.code = code


@dataclass(frozen=True)
class Block:
    """One piece of a prompt.

    ``kind`` is ``"text"``, ``"image"`` or ``"tool"`` (a tool definition); ``role`` the
    speaker (``"tools"`` for definitions); ``message`` the index of the message it belongs
    to (-1 for tool definitions and system text). ``data`` identifies an image (its bytes,
    or a URL's text). ``cache_ttl`` marks an Anthropic ``cache_control`` breakpoint
    (``"5m"`` or ``"1h"``).
    """

    kind: str
    role: str
    message: int
    text: str = ""
    data: bytes = b""
    tokens: int = 0
    cache_ttl: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool the request offers: its name and JSON-schema parameters."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class Prompt:
    """A generation request in the simulator's own form (see the module docstring)."""

    wire: str  # "openai" | "anthropic" | "gemini"
    endpoint: str  # "chat" | "responses" | "messages" | "generate"
    model: str
    blocks: list[Block] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    json_mode: bool = False
    json_schema: dict[str, Any] | None = None
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        """The estimated prompt tokens."""
        return sum(b.tokens for b in self.blocks)

    @property
    def image_count(self) -> int:
        """How many images the prompt holds."""
        return sum(1 for b in self.blocks if b.kind == "image")

    def system_text(self) -> str:
        """Every system text, joined by newlines."""
        return "\n".join(b.text for b in self.blocks if b.kind == "text" and b.role == "system")

    def user_texts(self) -> list[str]:
        """Every text block of user messages (tool results included), in order."""
        return [b.text for b in self.blocks if b.kind == "text" and b.role == "user"]

    def last_user_text(self) -> str:
        """The text blocks of the last user message, joined by newlines ("" when none)."""
        users = [b for b in self.blocks if b.role == "user" and b.message >= 0]
        if not users:
            return ""
        last = users[-1].message
        return "\n".join(b.text for b in users if b.message == last and b.kind == "text")


class PromptBuilder:
    """Collects blocks in reading order; message indexes grow with :meth:`next_message`."""

    def __init__(self, wire: str, endpoint: str, model: str, image_tokens: int):
        self.prompt = Prompt(wire=wire, endpoint=endpoint, model=model)
        self.image_tokens = image_tokens
        self.message = -1

    def next_message(self) -> int:
        """Start a new message; returns its index."""
        self.message += 1
        return self.message

    def text(self, role: str, text: Any, *, message: int | None = None, cache_ttl: str | None = None) -> None:
        """Add a text block (non-strings are written as JSON)."""
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, sort_keys=True, default=str)
        msg = self.message if message is None else message
        self.prompt.blocks.append(
            Block("text", role, msg, text=text, tokens=text_tokens(text), cache_ttl=cache_ttl)
        )

    def image(self, role: str, data: bytes, *, cache_ttl: str | None = None) -> None:
        """Add an image block identified by ``data`` (its bytes, or a URL)."""
        self.prompt.blocks.append(
            Block("image", role, self.message, data=data, tokens=self.image_tokens, cache_ttl=cache_ttl)
        )

    def tool(self, name: str, definition: Any, parameters: Any, *, cache_ttl: str | None = None) -> None:
        """Add a tool definition (its JSON text is what it costs and what caching sees)."""
        if not isinstance(name, str) or not name:
            raise WireError("every tool needs a name")
        text = json.dumps(definition, ensure_ascii=False, sort_keys=True, default=str)
        self.prompt.blocks.append(
            Block("tool", "tools", -1, text=text, tokens=text_tokens(text), cache_ttl=cache_ttl)
        )
        self.prompt.tools.append(ToolSpec(name, parameters if isinstance(parameters, dict) else {}))

    def mark_last(self, cache_ttl: str | None) -> None:
        """Put a cache breakpoint on the last block added (Anthropic ``cache_control``)."""
        if cache_ttl and self.prompt.blocks:
            last = self.prompt.blocks[-1]
            self.prompt.blocks[-1] = Block(
                last.kind, last.role, last.message, last.text, last.data, last.tokens, cache_ttl
            )


def decode_data_url(url: str) -> bytes:
    """The bytes of a ``data:...;base64,...`` URL; any other URL stands for itself (never fetched)."""
    if url.startswith("data:"):
        head, sep, payload = url.partition(",")
        if not sep:
            raise WireError("an image data URL has no ',' before its data")
        if head.endswith(";base64"):
            return decode_base64(payload, "image data URL")
        return payload.encode("utf-8")
    return url.encode("utf-8")


_URL_SAFE = str.maketrans("-_", "+/")


def decode_base64(payload: Any, what: str) -> bytes:
    """Base64 text to bytes, in the standard alphabet (``+``, ``/``) or the URL-safe one (``-``,
    ``_``, which google-genai sends), padded or not; :class:`WireError` when it is not base64."""
    if not isinstance(payload, str):
        raise WireError(f"{what}: the data must be a base64 string")
    text = "".join(payload.split()).translate(_URL_SAFE)
    if "=" not in text:  # unpadded (URL-safe encoders often drop the padding)
        text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        raise WireError(f"{what}: the data is not valid base64") from None


def as_int(value: Any, name: str) -> int | None:
    """An optional positive integer field of a request."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise WireError(f"{name} must be a positive integer")
    return value


__all__ = [
    "CHARS_PER_TOKEN",
    "Block",
    "Prompt",
    "PromptBuilder",
    "ToolSpec",
    "WireError",
    "as_int",
    "decode_base64",
    "decode_data_url",
    "text_tokens",
]
