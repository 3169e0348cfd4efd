"""Uploaded and generated files (OpenAI's Files API), in memory only."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class StoredFile:
    """One file: id, name, purpose, content and creation time (Unix seconds)."""

    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def to_json(self) -> dict[str, object]:
        """OpenAI's file object."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


class FileStore:
    """Files by id; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, StoredFile] = {}

    def add(self, filename: str, purpose: str, data: bytes) -> StoredFile:
        """Store a file and return it with its new id."""
        stored = StoredFile(f"file-{uuid.uuid4().hex[:24]}", filename, purpose, data, int(time.time()))
        with self._lock:
            self._files[stored.id] = stored
        return stored

    def get(self, file_id: str) -> StoredFile | None:
        """The file ``file_id``, or None."""
        with self._lock:
            return self._files.get(file_id)

    def all(self) -> list[StoredFile]:
        """Every file, newest first."""
        with self._lock:
            return sorted(self._files.values(), key=lambda f: f.created_at, reverse=True)

    def delete(self, file_id: str) -> bool:
        """Forget a file; False when unknown."""
        with self._lock:
            return self._files.pop(file_id, None) is not None

    def clear(self) -> None:
        """Forget every file."""
        with self._lock:
            self._files.clear()


__all__ = ["FileStore", "StoredFile"]
