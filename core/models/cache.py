"""On-disk cache of model responses, keyed by a hash of the whole request.

A re-run of the same config then costs nothing and returns the same text. The
cache is one sqlite file (by default ``<cache_dir>/model-cache.sqlite``) in WAL
mode with a busy timeout, so several threads and several worker processes can
read and write it at once. Only successful completions are stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pptarena.models.messages import Completion, ImagePart, Message, ToolCall, ToolResult, Usage

CACHE_FILE_NAME = "model-cache.sqlite"
_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 30.0


def _canonical(value: Any) -> Any:
    """A JSON-ready, order-stable form of request parameters."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, bytes):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _image_fingerprint(part: ImagePart) -> dict[str, Any]:
    return {"image": part.media_type, "sha256": hashlib.sha256(part.data).hexdigest()}


def _part_fingerprint(part: Any) -> Any:
    if isinstance(part, ImagePart):
        return _image_fingerprint(part)
    if isinstance(part, ToolCall):
        return {
            "tool_call": part.id,
            "name": part.name,
            "input": _canonical(dict(part.input)),
            "native": _canonical(dict(part.native)) if part.native is not None else None,
        }
    if isinstance(part, ToolResult):
        return {
            "tool_result": part.call_id,
            "content": [_image_fingerprint(p) if isinstance(p, ImagePart) else p for p in part.content],
            "is_error": part.is_error,
            "native": _canonical(dict(part.native)) if part.native is not None else None,
        }
    return part


def message_fingerprint(message: Message) -> dict[str, Any]:
    """A JSON form of a message with images replaced by their SHA-256 and media type.

    Tool calls and tool results keep every field (their images hashed too).
    """
    return {"role": message.role, "content": [_part_fingerprint(p) for p in message.parts()]}


def request_key(
    backend: str,
    model: str,
    messages: Sequence[Message],
    params: Mapping[str, Any],
    identity: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of a request: SHA-256 over backend, model, messages (image bytes hashed), params.

    ``identity`` holds backend facts that change answers (e.g. the server URL);
    it must never hold secrets.
    """
    payload = {
        "v": _SCHEMA_VERSION,
        "backend": backend,
        "identity": _canonical(dict(identity or {})),
        "model": model,
        "messages": [message_fingerprint(m) for m in messages],
        "params": _canonical(dict(params)),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A sqlite-backed map from request keys to completions.

    Thread-safe (one connection per thread) and safe across processes (WAL,
    busy timeout). ``get`` returns a :class:`Completion` with ``cached=True``.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        conn = self._conn()
        with conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,"
                " text TEXT NOT NULL, usage TEXT NOT NULL, raw TEXT, created REAL NOT NULL)"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise OSError(f"cannot open the model response cache {self.path}: {exc}") from exc
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def get(self, key: str) -> Completion | None:
        """The stored completion for ``key``, or None."""
        row = (
            self._conn()
            .execute("SELECT model, text, usage, raw FROM responses WHERE key = ?", (key,))
            .fetchone()
        )
        if row is None:
            return None
        model, text, usage_json, raw_json = row
        usage = Usage.from_dict(json.loads(usage_json))
        raw = json.loads(raw_json) if raw_json else None
        return Completion(text=text, model=model, usage=usage, cached=True, raw=raw)

    def put(self, key: str, backend: str, completion: Completion) -> None:
        """Store a completion (the last writer wins for the same key)."""
        usage = completion.usage.as_dict()
        raw = json.dumps(completion.raw, default=str) if completion.raw is not None else None
        conn = self._conn()
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, backend, model, text, usage, raw, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, backend, completion.model, completion.text, json.dumps(usage), raw, time.time()),
            )

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover - closing is best effort
                    pass
            self._connections.clear()
        self._local = threading.local()


_shared: dict[Path, ResponseCache] = {}
_shared_lock = threading.Lock()


def backend_request_key(
    backend: Any, backend_name: str, model: str, messages: Sequence[Message], params: Mapping[str, Any]
) -> str:
    """:func:`request_key` of a request to ``backend`` (named ``backend_name``), with the backend's
    ``cache_identity()`` as its identity when it has one."""
    identity_fn = getattr(backend, "cache_identity", None)
    identity = identity_fn() if callable(identity_fn) else {}
    return request_key(backend_name, model, messages, params, identity)


def shared_cache(path: str | Path) -> ResponseCache:
    """One :class:`ResponseCache` per resolved path in this process."""
    p = Path(path).expanduser().resolve()
    with _shared_lock:
        cache = _shared.get(p)
        if cache is None:
            cache = _shared[p] = ResponseCache(p)
        return cache
