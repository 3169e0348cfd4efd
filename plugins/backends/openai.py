"""The ``openai`` backend: chat completions through the official OpenAI SDK.

Works with the OpenAI API, Azure OpenAI (``azure_endpoint`` + ``api_version``)
and OpenAI-compatible servers such as vLLM, Ollama and LM Studio (``base_url``).
Images are sent as ``image_url`` content parts holding ``data:`` URLs. The
SDK's own retries are off: :class:`pptarena.models.ModelClient` retries.
"""

from __future__ import annotations

from typing import Any, Literal

import pptarena
from pptarena.models import BackendBase, BackendOptions, Completion, ImagePart, Message, ModelError, Usage
from pptarena.types import ComponentContext, ComponentUnavailable
from pydantic import Field, SecretStr, model_validator

from ._sdk import check_params, map_sdk_error, plain_headers, resolve_secret

PROVIDER = "openai"
INSTALL_HINT = "install with: pip install 'pptarena[openai]'"
KNOWN_PARAMS = frozenset(
    {"temperature", "max_tokens", "top_p", "stop", "seed", "response_format", "extra_body"}
)


class OpenAIOptions(BackendOptions):
    """Options of the ``openai`` backend (``[backends.openai]``)."""

    base_url: str | None = Field(
        None, description="e.g. http://localhost:8000/v1 for vLLM; default: the OpenAI API"
    )
    api_key: SecretStr | None = Field(
        None, description='use { env = "VAR" }; default $OPENAI_API_KEY (Azure: $AZURE_OPENAI_API_KEY)'
    )
    organization: str | None = None
    project: str | None = None
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


class OpenAIBackend(BackendBase):
    """Chat completions through the official ``openai`` SDK (OpenAI, Azure OpenAI, compatible servers)."""

    Options = OpenAIOptions

    def __init__(self, options: OpenAIOptions, context: ComponentContext):
        super().__init__(options, context)
        try:
            import openai
        except ImportError as exc:
            raise ComponentUnavailable(f"the openai backend needs the openai SDK; {INSTALL_HINT}") from exc
        self.options: OpenAIOptions = options
        headers = plain_headers(options.default_headers)
        env_var = "AZURE_OPENAI_API_KEY" if options.azure_endpoint else "OPENAI_API_KEY"
        key = resolve_secret(options.api_key, env_var)
        if key is None:
            if options.base_url is None:
                raise ComponentUnavailable(
                    f'the openai backend has no API key: set ${env_var} or api_key = {{ env = "VAR" }}'
                )
            key = "not-needed"  # local OpenAI-compatible servers usually ignore the key
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
        check_params(PROVIDER, params, KNOWN_PARAMS)
        body: dict[str, Any] = {
            "model": model,
            "messages": to_openai_messages(messages, self.options.image_detail),
        }
        for name in ("temperature", "top_p", "stop", "seed", "response_format"):
            if params.get(name) is not None:
                body[name] = params[name]
        if params.get("max_tokens") is not None:
            body[self._max_tokens_field] = int(params["max_tokens"])
        extra = {**self.options.extra_body, **(params.get("extra_body") or {})}
        if extra:
            body["extra_body"] = extra
        return body

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """One chat completion; SDK errors become :class:`ModelError` / :class:`TransientModelError`."""
        body = self.request_body(messages, model, params)
        try:
            response = self._client.chat.completions.create(**body)
        except Exception as exc:
            mapped = map_sdk_error(exc, PROVIDER, self._secrets)
            if mapped is None:
                raise
            raise mapped from None
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelError(f"openai: the response for {model} has no choices")
        choice = choices[0]
        text = choice.message.content or ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            model=getattr(response, "model", None) or model,
            usage=Usage(
                input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                calls=1,
            ),
            raw=response.model_dump(mode="json", exclude_none=True),
            finish_reason=choice.finish_reason,
        )

    def close(self) -> None:
        """Close the SDK's HTTP connections."""
        self._client.close()


@pptarena.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``openai`` backend."""
    register("openai", OpenAIBackend)
