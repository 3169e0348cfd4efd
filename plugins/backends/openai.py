"""The ``openai`` backend: chat completions through the official OpenAI SDK.

Works with the OpenAI API, Azure OpenAI (``azure_endpoint`` + ``api_version``)
and OpenAI-compatible servers such as vLLM, Ollama and LM Studio (``base_url``).
Images are sent as ``image_url`` content parts holding ``data:`` URLs. The
SDK's own retries are off: :class:`pptarena.models.ModelClient` retries.

Function tools work on chat completions: ``tools`` / ``tool_choice`` pass through, an assistant
message's :class:`ToolCall` parts go out as its ``tool_calls`` and a user message's
:class:`ToolResult` parts as ``tool`` messages (their images in a user message after them: a
``tool`` message holds no image), see :func:`to_openai_messages`.

Computer use goes through the Responses API (``client.responses.create``):
a call whose ``tools`` hold a ``computer_use_preview`` (or ``computer``) tool,
or that gives ``previous_response_id`` or ``truncation``, takes that path (see
:func:`to_responses_input`: ``function_call`` / ``function_call_output`` items there); every other
call is a chat completion.

Every completion carries the response's rate-limit headers (``x-ratelimit-*``, through the SDK's
``with_raw_response``) in ``Completion.rate_headers``, and a transient HTTP error those of its
response. Prompt caching is automatic on the OpenAI API: a message's ``cache_prefix`` sends nothing;
a ``prompt_cache_key`` goes in ``extra_body`` (the option or the call parameter).
:meth:`OpenAIBackend.check` is the preflight's look at the server and the model.

Batch mode (:mod:`pptarena.models.batch`): chat completions go through the Batch API, one JSONL line
per call (``custom_id``, ``POST``, the chat-completions URL, and as ``body`` the very JSON
:meth:`OpenAIBackend.complete` would send), uploaded with ``files.create(purpose="batch")`` and started
with ``batches.create(completion_window="24h")``; answers come from the batch's output and error files.
On Azure the body's ``model`` is the deployment and the URL ``/chat/completions``. Responses API calls
(computer use) are not batched (:meth:`OpenAIBackend.batch_unsupported`).

Why it is long: one provider speaks two wire forms here, chat completions (messages, tool calls and
``tool`` messages, Batch API lines) and the Responses API that computer use needs
(:func:`to_responses_input` and its items); both share the client, the redaction of secrets, usage
and rate headers. The Responses translation could move to its own module (not done yet).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator

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

PROVIDER = "openai"
INSTALL_HINT = "install with: pip install 'pptarena[openai]'"
CHAT_PASSTHROUGH = ("temperature", "top_p", "stop", "seed", "response_format", "tools", "tool_choice")
"""Call parameters a chat completion's body takes as they are (in this order)."""
CHAT_PARAMS = frozenset({*CHAT_PASSTHROUGH, "max_tokens", "extra_body"})
RESPONSES_PASSTHROUGH = (
    "temperature",
    "top_p",
    "tool_choice",
    "truncation",
    "previous_response_id",
    "reasoning",
    "include",
    "store",
)
"""Call parameters a Responses API body takes as they are (in this order)."""
RESPONSES_PARAMS = frozenset({*RESPONSES_PASSTHROUGH, "max_tokens", "extra_body", "tools"})
KNOWN_PARAMS = CHAT_PARAMS | RESPONSES_PARAMS
RESPONSES_TOOL_TYPES = frozenset({"computer_use_preview", "computer"})
"""Tool types only the Responses API has: a call with one of them goes to ``responses.create``."""
BATCH_URL = "/v1/chat/completions"
"""The URL of every batch line and the batch's ``endpoint`` (Azure: :data:`AZURE_BATCH_URL`)."""
AZURE_BATCH_URL = "/chat/completions"
BATCH_STATUS: dict[str, BatchStatus] = {
    "validating": "in_progress",
    "in_progress": "in_progress",
    "finalizing": "in_progress",
    "cancelling": "in_progress",
    "completed": "ended",
    "expired": "expired",
    "cancelled": "canceled",
    "failed": "failed",
}
"""The Batch API's ``status`` → :data:`~pptarena.models.batch.BatchStatus`."""

log = logging.getLogger("pptarena.models")


class OpenAIOptions(BackendOptions):
    """Options of the ``openai`` backend (``[backends.openai]``)."""

    base_url: str | None = Field(
        None, description="e.g. http://localhost:8000/v1 for vLLM; default: the OpenAI API"
    )
    api_key: SecretStr | None = Field(
        None, description='use { env = "VAR" }; default $OPENAI_API_KEY (Azure: $AZURE_OPENAI_API_KEY)'
    )
    organization: str | None = Field(None, description="OpenAI organization id (OpenAI-Organization header)")
    project: str | None = Field(None, description="OpenAI project id (OpenAI-Project header)")
    default_headers: dict[str, str | SecretStr] = Field(
        default_factory=dict, description="sent with every request"
    )
    azure_endpoint: str | None = Field(
        None, description="https://<resource>.openai.azure.com: use Azure OpenAI"
    )
    api_version: str | None = Field(None, description="Azure API version, e.g. 2024-10-21")
    azure_deployment: str | None = Field(None, description="Azure deployment; default: the model name")
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="extra JSON fields for every request"
    )
    max_tokens_param: Literal["auto", "max_tokens", "max_completion_tokens"] = Field(
        "auto",
        description="field carrying max_tokens; auto: max_completion_tokens for api.openai.com and Azure, "
        "max_tokens for other base_url servers",
    )
    image_detail: Literal["auto", "low", "high"] | None = Field(None, description="image_url detail hint")

    @model_validator(mode="after")
    def _azure_consistent(self) -> OpenAIOptions:
        if (self.api_version or self.azure_deployment) and not self.azure_endpoint:
            raise ValueError("api_version and azure_deployment need azure_endpoint (Azure OpenAI)")
        if self.azure_endpoint and not self.api_version:
            raise ValueError('azure_endpoint needs api_version, e.g. api_version = "2024-10-21"')
        if self.azure_endpoint and self.base_url:
            raise ValueError("give either base_url or azure_endpoint, not both")
        return self


def _tool_calls_wire(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Chat-completions ``tool_calls`` of an assistant message: one ``function`` call per :class:`ToolCall`
    (its ``id``, ``name`` and ``input`` as JSON text; ``native`` is not sent)."""
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(dict(c.input), ensure_ascii=False)},
        }
        for c in calls
    ]


def tool_output_text(result: ToolResult) -> str:
    """The text a tool result sends back (its text parts, one a line), ``"ERROR: "`` first when it failed."""
    text = "\n".join(p for p in result.content if isinstance(p, str))
    return f"ERROR: {text}" if result.is_error else text


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image_part(image: ImagePart, image_detail: str | None) -> dict[str, Any]:
    url: dict[str, Any] = {"url": image.data_url()}
    if image_detail:
        url["detail"] = image_detail
    return {"type": "image_url", "image_url": url}


def _user_message(parts: list[str | ImagePart], image_detail: str | None) -> dict[str, Any]:
    """A user message: a plain string for one text part, else ``text`` / ``image_url`` parts."""
    if len(parts) == 1 and isinstance(parts[0], str):
        return {"role": "user", "content": parts[0]}
    content = [_image_part(p, image_detail) if isinstance(p, ImagePart) else _text_part(p) for p in parts]
    return {"role": "user", "content": content}


def _unanswerable(call_id: str) -> TypeError:
    return TypeError(
        f"openai backend: the tool result for {call_id} answers no tool call of an earlier assistant "
        "message (chat completions need the call in the conversation; a computer-use result that "
        "continues a stored response goes through the Responses API with previous_response_id)"
    )


def _tool_result_messages(
    parts: tuple[Any, ...], calls: set[str], image_detail: str | None
) -> list[dict[str, Any]]:
    """A user message holding tool results → one ``tool`` message per result, in order, then one user
    message with the results' images (each result's introduced by a text part naming its call: a
    ``tool`` message cannot hold images) and the message's own text and images."""
    out: list[dict[str, Any]] = []
    rest: list[str | ImagePart] = []
    for p in parts:
        if isinstance(p, ToolResult):
            if p.call_id not in calls:
                raise _unanswerable(p.call_id)
            out.append({"role": "tool", "tool_call_id": p.call_id, "content": tool_output_text(p)})
        elif isinstance(p, ToolCall):
            raise TypeError("openai backend: tool calls belong in assistant messages")
    images: list[str | ImagePart] = []
    for p in parts:
        if isinstance(p, ToolResult) and p.images():
            images.append(f"[images of tool call {p.call_id}]")
            images.extend(p.images())
        elif isinstance(p, str | ImagePart) and p != "":
            rest.append(p)
    if images or rest:
        out.append(_user_message(images + rest, image_detail))
    return out


def to_openai_messages(messages: list[Message], image_detail: str | None = None) -> list[dict[str, Any]]:
    """pptarena messages → OpenAI chat ``messages`` (images as data-URL ``image_url`` parts).

    An assistant message's :class:`ToolCall` parts become its ``tool_calls`` (``content`` is then its
    text, or None without any); a user message holding :class:`ToolResult` parts becomes one ``tool``
    message per result (``tool_call_id``, the text, ``"ERROR: "`` first when ``is_error``), then
    one user message with the results' images and the message's own text and images. A result must
    answer a call of an earlier assistant message (the API refuses an orphan ``tool`` message).
    Raises ``TypeError`` for tool parts or images in the wrong role.
    """
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    for m in messages:
        parts = m.parts()
        if m.role != "user":
            if any(isinstance(p, ImagePart) for p in parts):
                raise TypeError(f"openai backend: images are only allowed in user messages, not {m.role}")
            if any(isinstance(p, ToolResult) for p in parts):
                raise TypeError("openai backend: tool results belong in user messages")
            made = [p for p in parts if isinstance(p, ToolCall)]
            text = "".join(p for p in parts if isinstance(p, str))
            if made and m.role != "assistant":
                raise TypeError("openai backend: tool calls belong in assistant messages")
            if made:
                wire = _tool_calls_wire(made)
                out.append({"role": "assistant", "content": text or None, "tool_calls": wire})
                calls.update(c.id for c in made)
            else:
                out.append({"role": m.role, "content": text})
            continue
        if any(isinstance(p, ToolCall | ToolResult) for p in parts):
            out.extend(_tool_result_messages(parts, calls, image_detail))
            continue
        out.append(_user_message([p for p in parts if isinstance(p, str | ImagePart)], image_detail))
    return out


def uses_responses_api(params: dict[str, Any]) -> bool:
    """True when the call needs the Responses API: a computer tool, or
    ``previous_response_id``/``truncation``.
    """
    tools = params.get("tools") or []
    if any(isinstance(t, dict) and t.get("type") in RESPONSES_TOOL_TYPES for t in tools):
        return True
    return params.get("previous_response_id") is not None or params.get("truncation") is not None


def _input_content(parts: list[str | ImagePart], image_detail: str | None) -> list[dict[str, Any]]:
    return [
        {"type": "input_image", "image_url": p.data_url(), "detail": image_detail or "auto"}
        if isinstance(p, ImagePart)
        else {"type": "input_text", "text": p}
        for p in parts
    ]


def _computer_call_output(p: ToolResult) -> dict[str, Any]:
    images = p.images()
    if len(images) != 1:
        raise TypeError(
            f"openai backend: a computer_call_output carries exactly one screenshot; "
            f"the result for {p.call_id} has {len(images)}"
        )
    item: dict[str, Any] = {
        "type": "computer_call_output",
        "call_id": p.call_id,
        "output": {"type": "computer_screenshot", "image_url": images[0].data_url()},
    }
    item.update(dict(p.native or {}))
    return item


def _flush(
    items: list[dict[str, Any]], role: str, pending: list[str | ImagePart], detail: str | None
) -> None:
    """Append the pending text/image parts as one message item and empty the list."""
    if not pending:
        return
    if role == "assistant":
        items.append({"role": "assistant", "content": "".join(p for p in pending if isinstance(p, str))})
    else:
        items.append({"role": role, "content": _input_content(pending, detail)})
    pending.clear()


TEXT_OUTPUT_CALLS = frozenset({"function_call", "custom_tool_call"})
"""Responses API call items answered by a ``<type>_output`` item carrying text (``output``)."""


def _responses_call_item(p: ToolCall) -> dict[str, Any]:
    """A :class:`ToolCall` as a Responses input item: its ``native`` output item verbatim when it is one
    (``function_call``, ``computer_call``, ``reasoning``...: any ``type`` but the chat-completions
    ``function``), else a ``function_call`` item built from ``id``, ``name`` and ``input`` (a call
    read from a chat completion, or made without ``native``)."""
    native = dict(p.native or {})
    kind = native.get("type")
    if isinstance(kind, str) and kind and kind != "function":
        return native
    return {
        "type": "function_call",
        "call_id": p.id,
        "name": p.name,
        "arguments": json.dumps(dict(p.input), ensure_ascii=False),
    }


def to_responses_input(
    messages: list[Message], image_detail: str | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """pptarena messages → ``(instructions, input)`` of the Responses API.

    System messages become ``instructions``; user text and images become a
    ``message`` item (``input_text``/``input_image`` parts); assistant text an assistant message and
    each :class:`ToolCall` an item of :func:`_responses_call_item` (its ``native`` item replayed, or a
    ``function_call``). A :class:`ToolResult` answering a ``function_call`` (or ``custom_tool_call``)
    of the conversation becomes a ``function_call_output`` (``custom_tool_call_output``) item
    (``call_id``, ``output`` = the text, ``"ERROR: "`` first when ``is_error``), its images going
    into a user message after the message's outputs, as on the chat path. Any other result (a
    ``computer_call``'s, or one whose call is not in the messages: ``previous_response_id``) becomes
    a ``computer_call_output`` item whose screenshot is its one image (its ``native`` fields, e.g.
    ``acknowledged_safety_checks``, are merged in; its text and ``is_error`` are not sent: the item
    has no place for them).
    """
    system: list[str] = []
    items: list[dict[str, Any]] = []
    calls: dict[str, str] = {}
    for m in messages:
        parts = m.parts()
        if m.role == "system":
            system.append(system_text(m, "openai"))
            continue
        pending: list[str | ImagePart] = []
        result_images: list[str | ImagePart] = []
        for p in parts:
            if isinstance(p, ToolResult):
                if m.role != "user":
                    raise TypeError("openai backend: tool results belong in user messages")
                kind = calls.get(p.call_id)
                if kind in TEXT_OUTPUT_CALLS:
                    items.append(
                        {"type": f"{kind}_output", "call_id": p.call_id, "output": tool_output_text(p)}
                    )
                    if p.images():
                        result_images += [f"[images of tool call {p.call_id}]", *p.images()]
                    continue
                _flush(items, m.role, pending, image_detail)
                items.append(_computer_call_output(p))
            elif isinstance(p, ToolCall):
                if m.role != "assistant":
                    raise TypeError("openai backend: tool calls belong in assistant messages")
                _flush(items, m.role, pending, image_detail)
                item = _responses_call_item(p)
                items.append(item)
                calls[p.id] = calls[str(item.get("call_id") or p.id)] = str(item.get("type"))
            elif isinstance(p, ImagePart) and m.role != "user":
                raise TypeError(f"openai backend: images are only allowed in user messages, not {m.role}")
            elif p != "":
                pending.append(p)
        pending[:0] = result_images
        _flush(items, m.role, pending, image_detail)
    return ("\n\n".join(system) if system else None), items


def _usage(response: Any, input_field: str, output_field: str) -> Usage:
    """One call's :class:`Usage` from the SDK response's ``usage`` (none counts nothing).

    Chat completions name the counts ``prompt_tokens`` / ``completion_tokens``, the Responses
    API ``input_tokens`` / ``output_tokens``; cached input tokens sit in ``<input_field>_details``.
    """
    usage = getattr(response, "usage", None)
    return Usage(
        input_tokens=int(getattr(usage, input_field, 0) or 0),
        output_tokens=int(getattr(usage, output_field, 0) or 0),
        cached_input_tokens=int(
            getattr(getattr(usage, f"{input_field}_details", None), "cached_tokens", 0) or 0
        ),
        calls=1,
    )


def chat_completion(response: Any, model: str, headers: dict[str, str] | None = None) -> Completion:
    """The :class:`Completion` of a chat-completions response (the SDK's ``ChatCompletion``), as
    :meth:`OpenAIBackend.complete` returns it and as a batch's output file answers it; ``model`` when
    the response names none. Raises :class:`ModelError` for a response without choices."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ModelError(f"openai: the response for {model} has no choices")
    choice = choices[0]
    text = choice.message.content or ""
    return Completion(
        text=text,
        model=getattr(response, "model", None) or model,
        usage=_usage(response, "prompt_tokens", "completion_tokens"),
        raw=response.model_dump(mode="json", exclude_none=True),
        finish_reason=choice.finish_reason,
        rate_headers=headers or {},
    )


class OpenAIBackend(BackendBase):
    """Chat completions through the official ``openai`` SDK (OpenAI, Azure OpenAI, compatible servers)."""

    Options = OpenAIOptions

    def __init__(self, options: OpenAIOptions, context: ComponentContext):
        super().__init__(options, context)
        env_var = "AZURE_OPENAI_API_KEY" if options.azure_endpoint else "OPENAI_API_KEY"
        openai, key, headers = open_sdk(PROVIDER, INSTALL_HINT, options, env_var)
        self.options: OpenAIOptions = options
        self._sdk = openai
        self._secrets = [key, *headers.values()]
        common: dict[str, Any] = {
            "api_key": key,
            "organization": options.organization,
            "project": options.project,
            "timeout": options.timeout,
            "max_retries": 0,
            "default_headers": headers or None,
        }
        self._client: Any
        try:
            if options.azure_endpoint:
                self._client = openai.AzureOpenAI(
                    azure_endpoint=options.azure_endpoint,
                    api_version=options.api_version,
                    azure_deployment=options.azure_deployment,
                    **common,
                )
            else:
                self._client = openai.OpenAI(base_url=options.base_url, **common)
        except openai.OpenAIError as exc:
            raise ModelError(f"openai: cannot create the client: {self._redact(str(exc))}") from None
        if options.max_tokens_param != "auto":
            self._max_tokens_field = options.max_tokens_param
        elif (
            options.azure_endpoint or options.base_url is None or "api.openai.com" in (options.base_url or "")
        ):
            self._max_tokens_field = "max_completion_tokens"
        else:
            self._max_tokens_field = "max_tokens"

    def _redact(self, text: str) -> str:
        from pptarena.models import redact_secrets

        return redact_secrets(text, self._secrets)

    def cache_identity(self) -> dict[str, Any]:
        """Server URL, Azure deployment and API version, extra body fields (never the key)."""
        return {
            "base_url": str(self._client.base_url),
            "azure_deployment": self.options.azure_deployment,
            "api_version": self.options.api_version,
            "extra_body": self.options.extra_body,
            "max_tokens_field": self._max_tokens_field,
        }

    def request_body(self, messages: list[Message], model: str, params: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for ``chat.completions.create``."""
        if uses_responses_api(params):
            raise TypeError("openai backend: this call needs the Responses API; use responses_body()")
        check_params(PROVIDER, params, CHAT_PARAMS)
        body: dict[str, Any] = {
            "model": model,
            "messages": to_openai_messages(messages, self.options.image_detail),
        }
        for name in CHAT_PASSTHROUGH:
            if params.get(name) is not None:
                body[name] = params[name]
        if params.get("max_tokens") is not None:
            body[self._max_tokens_field] = int(params["max_tokens"])
        extra = {**self.options.extra_body, **(params.get("extra_body") or {})}
        if extra:
            body["extra_body"] = extra
        return body

    def responses_body(self, messages: list[Message], model: str, params: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for ``responses.create`` (the computer-use path)."""
        check_params(f"{PROVIDER} (Responses API)", params, RESPONSES_PARAMS)
        instructions, items = to_responses_input(messages, self.options.image_detail)
        body: dict[str, Any] = {"model": model, "input": items}
        if instructions:
            body["instructions"] = instructions
        for name in RESPONSES_PASSTHROUGH:
            if params.get(name) is not None:
                body[name] = params[name]
        if params.get("tools"):
            body["tools"] = [dict(t) for t in params["tools"]]
        if params.get("max_tokens") is not None:
            body["max_output_tokens"] = int(params["max_tokens"])
        extra = {**self.options.extra_body, **(params.get("extra_body") or {})}
        if extra:
            body["extra_body"] = extra
        return body

    def _call(self, api: Any, body: dict[str, Any]) -> tuple[Any, dict[str, str]]:
        """``api.create(**body)``: the parsed response and its rate-limit headers."""
        return call_sdk_raw(api, body, PROVIDER, self._secrets)

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """One chat completion, or one Responses API call when :func:`uses_responses_api` says so.

        SDK errors become :class:`ModelError` / :class:`TransientModelError`.
        """
        if uses_responses_api(params):
            return self._complete_responses(messages, model, params)
        response, headers = self._call(
            self._client.chat.completions, self.request_body(messages, model, params)
        )
        return chat_completion(response, model, headers)

    def _complete_responses(self, messages: list[Message], model: str, params: dict[str, Any]) -> Completion:
        response, headers = self._call(self._client.responses, self.responses_body(messages, model, params))
        raw = response.model_dump(mode="json", exclude_none=True)
        output = raw.get("output") or []
        if any(isinstance(i, dict) and i.get("type") == "computer_call" for i in output):
            finish = "tool_calls"
        elif raw.get("status") == "incomplete":
            finish = str((raw.get("incomplete_details") or {}).get("reason") or "incomplete")
        else:
            finish = "stop"
        return Completion(
            text=response.output_text or "",
            model=getattr(response, "model", None) or model,
            usage=_usage(response, "input_tokens", "output_tokens"),
            raw=raw,
            finish_reason=finish,
            rate_headers=headers,
        )

    # ---- batch mode

    @property
    def batch_url(self) -> str:
        """The chat-completions URL batch lines and the batch's ``endpoint`` name (Azure's has no ``/v1``)."""
        return AZURE_BATCH_URL if self.options.azure_endpoint else BATCH_URL

    def batch_unsupported(self, request: BatchRequest) -> str | None:
        """Why ``request`` cannot go through the Batch API, or None when it can: a call that takes the
        Responses API path (computer use, ``previous_response_id``, ``truncation``) is sent one by one."""
        if uses_responses_api(request.params):
            return (
                "openai backend: Responses API calls (computer use, previous_response_id, truncation) "
                "are not batched; only chat completions are: send this call with complete()"
            )
        return None

    def batch_line(self, request: BatchRequest) -> dict[str, Any]:
        """One line of a batch input file: ``custom_id``, ``method``, ``url`` and as ``body`` the JSON
        :meth:`complete` sends for the same call (on Azure the deployment is the body's ``model``, as it
        is the deployment :meth:`complete`'s request goes to). Raises ``TypeError`` for a call
        :meth:`batch_unsupported` refuses."""
        reason = self.batch_unsupported(request)
        if reason is not None:
            raise TypeError(reason)
        model = (
            (self.options.azure_deployment or request.model) if self.options.azure_endpoint else request.model
        )
        body = wire_json(self.request_body(list(request.messages), model, dict(request.params)))
        return {"custom_id": request.custom_id, "method": "POST", "url": self.batch_url, "body": body}

    def batch_submit(self, requests: list[BatchRequest]) -> str:
        """Upload ``requests`` as a JSONL file and start one batch job on it; returns the batch id.

        Raises ``TypeError`` before any upload when a request is not batchable
        (:meth:`batch_unsupported`), ``ValueError`` for an empty list, and :class:`ModelError` /
        :class:`TransientModelError` for a refused or failed upload or creation."""
        if not requests:
            raise ValueError("openai backend: a batch needs at least one request")
        lines = [json.dumps(self.batch_line(r), ensure_ascii=False) for r in requests]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        upload = call_sdk(
            self._client.files.create,
            {"file": ("batch.jsonl", data), "purpose": "batch"},
            PROVIDER,
            self._secrets,
        )
        batch = call_sdk(
            self._client.batches.create,
            {"input_file_id": upload.id, "endpoint": self.batch_url, "completion_window": "24h"},
            PROVIDER,
            self._secrets,
        )
        return str(batch.id)

    def batch_status(self, batch_id: str) -> BatchState:
        """Where batch ``batch_id`` is (``batches.retrieve``); once it has finished, every answer read
        from its output and error files: a 200 body becomes a :class:`Completion` as :meth:`complete`
        makes it, another status an ``errored`` result with that status, a ``batch_expired`` error an
        ``expired`` one. Requests of an expired or cancelled batch found in neither file are
        ``expired`` / ``canceled`` (their ids read from the input file)."""
        batch = call_sdk(self._client.batches.retrieve, {"batch_id": batch_id}, PROVIDER, self._secrets)
        status = BATCH_STATUS.get(str(batch.status), "in_progress")
        counts_obj = getattr(batch, "request_counts", None)
        counts = {
            k: int(v) for k, v in (counts_obj.model_dump() if counts_obj else {}).items() if v is not None
        }
        if status == "in_progress":
            return BatchState(batch_id, status, counts)
        results: dict[str, BatchResult] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            for line in self._jsonl(file_id):
                result = self._batch_result(line)
                if result is not None:
                    results[result.custom_id] = result
        if status in ("expired", "canceled"):
            for line in self._jsonl(batch.input_file_id, missing_ok=True):
                cid = line.get("custom_id")
                if isinstance(cid, str) and cid not in results:
                    results[cid] = batch_error(cid, status, f"the batch {batch.status} first", None, [])
        error = None
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        if errors:
            error = self._redact(
                "; ".join(
                    f"line {getattr(e, 'line', '?')}: {getattr(e, 'message', None) or getattr(e, 'code', '')}"
                    for e in errors
                )
            )
        elif status == "failed":
            error = "the batch failed"
        return BatchState(batch_id, status, counts, results, error)

    def _jsonl(self, file_id: str | None, *, missing_ok: bool = False) -> list[dict[str, Any]]:
        """The JSON lines of file ``file_id`` (none without an id; ``missing_ok``: none when it cannot
        be read, for the optional look at an input file)."""
        if not file_id:
            return []
        try:
            content = call_sdk(self._client.files.content, {"file_id": file_id}, PROVIDER, self._secrets)
        except Exception as exc:
            if not missing_ok:
                raise
            log.debug("openai backend: cannot read batch file %s: %s", file_id, exc)
            return []
        out: list[dict[str, Any]] = []
        for text in content.text.splitlines():
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict):
                out.append(line)
        return out

    def _batch_result(self, line: dict[str, Any]) -> BatchResult | None:
        """One output- or error-file line as a :class:`BatchResult` (None without a custom id)."""
        cid = line.get("custom_id")
        if not isinstance(cid, str):
            return None
        response = line.get("response") if isinstance(line.get("response"), dict) else None
        error = line.get("error") if isinstance(line.get("error"), dict) else None
        if response is None:
            code = str((error or {}).get("code") or "")
            kind = {"batch_expired": "expired", "batch_cancelled": "canceled"}.get(code, "errored")
            return batch_error(cid, kind, (error or {}).get("message") or code, None, self._secrets)
        status = response.get("status_code")
        body = response.get("body") if isinstance(response.get("body"), dict) else {}
        if status != 200:
            err = body.get("error")
            message = err.get("message") if isinstance(err, dict) else err
            code = status if isinstance(status, int) else None
            return batch_error(cid, "errored", message or f"HTTP {status}", code, self._secrets)
        parsed = self._sdk.types.chat.ChatCompletion.construct(**body)
        try:
            return BatchResult(cid, chat_completion(parsed, str(body.get("model") or "")))
        except ModelError as exc:
            return batch_error(cid, "errored", str(exc), None, self._secrets)

    @property
    def official_api(self) -> bool:
        """True when the client talks to the OpenAI API itself (api.openai.com: no ``base_url`` and no
        ``$OPENAI_BASE_URL``, or one naming it); Azure and every other server are not."""
        return not self.options.azure_endpoint and "api.openai.com" in str(self._client.base_url)

    def check(self, model: str, *, timeout: float | None = None) -> str | None:
        """Preflight (:mod:`pptarena.models.preflight`): is the server reachable, the key accepted and
        ``model`` known? One request (two on other servers), no retries, ``timeout`` seconds each
        (default: the backend's timeout, at most 15 s).

        Raises :class:`ModelError` / :class:`TransientModelError` for a failure: no connection, a
        timeout, a refused key (401/403), an exhausted quota (429 ``insufficient_quota``), and on the
        OpenAI API an unknown model (404 from ``GET /models/{model}``). Returns a note (the run may
        start) when the model could not be checked: on Azure (a deployment name is not a model
        name, so only the endpoint and the key are checked, with ``GET /models``), when the server is
        rate limiting or failing right now (429, 5xx), and on other ``base_url`` servers (vLLM,
        Ollama, LM Studio, proxies) when ``GET /models/{model}`` answers 404: their ``GET /models``
        list is read instead; the model missing from it, or a server without that list, is a note,
        not a failure, since such servers name models their own way (``llama3`` for
        ``llama3:latest``). Returns None when the model was found.
        """
        client = self._client.with_options(
            timeout=timeout if timeout is not None else min(self.options.timeout, 15.0), max_retries=0
        )
        if self.options.azure_endpoint:
            try:
                client.models.list()
            except Exception as exc:
                return self._check_failure(exc, model, lenient_status=True)
            return None
        try:
            client.models.retrieve(model)
            return None
        except Exception as exc:
            error = map_sdk_error(exc, PROVIDER, self._secrets)
            if error is None:
                raise
            if error.status != 404 or self.official_api:
                return self._check_failure(exc, model)
        try:
            listed = [str(getattr(m, "id", m)) for m in client.models.list()]
        except Exception as exc:
            return self._check_failure(exc, model, lenient_status=True)
        if model in listed:
            return None
        shown = ", ".join(listed[:8]) + (", ..." if len(listed) > 8 else "")
        return (
            f"model {model!r} is not in the server's model list ({shown or 'empty'}); "
            "the server may name it differently, the first call will tell"
        )

    def _check_failure(self, exc: Exception, model: str, *, lenient_status: bool = False) -> str | None:
        """Raise the failure a preflight request met, or return a note when it is not one (see
        :meth:`check`); ``lenient_status``: any HTTP answer but 401/403 means the server is there."""
        error = map_sdk_error(exc, PROVIDER, self._secrets)
        if error is None:
            raise exc
        status = error.status
        if status is None or status in (401, 403):  # no answer at all, or the key refused
            raise error from None
        if status == 429 and "quota" in str(error).lower():
            raise error from None
        if status == 429 or status >= 500:
            return f"the server answered HTTP {status} (busy or failing right now); {model!r} not checked"
        if lenient_status:
            return f"the server answered HTTP {status} to GET /models; {model!r} not checked"
        raise error from None

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()


@pptarena.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``openai`` backend."""
    register("openai", OpenAIBackend)
