"""Model plumbing shared by the ``arena author`` drafting commands.

* :func:`open_author_env` builds model clients and the renderer the way a run does: from a
  run config's ``[backends.*]`` / ``[renderer]`` tables when ``--config`` is given (a config
  holding only those tables is enough), else from the registered components' default options.
* :func:`extract_json` pulls one JSON value out of a model reply: the whole reply, a
  ```` ```json ```` (or bare) fence, or the first balanced ``{...}`` / ``[...]``.
* :func:`draft_with_retries` asks, validates, and on problems asks again with the problems fed
  back, a bounded number of times; every attempt is kept for the report.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena import replyjson
from pptarena.models import Message, ModelClient
from pptarena.types import PptArenaError

MAX_REPLY_CHARS = 400_000


class AuthorError(PptArenaError):
    """An authoring command cannot go on; the message says what and where."""


class ReplyParseError(AuthorError):
    """A model reply holds no usable JSON."""


# --------------------------------------------------------------------------- components


@dataclass
class AuthorEnv:
    """Model clients and the renderer for an authoring command (call :meth:`close` when done)."""

    components: Any
    registry: Any
    cache_dir: Path
    renderer_enabled: bool = True
    _renderer: Any = None

    def model(self, ref: str) -> ModelClient:
        """A client for ``"<backend>/<model>"`` (backend options from the config, else defaults)."""
        try:
            return self.components.model_client(ref)
        except (LookupError, ValueError) as exc:
            raise AuthorError(f"cannot use model {ref!r}: {exc}") from exc

    def renderer(self) -> Any:
        """The renderer (built on first use), or None when renders are switched off."""
        if not self.renderer_enabled:
            return None
        if self._renderer is None:
            self._renderer = self.components.renderer()
        return self._renderer

    def close(self) -> None:
        """Release the renderer's office processes and the backends."""
        self.components.close()


_PLACEHOLDER_TABLES = {"dataset": {"use": "demo"}, "agents": [{"use": "noop"}]}


def open_author_env(
    config_path: str | Path | None = None, *, renders: bool = True, renderer: str | None = None
) -> AuthorEnv:
    """An :class:`AuthorEnv` from a run config (or from defaults when ``config_path`` is None).

    A config used only for authoring may omit ``[dataset]`` and ``[[agents]]``.
    ``renderer`` overrides the config's renderer name.
    """
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.config import ConfigError, parse_config
    from pptarena.run.configuration.registry import get_registry

    registry = get_registry()
    data: dict[str, Any] = {}
    path = Path("author.toml").resolve()
    if config_path is not None:
        path = Path(config_path).expanduser().resolve()
        if not path.is_file():
            raise AuthorError(f"config file {path} does not exist")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise AuthorError(f"config {path} is not valid TOML: {exc}") from exc
    for key, value in _PLACEHOLDER_TABLES.items():
        if key not in data and not (key == "agents" and "agent" in data):
            data[key] = value
    if renderer is not None:
        data["renderer"] = {"use": renderer}
    try:
        config = parse_config(data, registry, path)
    except ConfigError as exc:
        raise AuthorError(str(exc)) from exc
    components = Components(config, registry)
    return AuthorEnv(components, registry, components.cache_dir, renderer_enabled=renders)


# --------------------------------------------------------------------------- parsing


def extract_json(text: str) -> Any:
    """The JSON value in a model reply (see :func:`pptarena.replyjson.extract_json`).

    :raises ReplyParseError: when nothing parses or the reply is too long.
    """
    if isinstance(text, str) and len(text) > MAX_REPLY_CHARS:
        raise ReplyParseError(f"the reply has {len(text)} characters (limit {MAX_REPLY_CHARS})")
    try:
        return replyjson.extract_json(text)
    except replyjson.ReplyParseError as exc:
        raise ReplyParseError(str(exc)) from None


# --------------------------------------------------------------------------- drafting loop


@dataclass
class Attempt:
    """One model call of a drafting loop and what validation found."""

    reply: str
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"reply": self.reply, "problems": self.problems}


@dataclass
class DraftResult:
    """The outcome of :func:`draft_with_retries`: the last parsed value and every attempt."""

    value: Any
    attempts: list[Attempt]

    @property
    def ok(self) -> bool:
        """True when the last attempt had no problems."""
        return bool(self.attempts) and not self.attempts[-1].problems

    @property
    def problems(self) -> list[str]:
        """Problems of the last attempt."""
        return self.attempts[-1].problems if self.attempts else ["no attempt was made"]

    def report(self) -> str:
        """A short human-readable account of the attempts."""
        lines = []
        for i, attempt in enumerate(self.attempts, 1):
            if attempt.problems:
                lines.append(f"attempt {i}: {len(attempt.problems)} problem(s)")
                lines += [f"  - {p}" for p in attempt.problems[:20]]
                if len(attempt.problems) > 20:
                    lines.append(f"  ... and {len(attempt.problems) - 20} more")
            else:
                lines.append(f"attempt {i}: ok")
        return "\n".join(lines)


def feedback_message(problems: list[str], what: str) -> str:
    """The user turn sent back to the model after a draft failed validation."""
    listed = "\n".join(f"- {p}" for p in problems[:30])
    return (
        f"Your {what} has problems:\n{listed}\n\n"
        f"Fix every problem and reply with the complete corrected {what} in the same JSON format."
    )


def draft_with_retries(
    client: ModelClient,
    messages: list[Message],
    validate: Callable[[str], tuple[Any, list[str]]],
    *,
    what: str,
    attempts: int = 3,
    params: dict[str, Any] | None = None,
) -> DraftResult:
    """Ask ``client``; ``validate(reply) -> (value, problems)``; retry with the problems fed back.

    At most ``attempts`` calls. Model/backend errors propagate (they are not the draft's fault).
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    history = list(messages)
    done: list[Attempt] = []
    value: Any = None
    for _ in range(attempts):
        reply = client.complete(history, **(params or {})).text
        value, problems = validate(reply)
        done.append(Attempt(reply, list(problems)))
        if not problems:
            break
        history += [Message.assistant(reply), Message.user(feedback_message(problems, what))]
    return DraftResult(value, done)
