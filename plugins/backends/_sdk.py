"""Helpers shared by the SDK-based backends: the SDK import, credentials, error mapping, wire checks,
and the pieces of batch requests and results (:func:`wire_json`, :func:`batch_error`).

Both official SDKs (openai, anthropic) raise the same shapes of exception:
``APIStatusError`` subclasses with ``status_code`` and ``response``,
``APITimeoutError`` and ``APIConnectionError``. They are mapped here to
:class:`ModelError` / :class:`TransientModelError` with every credential
redacted and the SDK exception dropped from the chain (its text and its
request object may carry the key).
"""

from __future__ import annotations

import email.utils
import importlib
import json
import os
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from pydantic import SecretStr

from pptarena.models import ModelError, TransientModelError, redact_secrets
from pptarena.models.batch import BatchResult
from pptarena.models.messages import rate_headers_of
from pptarena.types import ComponentUnavailable

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_MAX_SERVER_MESSAGE = 500


def system_text(message: Any, backend: str) -> str:
    """The text of a system message; :class:`TypeError` naming ``backend`` when it holds anything else."""
    parts = message.parts()
    if any(not isinstance(p, str) for p in parts):
        raise TypeError(f"{backend} backend: system messages hold text only")
    return "".join(parts)


def resolve_secret(value: SecretStr | str | None, env_var: str) -> str | None:
    """The secret's plain value, else ``$env_var``, else None."""
    if isinstance(value, SecretStr):
        return value.get_secret_value() or None
    if value:
        return value
    return os.environ.get(env_var) or None


def import_sdk(provider: str, install_hint: str) -> ModuleType:
    """The official SDK module named ``provider`` (``openai``, ``anthropic``).

    Raises :class:`ComponentUnavailable` with ``install_hint`` when it is not installed.
    """
    try:
        return importlib.import_module(provider)
    except ImportError as exc:
        raise ComponentUnavailable(
            f"the {provider} backend needs the {provider} SDK; {install_hint}"
        ) from exc


def api_key(value: SecretStr | str | None, env_var: str, *, provider: str, base_url: str | None) -> str:
    """The key to hand the SDK: ``value``, else ``$env_var``.

    Without either, a placeholder when ``base_url`` names a server of one's own (local
    compatible servers usually ignore the key), else :class:`ComponentUnavailable` saying
    where the key goes.
    """
    key = resolve_secret(value, env_var)
    if key is not None:
        return key
    if base_url is None:
        raise ComponentUnavailable(
            f'the {provider} backend has no API key: set ${env_var} or api_key = {{ env = "VAR" }}'
        )
    return "not-needed"


def open_sdk(
    provider: str,
    install_hint: str,
    options: Any,
    env_var: str,
    extra_headers: dict[str, str] | None = None,
) -> tuple[ModuleType, str, dict[str, str]]:
    """What an SDK backend needs before it makes its client: the SDK, the key and the headers.

    ``options`` has ``default_headers``, ``api_key`` and ``base_url``; ``extra_headers`` go on
    top of the default ones. Raises :class:`ComponentUnavailable` (no SDK, then no key).
    """
    sdk = import_sdk(provider, install_hint)
    headers = plain_headers(options.default_headers) | (extra_headers or {})
    key = api_key(options.api_key, env_var, provider=provider, base_url=options.base_url)
    return sdk, key, headers


def call_sdk(
    create: Callable[..., Any], body: dict[str, Any], provider: str, secrets: Sequence[str | None]
) -> Any:
    """``create(**body)``; an SDK API error is raised as the one :func:`map_sdk_error` makes of it."""
    try:
        return create(**body)
    except Exception as exc:
        mapped = map_sdk_error(exc, provider, secrets)
        if mapped is None:
            raise
        raise mapped from None


def call_sdk_raw(
    api: Any, body: dict[str, Any], provider: str, secrets: Sequence[str | None]
) -> tuple[Any, dict[str, str]]:
    """``api.create(**body)`` through the SDK's raw-response access: ``(parsed response, rate-limit
    headers)``, the headers as :func:`~pptarena.models.messages.rate_headers_of` keeps them.

    ``api`` is an SDK resource (``client.chat.completions``, ``client.messages``...); one without
    ``with_raw_response`` is called plainly and gives no headers. SDK API errors are raised as
    :func:`map_sdk_error` makes them (a :class:`TransientModelError` carries the error's headers).
    """
    raw_api = getattr(api, "with_raw_response", None)
    if raw_api is None:
        return call_sdk(api.create, body, provider, secrets), {}

    def create(**kwargs: Any) -> tuple[Any, dict[str, str]]:
        raw = raw_api.create(**kwargs)
        return raw.parse(), rate_headers_of(getattr(raw, "headers", None))

    return call_sdk(create, body, provider, secrets)


def plain_headers(headers: dict[str, Any]) -> dict[str, str]:
    """Header values with secrets revealed, ready to hand to an SDK client (never logged)."""
    return {k: v.get_secret_value() if isinstance(v, SecretStr) else v for k, v in headers.items()}


def _retry_after(response: Any) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms`` (OpenAI, Azure) before ``retry-after``
    (seconds or an HTTP date); None without either."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            message = err.get("message")
        elif isinstance(err, str):
            message = err
    text = str(message if message else getattr(exc, "message", "") or exc)
    return text[:_MAX_SERVER_MESSAGE]


def map_sdk_error(exc: BaseException, provider: str, secrets: Sequence[str | None]) -> ModelError | None:
    """The :class:`ModelError` for an SDK exception, or None when ``exc`` is not an SDK API error.

    429, 408/409, 5xx and 529, timeouts and connection errors are transient;
    other statuses (400, 401, 403, 404, 422...) are not. A transient HTTP error carries the response's
    ``retry_after`` and rate-limit headers (``rate_headers``).
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, json.JSONDecodeError):
        # a 200 whose body is not JSON: a glitch of the server or a proxy in between, worth a retry
        return TransientModelError(f"{provider}: the server's answer is not valid JSON")
    if "APITimeoutError" in names:
        return TransientModelError(f"{provider}: request timed out")
    if "APIConnectionError" in names:
        return TransientModelError(f"{provider}: connection failed ({type(exc).__name__})")
    status = getattr(exc, "status_code", None)
    if "APIStatusError" in names and isinstance(status, int):
        detail = redact_secrets(_server_message(exc), secrets)
        request_id = getattr(exc, "request_id", None)
        suffix = f" [request id {request_id}]" if request_id else ""
        if status in RETRYABLE_STATUS or status >= 500:
            return TransientModelError(
                f"{provider}: HTTP {status}: {detail}{suffix}",
                status=status,
                retry_after=_retry_after(getattr(exc, "response", None)),
                rate_headers=rate_headers_of(getattr(getattr(exc, "response", None), "headers", None)),
            )
        hint = {
            401: ' (check the API key: set it in the environment or with api_key = { env = "VAR" })',
            403: " (the key lacks permission for this model or endpoint)",
            404: " (unknown model or wrong base_url / deployment)",
        }.get(status, "")
        return ModelError(f"{provider}: HTTP {status}: {detail}{hint}{suffix}", status=status)
    if "APIError" in names or "OpenAIError" in names or "AnthropicError" in names:
        return ModelError(f"{provider}: {redact_secrets(str(exc), secrets)[:_MAX_SERVER_MESSAGE]}")
    return None


def wire_json(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON an SDK sends for ``create(**body)``: ``body`` with its ``extra_body`` merged in at the
    top level (later keys win, as the openai and anthropic SDKs merge it). For batch requests,
    whose bodies are sent as data rather than through ``create``."""
    out = {k: v for k, v in body.items() if k != "extra_body"}
    out.update(body.get("extra_body") or {})
    return out


def batch_error(
    custom_id: str, kind: str, message: Any, status: int | None, secrets: Sequence[str | None]
) -> BatchResult:
    """A failed request's :class:`~pptarena.models.batch.BatchResult` (``kind`` ``errored``,
    ``expired`` or ``canceled``), its provider message redacted and cut to a readable length."""
    text = redact_secrets(str(message or kind), secrets)[:_MAX_SERVER_MESSAGE]
    return BatchResult(custom_id, error=text, kind=kind, status=status)


def check_params(provider: str, params: dict[str, Any], known: frozenset[str]) -> None:
    """Raise TypeError naming unknown call parameters."""
    unknown = sorted(set(params) - known)
    if unknown:
        raise TypeError(f"{provider} backend: unknown parameter(s) {unknown}; known: {sorted(known)}")
