"""The ``openai`` backend: chat completions through the official OpenAI SDK.

Works with the OpenAI API, Azure OpenAI (``azure_endpoint`` + ``api_version``)
and OpenAI-compatible servers such as vLLM, Ollama and LM Studio (``base_url``).
Images are sent as ``image_url`` content parts holding ``data:`` URLs. The
SDK's own retries are off: :class:`pptarena.models.ModelClient` retries.

Computer use goes through the Responses API (``client.responses.create``):
a call whose ``tools`` hold a ``computer_use_preview`` (or ``computer``) tool,
or that gives ``previous_response_id`` or ``truncation``, takes that path (see
:func:`to_responses_input`); every other call is a chat completion.

Every completion carries the response's rate-limit headers (``x-ratelimit-*``, through the SDK's
``with_raw_response``) in ``Completion.rate_headers``, and a transient HTTP error those of its
response. Prompt caching is automatic on the OpenAI API: a message's ``cache_prefix`` sends nothing;
a ``prompt_cache_key`` goes in ``extra_body`` (the option or the call parameter).
:meth:`OpenAIBackend.check` is the preflight's look at the server and the model.
"""

from __future__ import annotations

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
from pptarena.types import ComponentContext

from ._sdk import call_sdk_raw, check_params, map_sdk_error, open_sdk

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


def to_openai_messages(messages: list[Message], image_detail: str | None = None) -> list[dict[str, Any]]:
    """pptarena messages → OpenAI chat ``messages`` (images as data-URL ``image_url`` parts)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        parts = m.parts()
        if any(isinstance(p, ToolCall | ToolResult) for p in parts):
            raise TypeError(
                "openai backend: tool calls and results need the Responses API path "
                "(give the computer tool in tools, or previous_response_id)"
            )
        if m.role != "user":
            if any(isinstance(p, ImagePart) for p in parts):
                raise TypeError(f"openai backend: images are only allowed in user messages, not {m.role}")
            out.append({"role": m.role, "content": "".join(p for p in parts if isinstance(p, str))})
            continue
        if len(parts) == 1 and isinstance(parts[0], str):
            out.append({"role": "user", "content": parts[0]})
            continue
        content: list[dict[str, Any]] = []
        for p in parts:
            if isinstance(p, ImagePart):
                image: dict[str, Any] = {"url": p.data_url()}
                if image_detail:
                    image["detail"] = image_detail
                content.append({"type": "image_url", "image_url": image})
            else:
                content.append({"type": "text", "text": p})
        out.append({"role": "user", "content": content})
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


def to_responses_input(
    messages: list[Message], image_detail: str | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """pptarena messages → ``(instructions, input)`` of the Responses API.

    System messages become ``instructions``; user text and images become a
    ``message`` item (``input_text``/``input_image`` parts); each
    :class:`ToolResult` becomes a ``computer_call_output`` item whose
    screenshot is its one image (its ``native`` fields, e.g.
    ``acknowledged_safety_checks``, are merged in; its text and ``is_error``
    are not sent: the item has no place for them); assistant text becomes an assistant message and
    each :class:`ToolCall` its ``native`` output item, replayed verbatim.
    """
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for m in messages:
        parts = m.parts()
        if m.role == "system":
            if any(not isinstance(p, str) for p in parts):
                raise TypeError("openai backend: system messages hold text only")
            system.append("".join(p for p in parts if isinstance(p, str)))
            continue
        pending: list[str | ImagePart] = []
        for p in parts:
            if isinstance(p, ToolResult):
                if m.role != "user":
                    raise TypeError("openai backend: tool results belong in user messages")
                _flush(items, m.role, pending, image_detail)
                items.append(_computer_call_output(p))
            elif isinstance(p, ToolCall):
                if m.role != "assistant":
                    raise TypeError("openai backend: tool calls belong in assistant messages")
                if not p.native:
                    raise TypeError(
                        f"openai backend: tool call {p.id} has no native output item to replay "
                        "(use previous_response_id, or keep ToolCall.native)"
                    )
                _flush(items, m.role, pending, image_detail)
                items.append(dict(p.native))
            elif isinstance(p, ImagePart) and m.role != "user":
                raise TypeError(f"openai backend: images are only allowed in user messages, not {m.role}")
            elif p != "":
                pending.append(p)
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


class OpenAIBackend(BackendBase):
    """Chat completions through the official ``openai`` SDK (OpenAI, Azure OpenAI, compatible servers)."""

    Options = OpenAIOptions

    def __init__(self, options: OpenAIOptions, context: ComponentContext):
        super().__init__(options, context)
        env_var = "AZURE_OPENAI_API_KEY" if options.azure_endpoint else "OPENAI_API_KEY"
        openai, key, headers = open_sdk(PROVIDER, INSTALL_HINT, options, env_var)
        self.options: OpenAIOptions = options
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
            rate_headers=headers,
        )

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
