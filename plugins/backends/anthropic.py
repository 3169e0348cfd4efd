"""The ``anthropic`` backend: the Messages API through the official Anthropic SDK.

System messages go to the top-level ``system`` parameter; images become
``image`` content blocks with a base64 source. ``max_tokens`` is required by
the API, so this backend always sends one (option ``max_tokens``, default
4096). The SDK adds the ``anthropic-version`` header; its own retries are off
because :class:`pptarena.models.ModelClient` retries.

Tools: ``tools`` (tool definitions, passed as given), ``tool_choice`` and
``betas`` call parameters. A call with ``betas`` goes to the beta endpoint
(``client.beta.messages.create``), which sends the ``anthropic-beta`` header;
computer tools (``computer_20250124``...) imply their beta flag when the call
gives none. Tool calls come back in ``Completion.raw["content"]``; send them
back as :class:`~pptarena.models.ToolCall` parts and answer them with
:class:`~pptarena.models.ToolResult` parts (``tool_result`` blocks).

Sampling parameters (``temperature``, ``top_p``, ``top_k``): API version
2026-10-21 (the default of SDK 2.x) rejects them, so with such an SDK they are
dropped (logged once) unless ``api_version = "2023-06-01"`` is set, which sends
that version header and the parameters in the body. Older SDKs (API
2023-06-01) take them as usual.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field, SecretStr

import pptarena
from pptarena.models import (
    BackendBase,
    BackendOptions,
    Completion,
    ImagePart,
    Message,
    ModelError,
    ToolCall,
    ToolResult,
    Usage,
    redact_secrets,
)
from pptarena.types import ComponentContext

from ._sdk import call_sdk, check_params, open_sdk

PROVIDER = "anthropic"
INSTALL_HINT = "install with: pip install 'pptarena[anthropic]'"
KNOWN_PARAMS = frozenset(
    {
        "temperature",
        "max_tokens",
        "top_p",
        "top_k",
        "stop",
        "seed",
        "extra_body",
        "tools",
        "tool_choice",
        "betas",
    }
)
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
COMPUTER_TOOL_BETAS = {
    "computer_20241022": "computer-use-2024-10-22",
    "computer_20250124": "computer-use-2025-01-24",
    "computer_20251124": "computer-use-2025-11-24",
}
"""The ``anthropic-beta`` value each computer tool version needs (added when a call gives no ``betas``)."""

log = logging.getLogger("pptarena.models")


class AnthropicOptions(BackendOptions):
    """Options of the ``anthropic`` backend (``[backends.anthropic]``)."""

    base_url: str | None = Field(None, description="default: the Anthropic API (or $ANTHROPIC_BASE_URL)")
    api_key: SecretStr | None = Field(None, description='use { env = "VAR" }; default $ANTHROPIC_API_KEY')
    default_headers: dict[str, str | SecretStr] = Field(
        default_factory=dict, description="sent with every request"
    )
    max_tokens: int | None = Field(
        4096, gt=0, description="output-token limit when a call gives none (required)"
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="extra JSON fields for every request"
    )
    api_version: str | None = Field(
        None, description="anthropic-version header override, e.g. 2023-06-01 to keep temperature/top_p/top_k"
    )


SAMPLING_PARAMS = ("temperature", "top_p", "top_k")
LEGACY_API_VERSION = "2023-06-01"


def _image_block(p: ImagePart) -> dict[str, Any]:
    if p.media_type not in IMAGE_TYPES:
        raise TypeError(f"anthropic backend: unsupported image type {p.media_type} (use PNG or JPEG)")
    return {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": p.b64()}}


def _tool_result_block(p: ToolResult) -> dict[str, Any]:
    """A ``tool_result`` block: text and base64 images, ``is_error`` when the call failed."""
    content: list[dict[str, Any]] = [
        _image_block(c) if isinstance(c, ImagePart) else {"type": "text", "text": c}
        for c in p.content
        if c != ""
    ]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": p.call_id, "content": content}
    if p.is_error:
        block["is_error"] = True
    return block


def to_anthropic_request(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """pptarena messages → ``(system, messages)`` of the Messages API.

    :class:`ToolCall` parts (assistant) become ``tool_use`` blocks
    (``id``, ``name``, ``input``); :class:`ToolResult` parts (user) become
    ``tool_result`` blocks and must come before any other part of their message.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        parts = m.parts()
        if m.role == "system":
            if any(not isinstance(p, str) for p in parts):
                raise TypeError("anthropic backend: system messages hold text only")
            system.append("".join(p for p in parts if isinstance(p, str)))
            continue
        if len(parts) == 1 and isinstance(parts[0], str):
            out.append({"role": m.role, "content": parts[0]})
            continue
        blocks: list[dict[str, Any]] = []
        for p in parts:
            if isinstance(p, ImagePart):
                if m.role != "user":
                    raise TypeError("anthropic backend: images are only allowed in user messages")
                blocks.append(_image_block(p))
            elif isinstance(p, ToolCall):
                if m.role != "assistant":
                    raise TypeError("anthropic backend: tool calls belong in assistant messages")
                blocks.append({"type": "tool_use", "id": p.id, "name": p.name, "input": dict(p.input)})
            elif isinstance(p, ToolResult):
                if m.role != "user":
                    raise TypeError("anthropic backend: tool results belong in user messages")
                if blocks and blocks[-1]["type"] != "tool_result":
                    raise TypeError("anthropic backend: tool results must come first in their message")
                blocks.append(_tool_result_block(p))
            elif p:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": p})
        out.append({"role": m.role, "content": blocks})
    return ("\n\n".join(system) if system else None), out


def implied_betas(tools: Any) -> list[str]:
    """The beta flags the given tool definitions need (computer tools: see :data:`COMPUTER_TOOL_BETAS`)."""
    betas: list[str] = []
    for tool in tools or []:
        beta = COMPUTER_TOOL_BETAS.get(tool.get("type", "")) if isinstance(tool, dict) else None
        if beta and beta not in betas:
            betas.append(beta)
    return betas


class AnthropicBackend(BackendBase):
    """Messages through the official ``anthropic`` SDK."""

    Options = AnthropicOptions

    def __init__(self, options: AnthropicOptions, context: ComponentContext):
        super().__init__(options, context)
        version = {"anthropic-version": options.api_version} if options.api_version else None
        anthropic, key, headers = open_sdk(PROVIDER, INSTALL_HINT, options, "ANTHROPIC_API_KEY", version)
        self.options: AnthropicOptions = options
        self._secrets = [key, *headers.values()]
        try:
            self._client = anthropic.Anthropic(
                api_key=key,
                base_url=options.base_url,
                timeout=options.timeout,
                max_retries=0,
                default_headers=headers or None,
            )
        except anthropic.AnthropicError as exc:
            raise ModelError(
                f"anthropic: cannot create the client: {redact_secrets(str(exc), self._secrets)}"
            ) from None
        import inspect

        self._native_sampling = "temperature" in inspect.signature(self._client.messages.create).parameters
        self._send_sampling = self._native_sampling or options.api_version == LEGACY_API_VERSION
        self._warned_sampling = False
        try:
            from anthropic._constants import ANTHROPIC_API_VERSION as sdk_api_version
        except ImportError:  # older SDKs: the 2023-06-01 API
            sdk_api_version = LEGACY_API_VERSION
        self.api_version = options.api_version or sdk_api_version

    def cache_identity(self) -> dict[str, Any]:
        """Server URL and extra body fields (never the key)."""
        return {
            "base_url": str(self._client.base_url),
            "extra_body": self.options.extra_body,
            "api_version": self.options.api_version,
        }

    def request_body(self, messages: list[Message], model: str, params: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for ``messages.create``."""
        check_params(PROVIDER, params, KNOWN_PARAMS)
        system, wire_messages = to_anthropic_request(messages)
        max_tokens = params.get("max_tokens") or self.options.max_tokens or 4096
        body: dict[str, Any] = {"model": model, "max_tokens": int(max_tokens), "messages": wire_messages}
        if system:
            body["system"] = system
        extra = {**self.options.extra_body, **(params.get("extra_body") or {})}
        sampling = {name: params[name] for name in SAMPLING_PARAMS if params.get(name) is not None}
        if sampling and self._native_sampling:
            body.update(sampling)
        elif sampling and self._send_sampling:
            extra.update(sampling)
        elif sampling and not self._warned_sampling:
            self._warned_sampling = True
            log.warning(
                "anthropic backend: %s dropped (API version %s rejects sampling parameters; "
                'set api_version = "%s" to send them)',
                ", ".join(sampling),
                self.api_version,
                LEGACY_API_VERSION,
            )
        stop = params.get("stop")
        if stop:
            body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        if params.get("seed") is not None:
            log.debug("anthropic backend: the Messages API has no seed; ignored")
        if params.get("tools"):
            body["tools"] = [dict(t) for t in params["tools"]]
        if params.get("tool_choice") is not None:
            body["tool_choice"] = params["tool_choice"]
        betas = (
            list(params["betas"]) if params.get("betas") is not None else implied_betas(params.get("tools"))
        )
        if betas:
            body["betas"] = betas
        if extra:
            body["extra_body"] = extra
        return body

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """One message; SDK errors become :class:`ModelError` / :class:`TransientModelError`."""
        body = self.request_body(messages, model, params)
        # beta features (computer use): the beta endpoint sends anthropic-beta
        messages_api = self._client.beta.messages if "betas" in body else self._client.messages
        response = call_sdk(messages_api.create, body, PROVIDER, self._secrets)
        text = "".join(
            getattr(b, "text", "") for b in (response.content or []) if getattr(b, "type", "") == "text"
        )
        usage = getattr(response, "usage", None)
        # Anthropic counts prompt-cache reads and writes apart from input_tokens; pptarena's input_tokens
        # include them, cached_input_tokens are the reads and cache_write_input_tokens the writes (each
        # with its own rate), with usage.cache_creation splitting the writes by lifetime (5 min / 1 h)
        cache_read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        cache_write_1h = int(
            getattr(getattr(usage, "cache_creation", None), "ephemeral_1h_input_tokens", 0) or 0
        )
        return Completion(
            text=text,
            model=getattr(response, "model", None) or model,
            usage=Usage(
                input_tokens=int(getattr(usage, "input_tokens", 0) or 0) + cache_read + cache_write,
                output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
                cached_input_tokens=cache_read,
                cache_write_input_tokens=cache_write,
                cache_write_1h_input_tokens=cache_write_1h,
                calls=1,
            ),
            raw=response.model_dump(mode="json", exclude_none=True),
            finish_reason=getattr(response, "stop_reason", None),
        )

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()


@pptarena.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``anthropic`` backend."""
    register("anthropic", AnthropicBackend)
