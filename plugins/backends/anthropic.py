"""The ``anthropic`` backend: the Messages API through the official Anthropic SDK.

System messages go to the top-level ``system`` parameter; images become
``image`` content blocks with a base64 source. ``max_tokens`` is required by
the API, so this backend always sends one (option ``max_tokens``, default
4096). The SDK adds the ``anthropic-version`` header; its own retries are off
because :class:`pptarena.models.ModelClient` retries.

Sampling parameters (``temperature``, ``top_p``, ``top_k``): API version
2026-10-21 (the default of SDK 2.x) rejects them, so with such an SDK they are
dropped (logged once) unless ``api_version = "2023-06-01"`` is set, which sends
that version header and the parameters in the body. Older SDKs (API
2023-06-01) take them as usual.
"""

from __future__ import annotations

import logging
from typing import Any

import pptarena
from pptarena.models import (
    BackendBase,
    BackendOptions,
    Completion,
    ImagePart,
    Message,
    ModelError,
    Usage,
    redact_secrets,
)
from pptarena.types import ComponentContext, ComponentUnavailable
from pydantic import Field, SecretStr

from ._sdk import check_params, map_sdk_error, plain_headers, resolve_secret

PROVIDER = "anthropic"
INSTALL_HINT = "install with: pip install 'pptarena[anthropic]'"
KNOWN_PARAMS = frozenset({"temperature", "max_tokens", "top_p", "top_k", "stop", "seed", "extra_body"})
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

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


def to_anthropic_request(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """pptarena messages → ``(system, messages)`` of the Messages API."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        parts = m.parts()
        if m.role == "system":
            if any(isinstance(p, ImagePart) for p in parts):
                raise TypeError("anthropic backend: images are not allowed in system messages")
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
                if p.media_type not in IMAGE_TYPES:
                    raise TypeError(
                        f"anthropic backend: unsupported image type {p.media_type} (use PNG or JPEG)"
                    )
                blocks.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": p.media_type, "data": p.b64()},
                    }
                )
            else:
                blocks.append({"type": "text", "text": p})
        out.append({"role": m.role, "content": blocks})
    return ("\n\n".join(system) if system else None), out


class AnthropicBackend(BackendBase):
    """Messages through the official ``anthropic`` SDK."""

    Options = AnthropicOptions

    def __init__(self, options: AnthropicOptions, context: ComponentContext):
        super().__init__(options, context)
        try:
            import anthropic
        except ImportError as exc:
            raise ComponentUnavailable(
                f"the anthropic backend needs the anthropic SDK; {INSTALL_HINT}"
            ) from exc
        self.options: AnthropicOptions = options
        headers = plain_headers(options.default_headers)
        if options.api_version:
            headers["anthropic-version"] = options.api_version
        key = resolve_secret(options.api_key, "ANTHROPIC_API_KEY")
        if key is None:
            if options.base_url is None:
                raise ComponentUnavailable(
                    'the anthropic backend has no API key: set $ANTHROPIC_API_KEY or api_key = { env = "VAR" }'
                )
            key = "not-needed"
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
        if extra:
            body["extra_body"] = extra
        return body

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """One message; SDK errors become :class:`ModelError` / :class:`TransientModelError`."""
        body = self.request_body(messages, model, params)
        try:
            response = self._client.messages.create(**body)
        except Exception as exc:
            mapped = map_sdk_error(exc, PROVIDER, self._secrets)
            if mapped is None:
                raise
            raise mapped from None
        text = "".join(
            getattr(b, "text", "") for b in (response.content or []) if getattr(b, "type", "") == "text"
        )
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            model=getattr(response, "model", None) or model,
            usage=Usage(
                input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
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
