"""The Gemini API wire format (Google AI, the REST form google-genai speaks), ``v1`` and ``v1beta``.

Routes (the SDK's ``HttpOptions(base_url=sim.url)``; ``{version}`` is ``v1``, ``v1beta`` or
``v1alpha``, whichever the SDK uses):

* ``POST /{version}/models/{model}:generateContent`` — ``contents`` / ``parts`` (text,
  ``inlineData`` images, ``fileData``, ``functionCall``, ``functionResponse``),
  ``systemInstruction``, ``tools`` (``functionDeclarations``), ``generationConfig``
  (``maxOutputTokens``, ``responseMimeType``, ``responseSchema`` / ``responseJsonSchema``);
  ``usageMetadata`` with ``cachedContentTokenCount`` when the implicit cache was hit;
* ``POST /{version}/models/{model}:countTokens``;
* ``GET /{version}/models``, ``GET /{version}/models/{model}``;
* batch mode: ``POST /{version}/models/{model}:batchGenerateContent`` with inlined requests
  (``{"batch": {"displayName", "inputConfig": {"requests": {"requests": [{"request",
  "metadata"}]}}}}``) answers a batch operation ``{"name": "batches/...", "metadata":
  {"state": "BATCH_STATE_PENDING", ...}}``; ``GET /{version}/batches/{name}`` (with
  ``metadata.output.inlinedResponses`` once ended), ``GET /{version}/batches``,
  ``POST /{version}/batches/{name}:cancel``, ``DELETE /{version}/batches/{name}``. An
  expired batch keeps the responses of the requests that ran; the others carry a
  ``DEADLINE_EXCEEDED`` error (the simulator's choice: Google documents no per-request form).

Gemini sends no rate-limit headers; its 429 is ``RESOURCE_EXHAUSTED`` with a
``google.rpc.RetryInfo`` ``retryDelay``. Streaming is refused with a 400. A refused key
gets 401 ``UNAUTHENTICATED`` (Google itself answers a bad key with 400 ``API_KEY_INVALID``).

Why it is long: it is the Gemini form of every route the simulator serves, in three API versions;
batch mode returns its inlined responses through :func:`render_generate` and its failed requests
with the same status names as the error bodies (``RESOURCE_EXHAUSTED``, ...), so the batch routes
cannot leave without taking the generation format with them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pptarena.models.sim.batches import Batch, BatchItem
from pptarena.models.sim.httpio import Incoming, Outgoing
from pptarena.models.sim.limits import rfc3339
from pptarena.models.sim.prompt import Prompt, PromptBuilder, WireError, as_int, decode_base64
from pptarena.models.sim.tool_turns import check_gemini_tool_turns
from pptarena.models.sim.wire import Wire, html_502, new_id

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.completion import Completion
    from pptarena.models.sim.limits import LimitDecision

DEFAULT_MODELS = ("gemini-sim", "gemini-sim-flash")
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    411: "INVALID_ARGUMENT",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_BATCH_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
_OUTPUT_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    return obj.get(camel, obj.get(snake))


def google_duration(seconds: float) -> str:
    """A protobuf JSON duration: ``"12s"``, ``"1.5s"``, ``"0.25s"``."""
    return f"{max(0.001, seconds):.3f}".rstrip("0").rstrip(".") + "s"


def _parts(b: PromptBuilder, role: str, parts: Any) -> None:
    if not isinstance(parts, list):
        raise WireError("parts must be a list")
    for part in parts:
        if not isinstance(part, dict):
            raise WireError("every part must be an object")
        if part.get("thought"):
            continue
        inline = _get(part, "inlineData", "inline_data")
        file_data = _get(part, "fileData", "file_data")
        call = _get(part, "functionCall", "function_call")
        result = _get(part, "functionResponse", "function_response")
        if "text" in part:
            b.text(role, str(part["text"]))
        elif isinstance(inline, dict):
            b.image(role, decode_base64(inline.get("data"), "inlineData"))
        elif isinstance(file_data, dict):
            b.image(role, str(_get(file_data, "fileUri", "file_uri") or "").encode("utf-8"))
        elif isinstance(call, dict):
            b.text(role, {"functionCall": call})
        elif isinstance(result, dict):
            b.text(role, {"functionResponse": result})
        else:
            b.text(role, part)


def parse_generate(body: dict[str, Any], model: str, image_tokens: int) -> Prompt:
    """A generateContent body as a :class:`Prompt` (tools, system instruction, then contents)."""
    b = PromptBuilder("gemini", "generate", model.removeprefix("models/"), image_tokens)
    b.prompt.body = body
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise WireError("tools must be a list")
    for tool in tools:
        if not isinstance(tool, dict):
            raise WireError("every tool must be an object")
        for key, value in tool.items():
            if key in ("functionDeclarations", "function_declarations") and isinstance(value, list):
                for fd in value:
                    if not isinstance(fd, dict):
                        raise WireError("every function declaration must be an object")
                    params = (
                        fd.get("parameters")
                        or fd.get("parametersJsonSchema")
                        or fd.get("parameters_json_schema")
                    )
                    b.tool(fd.get("name"), fd, params)
            else:
                b.text("tools", {key: value})
    system = _get(body, "systemInstruction", "system_instruction")
    if isinstance(system, str):
        b.text("system", system)
    elif isinstance(system, dict):
        for part in system.get("parts") or []:
            if isinstance(part, dict) and "text" in part:
                b.text("system", str(part["text"]))
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise WireError("contents is not specified")
    for content in contents:
        if not isinstance(content, dict):
            raise WireError("every content must be an object")
        role = "assistant" if content.get("role") == "model" else "user"
        b.next_message()
        _parts(b, role, content.get("parts") or [])
    check_gemini_tool_turns(contents)
    config = _get(body, "generationConfig", "generation_config") or {}
    if not isinstance(config, dict):
        raise WireError("generationConfig must be an object")
    p = b.prompt
    p.max_tokens = as_int(_get(config, "maxOutputTokens", "max_output_tokens"), "maxOutputTokens")
    if _get(config, "responseMimeType", "response_mime_type") == "application/json":
        p.json_mode = True
        schema = (
            _get(config, "responseJsonSchema", "response_json_schema")
            or config.get("_responseJsonSchema")
            or _get(config, "responseSchema", "response_schema")
        )
        p.json_schema = schema if isinstance(schema, dict) else None
    return p


def render_generate(prompt: Prompt, c: Completion) -> dict[str, Any]:
    """A ``GenerateContentResponse``; ``promptTokenCount`` includes ``cachedContentTokenCount``."""
    parts: list[dict[str, Any]] = []
    if c.reply.text or not c.reply.tool_calls:
        parts.append({"text": c.reply.text})
    broken = [t for t in c.reply.tool_calls if not isinstance(t.parsed_arguments(), dict)]
    for t in c.reply.tool_calls:
        parts.append({"functionCall": {"name": t.name, "args": t.parsed_arguments()}})
    candidate: dict[str, Any] = {
        "content": {"parts": parts, "role": "model"},
        "finishReason": "MAX_TOKENS" if c.finish == "length" else "STOP",
        "index": 0,
    }
    if broken:  # Gemini's form of a tool call it could not write: no content, a finish reason saying so
        candidate = {
            "content": {},
            "finishReason": "MALFORMED_FUNCTION_CALL",
            "finishMessage": f"Malformed function call: {broken[0].name}({broken[0].arguments}",
            "index": 0,
        }
    image_tokens = sum(b.tokens for b in prompt.blocks if b.kind == "image")
    details = [{"modality": "TEXT", "tokenCount": c.prompt_tokens - image_tokens}]
    if image_tokens:
        details.append({"modality": "IMAGE", "tokenCount": image_tokens})
    usage: dict[str, Any] = {
        "promptTokenCount": c.prompt_tokens,
        "candidatesTokenCount": c.output_tokens,
        "totalTokenCount": c.prompt_tokens + c.output_tokens,
        "promptTokensDetails": details,
    }
    if c.cache.read:
        usage["cachedContentTokenCount"] = c.cache.read
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": c.cache.read}]
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": prompt.model,
        "responseId": new_id(""),
    }


class GeminiWire(Wire):
    """The Gemini API (see the module docstring)."""

    name = "gemini"
    routes = [
        ("POST", "/{version}/models/{model}:generateContent", "generate_content"),
        ("POST", "/{version}/models/{model}:streamGenerateContent", "stream_refused"),
        ("POST", "/{version}/models/{model}:countTokens", "count_tokens"),
        ("POST", "/{version}/models/{model}:batchGenerateContent", "create_batch"),
        ("GET", "/{version}/models", "list_models"),
        ("GET", "/{version}/models/{model}", "get_model"),
        ("GET", "/{version}/batches", "list_batches"),
        ("GET", "/{version}/batches/{name}", "get_batch"),
        ("DELETE", "/{version}/batches/{name}", "delete_batch"),
        ("POST", "/{version}/batches/{name}:cancel", "cancel_batch"),
    ]

    def request_headers(self) -> dict[str, str]:
        """Google sends no request id header the SDK reads; none."""
        return {}

    # -- errors --------------------------------------------------------------------

    def error(
        self, status: int, message: str, kind: str | None = None, details: list[dict[str, Any]] | None = None
    ) -> Outgoing:
        """``{"error": {"code", "message", "status"[, "details"]}}``."""
        err: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": STATUS_NAMES.get(status, "UNKNOWN"),
        }
        if details:
            err["details"] = details
        return Outgoing.json(status, {"error": err})

    def unauthorized(self, api_key: str | None) -> Outgoing:
        """401 ``UNAUTHENTICATED`` with an ``API_KEY_INVALID`` reason."""
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
        message = "API key not valid. Please pass a valid API key." if api_key else "API key is missing."
        return self.error(401, message, details=[info | {"domain": "googleapis.com"}])

    def model_not_found(self, model: str) -> Outgoing:
        """404 ``NOT_FOUND``."""
        return self.error(
            404,
            f"models/{model} is not found for API version v1beta, or is not supported for generateContent.",
        )

    def rate_limited(self, decision: LimitDecision, model: str) -> Outgoing:
        """429 ``RESOURCE_EXHAUSTED`` with QuotaFailure, Help and RetryInfo details."""
        per_tokens = decision.reason in ("tokens", "too_large")
        view = decision.tokens if per_tokens else decision.requests
        metric = "input_token_count" if per_tokens else "requests"
        violation = {
            "quotaMetric": f"generativelanguage.googleapis.com/generate_content_{metric}",
            "quotaId": "GenerateContent"
            + ("InputTokens" if per_tokens else "Requests")
            + "PerMinutePerProjectPerModel",
            "quotaDimensions": {"location": "global", "model": model},
            "quotaValue": str(view.limit if view else 0),
        }
        details: list[dict[str, Any]] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
            {
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [
                    {
                        "description": "Learn more about Gemini API quotas",
                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                    }
                ],
            },
        ]
        message = (
            "You exceeded your current quota, please check your plan and billing details. "
            f"Quota exceeded for metric: {violation['quotaMetric']}, limit: {violation['quotaValue']}."
        )
        if decision.retry_after is not None:
            delay = google_duration(decision.retry_after)
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay})
            message += f" Please retry in {delay}."
        return self.error(429, message, details=details)

    def fault_error(self, kind: str) -> Outgoing:
        """500 ``INTERNAL``, an HTML 502, or 503 ``UNAVAILABLE`` (also for ``529``)."""
        if kind == "500":
            return self.error(
                500,
                "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
            )
        if kind == "502":
            return html_502()
        return self.error(503, "The model is overloaded. Please try again later.")

    # -- generation ----------------------------------------------------------------

    def render(self, prompt: Prompt, completion: Completion) -> dict[str, Any]:
        """A ``GenerateContentResponse``."""
        return render_generate(prompt, completion)

    def generate_content(self, inc: Incoming, model: str) -> Outgoing:
        """``POST /{version}/models/{model}:generateContent``."""
        return self.generate(inc, parse_generate(inc.json_object(), model, self.engine.config.image_tokens))

    def stream_refused(self, inc: Incoming, model: str) -> Outgoing:
        """``:streamGenerateContent``: not simulated."""
        raise WireError("streaming is not supported by the provider simulator; use generateContent")

    def count_tokens(self, inc: Incoming, model: str) -> Outgoing:
        """``POST /{version}/models/{model}:countTokens``."""
        body = inc.json_object()
        inner = _get(body, "generateContentRequest", "generate_content_request")
        prompt = parse_generate(
            inner if isinstance(inner, dict) else body, model, self.engine.config.image_tokens
        )
        return Outgoing.json(200, {"totalTokens": prompt.total_tokens})

    # -- models --------------------------------------------------------------------

    @staticmethod
    def _model(name: str) -> dict[str, Any]:
        return {
            "name": f"models/{name}",
            "version": "001",
            "displayName": f"{name} (simulated)",
            "description": "A model of the provider simulator.",
            "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens", "batchGenerateContent"],
            "temperature": 1.0,
            "topP": 0.95,
            "topK": 64,
            "maxTemperature": 2.0,
        }

    def list_models(self, inc: Incoming) -> Outgoing:
        """``GET /{version}/models``."""
        names = self.engine.config.models or DEFAULT_MODELS
        return Outgoing.json(200, {"models": [self._model(m) for m in names]})

    def get_model(self, inc: Incoming, model: str) -> Outgoing:
        """``GET /{version}/models/{model}``."""
        models = self.engine.config.models
        if models is not None and model not in models:
            return self.model_not_found(model)
        return Outgoing.json(200, self._model(model))

    # -- batches -------------------------------------------------------------------

    def create_batch(self, inc: Incoming, model: str) -> Outgoing:
        """``POST /{version}/models/{model}:batchGenerateContent`` (inlined requests only)."""
        batch_spec = inc.json_object().get("batch")
        if not isinstance(batch_spec, dict):
            raise WireError("batch is not specified")
        source = _get(batch_spec, "inputConfig", "input_config") or {}
        if not isinstance(source, dict):
            raise WireError("batch.inputConfig must be an object")
        if _get(source, "fileName", "file_name"):
            raise WireError("the provider simulator takes inlined requests only, not input files")
        holder = source.get("requests") or {}
        requests = holder.get("requests") if isinstance(holder, dict) else None
        if not isinstance(requests, list) or not requests:
            raise WireError("batch.inputConfig.requests.requests must hold at least one request")
        config = self.engine.config
        items: list[BatchItem] = []
        for i, entry in enumerate(requests):
            meta = entry.get("metadata") if isinstance(entry, dict) else None
            cid = str(meta.get("key")) if isinstance(meta, dict) and meta.get("key") else f"request-{i + 1}"
            extra = {"metadata": meta} if meta is not None else {}
            try:
                request = entry.get("request") if isinstance(entry, dict) else None
                if not isinstance(request, dict):
                    raise WireError("request is not specified")
                prompt = parse_generate(request, str(request.get("model") or model), config.image_tokens)
                if config.models is not None and prompt.model not in config.models:
                    raise WireError(f"models/{prompt.model} is not found", 404)
                items.append(BatchItem(cid, prompt, extra=extra))
            except WireError as exc:
                items.append(BatchItem(cid, None, error=exc, extra=extra))
        info = {"model": model.removeprefix("models/"), "displayName": batch_spec.get("displayName") or ""}
        batch = self.engine.batches.create("gemini", inc.api_key or "", items, info, "")
        return Outgoing.json(200, self._operation(batch, created=True))

    def _operation(self, batch: Batch, created: bool = False) -> dict[str, Any]:
        counts = batch.counts()
        if created:
            state = "BATCH_STATE_PENDING"
        elif not batch.ended:
            state = "BATCH_STATE_RUNNING"
        else:
            state = {
                "completed": "BATCH_STATE_SUCCEEDED",
                "expired": "BATCH_STATE_EXPIRED",
                "canceled": "BATCH_STATE_CANCELLED",
            }[batch.end_reason or "completed"]
        name = f"batches/{batch.id}"
        meta: dict[str, Any] = {
            "@type": _BATCH_TYPE,
            "model": f"models/{batch.info['model']}",
            "displayName": batch.info.get("displayName", ""),
            "createTime": rfc3339(batch.created_at),
            "updateTime": rfc3339(batch.ended_at or time.time()),
            "batchStats": {
                "requestCount": str(len(batch.items)),
                "successfulRequestCount": str(counts["succeeded"]),
                "failedRequestCount": str(counts["errored"] + counts["expired"] + counts["canceled"]),
                "pendingRequestCount": str(counts["pending"]),
            },
            "state": state,
            "name": name,
        }
        op: dict[str, Any] = {"name": name, "metadata": meta, "done": batch.ended}
        if batch.ended:
            meta["endTime"] = rfc3339(batch.ended_at or time.time())
            output = {"inlinedResponses": {"inlinedResponses": [self._inlined(item) for item in batch.items]}}
            meta["output"] = output
            op["response"] = {"@type": _OUTPUT_TYPE, **output}
        return op

    def _inlined(self, item: BatchItem) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if item.state == "succeeded" and item.completion is not None and item.prompt is not None:
            out["response"] = render_generate(item.prompt, item.completion)
        else:
            status, message = {
                "errored": (item.error.status if item.error else 500, item.failure or "failed"),
                "expired": (504, "The batch expired before this request ran."),
                "canceled": (499, "The batch was cancelled before this request ran."),
            }.get(item.state, (500, "not run"))
            out["error"] = {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
        if "metadata" in item.extra:
            out["metadata"] = item.extra["metadata"]
        return out

    def _batch_or_404(self, name: str) -> Batch:
        batch = self.engine.batches.get(name.removeprefix("batches/"), "gemini")
        if batch is None:
            raise WireError(f"Batch batches/{name} not found.", 404)
        return batch

    def get_batch(self, inc: Incoming, name: str) -> Outgoing:
        """``GET /{version}/batches/{name}``."""
        return Outgoing.json(200, self._operation(self._batch_or_404(name)))

    def list_batches(self, inc: Incoming) -> Outgoing:
        """``GET /{version}/batches``."""
        return Outgoing.json(
            200, {"operations": [self._operation(b) for b in self.engine.batches.all("gemini")]}
        )

    def cancel_batch(self, inc: Incoming, name: str) -> Outgoing:
        """``POST /{version}/batches/{name}:cancel`` (an empty answer, as Google sends)."""
        self._batch_or_404(name)
        self.engine.batches.cancel(name.removeprefix("batches/"), "gemini")
        return Outgoing.json(200, {})

    def delete_batch(self, inc: Incoming, name: str) -> Outgoing:
        """``DELETE /{version}/batches/{name}``."""
        self._batch_or_404(name)
        self.engine.batches.delete(name.removeprefix("batches/"), "gemini")
        return Outgoing.json(200, {})


__all__ = ["GeminiWire", "google_duration", "parse_generate", "render_generate"]
