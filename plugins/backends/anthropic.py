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

Prompt caching: a message with ``cache_prefix`` gets ``cache_control: {"type": "ephemeral"}`` on its
last content block (see :func:`to_anthropic_request`); option ``prompt_cache_ttl = "1h"`` adds
``"ttl": "1h"``. Every completion carries the response's ``anthropic-ratelimit-*`` headers in
``Completion.rate_headers`` (beta endpoint included), and a transient HTTP error those of its
response. :meth:`AnthropicBackend.check` is the preflight's look at the API and the model.

Batch mode (:mod:`pptarena.models.batch`): calls go through Message Batches
(``messages.batches.create``), each request's ``params`` the very JSON :meth:`AnthropicBackend.complete`
would send (model, ``system``, ``cache_control`` marks and ``extra_body`` included); answers come from
``messages.batches.results``. Calls with ``betas`` (computer use: the beta endpoint) are not batched
(:meth:`AnthropicBackend.batch_unsupported`).

Why it is long: it is the whole of one provider's wire, and every part serves the same request body:
messages with images, tool results and cache marks, the beta endpoint for computer tools, the
sampling rules per API version, the response with its usage and rate headers, Message Batches (whose
``params`` are that very body) and the preflight check.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

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
from pptarena.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from pptarena.types import ComponentContext

from ._sdk import (
    batch_error,
    call_sdk,
    call_sdk_raw,
    check_params,
    map_sdk_error,
    open_sdk,
    system_text,
    wire_json,
)

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

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status of each Anthropic error type (an errored batch request carries only the type)."""

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
    prompt_cache_ttl: Literal["5m", "1h"] = Field(
        "5m",
        description="lifetime of the prompt-cache entries a message marked cache_prefix writes "
        '(1h: written at 2x the input rate instead of 1.25x, adds "ttl": "1h")',
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


MAX_CACHE_BREAKPOINTS = 4
"""The API takes at most four ``cache_control`` marks per request; the last four are kept."""


def cache_control(ttl: str = "5m") -> dict[str, Any]:
    """The ``cache_control`` value of a prompt-cache breakpoint (``ttl`` "5m", the API's default, or "1h")."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _message_blocks(m: Message) -> list[dict[str, Any]]:
    """The content blocks of a user or assistant message."""
    blocks: list[dict[str, Any]] = []
    for p in m.parts():
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
    return blocks


def to_anthropic_request(
    messages: list[Message], cache_ttl: str = "5m"
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """pptarena messages → ``(system, messages)`` of the Messages API.

    :class:`ToolCall` parts (assistant) become ``tool_use`` blocks
    (``id``, ``name``, ``input``); :class:`ToolResult` parts (user) become
    ``tool_result`` blocks and must come before any other part of their message.

    A message with ``cache_prefix`` ends the request's stable prefix: the last content block it
    maps to gets ``cache_control`` (:func:`cache_control` with ``cache_ttl``), so its content is
    always a list of blocks; a system message with it turns ``system`` into a list of text
    blocks, one per system message, the marked one's carrying ``cache_control`` (otherwise system
    messages are joined into one string). Each message stays a message of its own (the API accepts
    consecutive user messages), so the mark stays where the caller put it. At most
    :data:`MAX_CACHE_BREAKPOINTS` marks are sent: the last ones.
    """
    system: list[str] = []
    system_marked: list[int] = []
    out: list[dict[str, Any]] = []
    marked: list[tuple[str, int]] = []  # ("system", index in system) or ("message", index in out)
    for m in messages:
        parts = m.parts()
        if m.role == "system":
            text = system_text(m, "anthropic")
            if text or not m.cache_prefix:
                system.append(text)
            if m.cache_prefix and system:
                marked.append(("system", len(system) - 1))
            continue
        if len(parts) == 1 and isinstance(parts[0], str) and not m.cache_prefix:
            out.append({"role": m.role, "content": parts[0]})
            continue
        blocks = _message_blocks(m)
        out.append({"role": m.role, "content": blocks})
        if m.cache_prefix and blocks:
            marked.append(("message", len(out) - 1))
    marked = marked[-MAX_CACHE_BREAKPOINTS:]
    for where, i in marked:
        if where == "message":
            out[i]["content"][-1]["cache_control"] = cache_control(cache_ttl)
        else:
            system_marked.append(i)
    if not system:
        return None, out
    if not system_marked:
        return "\n\n".join(system), out
    blocks = [{"type": "text", "text": t} for t in system]
    for i in system_marked:
        blocks[i]["cache_control"] = cache_control(cache_ttl)
    return [b for b in blocks if b["text"]], out


def implied_betas(tools: Any) -> list[str]:
    """The beta flags the given tool definitions need (computer tools: see :data:`COMPUTER_TOOL_BETAS`)."""
    betas: list[str] = []
    for tool in tools or []:
        beta = COMPUTER_TOOL_BETAS.get(tool.get("type", "")) if isinstance(tool, dict) else None
        if beta and beta not in betas:
            betas.append(beta)
    return betas


def message_completion(response: Any, model: str, headers: dict[str, str] | None = None) -> Completion:
    """The :class:`Completion` of a Messages API response (the SDK's ``Message``), as
    :meth:`AnthropicBackend.complete` returns it and as a batch's ``succeeded`` result answers it;
    ``model`` when the response names none."""
    text = "".join(
        getattr(b, "text", "") for b in (response.content or []) if getattr(b, "type", "") == "text"
    )
    usage = getattr(response, "usage", None)
    # Anthropic counts prompt-cache reads and writes apart from input_tokens; pptarena's input_tokens
    # include them, cached_input_tokens are the reads and cache_write_input_tokens the writes (each
    # with its own rate), with usage.cache_creation splitting the writes by lifetime (5 min / 1 h)
    cache_read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    cache_write_1h = int(getattr(getattr(usage, "cache_creation", None), "ephemeral_1h_input_tokens", 0) or 0)
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
        rate_headers=headers or {},
    )


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
        system, wire_messages = to_anthropic_request(messages, self.options.prompt_cache_ttl)
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
        response, headers = call_sdk_raw(messages_api, body, PROVIDER, self._secrets)
        return message_completion(response, model, headers)

    # ---- batch mode

    def batch_unsupported(self, request: BatchRequest) -> str | None:
        """Why ``request`` cannot go through Message Batches, or None when it can: a call with beta
        flags (``betas``, or computer tools implying them) goes to the beta endpoint and is sent alone.
        Raises ``TypeError`` for a call :meth:`complete` would refuse too (unknown parameters...)."""
        body = self.request_body(list(request.messages), request.model, dict(request.params))
        if "betas" in body:
            return (
                f"anthropic backend: calls with beta flags ({', '.join(body['betas'])}: the beta endpoint, "
                "e.g. computer use) are not batched: send this call with complete()"
            )
        return None

    def batch_params(self, request: BatchRequest) -> dict[str, Any]:
        """A request's ``params`` in a Message Batch: the JSON :meth:`complete` sends for the same call
        (model, ``system``, ``cache_control`` marks, ``extra_body`` merged in). Raises ``TypeError`` for
        a call :meth:`batch_unsupported` refuses."""
        reason = self.batch_unsupported(request)
        if reason is not None:
            raise TypeError(reason)
        return wire_json(self.request_body(list(request.messages), request.model, dict(request.params)))

    def batch_submit(self, requests: list[BatchRequest]) -> str:
        """Send ``requests`` as one Message Batch (``messages.batches.create``); returns its id.

        Raises ``TypeError`` before anything is sent when a request is not batchable
        (:meth:`batch_unsupported`), ``ValueError`` for an empty list, and :class:`ModelError` /
        :class:`TransientModelError` when the API refuses or fails the batch."""
        if not requests:
            raise ValueError("anthropic backend: a batch needs at least one request")
        entries = [{"custom_id": r.custom_id, "params": self.batch_params(r)} for r in requests]
        batch = call_sdk(self._client.messages.batches.create, {"requests": entries}, PROVIDER, self._secrets)
        return str(batch.id)

    def batch_status(self, batch_id: str) -> BatchState:
        """Where Message Batch ``batch_id`` is (``messages.batches.retrieve``: ``in_progress`` and
        ``canceling`` are in progress); once ended, every result from ``messages.batches.results``:
        ``succeeded`` → a :class:`Completion` as :meth:`complete` makes it, ``errored`` → its error with
        the HTTP status of its type (:data:`ERROR_STATUS`), ``expired``, ``canceled``. The status is
        ``expired`` when every request expired, ``canceled`` when a cancel ended it, else ``ended``."""
        batch = call_sdk(
            self._client.messages.batches.retrieve, {"message_batch_id": batch_id}, PROVIDER, self._secrets
        )
        counts_obj = getattr(batch, "request_counts", None)
        counts = {
            k: int(v) for k, v in (counts_obj.model_dump() if counts_obj else {}).items() if v is not None
        }
        if batch.processing_status != "ended":
            return BatchState(batch_id, "in_progress", counts)
        decoder = call_sdk(
            self._client.messages.batches.results, {"message_batch_id": batch_id}, PROVIDER, self._secrets
        )
        results: dict[str, BatchResult] = {}
        try:
            for item in decoder:
                results[item.custom_id] = self._batch_result(item.custom_id, item.result)
        except Exception as exc:  # an SDK error while streaming the results
            mapped = map_sdk_error(exc, PROVIDER, self._secrets)
            if mapped is None:
                raise
            raise mapped from None
        total = sum(counts.values())
        status: BatchStatus = "ended"
        if total and counts.get("expired", 0) == total:
            status = "expired"
        elif getattr(batch, "cancel_initiated_at", None) is not None:
            status = "canceled"
        return BatchState(batch_id, status, counts, results)

    def _batch_result(self, custom_id: str, result: Any) -> BatchResult:
        """One ``MessageBatchResult`` as a :class:`BatchResult`."""
        kind = str(getattr(result, "type", "") or "")
        if kind == "succeeded":
            message = result.message
            return BatchResult(
                custom_id, message_completion(message, str(getattr(message, "model", "") or ""))
            )
        if kind in ("expired", "canceled"):
            return batch_error(custom_id, kind, f"the batch ended before this request ran ({kind})", None, [])
        error = getattr(getattr(result, "error", None), "error", None)
        error_type = str(getattr(error, "type", "") or "")
        message = getattr(error, "message", None) or error_type or kind or "no result"
        return batch_error(custom_id, "errored", message, ERROR_STATUS.get(error_type), self._secrets)

    def check(self, model: str, *, timeout: float | None = None) -> str | None:
        """Preflight (:mod:`pptarena.models.preflight`): is the API reachable, the key accepted and
        ``model`` known (``GET /v1/models/{model}``, which takes aliases such as
        ``claude-sonnet-4-5``)? One request, no retries, ``timeout`` seconds (default: the backend's
        timeout, at most 15 s).

        Raises :class:`ModelError` / :class:`TransientModelError` when the API cannot be reached, the
        key is refused or the model is unknown. Returns a note (the run may start) when the server
        answers 429 or 5xx (busy right now), and when a ``base_url`` server of one's own (a proxy)
        answers 404 (it may not list models); None when the model was found. The API itself is the
        client's server being api.anthropic.com (no ``base_url``, no ``$ANTHROPIC_BASE_URL``).
        """
        client = self._client.with_options(
            timeout=timeout if timeout is not None else min(self.options.timeout, 15.0), max_retries=0
        )
        try:
            client.models.retrieve(model)
            return None
        except Exception as exc:
            error = map_sdk_error(exc, PROVIDER, self._secrets)
            if error is None:
                raise
        status = error.status
        if status is None or status in (401, 403):
            raise error from None
        if status == 429 or status >= 500:
            return f"the server answered HTTP {status} (busy or failing right now); {model!r} not checked"
        if (
            status == 404 and "api.anthropic.com" not in str(self._client.base_url)  # ANTHROPIC_BASE_URL too
        ):
            return (
                f"the server answered HTTP 404 for model {model!r}; a proxy may not list models, not checked"
            )
        raise error from None

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()


@pptarena.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``anthropic`` backend."""
    register("anthropic", AnthropicBackend)
