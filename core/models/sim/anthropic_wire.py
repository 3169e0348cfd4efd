"""The Anthropic wire format: messages, token counting, models and Message Batches.

Routes (the SDK's ``base_url`` is ``sim.url``):

* ``POST /v1/messages`` — ``system`` (a string or text blocks), content blocks ``text``,
  ``image`` (base64 or URL source), ``document``, ``tool_use``, ``tool_result``; ``tools``;
  ``cache_control`` on tools, system blocks and content blocks (at most 4, ``ttl`` ``5m`` or
  ``1h``) or on the request (marks its last block); ``output_format`` / ``output_config``
  JSON schemas;
* ``POST /v1/messages/count_tokens`` — ``{"input_tokens": n}`` (no limits apply);
* ``GET /v1/models``, ``GET /v1/models/{id}`` (the server sends requests carrying
  ``anthropic-version`` or ``x-api-key`` here);
* ``POST /v1/messages/batches`` (``{"requests": [{"custom_id", "params"}]}``), ``GET`` (list),
  ``GET /v1/messages/batches/{id}``, ``GET .../results`` (JSON lines: ``succeeded``,
  ``errored``, ``canceled``, ``expired`` results), ``POST .../cancel``, ``DELETE``.

Generation answers carry ``anthropic-ratelimit-*`` headers; a 429 (``rate_limit_error``) adds
``retry-after`` in whole seconds. Streaming is refused with a 400.

Why it is long: it is Anthropic's whole API surface for the simulator; the Message Batches
routes render each result with the same :func:`render_message` and error types as
``/v1/messages``, and splitting by route would scatter the ``cache_control`` and usage rules
(``input_tokens`` excluding cache reads and writes) that both share.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pptarena.models.sim.batches import Batch, BatchItem
from pptarena.models.sim.httpio import Incoming, Outgoing
from pptarena.models.sim.limits import anthropic_headers, retry_headers, rfc3339
from pptarena.models.sim.prompt import Prompt, PromptBuilder, WireError, as_int, decode_base64
from pptarena.models.sim.tool_turns import check_anthropic_tool_turns
from pptarena.models.sim.wire import Wire, html_502, new_id

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.models.sim.completion import Completion
    from pptarena.models.sim.limits import LimitDecision

MAX_BREAKPOINTS = 4
DEFAULT_MODELS = ("claude-sim", "claude-sim-haiku")
DAY = 24 * 3600
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    411: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _ttl(block: Any) -> str | None:
    control = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(control, dict):
        return None
    ttl = control.get("ttl", "5m")
    if ttl not in ("5m", "1h"):
        raise WireError("cache_control.ttl must be '5m' or '1h'")
    return ttl


def _image(b: PromptBuilder, role: str, block: dict[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, dict):
        raise WireError("an image block needs a source")
    if source.get("type") == "base64":
        b.image(role, decode_base64(source.get("data"), "image source"))
    elif source.get("type") == "url":
        b.image(role, str(source.get("url", "")).encode("utf-8"))
    else:
        b.image(role, json.dumps(source, sort_keys=True).encode("utf-8"))


def _content(b: PromptBuilder, role: str, content: Any) -> None:
    if isinstance(content, str):
        b.text(role, content)
        return
    if not isinstance(content, list):
        raise WireError("content must be a string or a list of blocks")
    for block in content:
        if not isinstance(block, dict):
            raise WireError("every content block must be an object")
        kind = block.get("type")
        if kind == "text":
            b.text(role, str(block.get("text", "")))
        elif kind == "image":
            _image(b, role, block)
        elif kind == "tool_use":
            b.text(role, f"{block.get('name', '')}({json.dumps(block.get('input'), sort_keys=True)})")
        elif kind == "tool_result":
            inner = block.get("content", "")
            if isinstance(inner, list):
                _content(b, role, inner)
            else:
                b.text(role, "" if inner is None else str(inner))
        elif kind in ("thinking", "redacted_thinking"):
            continue
        else:
            b.text(role, {k: v for k, v in block.items() if k != "cache_control"})
        b.mark_last(_ttl(block))


def parse_messages(body: dict[str, Any], image_tokens: int) -> Prompt:
    """A messages body as a :class:`Prompt` (tools, system, then the messages, Anthropic's order)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model: Field required")
    if body.get("stream"):
        raise WireError("streaming is not supported by the provider simulator; send stream=false")
    max_tokens = as_int(body.get("max_tokens"), "max_tokens")
    if max_tokens is None:
        raise WireError("max_tokens: Field required")
    b = PromptBuilder("anthropic", "messages", model, image_tokens)
    b.prompt.body = body
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise WireError("tools: Input should be a valid list")
    for tool in tools:
        if not isinstance(tool, dict):
            raise WireError("every tool must be an object")
        definition = {k: v for k, v in tool.items() if k != "cache_control"}
        b.tool(
            tool.get("name") or tool.get("type"), definition, tool.get("input_schema"), cache_ttl=_ttl(tool)
        )
    system = body.get("system")
    if isinstance(system, str):
        b.text("system", system)
    elif isinstance(system, list):
        for block in system:
            if not isinstance(block, dict) or block.get("type") != "text":
                raise WireError("system blocks must be text blocks")
            b.text("system", str(block.get("text", "")), cache_ttl=_ttl(block))
    elif system is not None:
        raise WireError("system must be a string or a list of text blocks")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError("messages: at least one message is required")
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise WireError("messages: each message needs role 'user' or 'assistant'")
        b.next_message()
        _content(b, m["role"], m.get("content"))
    check_anthropic_tool_turns(messages)
    b.mark_last(_ttl(body))
    marks = sum(1 for block in b.prompt.blocks if block.cache_ttl)
    if marks > MAX_BREAKPOINTS:
        raise WireError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marks}."
        )
    b.prompt.max_tokens = max_tokens
    fmt = body.get("output_format")
    if fmt is None and isinstance(body.get("output_config"), dict):
        fmt = body["output_config"].get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        b.prompt.json_mode = True
        b.prompt.json_schema = fmt.get("schema") if isinstance(fmt.get("schema"), dict) else None
    return b.prompt


def render_message(prompt: Prompt, c: Completion) -> dict[str, Any]:
    """A ``message`` object; ``input_tokens`` excludes cache reads and writes, as Anthropic counts."""
    content: list[dict[str, Any]] = []
    if c.reply.text or not c.reply.tool_calls:
        content.append({"type": "text", "text": c.reply.text})
    for t in c.reply.tool_calls:
        content.append(
            {"type": "tool_use", "id": new_id("toolu_"), "name": t.name, "input": t.parsed_arguments()}
        )
    cache = c.cache
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": prompt.model,
        "content": content,
        "stop_reason": _STOP[c.finish],
        "stop_sequence": None,
        "usage": {
            "input_tokens": c.prompt_tokens - cache.read - cache.written,
            "cache_creation_input_tokens": cache.written,
            "cache_read_input_tokens": cache.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": cache.write_5m,
                "ephemeral_1h_input_tokens": cache.write_1h,
            },
            "output_tokens": c.output_tokens,
            "service_tier": "standard",
        },
    }


class AnthropicWire(Wire):
    """Anthropic's REST API (see the module docstring)."""

    name = "anthropic"
    routes = [
        ("POST", "/v1/messages", "messages"),
        ("POST", "/v1/messages/count_tokens", "count_tokens"),
        ("GET", "/v1/models", "list_models"),
        ("GET", "/v1/models/{id}", "get_model"),
        ("POST", "/v1/messages/batches", "create_batch"),
        ("GET", "/v1/messages/batches", "list_batches"),
        ("GET", "/v1/messages/batches/{id}", "get_batch"),
        ("DELETE", "/v1/messages/batches/{id}", "delete_batch"),
        ("GET", "/v1/messages/batches/{id}/results", "batch_results"),
        ("POST", "/v1/messages/batches/{id}/cancel", "cancel_batch"),
    ]

    def request_headers(self) -> dict[str, str]:
        """``request-id``."""
        return {"request-id": new_id("req_")}

    # -- errors --------------------------------------------------------------------

    def error(self, status: int, message: str, kind: str | None = None) -> Outgoing:
        """``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
        kind = kind if kind in _ERROR_TYPES.values() else _ERROR_TYPES.get(status, "api_error")
        headers = self.request_headers()
        payload = {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": headers["request-id"],
        }
        return Outgoing.json(status, payload, headers)

    def unauthorized(self, api_key: str | None) -> Outgoing:
        """401 ``authentication_error``."""
        return self.error(401, "invalid x-api-key" if api_key else "x-api-key header is required")

    def model_not_found(self, model: str) -> Outgoing:
        """404 ``not_found_error``."""
        return self.error(404, f"model: {model}")

    def rate_limited(self, decision: LimitDecision, model: str) -> Outgoing:
        """429 ``rate_limit_error`` with ``retry-after``."""
        if decision.reason == "too_large":
            limit = decision.tokens.limit if decision.tokens else 0
            msg = (
                f"This request ({decision.cost} tokens) exceeds the rate limit for your organization "
                f"(org-provider-sim) of {limit} tokens per minute and can never be served."
            )
            return self.error(429, msg)
        view = decision.requests if decision.reason == "requests" else decision.tokens
        unit = "requests per minute" if decision.reason == "requests" else "tokens per minute"
        limit = view.limit if view else 0
        msg = (
            f"This request would exceed the rate limit for your organization (org-provider-sim) of {limit} "
            f"{unit}. For details, refer to https://docs.claude.com/en/api/rate-limits."
        )
        out = self.error(429, msg)
        out.headers["retry-after"] = retry_headers(decision)["retry-after"]
        return out

    def fault_error(self, kind: str) -> Outgoing:
        """500 ``api_error``, an HTML 502, 503 ``api_error`` or 529 ``overloaded_error``."""
        if kind == "500":
            return self.error(500, "Internal server error")
        if kind == "502":
            return html_502()
        if kind == "503":
            return self.error(503, "Service unavailable")
        return self.error(529, "Overloaded")

    def limit_headers(self, decision: LimitDecision) -> dict[str, str]:
        """``anthropic-ratelimit-*``."""
        return anthropic_headers(decision)

    # -- generation ----------------------------------------------------------------

    def render(self, prompt: Prompt, completion: Completion) -> dict[str, Any]:
        """A ``message``."""
        return render_message(prompt, completion)

    def messages(self, inc: Incoming) -> Outgoing:
        """``POST /v1/messages``."""
        return self.generate(inc, parse_messages(inc.json_object(), self.engine.config.image_tokens))

    def count_tokens(self, inc: Incoming) -> Outgoing:
        """``POST /v1/messages/count_tokens``."""
        body = dict(inc.json_object())
        body.setdefault("max_tokens", 1)
        prompt = parse_messages(body, self.engine.config.image_tokens)
        return Outgoing.json(200, {"input_tokens": prompt.total_tokens}, self.request_headers())

    # -- models --------------------------------------------------------------------

    @staticmethod
    def _model(model_id: str) -> dict[str, Any]:
        return {
            "type": "model",
            "id": model_id,
            "display_name": f"{model_id} (simulated)",
            "created_at": "2025-01-01T00:00:00Z",
        }

    def list_models(self, inc: Incoming) -> Outgoing:
        """``GET /v1/models``."""
        data = [self._model(m) for m in self.engine.config.models or DEFAULT_MODELS]
        return Outgoing.json(
            200, {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
        )

    def get_model(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/models/{id}``."""
        models = self.engine.config.models
        if models is not None and id not in models:
            return self.model_not_found(id)
        return Outgoing.json(200, self._model(id), self.request_headers())

    # -- batches -------------------------------------------------------------------

    def create_batch(self, inc: Incoming) -> Outgoing:
        """``POST /v1/messages/batches``."""
        requests = inc.json_object().get("requests")
        if not isinstance(requests, list) or not requests:
            raise WireError("requests: at least one request is required")
        items: list[BatchItem] = []
        seen: set[str] = set()
        config = self.engine.config
        for n, req in enumerate(requests):
            cid = req.get("custom_id") if isinstance(req, dict) else None
            if not isinstance(cid, str) or not _CUSTOM_ID.match(cid):
                raise WireError(f"requests.{n}.custom_id: must be 1-64 letters, digits, '_' or '-'")
            if cid in seen:
                raise WireError(f"Duplicate custom_id: {cid}")
            seen.add(cid)
            params = req.get("params")
            try:
                if not isinstance(params, dict):
                    raise WireError("params: Field required")
                prompt = parse_messages(params, config.image_tokens)
                if config.models is not None and prompt.model not in config.models:
                    raise WireError(f"model: {prompt.model}", 404)
                items.append(BatchItem(cid, prompt))
            except WireError as exc:
                items.append(BatchItem(cid, None, error=exc))
        batch = self.engine.batches.create("anthropic", inc.api_key or "", items, {}, "msgbatch_")
        return Outgoing.json(200, self._batch_json(batch, inc), self.request_headers())

    def _batch_json(self, batch: Batch, inc: Incoming) -> dict[str, Any]:
        counts = batch.counts()
        status = (
            "ended"
            if batch.ended
            else ("canceling" if batch.cancel_requested_at is not None else "in_progress")
        )
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": counts["pending"],
                "succeeded": counts["succeeded"],
                "errored": counts["errored"],
                "canceled": counts["canceled"],
                "expired": counts["expired"],
            },
            "ended_at": rfc3339(batch.ended_at) if batch.ended and batch.ended_at else None,
            "created_at": rfc3339(batch.created_at),
            "expires_at": rfc3339(batch.created_at + DAY),
            "archived_at": None,
            "cancel_initiated_at": rfc3339(batch.cancel_requested_at) if batch.cancel_requested_at else None,
            "results_url": f"{inc.base_url}/v1/messages/batches/{batch.id}/results" if batch.ended else None,
        }

    def _batch_or_404(self, batch_id: str) -> Batch:
        batch = self.engine.batches.get(batch_id, "anthropic")
        if batch is None:
            raise WireError(f"message batch {batch_id} not found", 404)
        return batch

    def get_batch(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/messages/batches/{id}``."""
        return Outgoing.json(200, self._batch_json(self._batch_or_404(id), inc), self.request_headers())

    def list_batches(self, inc: Incoming) -> Outgoing:
        """``GET /v1/messages/batches``."""
        data = [self._batch_json(b, inc) for b in self.engine.batches.all("anthropic")]
        return Outgoing.json(
            200,
            {
                "data": data,
                "has_more": False,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            },
        )

    def cancel_batch(self, inc: Incoming, id: str) -> Outgoing:
        """``POST /v1/messages/batches/{id}/cancel``."""
        self._batch_or_404(id)
        batch = self.engine.batches.cancel(id, "anthropic")
        assert batch is not None
        return Outgoing.json(200, self._batch_json(batch, inc), self.request_headers())

    def delete_batch(self, inc: Incoming, id: str) -> Outgoing:
        """``DELETE /v1/messages/batches/{id}`` (only once it has ended)."""
        batch = self._batch_or_404(id)
        if not batch.ended:
            raise WireError("Cannot delete a message batch that is still processing; cancel it first.")
        self.engine.batches.delete(id, "anthropic")
        return Outgoing.json(200, {"id": id, "type": "message_batch_deleted"}, self.request_headers())

    def batch_results(self, inc: Incoming, id: str) -> Outgoing:
        """``GET /v1/messages/batches/{id}/results``: one JSON line per request, in request order."""
        batch = self._batch_or_404(id)
        if not batch.ended:
            raise WireError(f"message batch {id} has not ended; its results are not available yet", 404)
        lines = []
        for item in batch.items:
            result: dict[str, Any] = {"type": item.state}
            if item.state == "succeeded" and item.completion is not None and item.prompt is not None:
                result["message"] = render_message(item.prompt, item.completion)
            elif item.state == "errored":
                status = item.error.status if item.error else 500
                kind = _ERROR_TYPES.get(status, "api_error")
                result["error"] = {"type": "error", "error": {"type": kind, "message": item.failure}}
            lines.append(json.dumps({"custom_id": item.custom_id, "result": result}))
        body = ("\n".join(lines) + "\n").encode("utf-8")
        return Outgoing(200, body, self.request_headers(), content_type="application/binary")


__all__ = ["AnthropicWire", "parse_messages", "render_message"]
