"""The OpenAI wire format: chat completions, the Responses API, models, files and batches.

Routes (under ``/v1``, the SDK's ``base_url`` being ``<sim.url>/v1``):

* ``POST /chat/completions`` — text and ``image_url`` parts, ``tools`` / ``tool_calls``,
  ``response_format`` (``json_object``, ``json_schema``), ``n``;
* ``POST /responses`` — ``input`` (a string or items: messages with ``input_text`` /
  ``input_image``, ``function_call``, ``function_call_output``, ``computer_call_output``),
  ``instructions``, ``tools``, ``text.format``; ``output`` items and usage as OpenAI sends them;
* ``GET /models``, ``GET /models/{id}``;
* ``POST /files`` (multipart, ``purpose``), ``GET /files``, ``GET /files/{id}``,
  ``GET /files/{id}/content``, ``DELETE /files/{id}``;
* ``POST /batches`` (``input_file_id``, ``endpoint`` = ``/v1/chat/completions`` or
  ``/v1/responses``, ``completion_window`` = ``24h``), ``GET /batches``, ``GET /batches/{id}``,
  ``POST /batches/{id}/cancel``. Results go to an output file (one line per succeeded
  request: ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``)
  and an error file (failed requests with their error response; expired ones with
  ``"error": {"code": "batch_expired", ...}``).

Every generation answer carries ``x-ratelimit-*`` headers for the limits in force; a 429 adds
``retry-after`` and ``retry-after-ms``. Streaming (``"stream": true``) is refused with a 400.

Why it is long: it holds two generation APIs (chat completions and the Responses API) plus the
Files and Batch routes whose output and error files re-render each request through
:func:`render_chat` or :func:`render_response`; the Files/Batch part (``create_file`` to
``list_batches``) could move to its own module (not done yet), keeping the generation format
here.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from pptarena.models.sim.batches import Batch, BatchItem
from pptarena.models.sim.httpio import Incoming, Outgoing, parse_multipart
from pptarena.models.sim.limits import go_duration, openai_headers, retry_headers
from pptarena.models.sim.prompt import Prompt, PromptBuilder, WireError, as_int, decode_data_url
from pptarena.models.sim.tool_turns import check_chat_tool_turns, check_responses_tool_turns
from pptarena.models.sim.wire import Wire, html_502, new_id

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.completion import Completion
    from pptarena.models.sim.engine import Engine
    from pptarena.models.sim.limits import LimitDecision

BATCH_ENDPOINTS = ("/v1/chat/completions", "/v1/responses")
DEFAULT_MODELS = ("gpt-sim", "gpt-sim-mini")
DAY = 24 * 3600
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error"}


def mask_key(key: str) -> str:
    """A key as OpenAI echoes it in a 401: its first 3 and last 4 characters."""
    return f"{key[:3]}{'*' * max(0, len(key) - 7)}{key[-4:]}" if len(key) > 10 else "***"


def _require_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("you must provide a model parameter")
    if body.get("stream"):
        raise WireError("streaming is not supported by the provider simulator; send stream=false")
    return model


def _function_tools(b: PromptBuilder, tools: Any, nested: bool) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise WireError("tools must be a list")
    for tool in tools:
        if not isinstance(tool, dict):
            raise WireError("every tool must be an object")
        fn = tool.get("function") if nested and isinstance(tool.get("function"), dict) else tool
        name = fn.get("name") or tool.get("type")
        b.tool(name, tool, fn.get("parameters"))


def _json_format(prompt: Prompt, fmt: Any, schema_key: str) -> None:
    if not isinstance(fmt, dict):
        return
    kind = fmt.get("type")
    if kind == "json_object":
        prompt.json_mode = True
    elif kind == "json_schema":
        prompt.json_mode = True
        holder = fmt.get(schema_key) if schema_key else fmt
        schema = holder.get("schema") if isinstance(holder, dict) else None
        prompt.json_schema = schema if isinstance(schema, dict) else None


def parse_chat(body: dict[str, Any], image_tokens: int) -> Prompt:
    """A chat-completions body as a :class:`Prompt` (tools first, then the messages)."""
    b = PromptBuilder("openai", "chat", _require_model(body), image_tokens)
    b.prompt.body = body
    _function_tools(b, body.get("tools"), nested=True)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError("messages must be a non-empty list")
    for m in messages:
        if not isinstance(m, dict):
            raise WireError("every message must be an object")
        role = {"developer": "system", "tool": "user", "function": "user"}.get(m.get("role"), m.get("role"))
        if role not in ("system", "user", "assistant"):
            raise WireError(f"unknown message role {m.get('role')!r}")
        b.next_message()
        content = m.get("content")
        if isinstance(content, str):
            b.text(role, content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    raise WireError("every content part must be an object")
                if part.get("type") == "text":
                    b.text(role, str(part.get("text", "")))
                elif part.get("type") == "image_url":
                    url = (part.get("image_url") or {}).get("url")
                    if not isinstance(url, str):
                        raise WireError("an image_url part needs image_url.url")
                    b.image(role, decode_data_url(url))
                else:
                    b.text(role, part)
        elif content is not None:
            raise WireError("message content must be a string or a list of parts")
        for call in m.get("tool_calls") or []:
            fn = (call.get("function") or {}) if isinstance(call, dict) else {}
            b.text(role, f"{fn.get('name', '')}({fn.get('arguments', '')})")
    check_chat_tool_turns(messages)
    p = b.prompt
    p.max_tokens = as_int(body.get("max_completion_tokens"), "max_completion_tokens") or as_int(
        body.get("max_tokens"), "max_tokens"
    )
    _json_format(p, body.get("response_format"), "json_schema")
    return p


def parse_responses(body: dict[str, Any], image_tokens: int) -> Prompt:
    """A Responses-API body as a :class:`Prompt` (tools, instructions, then the input items)."""
    b = PromptBuilder("openai", "responses", _require_model(body), image_tokens)
    b.prompt.body = body
    _function_tools(b, body.get("tools"), nested=False)
    if isinstance(body.get("instructions"), str):
        b.text("system", body["instructions"])
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise WireError("input must be a string or a non-empty list of items")
    for item in items:
        if not isinstance(item, dict):
            raise WireError("every input item must be an object")
        kind = item.get("type", "message")
        b.next_message()
        if kind == "message" or "role" in item:
            role = {"developer": "system"}.get(item.get("role"), item.get("role"))
            if role not in ("system", "user", "assistant"):
                raise WireError(f"unknown input role {item.get('role')!r}")
            content = item.get("content")
            parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else content
            for part in parts if isinstance(parts, list) else []:
                if not isinstance(part, dict):
                    raise WireError("every content part must be an object")
                if part.get("type") in ("input_text", "output_text", "text"):
                    b.text(role, str(part.get("text", "")))
                elif part.get("type") == "input_image":
                    url = part.get("image_url") or part.get("file_id") or ""
                    b.image(role, decode_data_url(str(url)))
                else:
                    b.text(role, part)
        elif kind == "function_call":
            b.text("assistant", f"{item.get('name', '')}({item.get('arguments', '')})")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            b.text("user", item.get("output", ""))
        elif kind == "computer_call_output":
            shot = item.get("output") or {}
            b.image("user", decode_data_url(str(shot.get("image_url", ""))))
        elif kind == "reasoning":
            continue
        else:
            b.text("assistant" if kind.endswith("_call") else "user", item)
    check_responses_tool_turns(items, body.get("previous_response_id"))
    p = b.prompt
    p.max_tokens = as_int(body.get("max_output_tokens"), "max_output_tokens")
    text = body.get("text")
    _json_format(p, text.get("format") if isinstance(text, dict) else None, "")
    return p


def _usage_chat(c: Completion) -> dict[str, Any]:
    return {
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.output_tokens,
        "total_tokens": c.prompt_tokens + c.output_tokens,
        "prompt_tokens_details": {"cached_tokens": c.cache.read, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def render_chat(prompt: Prompt, c: Completion) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": c.reply.text if (c.reply.text or not c.reply.tool_calls) else None,
        "refusal": None,
        "annotations": [],
    }
    if c.reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": new_id("call_"),
                "type": "function",
                "function": {"name": t.name, "arguments": t.arguments},
            }
            for t in c.reply.tool_calls
        ]
    n = prompt.body.get("n") if isinstance(prompt.body.get("n"), int) else 1
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": prompt.model,
        "choices": [
            {"index": i, "message": message, "logprobs": None, "finish_reason": c.finish}
            for i in range(max(1, min(n, 8)))
        ],
        "usage": _usage_chat(c),
        "service_tier": "default",
        "system_fingerprint": "fp_provider_sim",
    }


def render_response(prompt: Prompt, c: Completion) -> dict[str, Any]:
    """A Responses-API ``response`` object."""
    output: list[dict[str, Any]] = []
    if c.reply.text or not c.reply.tool_calls:
        output.append(
            {
                "type": "message",
                "id": new_id("msg_"),
                "status": "completed" if c.finish != "length" else "incomplete",
                "role": "assistant",
                "content": [{"type": "output_text", "text": c.reply.text, "annotations": [], "logprobs": []}],
            }
        )
    for t in c.reply.tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": new_id("fc_"),
                "call_id": new_id("call_"),
                "name": t.name,
                "arguments": t.arguments,
                "status": "completed",
            }
        )
    body = prompt.body
    fmt = body.get("text") if isinstance(body.get("text"), dict) else {"format": {"type": "text"}}
    return {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if c.finish == "length" else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if c.finish == "length" else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": prompt.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": bool(body.get("store", False)),
        "temperature": body.get("temperature", 1.0),
        "text": fmt,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": {
            "input_tokens": c.prompt_tokens,
            "input_tokens_details": {"cached_tokens": c.cache.read},
            "output_tokens": c.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": c.prompt_tokens + c.output_tokens,
        },
        "user": None,
        "metadata": body.get("metadata") or {},
    }


class OpenAIWire(Wire):
    """OpenAI's REST API (see the module docstring)."""

    name = "openai"
    routes = [
        ("POST", "/v1/chat/completions", "chat"),
        ("POST", "/v1/responses", "responses"),
        ("GET", "/v1/models", "list_models"),
        ("GET", "/v1/models/{id}", "get_model"),
        ("POST", "/v1/files", "create_file"),
        ("GET", "/v1/files", "list_files"),
        ("GET", "/v1/files/{id}", "get_file"),
        ("DELETE", "/v1/files/{id}", "delete_file"),
        ("GET", "/v1/files/{id}/content", "file_content"),
        ("POST", "/v1/batches", "create_batch"),
        ("GET", "/v1/batches", "list_batches"),
        ("GET", "/v1/batches/{id}", "get_batch"),
        ("POST", "/v1/batches/{id}/cancel", "cancel_batch"),
    ]

    def __init__(self, engine: Engine):
        super().__init__(engine)
        self._files_lock = threading.Lock()
        self._failed: dict[str, dict[str, Any]] = {}

    # -- errors --------------------------------------------------------------------

    def error(
        self,
        status: int,
        message: str,
        kind: str | None = None,
        code: str | None = None,
        param: str | None = None,
    ) -> Outgoing:
        """``{"error": {"message", "type", "param", "code"}}``."""
        kind = kind or _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        payload = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        return Outgoing.json(status, payload, self.request_headers())

    def refused(self, exc: WireError) -> Outgoing:
        """The error body with the refusal's ``param`` and ``code``."""
        return self.error(exc.status, exc.message, code=exc.code, param=exc.param)

    def unauthorized(self, api_key: str | None) -> Outgoing:
        """401 ``invalid_api_key``."""
        if not api_key:
            msg = (
                "You didn't provide an API key. You need to provide your API key in an Authorization header."
            )
        else:
            msg = f"Incorrect API key provided: {mask_key(api_key)}. The provider simulator refuses this key."
        return self.error(401, msg, code="invalid_api_key")

    def model_not_found(self, model: str) -> Outgoing:
        """404 ``model_not_found``."""
        msg = f"The model `{model}` does not exist or you do not have access to it."
        return self.error(404, msg, code="model_not_found")

    def rate_limited(self, decision: LimitDecision, model: str) -> Outgoing:
        """429 ``rate_limit_exceeded`` with ``retry-after`` / ``retry-after-ms``."""
        if decision.reason == "too_large":
            tpm = decision.tokens.limit if decision.tokens else 0
            msg = (
                f"Request too large for {model} in organization org-provider-sim on tokens per min (TPM): "
                f"Limit {tpm}, Requested {decision.cost}. The input or output tokens must be reduced in "
                "order to run successfully."
            )
            return self.error(429, msg, "tokens", "rate_limit_exceeded")
        view = decision.requests if decision.reason == "requests" else decision.tokens
        assert view is not None and decision.retry_after is not None
        unit = "requests per min (RPM)" if decision.reason == "requests" else "tokens per min (TPM)"
        asked = 1 if decision.reason == "requests" else decision.cost
        msg = (
            f"Rate limit reached for {model} in organization org-provider-sim on {unit}: Limit {view.limit}, "
            f"Used {view.limit - view.remaining}, Requested {asked}. Please try again in "
            f"{go_duration(decision.retry_after)}."
        )
        out = self.error(429, msg, decision.reason, "rate_limit_exceeded")
        out.headers.update(retry_headers(decision))
        return out

    def fault_error(self, kind: str) -> Outgoing:
        """500, an HTML 502, or 503 (also for ``529``: OpenAI's overloaded answer)."""
        if kind == "500":
            return self.error(500, "The server had an error while processing your request. Sorry about that!")
        if kind == "502":
            return html_502()
        return self.error(503, "The server is overloaded or not ready yet.", code="overloaded")

    def limit_headers(self, decision: LimitDecision) -> dict[str, str]:
        """``x-ratelimit-*``."""
        return openai_headers(decision)

    # -- generation ----------------------------------------------------------------

    def render(self, prompt: Prompt, completion: Completion) -> dict[str, Any]:
        """A chat completion or a response, by the prompt's endpoint."""
        return (
            render_response(prompt, completion)
            if prompt.endpoint == "responses"
            else render_chat(prompt, completion)
        )

    def chat(self, inc: Incoming) -> Outgoing:
        """``POST /v1/chat/completions``."""
        return self.generate(inc, parse_chat(inc.json_object(), self.engine.config.image_tokens))

    def responses(self, inc: Incoming) -> Outgoing:
        """``POST /v1/responses``."""
        return self.generate(inc, parse_responses(inc.json_object(), self.engine.config.image_tokens))

    # -- models --------------------------------------------------------------------

    def _model(self, model_id: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 1700000000, "owned_by": "provider-sim"}

    def list_models(self, inc: Incoming) -> Outgoing:
        """``GET /v1/models``."""
        names = self.engine.config.models or DEFAULT_MODELS
        return Outgoing.json(200, {"object": "list", "data": [self._model(m) for m in names]})

    def get_model(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/models/{id}``."""
        models = self.engine.config.models
        if models is not None and id not in models:
            return self.model_not_found(id)
        return Outgoing.json(200, self._model(id))

    # -- files ---------------------------------------------------------------------

    def create_file(self, inc: Incoming) -> Outgoing:
        """``POST /v1/files`` (multipart: ``purpose`` and ``file``)."""
        fields = parse_multipart(inc.headers.get("content-type", ""), inc.body)
        if "file" not in fields:
            raise WireError("the upload has no 'file' field")
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", "replace").strip()
        if not purpose:
            raise WireError("the upload has no 'purpose' field")
        filename, data = fields["file"]
        stored = self.engine.files.add(filename or "upload", purpose, data)
        return Outgoing.json(200, stored.to_json())

    def list_files(self, inc: Incoming) -> Outgoing:
        """``GET /v1/files``."""
        data = [f.to_json() for f in self.engine.files.all()]
        return Outgoing.json(200, {"object": "list", "data": data, "has_more": False})

    def _file_or_404(self, file_id: str) -> Any:
        stored = self.engine.files.get(file_id)
        if stored is None:
            raise WireError(f"No such File object: {file_id}", 404)
        return stored

    def get_file(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/files/{id}``."""
        return Outgoing.json(200, self._file_or_404(id).to_json())

    def delete_file(self, inc: Incoming, id: str) -> Outgoing:
        """``DELETE /v1/files/{id}``."""
        self._file_or_404(id)
        self.engine.files.delete(id)
        return Outgoing.json(200, {"id": id, "object": "file", "deleted": True})

    def file_content(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/files/{id}/content`` (the bytes as stored)."""
        return Outgoing(200, self._file_or_404(id).data, content_type="application/octet-stream")

    # -- batches -------------------------------------------------------------------

    def create_batch(self, inc: Incoming) -> Outgoing:
        """``POST /v1/batches``: validate the input file and start the batch."""
        body = inc.json_object()
        endpoint = body.get("endpoint")
        if endpoint not in BATCH_ENDPOINTS:
            raise WireError(f"endpoint must be one of {', '.join(BATCH_ENDPOINTS)} in the provider simulator")
        if body.get("completion_window") != "24h":
            raise WireError("completion_window must be '24h'")
        file_id = body.get("input_file_id")
        stored = self._file_or_404(str(file_id))
        items, errors = self._batch_items(stored.data, endpoint)
        info = {
            "endpoint": endpoint,
            "input_file_id": file_id,
            "completion_window": "24h",
            "metadata": body.get("metadata"),
        }
        if errors:
            batch_id = new_id("batch_")
            now = int(time.time())
            failed = self._batch_json_base(batch_id, info, now) | {
                "status": "failed",
                "failed_at": now,
                "errors": {"object": "list", "data": errors},
            }
            self._failed[batch_id] = failed
            self.engine.stats.batch(submitted=1, ended=1)
            return Outgoing.json(200, failed)
        batch = self.engine.batches.create("openai", inc.api_key or "", items, info, "batch_")
        validating = {
            "status": "validating",
            "in_progress_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
        return Outgoing.json(200, self._batch_json(batch) | validating)

    def _batch_items(self, data: bytes, endpoint: str) -> tuple[list[BatchItem], list[dict[str, Any]]]:
        items: list[BatchItem] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        config = self.engine.config
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                errors.append(
                    {"code": "invalid_json_line", "message": "This line is not valid JSON.", "line": n}
                )
                continue
            cid = obj.get("custom_id") if isinstance(obj, dict) else None
            if not isinstance(cid, str) or not cid:
                errors.append(
                    {"code": "missing_required_parameter", "message": "custom_id is missing.", "line": n}
                )
                continue
            if cid in seen:
                errors.append(
                    {"code": "duplicate_custom_id", "message": f"custom_id {cid} repeats.", "line": n}
                )
                continue
            seen.add(cid)
            if (
                obj.get("method") != "POST"
                or obj.get("url") != endpoint
                or not isinstance(obj.get("body"), dict)
            ):
                errors.append(
                    {
                        "code": "invalid_request",
                        "message": f"method must be POST and url {endpoint}.",
                        "line": n,
                    }
                )
                continue
            try:
                parse = parse_responses if endpoint == "/v1/responses" else parse_chat
                prompt = parse(obj["body"], config.image_tokens)
                if config.models is not None and prompt.model not in config.models:
                    raise WireError(f"The model `{prompt.model}` does not exist.", 404, "model_not_found")
                items.append(BatchItem(cid, prompt))
            except WireError as exc:
                items.append(BatchItem(cid, None, error=exc))
        if not items and not errors:
            errors.append({"code": "empty_file", "message": "The input file has no requests.", "line": None})
        return items, errors

    def _batch_json_base(self, batch_id: str, info: dict[str, Any], created: int) -> dict[str, Any]:
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": info["endpoint"],
            "errors": None,
            "input_file_id": info["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": created,
            "in_progress_at": None,
            "expires_at": created + DAY,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": info.get("metadata"),
        }

    def _batch_json(self, batch: Batch) -> dict[str, Any]:
        created = int(batch.created_at)
        out = self._batch_json_base(batch.id, batch.info, created)
        counts = batch.counts()
        out["request_counts"] = {
            "total": len(batch.items),
            "completed": counts["succeeded"],
            "failed": counts["errored"] + counts["expired"],
        }
        out["in_progress_at"] = created
        out["status"] = "cancelling" if batch.cancel_requested_at is not None else "in_progress"
        if batch.cancel_requested_at is not None:
            out["cancelling_at"] = int(batch.cancel_requested_at)
        if batch.ended:
            ended = int(batch.ended_at or time.time())
            self._write_result_files(batch)
            out["output_file_id"] = batch.info.get("output_file_id")
            out["error_file_id"] = batch.info.get("error_file_id")
            out["status"] = {"completed": "completed", "expired": "expired", "canceled": "cancelled"}[
                batch.end_reason or "completed"
            ]
            out["finalizing_at"] = ended
            key = {"completed": "completed_at", "expired": "expired_at", "canceled": "cancelled_at"}
            out[key[batch.end_reason or "completed"]] = ended
        return out

    def _write_result_files(self, batch: Batch) -> None:
        with self._files_lock:
            if batch.info.get("files_written"):
                return
            output: list[str] = []
            errors: list[str] = []
            for item in batch.items:
                line: dict[str, Any] = {"id": new_id("batch_req_"), "custom_id": item.custom_id}
                if item.state == "succeeded" and item.completion is not None and item.prompt is not None:
                    body = self.render(item.prompt, item.completion)
                    line |= {"response": {"status_code": 200, "request_id": new_id("req_"), "body": body}}
                    output.append(json.dumps(line | {"error": None}))
                elif item.state == "errored":
                    status = item.error.status if item.error else 500
                    kind = "server_error" if status >= 500 else "invalid_request_error"
                    param, code = (item.error.param, item.error.code) if item.error else (None, None)
                    err = {"message": item.failure, "type": kind, "param": param, "code": code}
                    line |= {
                        "response": {
                            "status_code": status,
                            "request_id": new_id("req_"),
                            "body": {"error": err},
                        }
                    }
                    errors.append(json.dumps(line | {"error": None}))
                elif item.state == "expired":
                    err = {
                        "code": "batch_expired",
                        "message": "This request could not be executed before the completion window expired.",
                    }
                    errors.append(json.dumps(line | {"response": None, "error": err}))
            files = self.engine.files
            if output:
                stored = files.add(
                    f"{batch.id}_output.jsonl", "batch_output", ("\n".join(output) + "\n").encode()
                )
                batch.info["output_file_id"] = stored.id
            if errors:
                stored = files.add(
                    f"{batch.id}_error.jsonl", "batch_output", ("\n".join(errors) + "\n").encode()
                )
                batch.info["error_file_id"] = stored.id
            batch.info["files_written"] = True

    def _batch_or_404(self, batch_id: str) -> Batch:
        batch = self.engine.batches.get(batch_id, "openai")
        if batch is None:
            raise WireError(f"No batch found with id '{batch_id}'.", 404)
        return batch

    def get_batch(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/batches/{id}``."""
        if id in self._failed:
            return Outgoing.json(200, self._failed[id])
        return Outgoing.json(200, self._batch_json(self._batch_or_404(id)))

    def cancel_batch(self, inc: Incoming, id: str) -> Outgoing:
        """``POST /v1/batches/{id}/cancel``."""
        if id in self._failed:
            return Outgoing.json(200, self._failed[id])
        self._batch_or_404(id)
        batch = self.engine.batches.cancel(id, "openai")
        assert batch is not None
        return Outgoing.json(200, self._batch_json(batch))

    def list_batches(self, inc: Incoming) -> Outgoing:
        """``GET /v1/batches``."""
        data = [self._batch_json(b) for b in self.engine.batches.all("openai")]
        data += list(self._failed.values())
        return Outgoing.json(
            200,
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": False,
            },
        )


__all__ = ["OpenAIWire", "mask_key", "parse_chat", "parse_responses", "render_chat", "render_response"]
