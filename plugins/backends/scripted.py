"""The ``scripted`` backend: canned answers for offline tests and demos.

Answers come from ``rules`` (first whose ``match`` regex finds the last user
text wins) and then from ``responses`` (served in order). Every request is
recorded in memory (:attr:`ScriptedBackend.requests`) and, with ``record``,
appended to a JSON-lines file. Usage is deterministic: input tokens are the
words of every text part plus 85 per image, output tokens the words of the reply.

An item (in ``responses``, or a rule's ``reply``) is a string, or a table:
``{ reply = "...", input_tokens = 10, output_tokens = 3, delay = 0.5 }``
(``raw = {...}``: a recorded provider response handed back as
``Completion.raw``, e.g. an Anthropic message with ``tool_use`` blocks) or
``{ error = "transient" | "fatal" | "timeout", message = "..." }``. A rule's
``reply`` may be a list: successive matches get successive items.

Which item comes next (``order``):

* ``"call"`` (default): the n-th call gets the n-th item. The count lives in
  this backend object, so it restarts in every worker process; give
  ``state_file`` to share it across processes (a locked JSON counter file).
* ``"turn"``: the item index is the number of assistant messages in the
  request, so a multi-turn agent gets step k at its k-th turn in any process.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
)
from pptarena.models.pricing import ModelPrice
from pptarena.types import ComponentContext

IMAGE_TOKENS = 85
MAX_RULES_FILE_BYTES = 4 * 1024 * 1024


class ScriptedReply(BaseModel):
    """One scripted answer (or failure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: str | None = None
    raw: dict[str, Any] | None = Field(
        None, description="a recorded provider response, returned as Completion.raw (e.g. tool calls)"
    )
    error: Literal["transient", "fatal", "timeout"] | None = None
    message: str | None = None
    input_tokens: int | None = Field(None, ge=0)
    output_tokens: int | None = Field(None, ge=0)
    delay: float = Field(0.0, ge=0, le=600)


Item = str | ScriptedReply


class ScriptedRule(BaseModel):
    """``match`` (a regex searched in the last user text) → ``reply`` (one item or a list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str
    reply: Item | list[Item]
    model: str | None = Field(None, description="only for model names matching this regex")

    @field_validator("match", "model")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"bad regex {value!r}: {exc}") from None
        return value


class ScriptedOptions(BackendOptions):
    """Options of the ``scripted`` backend."""

    responses: list[Item] = Field(default_factory=list, description="answers served in order")
    rules: list[ScriptedRule] = Field(default_factory=list, description="regex rules, tried before responses")
    rules_file: Path | None = Field(None, description="TOML or JSON with [[rules]] and/or responses")
    on_exhausted: Literal["error", "cycle", "repeat_last"] = Field(
        "error", description="when responses run out: fail the call, start over, or repeat the last one"
    )
    order: Literal["call", "turn"] = Field(
        "call",
        description="'call': the n-th call gets item n; "
        "'turn': the n-th assistant turn of a conversation does",
    )
    state_file: Path | None = Field(None, description="share the 'call' counters across processes")
    record: Path | None = Field(None, description="append every request to this JSON-lines file")
    retry_base_delay: float = Field(
        0.01, ge=0, description="first retry delay in seconds (short: nothing to wait for)"
    )
    retry_max_delay: float = Field(0.1, ge=0, description="backoff ceiling in seconds")


@dataclass
class ScriptedRequest:
    """One recorded request."""

    model: str
    messages: list[Message]
    params: dict[str, Any]
    reply: str | None = None
    error: str | None = None
    source: str = ""  # "rule <i>" or "responses"
    index: int = 0
    time: float = field(default_factory=time.time)

    @property
    def last_user_text(self) -> str:
        """Text parts of the last user message, joined by newlines."""
        return last_user_text(self.messages)

    @property
    def images(self) -> list[ImagePart]:
        """Every image in the request (also those inside tool results), in order."""
        return [p for m in self.messages for p in _flat_parts(m) if isinstance(p, ImagePart)]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (images as media type, size and SHA-256)."""
        from pptarena.models.cache import message_fingerprint

        messages = []
        for m in self.messages:
            fp = message_fingerprint(m)
            for part, orig in zip(fp["content"], m.parts(), strict=True):
                if isinstance(orig, ImagePart):
                    part["bytes"] = len(orig.data)
            messages.append(fp)
        return {
            "t": round(self.time, 3),
            "model": self.model,
            "params": self.params,
            "messages": messages,
            "reply": self.reply,
            "error": self.error,
            "source": self.source,
            "index": self.index,
        }


def _flat_parts(message: Message) -> list[str | ImagePart]:
    """Text and images of a message, with tool results opened and tool calls as their JSON input."""
    out: list[str | ImagePart] = []
    for p in message.parts():
        if isinstance(p, ToolResult):
            out.extend(p.content)
        elif isinstance(p, ToolCall):
            out.append(json.dumps(dict(p.input), ensure_ascii=False, default=str))
        else:
            out.append(p)
    return out


def last_user_text(messages: list[Message]) -> str:
    """Text parts (also inside tool results) of the last user message, joined by newlines ("" when none)."""
    for m in reversed(messages):
        if m.role == "user":
            return "\n".join(p for p in _flat_parts(m) if isinstance(p, str))
    return ""


def count_tokens(messages: list[Message]) -> int:
    """The scripted backend's input-token count: words of all text, plus 85 per image."""
    total = 0
    for m in messages:
        for p in _flat_parts(m):
            total += IMAGE_TOKENS if isinstance(p, ImagePart) else len(p.split())
    return total


def load_script_file(path: Path) -> tuple[list[ScriptedRule], list[Item]]:
    """Rules and responses from a TOML or JSON file; errors name the file."""
    import tomllib

    from pydantic import TypeAdapter, ValidationError

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ValueError(f"scripted rules_file {path}: cannot read ({exc.strerror})") from None
    if size > MAX_RULES_FILE_BYTES:
        raise ValueError(f"scripted rules_file {path}: {size} bytes is over the {MAX_RULES_FILE_BYTES} limit")
    text = path.read_text(encoding="utf-8")
    try:
        data: Any = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(
            f"scripted rules_file {path}: not valid {path.suffix.lstrip('.') or 'TOML'}: {exc}"
        ) from None
    if isinstance(data, list):
        data = {"rules": data}
    if not isinstance(data, dict) or set(data) - {"rules", "responses"}:
        raise ValueError(
            f"scripted rules_file {path}: expected a list of rules or a table with rules/responses"
        )

    def validate(key: str, adapter: TypeAdapter[Any]) -> Any:
        try:
            return adapter.validate_python(data.get(key, []))
        except ValidationError as exc:
            problems = "; ".join(
                f"{key}[{'.'.join(str(x) for x in e['loc'])}]: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()[:5]
            )
            raise ValueError(f"scripted rules_file {path}: {problems}") from None

    rules = validate("rules", TypeAdapter(list[ScriptedRule]))
    responses = validate("responses", TypeAdapter(list[Item]))
    return rules, responses


class _Counters:
    """Per-slot counters, in memory or in a locked JSON file shared across processes."""

    def __init__(self, state_file: Path | None):
        self.state_file = state_file
        self._mem: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def _locked_file(self) -> Iterator[dict[str, int]]:
        assert self.state_file is not None
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.state_file, "a+", encoding="utf-8") as fh:
            try:
                import fcntl

                fcntl.flock(fh, fcntl.LOCK_EX)
            except ImportError:  # pragma: no cover - Windows: best effort without a lock
                pass
            fh.seek(0)
            raw = fh.read()
            state = json.loads(raw) if raw.strip() else {}
            yield state
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps(state))
            fh.flush()
            os.fsync(fh.fileno())

    def take(self, slot: str) -> int:
        """Return the slot's current count and increment it."""
        with self._lock:
            if self.state_file is None:
                n = self._mem.get(slot, 0)
                self._mem[slot] = n + 1
                return n
            with self._locked_file() as state:
                n = int(state.get(slot, 0))
                state[slot] = n + 1
                return n


class ScriptedBackend(BackendBase):
    """Answers from rules and a list of responses; records every request."""

    Options = ScriptedOptions
    default_price = ModelPrice(input=0.0, output=0.0)  # offline: free unless `pricing` says otherwise

    def __init__(self, options: ScriptedOptions, context: ComponentContext):
        super().__init__(options, context)
        self.options: ScriptedOptions = options
        rules, responses = list(options.rules), list(options.responses)
        if options.rules_file is not None:
            file_rules, file_responses = load_script_file(Path(options.rules_file).expanduser())
            rules += file_rules
            responses += file_responses
        self.rules = rules
        self.responses = responses
        self.requests: list[ScriptedRequest] = []
        self._counters = _Counters(Path(options.state_file).expanduser() if options.state_file else None)
        self._lock = threading.Lock()

    def _pick(self, items: list[Item], slot: str, messages: list[Message], what: str) -> tuple[Item, int]:
        if self.options.order == "turn":
            n = sum(1 for m in messages if m.role == "assistant")
        else:
            n = self._counters.take(slot)
        if n < len(items):
            return items[n], n
        if not items or self.options.on_exhausted == "error":
            raise ModelError(
                f"scripted backend: {what} exhausted ({len(items)} item(s), request #{n + 1}); "
                'add items or set on_exhausted = "cycle" or "repeat_last"'
            )
        if self.options.on_exhausted == "cycle":
            return items[n % len(items)], n
        return items[-1], n

    def _choose(self, messages: list[Message], model: str) -> tuple[Item, str, int]:
        text = last_user_text(messages)
        for i, rule in enumerate(self.rules):
            if rule.model is not None and not re.search(rule.model, model):
                continue
            if re.search(rule.match, text):
                if isinstance(rule.reply, list):
                    item, n = self._pick(
                        rule.reply, f"rule{i}", messages, f"rule {i} ({rule.match!r}) replies"
                    )
                    return item, f"rule {i}", n
                return rule.reply, f"rule {i}", 0
        if not self.responses and self.rules:
            raise ModelError(f"scripted backend: no rule matches the last user text {text[:200]!r}")
        item, n = self._pick(self.responses, "responses", messages, "responses")
        return item, "responses", n

    def complete(self, messages: list[Message], *, model: str, **params: Any) -> Completion:
        """The next scripted answer for this request."""
        request = ScriptedRequest(model=model, messages=list(messages), params=dict(params))
        try:
            item, request.source, request.index = self._choose(request.messages, model)
        except ModelError as exc:
            request.error = str(exc)
            self._record(request)
            raise
        reply = item if isinstance(item, ScriptedReply) else ScriptedReply(reply=item)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.error is not None:
            message = reply.message or f"scripted {reply.error} failure"
            request.error = f"{reply.error}: {message}"
            self._record(request)
            if reply.error == "fatal":
                raise ModelError(f"scripted: {message}")
            raise TransientModelError(f"scripted: {message}")
        text = reply.reply or ""
        request.reply = text
        self._record(request)
        usage = Usage(
            input_tokens=reply.input_tokens
            if reply.input_tokens is not None
            else count_tokens(request.messages),
            output_tokens=reply.output_tokens if reply.output_tokens is not None else len(text.split()),
            calls=1,
        )
        return Completion(text=text, model=model, usage=usage, raw=reply.raw, finish_reason="stop")

    def _record(self, request: ScriptedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            if self.options.record is not None:
                path = Path(self.options.record).expanduser()
                path.parent.mkdir(parents=True, exist_ok=True)
                line = json.dumps(request.to_json(), ensure_ascii=False, default=str) + "\n"
                with open(path, "a", encoding="utf-8") as fh:
                    try:
                        import fcntl

                        fcntl.flock(fh, fcntl.LOCK_EX)
                    except ImportError:  # pragma: no cover
                        pass
                    fh.write(line)


def read_record(path: str | Path) -> list[dict[str, Any]]:
    """The requests a scripted backend appended to its ``record`` file."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


@pptarena.hookimpl
def register_backends(register: Any) -> None:
    """Register the ``scripted`` backend."""
    register("scripted", ScriptedBackend)
