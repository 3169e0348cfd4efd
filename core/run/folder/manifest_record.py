"""The typed ``manifest.json`` of a run folder: which config, components and plugins made it, when it
started, resumed and finished, its judges' fingerprints, its budget and isolation.

:mod:`pptarena.run.folder.resume` writes it as a run starts and ends; readers (``arena report``, ``arena
view``, ``arena rescore``, resume checks) read it through :meth:`Manifest.read`, which never raises on
a damaged or foreign file (an empty manifest then). Unknown keys are kept (``extra="allow"``) and
:meth:`Manifest.to_json` writes back exactly the keys that were set, in the order they are written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MANIFEST_SCHEMA = 1
"""The version of the manifest's shape, written as ``schema_version``."""

MAX_MANIFEST_BYTES = 64 * 1024 * 1024


class Manifest(BaseModel):
    """``manifest.json``: the record of how a run folder was made."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = MANIFEST_SCHEMA
    pptarena_version: str | None = None
    config_path: str | None = None
    config_hash: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    components: list[dict[str, Any]] = Field(default_factory=list)
    plugins: list[dict[str, Any]] = Field(default_factory=list)
    started_at: str | None = None
    resumed_at: list[str] = Field(default_factory=list)
    finished_at: str | None = None
    tasks: int | None = None
    agents: list[str] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list)
    judge_fingerprints: dict[str, Any] = Field(default_factory=dict)
    agent_fingerprints: dict[str, Any] = Field(default_factory=dict)
    """Agent label -> the fingerprint its new rows are stamped with (:mod:`.provenance`)."""
    agent_fingerprint_history: dict[str, Any] = Field(default_factory=dict)
    """Fingerprint id -> fingerprint, for every agent fingerprint a row of this folder was stamped with
    (kept across resumes: what really produced each row)."""
    task_hashes: dict[str, str] = Field(default_factory=dict)
    """Task id -> the hash its new rows are stamped with."""
    epochs: int | None = None
    max_cost: int | float | None = None
    skipped: list[dict[str, Any]] = Field(default_factory=list)
    python: str | None = None
    platform: str | None = None
    isolation: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None

    @property
    def run_table(self) -> dict[str, Any]:
        """The ``[run]`` table of the stored config (empty when there is none)."""
        run = self.config.get("run")
        return run if isinstance(run, dict) else {}

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """The manifest at ``path``; an empty one when the file is missing, too large, not JSON or not
        a manifest's shape (a report still works without it)."""
        try:
            if not path.is_file() or path.stat().st_size > MAX_MANIFEST_BYTES:
                return cls()
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> Manifest:
        """A manifest from decoded JSON; an empty one when it is not a manifest's shape."""
        if not isinstance(data, dict):
            return cls()
        try:
            return cls.model_validate(data)
        except ValidationError:
            return cls()

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON: the keys it was given (or set), in the order they are written."""
        return self.model_dump(mode="json", exclude_unset=True)
