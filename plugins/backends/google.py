"""The ``google`` backend: Gemini's ``generateContent`` through the official ``google-genai`` SDK.

System messages become the ``system_instruction``; user and assistant messages
the ``contents`` (roles ``user`` / ``model``); images inline ``Blob`` parts with
their bytes and MIME type. Call parameters map to ``GenerateContentConfig``:
``max_tokens`` → ``max_output_tokens``, ``stop`` → ``stop_sequences``,
``response_format = {"type": "json_object"}`` → ``response_mime_type =
"application/json"`` (with ``response_json_schema`` for a ``json_schema``
format), ``tools`` → ``Tool`` entries (bare function declarations grouped into
one ``function_declarations`` tool), ``tool_choice`` → ``tool_config``.

Tool traffic: the model's ``function_call`` parts come back in
``Completion.raw`` (:func:`tool_calls` turns them into
:class:`~pptarena.models.ToolCall` objects carrying the part as ``native``, so
its ``thought_signature`` is replayed); :class:`~pptarena.models.ToolResult`
parts become ``function_response`` parts (images as inline ``parts`` of the
response, the way Gemini's computer use takes screenshots).

The SDK's own retries are off (``HttpRetryOptions(attempts=1)``):
:class:`pptarena.models.ModelClient` retries. Errors become
:class:`ModelError` / :class:`TransientModelError` with the key redacted and
the SDK exception dropped from the chain.

The Gemini API (``api_key``, ``base_url``) is what is tested, against the
loopback provider simulator; the Vertex AI path (``vertexai``, ``project``,
``location``) is passed to the SDK as is and is untested.

Batch mode (:mod:`pptarena.models.batch`): calls go through Gemini's batch mode with inlined requests
(``batches.create(model=..., src=[InlinedRequest...])``), each request the contents and config
:meth:`GoogleBackend.complete` would send and ``metadata = {"key": custom_id}``, which the answers
echo; ``batches.get`` reads the job and, once it is done, its inlined responses. A Gemini batch job
serves one model: a batch naming several models is refused (``ValueError``). Calls with
``extra_body`` (the option or the call parameter) are not batched: the SDK merges it into one call's
HTTP body, and inlined requests have no such place (:meth:`GoogleBackend.batch_unsupported`).
Batch mode is a Gemini API feature: on Vertex AI (untested) the SDK refuses inlined requests.

Why it is long: it is Gemini's whole wire (contents, tools and tool config, response format,
function calls, usage, batch jobs, preflight), and google-genai raises errors of its own shape, so
their mapping (gRPC status names, ``RetryInfo`` delays, ``API_KEY_INVALID``) lives here rather than
in :mod:`._sdk`; that error mapping (:func:`map_google_error` and its helpers) could move to its own
module (not done yet).
"""

from __future__ import annotations

import email.utils
import importlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

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
    TransientModelError,
    Usage,
    redact_secrets,
)
from pptarena.models.batch import BatchRequest, BatchResult, BatchState, BatchStatus
from pptarena.models.messages import rate_headers_of
from pptarena.types import ComponentContext, ComponentUnavailable

from ._sdk import RETRYABLE_STATUS, batch_error, check_params, plain_headers, resolve_secret, system_text

PROVIDER = "google"
INSTALL_HINT = "install with: pip install 'pptarena[google]'"
KEY_ENV_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
"""Where the key is looked for when ``api_key`` is not set, in this order."""
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
"""The Gemini API (the SDK's default when neither ``base_url`` nor ``vertexai`` is given)."""
SAMPLING = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "seed": "seed",
    "max_tokens": "max_output_tokens",
}
"""Call parameters copied into ``GenerateContentConfig`` (pptarena name → SDK field)."""
KNOWN_PARAMS = frozenset({*SAMPLING, "stop", "response_format", "tools", "tool_choice", "extra_body"})
TOOL_CHOICE_MODES = {
    "auto": "AUTO",
    "none": "NONE",
    "required": "ANY",
    "any": "ANY",
    "validated": "VALIDATED",
}
"""``tool_choice`` strings → ``function_calling_config.mode``."""
_MAX_SERVER_MESSAGE = 500
BATCH_STATES: dict[str, BatchStatus] = {
    "SUCCEEDED": "ended",
    "PARTIALLY_SUCCEEDED": "ended",
    "FAILED": "failed",
    "CANCELLED": "canceled",
    "EXPIRED": "expired",
}
"""A batch job's state (``JOB_STATE_X`` / ``BATCH_STATE_X``, by ``X``) → its
:data:`~pptarena.models.batch.BatchStatus`; every other state (pending, running...) is in progress."""
GRPC_STATUS = {
    1: 499,
    2: 500,
    3: 400,
    4: 504,
    5: 404,
    6: 409,
    7: 403,
    8: 429,
    9: 400,
    10: 409,
    11: 400,
    12: 501,
    13: 500,
    14: 503,
    15: 500,
    16: 401,
}
"""gRPC status codes → HTTP statuses, for a batch request's error given as a ``google.rpc.Status``."""


class GoogleOptions(BackendOptions):
    """Options of the ``google`` backend (``[backends.google]``)."""

    api_key: SecretStr | None = Field(
        None, description='use { env = "VAR" }; default $GEMINI_API_KEY, then $GOOGLE_API_KEY'
    )
    base_url: str | None = Field(
        None, description="server URL (proxies, test servers); default: the Gemini API"
    )
    api_version: str | None = Field(
        None, description="API version in the path, e.g. v1beta; default: the SDK's"
    )
    vertexai: bool = Field(False, description="use Vertex AI instead of the Gemini API (untested)")
    project: str | None = Field(None, description="Vertex AI: Google Cloud project (untested)")
    location: str | None = Field(None, description="Vertex AI: location, e.g. us-central1 (untested)")
    default_headers: dict[str, str | SecretStr] = Field(
        default_factory=dict, description="sent with every request"
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="JSON merged into every request body, in wire names "
        "(e.g. { generationConfig = { thinkingConfig = { thinkingBudget = 0 } } })",
    )

    @model_validator(mode="after")
    def _vertex_consistent(self) -> GoogleOptions:
        if (self.project or self.location) and not self.vertexai:
            raise ValueError("project and location are Vertex AI options: set vertexai = true")
        return self


# --------------------------------------------------------------------------- request


def _sdk_module() -> ModuleType:
    """``google.genai``, or :class:`ComponentUnavailable` naming the extra to install."""
    try:
        return importlib.import_module("google.genai")
    except ImportError as exc:
        raise ComponentUnavailable(f"the google backend needs the google-genai SDK; {INSTALL_HINT}") from exc


def _blob(p: ImagePart) -> dict[str, Any]:
    # base64 text: contents are validated from JSON, where the SDK's bytes fields are base64
    return {"mime_type": p.media_type, "data": p.b64()}


def _function_call_part(p: ToolCall) -> dict[str, Any]:
    """A ``function_call`` part: the call's ``native`` part when it has one (it carries the
    ``thought_signature`` Gemini wants back), else one built from ``id``, ``name`` and ``input``."""
    if p.native:
        return dict(p.native)
    return {"function_call": {"id": p.id, "name": p.name, "args": dict(p.input)}}


def _wire_call(p: ToolCall) -> tuple[str, str | None]:
    """``(name, id on the wire)`` of a call: a native part's own id (None when the model sent
    none), else the call's id."""
    call = (p.native or {}).get("function_call") or (p.native or {}).get("functionCall")
    if isinstance(call, Mapping):
        return str(call.get("name") or p.name), call.get("id")
    return p.name, p.id


def _function_response_part(p: ToolResult, calls: Mapping[str, tuple[str, str | None]]) -> dict[str, Any]:
    """A ``function_response`` part answering the call ``calls[p.call_id]`` (its name, and its id
    when the call carried one on the wire): text as ``response.output`` (``response.error`` when
    the call failed), images as inline ``parts``; ``native`` fields merged into the function response."""
    text = "".join(c for c in p.content if isinstance(c, str))
    name, wire_id = calls.get(p.call_id, (p.call_id, p.call_id))
    response: dict[str, Any] = {"name": name, "response": {"error" if p.is_error else "output": text}}
    if wire_id is not None:
        response["id"] = wire_id
    images = p.images()
    if images:
        response["parts"] = [{"inline_data": _blob(i)} for i in images]
    response.update(dict(p.native or {}))
    return {"function_response": response}


def to_gemini_request(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """pptarena messages → ``(system_instruction, contents)`` for ``generate_content``.

    System messages are joined into the system instruction; user messages become
    ``user`` contents, assistant messages ``model`` contents. Text parts become
    ``text`` parts (empty ones are dropped, and so is a message left without parts),
    images ``inline_data`` parts, :class:`ToolCall` parts (assistant) ``function_call``
    parts and :class:`ToolResult` parts (user) ``function_response`` parts, named
    after the call with the same id earlier in the request (else the id itself) and carrying
    that call's wire id, if it had one.
    The contents are JSON-ready dicts (bytes as base64 text), for ``Content.model_validate_json``.
    """
    calls: dict[str, Any] = {}  # id -> the latest earlier call with it (ids repeat across turns)
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    for m in messages:
        parts = m.parts()
        if m.role == "assistant":
            calls.update((p.id, _wire_call(p)) for p in parts if isinstance(p, ToolCall))
        if m.role == "system":
            system.append(system_text(m, "google"))
            continue
        wire: list[dict[str, Any]] = []
        for p in parts:
            if isinstance(p, ImagePart):
                if m.role != "user":
                    raise TypeError("google backend: images are only allowed in user messages")
                wire.append({"inline_data": _blob(p)})
            elif isinstance(p, ToolCall):
                if m.role != "assistant":
                    raise TypeError("google backend: tool calls belong in assistant messages")
                wire.append(_function_call_part(p))
            elif isinstance(p, ToolResult):
                if m.role != "user":
                    raise TypeError("google backend: tool results belong in user messages")
                wire.append(_function_response_part(p, calls))
            elif p:
                wire.append({"text": p})
        if wire:
            contents.append({"role": "model" if m.role == "assistant" else "user", "parts": wire})
    return ("\n\n".join(system) if system else None), contents


def _tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """``tools`` → Gemini ``Tool`` dicts: native tools (``function_declarations``, ``google_search``,
    ``code_execution``, ``computer_use``...) pass as given; bare function declarations
    (``{"name", "description", "parameters"}``) are grouped into one ``function_declarations`` tool
    (the SDK then merges every function declaration into one tool, sent last)."""
    out: list[dict[str, Any]] = []
    declarations: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            raise TypeError(f"google backend: a tool must be a table, not {type(tool).__name__}")
        if "name" in tool:
            declarations.append(dict(tool))
        else:
            out.append(dict(tool))
    if declarations:
        out.insert(0, {"function_declarations": declarations})
    return out


def _tool_config(choice: Any) -> dict[str, Any]:
    """``tool_choice`` → ``tool_config``: ``"auto"``, ``"none"``, ``"required"``/``"any"``,
    ``"validated"``; ``{"name": f}`` (or the OpenAI/Anthropic forms naming a function) forces that
    function; a table with ``function_calling_config`` is a native tool config, passed as given."""
    if isinstance(choice, str):
        mode = TOOL_CHOICE_MODES.get(choice.lower())
        if mode is None:
            raise TypeError(
                f"google backend: tool_choice {choice!r} is not one of {sorted(TOOL_CHOICE_MODES)}"
            )
        return {"function_calling_config": {"mode": mode}}
    if isinstance(choice, Mapping):
        if "function_calling_config" in choice or "functionCallingConfig" in choice:
            return dict(choice)
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if isinstance(name, str) and name:
            return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [name]}}
    raise TypeError(f"google backend: cannot read tool_choice {choice!r}")


def _response_format(fmt: Any) -> dict[str, Any]:
    """``response_format`` → config fields: ``json_object`` → JSON MIME type, ``json_schema``
    (OpenAI's form, ``{"json_schema": {"schema": {...}}}``, or ``{"schema": {...}}``) → JSON MIME
    type and ``response_json_schema``; ``text`` → nothing."""
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if kind == "text":
        return {}
    if kind == "json_object":
        return {"response_mime_type": "application/json"}
    if kind == "json_schema":
        spec = fmt.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        schema = schema if schema is not None else fmt.get("schema")
        if not isinstance(schema, Mapping):
            raise TypeError("google backend: response_format json_schema needs a schema")
        return {"response_mime_type": "application/json", "response_json_schema": dict(schema)}
    raise TypeError(
        f"google backend: response_format {fmt!r} is not text, json_object or json_schema "
        '(e.g. {"type": "json_object"})'
    )


# --------------------------------------------------------------------------- response


def tool_calls(raw: Mapping[str, Any] | None) -> list[ToolCall]:
    """The function calls of a Gemini response (``Completion.raw``) as :class:`ToolCall` parts, in
    order, each with its whole part as ``native`` (replayed verbatim, ``thought_signature``
    included). A call the model sent without an id gets ``call_<n>`` (n its position among the
    calls) for pptarena's bookkeeping; the wire never sees that id (the part goes back as it came,
    and the function response carries no id)."""
    out: list[ToolCall] = []
    candidates = (raw or {}).get("candidates") or []
    parts = ((candidates[0].get("content") or {}).get("parts") or []) if candidates else []
    for part in parts:
        call = part.get("function_call") if isinstance(part, Mapping) else None
        if not isinstance(call, Mapping):
            continue
        call_id = str(call.get("id") or f"call_{len(out)}")
        out.append(ToolCall(call_id, str(call.get("name") or ""), dict(call.get("args") or {}), dict(part)))
    return out


def _usage(response: Any) -> Usage:
    meta = getattr(response, "usage_metadata", None)

    def count(name: str) -> int:
        return int(getattr(meta, name, 0) or 0)

    # prompt_token_count includes cached_content_token_count; tool-use prompt tokens (e.g. search
    # results) and thoughts are billed as input and output respectively
    return Usage(
        input_tokens=count("prompt_token_count") + count("tool_use_prompt_token_count"),
        output_tokens=count("candidates_token_count") + count("thoughts_token_count"),
        cached_input_tokens=count("cached_content_token_count"),
        calls=1,
    )


def _enum_text(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def content_completion(response: Any, model: str) -> Completion:
    """The :class:`Completion` of a ``GenerateContentResponse``, as :meth:`GoogleBackend.complete`
    returns it and as a batch's inlined response answers it; ``model`` when the response names no
    ``model_version``. Thought parts are not text; a blocked prompt (no candidate) has
    ``finish_reason`` ``"blocked: <reason>"``."""
    candidates = getattr(response, "candidates", None) or []
    text, finish = "", None
    if candidates:
        candidate = candidates[0]
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", None))
        finish = _enum_text(getattr(candidate, "finish_reason", None))
    else:  # the prompt itself was blocked: no candidate, the reason in prompt_feedback
        reason = _enum_text(getattr(getattr(response, "prompt_feedback", None), "block_reason", None))
        finish = f"blocked: {reason}" if reason else None
    http = getattr(response, "sdk_http_response", None)
    return Completion(
        text=text,
        model=getattr(response, "model_version", None) or model,
        usage=_usage(response),
        raw=response.model_dump(
            mode="json",
            exclude_none=True,
            exclude={"sdk_http_response", "automatic_function_calling_history"},
        ),
        finish_reason=finish,
        rate_headers=rate_headers_of(getattr(http, "headers", None)),
    )


# --------------------------------------------------------------------------- errors


def _duration_seconds(value: Any) -> float | None:
    """A protobuf Duration in JSON (``"37s"``, ``"0.5s"``) in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)s\s*", str(value)) if value is not None else None
    return float(match.group(1)) if match else None


def _error_details(body: Any) -> list[Any]:
    err = body.get("error", body) if isinstance(body, Mapping) else None
    details = err.get("details") if isinstance(err, Mapping) else None
    return details if isinstance(details, list) else []


def retry_after_of(body: Any, headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait before retrying: the ``RetryInfo`` detail's ``retryDelay`` in an error body,
    else the ``Retry-After`` header (seconds or an HTTP date), else None."""
    for detail in _error_details(body):
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = _duration_seconds(detail.get("retryDelay"))
            if delay is not None:
                return delay
    value = (headers or {}).get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


def _key_invalid(body: Any) -> bool:
    """True when an error body says the API key is invalid (Gemini answers 400 API_KEY_INVALID)."""
    return any(
        isinstance(d, Mapping) and d.get("reason") in ("API_KEY_INVALID", "API_KEY_EXPIRED")
        for d in _error_details(body)
    )


def _headers_of(response: Any) -> dict[str, str]:
    headers = getattr(response, "headers", None)
    if headers is None:
        return {}
    try:
        return {str(k).lower(): str(v) for k, v in headers.items()}
    except Exception:  # an odd header object: no headers rather than a failed mapping
        return {}


def map_google_error(
    exc: BaseException,
    secrets: Sequence[str | None],
    *,
    model: str,
    base_url: str,
    subject: str | None = None,
) -> ModelError | None:
    """The :class:`ModelError` for a google-genai or HTTP-transport exception, or None for others.

    429, 408/409, 5xx, timeouts, connection errors and answers that are not JSON are transient
    (``retry_after`` from the ``RetryInfo`` detail or ``Retry-After``, ``rate_headers`` from the
    answer); 401/403 (and 400 ``API_KEY_INVALID``) say to check the key, 404 names the model (or
    ``subject``, e.g. a batch job, when the request was about that) and the server; other 4xx are
    plain :class:`ModelError`. Every message passes through :func:`redact_secrets`.
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    root = type(exc).__module__.split(".")[0]
    if root in ("httpx", "httpx2") and "TimeoutException" in names:
        return TransientModelError(f"google: request timed out ({type(exc).__name__})")
    if root in ("httpx", "httpx2") and "TransportError" in names:
        return TransientModelError(f"google: connection failed ({type(exc).__name__})")
    if isinstance(exc, json.JSONDecodeError) or "UnknownApiResponseError" in names:
        # a 200 whose body is not JSON: a glitch of the server or a proxy in between
        return TransientModelError("google: the server's answer is not valid JSON")
    if "APIError" not in names:
        return None
    status = getattr(exc, "code", None)
    body = getattr(exc, "details", None)
    message = getattr(exc, "message", None) or getattr(exc, "status", None) or type(exc).__name__
    detail = redact_secrets(str(message), secrets)[:_MAX_SERVER_MESSAGE]
    if not isinstance(status, int):
        return ModelError(f"google: {detail}")
    headers = _headers_of(getattr(exc, "response", None))
    if status in RETRYABLE_STATUS or status >= 500:
        return TransientModelError(
            f"google: HTTP {status}: {detail}",
            status=status,
            retry_after=retry_after_of(body, headers),
            rate_headers=rate_headers_of(headers),
        )
    if status in (401, 403) or _key_invalid(body):
        hint = ' (check the API key: set $GEMINI_API_KEY or api_key = { env = "VAR" }' + (
            "; the key lacks permission for this model or endpoint)" if status == 403 else ")"
        )
    elif status == 404:
        hint = f" (unknown {subject or f'model {model!r}'} at {base_url}, or wrong base_url / api_version)"
    else:
        hint = ""
    return ModelError(f"google: HTTP {status}: {detail}{hint}", status=status)


# --------------------------------------------------------------------------- backend


class GoogleBackend(BackendBase):
    """Gemini through the official ``google-genai`` SDK."""

    Options = GoogleOptions

    def __init__(self, options: GoogleOptions, context: ComponentContext):
        super().__init__(options, context)
        self.options: GoogleOptions = options
        genai = _sdk_module()
        self._types = importlib.import_module("google.genai.types")
        headers = plain_headers(options.default_headers)
        key = resolve_secret(options.api_key, KEY_ENV_VARS[0]) or resolve_secret(None, KEY_ENV_VARS[1])
        if key is None and not options.vertexai:
            if options.base_url is None:
                raise ComponentUnavailable(
                    "the google backend has no API key: set $GEMINI_API_KEY (or $GOOGLE_API_KEY) "
                    'or api_key = { env = "VAR" }'
                )
            key = "not-needed"  # a server of one's own (a proxy, a test server) may ignore it
        self._secrets: list[str | None] = [key, *headers.values()]
        http_options = self._types.HttpOptions(
            base_url=options.base_url,
            api_version=options.api_version,
            headers=headers or None,
            timeout=max(1, int(options.timeout * 1000)),  # milliseconds
            retry_options=self._types.HttpRetryOptions(attempts=1),  # ModelClient retries
        )
        try:
            self._client = genai.Client(
                vertexai=options.vertexai,
                api_key=key,
                project=options.project,
                location=options.location,
                http_options=http_options,
            )
        except Exception as exc:
            raise ModelError(
                f"google: cannot create the client: {redact_secrets(str(exc), self._secrets)}"
            ) from None
        self.base_url = self._server_url()
        self._submitted: dict[str, list[str]] = {}  # batch job name -> custom ids in order

    def _server_url(self) -> str:
        """The server the SDK talks to (its resolved base URL; not a secret)."""
        api_client = getattr(self._client, "_api_client", None)
        resolved = getattr(getattr(api_client, "_http_options", None), "base_url", None)
        return str(resolved or self.options.base_url or DEFAULT_BASE_URL)

    def cache_identity(self) -> dict[str, Any]:
        """Server URL, API version, Vertex AI project/location and extra body fields (never the key)."""
        return {
            "base_url": self.base_url,
            "api_version": self.options.api_version,
            "vertexai": self.options.vertexai,
            "project": self.options.project,
            "location": self.options.location,
            "extra_body": self.options.extra_body,
        }

    def request_config(self, messages: list[Message], params: dict[str, Any]) -> tuple[list[Any], Any]:
        """``(contents, config)`` for ``models.generate_content``, validated by the SDK's types.

        Raises ``TypeError`` for unknown parameters and for values the SDK's types reject,
        before any request.
        """
        check_params(PROVIDER, params, KNOWN_PARAMS)
        system, contents = to_gemini_request(messages)
        config: dict[str, Any] = {
            field: params[name] for name, field in SAMPLING.items() if params.get(name) is not None
        }
        if system:
            config["system_instruction"] = system
        stop = params.get("stop")
        if stop:
            config["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        if params.get("response_format") is not None:
            config.update(_response_format(params["response_format"]))
        # function calls come back to the caller: the SDK must never try to run them
        config["automatic_function_calling"] = {"disable": True}
        if params.get("tools"):
            config["tools"] = _tools(params["tools"])
        if params.get("tool_choice") is not None:
            config["tool_config"] = _tool_config(params["tool_choice"])
        extra = {**self.options.extra_body, **(params.get("extra_body") or {})}
        if extra:
            config["http_options"] = {"extra_body": extra}
        types = self._types
        try:
            return (
                # from JSON, so base64 bytes (images, a replayed thought_signature) decode as such
                [types.Content.model_validate_json(json.dumps(c)) for c in contents],
                types.GenerateContentConfig.model_validate(config),
            )
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise TypeError(f"google backend: invalid request: {exc}") from None

    def _call(self, fn: Any, model: str, **kwargs: Any) -> Any:
        return self._request(fn, model, None, model=model, **kwargs)

    def _request(self, fn: Any, about_model: str, subject: str | None, /, **kwargs: Any) -> Any:
        """``fn(**kwargs)``, an SDK error raised as :func:`map_google_error` makes it (``about_model``
        and ``subject`` name what a 404 was about)."""
        try:
            return fn(**kwargs)
        except Exception as exc:
            mapped = map_google_error(
                exc, self._secrets, model=about_model, base_url=self.base_url, subject=subject
            )
            if mapped is None:
                raise
            raise mapped from None

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """One ``generateContent`` call; SDK errors become :class:`ModelError` /
        :class:`TransientModelError`."""
        contents, config = self.request_config(messages, params)
        response = self._call(self._client.models.generate_content, model, contents=contents, config=config)
        return content_completion(response, model)

    # ---- batch mode

    def batch_unsupported(self, request: BatchRequest) -> str | None:
        """Why ``request`` cannot go through Gemini's batch mode, or None when it can: a call with
        ``extra_body`` (the option or the call parameter) is sent alone, since the SDK merges it into
        one call's HTTP body and an inlined batch request has no such place."""
        if self.options.extra_body or request.params.get("extra_body"):
            return (
                "google backend: calls with extra_body (the backend option or the call parameter) are not "
                "batched (google-genai merges it into a single call's HTTP body, inlined batch requests "
                "cannot carry it): send this call with complete(), or drop extra_body"
            )
        return None

    def inlined_request(self, request: BatchRequest) -> Any:
        """A request of a batch job: an ``InlinedRequest`` with the contents and config
        :meth:`complete` sends for the same call and ``metadata = {"key": custom_id}`` (no ``model``:
        the job's model serves every request). Raises ``TypeError`` for a call
        :meth:`batch_unsupported` refuses or the SDK's types reject."""
        reason = self.batch_unsupported(request)
        if reason is not None:
            raise TypeError(reason)
        contents, config = self.request_config(list(request.messages), dict(request.params))
        return self._types.InlinedRequest(
            contents=contents, config=config, metadata={"key": request.custom_id}
        )

    def batch_submit(self, requests: list[BatchRequest]) -> str:
        """Send ``requests`` as one batch job of inlined requests (``batches.create``); returns the
        job's name (``batches/...``).

        A Gemini batch job serves one model: requests naming several models raise ``ValueError`` (as
        does an empty list), a request :meth:`batch_unsupported` refuses ``TypeError``, both before
        anything is sent; a refused or failed creation :class:`ModelError` /
        :class:`TransientModelError`."""
        models = sorted({r.model for r in requests})
        if len(models) != 1:
            raise ValueError(
                "google backend: a Gemini batch job serves one model; "
                + (
                    f"these requests name {len(models)}: {', '.join(models)}"
                    if models
                    else "no requests given"
                )
            )
        src = [self.inlined_request(r) for r in requests]
        job = self._request(
            self._client.batches.create,
            models[0],
            None,
            model=models[0],
            src=src,
            config={"display_name": f"pptarena {len(src)} request(s)"},
        )
        self._submitted[str(job.name)] = [r.custom_id for r in requests]
        return str(job.name)

    def batch_status(self, batch_id: str) -> BatchState:
        """Where batch job ``batch_id`` is (``batches.get``); once it has finished, the result of every
        request by the ``metadata`` key its inlined response echoes (by position when the answer echoes
        none and this backend submitted the job). A response becomes a :class:`Completion` as
        :meth:`complete` makes it; an error an ``errored`` result with its HTTP status (a gRPC code is
        mapped), ``expired`` for a deadline error in an expired job, ``canceled`` for a cancelled
        request."""
        job = self._request(self._client.batches.get, "", f"batch job {batch_id!r}", name=batch_id)
        state = (_enum_text(getattr(job, "state", None)) or "").rpartition("_STATE_")[2]
        status = BATCH_STATES.get(state, "in_progress")
        if status == "in_progress":
            return BatchState(batch_id, status)
        model = str(getattr(job, "model", "") or "").removeprefix("models/")
        responses = getattr(getattr(job, "dest", None), "inlined_responses", None) or []
        ids = self._submitted.get(batch_id, [])
        results: dict[str, BatchResult] = {}
        for i, item in enumerate(responses):
            key = (getattr(item, "metadata", None) or {}).get("key")
            cid = key if isinstance(key, str) and key else (ids[i] if i < len(ids) else None)
            if cid is not None:
                results[cid] = self._batch_result(cid, item, model, status)
        counts: dict[str, int] = {}
        for result in results.values():
            counts[result.kind] = counts.get(result.kind, 0) + 1
        error = getattr(job, "error", None)
        message = self._redact(str(getattr(error, "message", None) or error)) if error else None
        return BatchState(
            batch_id,
            status,
            counts,
            results,
            message or (f"batch {state.lower()}" if status == "failed" else None),
        )

    def _batch_result(self, custom_id: str, item: Any, model: str, status: BatchStatus) -> BatchResult:
        """One ``InlinedResponse`` as a :class:`BatchResult` (``status``: the job's)."""
        response = getattr(item, "response", None)
        error = getattr(item, "error", None)
        if response is not None and error is None:
            return BatchResult(custom_id, content_completion(response, model))
        code = getattr(error, "code", None)
        http = (GRPC_STATUS.get(code, 500) if code < 100 else code) if isinstance(code, int) else None
        kind = "errored"
        if http == 504 and status == "expired":
            kind = "expired"
        elif http == 499:
            kind = "canceled"
        message = getattr(error, "message", None) or "no response"
        return batch_error(custom_id, kind, message, http, self._secrets)

    def _redact(self, text: str) -> str:
        """``text`` with the key and header secrets replaced."""
        return redact_secrets(text, self._secrets)

    def check(self, model: str, *, timeout: float | None = None) -> str | None:
        """Preflight: is the server reachable, the key accepted and ``model`` known
        (``models.get``)? One request, no retries, ``timeout`` seconds (default: the backend's
        timeout, at most 15 s).

        Raises :class:`ModelError` naming the backend, the model and the server when the server
        cannot be reached (:class:`TransientModelError`), refuses the key or does not know the
        model. Returns a note (the run may start) when it answers 429 or 5xx (busy right now);
        None when the model was found.
        """
        seconds = timeout if timeout is not None else min(self.options.timeout, 15.0)
        config = {"http_options": {"timeout": max(1, int(seconds * 1000))}}
        try:
            self._call(self._client.models.get, model, config=config)
            return None
        except ModelError as exc:
            status = exc.status
            if status is not None and (status == 429 or status >= 500):
                return f"the server answered HTTP {status} (busy or failing right now); {model!r} not checked"
            wrapped = f"google backend: model {model!r} at {self.base_url} failed the check: {exc}"
            if isinstance(exc, TransientModelError):
                raise TransientModelError(wrapped, status=status, retry_after=exc.retry_after) from None
            raise ModelError(wrapped, status=status) from None

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()


@pptarena.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``google`` backend."""
    register("google", GoogleBackend)
