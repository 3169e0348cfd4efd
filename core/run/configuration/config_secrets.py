"""Secrets in a run config: ``{ env = "VAR" }`` resolved from the environment when a config is
loaded, and literal secrets replaced by ``"***"`` wherever a config is stored (the manifest).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import SecretStr

from pptarena.trust.redact import add_secret

SECRET_KEY_HINTS = ("key", "token", "secret", "password", "passwd", "authorization", "cookie", "credential")
"""Key names whose literal string values are secrets (:func:`redact`)."""


def redact(value: Any, key: str = "") -> Any:
    """Replace literal secrets (keys named like key/token/secret/password/authorization/cookie/credential)
    by ``"***"``.
    """
    if isinstance(value, dict):
        if set(value) == {"env"}:
            return {"env": value["env"]}
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str) and any(h in key.lower() for h in SECRET_KEY_HINTS) and value:
        return "***"
    return value


def resolve_secrets(value: Any, path: str, errors: list[str], missing: list[str] | None) -> Any:
    """``value`` with every ``{ env = VAR }`` replaced by the variable's value as a :class:`SecretStr`.

    An unset variable is an error, or, when ``missing`` is a list (commands that never call a
    model), recorded there and replaced by an empty secret so the rest still validates.
    """
    if isinstance(value, dict):
        if set(value) == {"env"}:
            var = value["env"]
            if not isinstance(var, str) or not var:
                errors.append(f"{path}: {{ env = ... }} needs a variable name")
                return SecretStr("")
            if var not in os.environ:
                if missing is None:
                    errors.append(f"{path}: environment variable {var} is not set")
                else:
                    missing.append(f"{path}: {var}")
                return SecretStr("")
            add_secret(os.environ[var])  # the redactor masks it in everything the run writes or sends
            return SecretStr(os.environ[var])
        return {k: resolve_secrets(v, f"{path}.{k}", errors, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(v, f"{path}[{i}]", errors, missing) for i, v in enumerate(value)]
    return value
