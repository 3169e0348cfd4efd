"""Agent fingerprints and task hashes: which code and which files produced each result row.

A judge has had a fingerprint since the first resume checks (:mod:`.fingerprint`); an agent and a task
get one here, so that re-running a run folder never shows a changed agent's old numbers as its new ones.

- An **agent fingerprint** records the component (plugin, name, distribution and version, which kind of
  code), its options (secrets never), the models it calls and their backends' sampling defaults, and a
  hash of its code: the agent class's ``fingerprint_texts()`` when it defines one (a classmethod or
  staticmethod returning strings), else the sources of the package folder its module lives in
  (without the folders of other plugins nested in it; a single-file module: that file) plus any
  ``fingerprint_modules``; an installed distribution adds the file hashes of its ``RECORD``; an agent
  from an environment of its own (``package = ...``) is hashed from that environment's installed
  files' ``RECORD`` s, never by importing it. Its ``id`` hashes all of
  that except the label.
- A **task hash** covers the instruction, the style target, the rubric and the bytes of the original,
  target and (when it is a file) style-target deck.

The runner stamps every row it records with both (``agent_fingerprint``, ``task_sha``). On a resume, a
recorded row whose agent or task no longer has the fingerprint it was made with does not count as done:
the pair runs again and its new line supersedes the old one in ``results.jsonl`` (the old line stays
in the file as history; ``manifest.json`` keeps every agent fingerprint a row points to).
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pptarena.render import file_digest
from pptarena.run.configuration.config_options import model_refs
from pptarena.run.configuration.config_secrets import redact
from pptarena.run.folder.fingerprint import backend_sampling, module_source, sha_of
from pptarena.run.folder.records import ResultRow
from pptarena.types import Task

MAX_SOURCE_FILES = 5000
"""The most ``.py`` files of an agent's package folder that its code hash reads (the rest are counted)."""


def file_sha(path: Path | None) -> str | None:
    """SHA-256 of a file's bytes (``"missing"`` when it cannot be read, None for no path)."""
    if path is None:
        return None
    try:
        return file_digest(Path(path))
    except OSError:
        return "missing"


def task_sha(task: Task) -> str:
    """The hash of what a task gives an agent and its judges: instruction, style target, rubric and the
    bytes of its decks (original, target, and the style target when it names a file)."""
    style = task.style_target
    style_file = Path(style) if style and style.endswith(".pptx") and Path(style).is_file() else None
    return sha_of(
        {
            "instruction": task.instruction,
            "style_target": style,
            "rubric": task.rubric,
            "original": file_sha(task.original),
            "target": file_sha(task.target),
            "style_file": file_sha(style_file),
        }
    )


def _plugin_folders() -> set[Path]:
    """The folders of every ``pptarena`` entry-point module that is a package or lives in one.

    Found without importing anything new (``find_spec`` reads only parent packages, which the
    registry imported already); a module that cannot be found is left out.
    """
    import importlib.util

    folders: set[Path] = set()
    for ep in md.entry_points(group="pptarena"):
        try:
            spec = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            folders.add(Path(spec.origin).resolve().parent)
    return folders


def _package_files(module: Any) -> list[Path]:
    """The source files that stand for an agent's module: its package folder (recursively, without
    the folders of other plugins nested in it: the built-in ``baselines`` module shares
    ``plugins/agents/`` with every other built-in agent's package), or the module's own file when it
    is a top-level single-file module."""
    file = getattr(module, "__file__", None)
    if not file:
        return []
    path = Path(file)
    in_package = "." in module.__name__ or path.name == "__init__.py"
    if not in_package:
        return [path]
    own = path.resolve().parent
    others = [f for f in _plugin_folders() if f != own and f.is_relative_to(own)]
    files = sorted(
        p
        for p in path.parent.rglob("*.py")
        if "__pycache__" not in p.parts and not any(p.resolve().is_relative_to(o) for o in others)
    )
    return files[:MAX_SOURCE_FILES]


def _record_text(dist: md.Distribution) -> str:
    """A distribution's ``RECORD`` (its installed files and their hashes), or its name and version."""
    text = dist.read_text("RECORD")
    return text if text is not None else f"{dist.metadata['Name']}=={dist.version}"


def _installed_record(name: str | None) -> str | None:
    """The ``RECORD`` of an installed distribution of the harness's environment (None when absent)."""
    if not name:
        return None
    try:
        return _record_text(md.distribution(name))
    except md.PackageNotFoundError:
        return None


def code_sha(spec: Any) -> str:
    """The hash of an agent's code (see the module docstring for what is read)."""
    env = getattr(spec, "env", None)
    if env is not None:  # its own environment: read its metadata, never import it
        records = sorted(_record_text(d) for d in env.distributions())
        return sha_of({"env": env.key, "records": records})
    factory = spec.factory
    texts = getattr(factory, "fingerprint_texts", None)
    if callable(texts):
        try:
            return sha_of({"texts": list(texts())})
        except TypeError:  # an instance method: fall back to the sources
            pass
    module = sys.modules.get(getattr(factory, "__module__", ""))
    parts: dict[str, Any] = {}
    if module is not None:
        base = Path(module.__file__).parent if getattr(module, "__file__", None) else None
        for path in _package_files(module):
            name = str(path.relative_to(base)) if base and path.is_relative_to(base) else path.name
            try:
                parts[name] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                parts[name] = "unreadable"
    extra = [module_source(m) for m in getattr(factory, "fingerprint_modules", ())]
    record = (
        None if getattr(spec, "builtin", False) else _installed_record(getattr(spec, "distribution", None))
    )
    return sha_of({"sources": parts, "extra": extra, "record": record})


def agent_fingerprint(comp: Any, backends: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fingerprint of one configured agent (``comp``: its ComponentConfig)."""
    spec = comp.spec
    models = sorted(set(model_refs(comp.options).values()))
    body = {
        "component": f"{getattr(spec, 'plugin', '?')}:{getattr(spec, 'name', comp.use)}",
        "distribution": getattr(spec, "distribution", None),
        "version": getattr(spec, "version", None),
        "code": getattr(spec, "code_kind", None),
        "models": models,
        "options": redact(comp.options.model_dump(mode="json")),
        "backend_sampling": backend_sampling(models, backends),
        "code_sha": code_sha(spec),
    }
    return {"label": comp.label, **body, "id": sha_of(body)}


def describe_change(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """What differs between two agent fingerprints, in words (``version 0.1.0 -> 0.2.0, code``)."""
    if not old:
        return "another fingerprint"
    out = []
    for key in ("component", "distribution", "version", "models", "options", "backend_sampling", "code_sha"):
        if old.get(key) != new.get(key):
            if key in ("version", "distribution", "component"):
                out.append(f"{key} {old.get(key)} -> {new.get(key)}")
            else:
                out.append("code" if key == "code_sha" else key)
    return ", ".join(out) or "fingerprint"


@dataclass
class Staleness:
    """Recorded rows that no longer stand for the run's agents and tasks (see :meth:`Provenance.stale`)."""

    keys: set[tuple[str, str, int]] = field(default_factory=set)
    """(agent, task, epoch) attempts to run again."""
    messages: list[str] = field(default_factory=list)
    """One line per changed agent and one for the changed tasks."""
    unverified: int = 0
    """Rows recorded before rows carried fingerprints (kept as they are)."""


@dataclass
class Provenance:
    """The fingerprints of a run's agents and the hashes of its tasks, as they are now."""

    agents: dict[str, dict[str, Any]]
    """Agent label -> its fingerprint (:func:`agent_fingerprint`)."""
    tasks: dict[str, str]
    """Task id -> :func:`task_sha`."""

    @classmethod
    def of_run(
        cls, agents: Iterable[Any], tasks: Iterable[Task], backends: dict[str, Any] | None
    ) -> Provenance:
        """Fingerprint every configured agent and hash every selected task."""
        return cls(
            agents={a.label: agent_fingerprint(a, backends) for a in agents},
            tasks={t.id: task_sha(t) for t in tasks},
        )

    def stamp(self, row: ResultRow) -> ResultRow:
        """Set the row's ``agent_fingerprint`` and ``task_sha`` to the current ones (kept when already
        set: a reused epoch copy carries its epoch-1 line's)."""
        fp = self.agents.get(row.agent)
        if row.agent_fingerprint is None and fp is not None:
            row.agent_fingerprint = fp["id"]
        if row.task_sha is None and row.task_id in self.tasks:
            row.task_sha = self.tasks[row.task_id]
        return row

    def stale(self, rows: Iterable[ResultRow], history: dict[str, Any] | None = None) -> Staleness:
        """Rows made by another version of their agent, or for other files of their task.

        ``history``: fingerprint id -> fingerprint, as ``manifest.json`` keeps them (to say what changed).
        A row without fingerprints (written before they existed) is kept and counted as unverified.
        """
        out = Staleness()
        by_agent: dict[str, Counter[str]] = {}
        tasks_changed: set[str] = set()
        for row in rows:
            fp = self.agents.get(row.agent)
            if fp is None:
                continue
            if row.agent_fingerprint is None and row.task_sha is None:
                out.unverified += 1
                continue
            agent_changed = row.agent_fingerprint is not None and row.agent_fingerprint != fp["id"]
            now = self.tasks.get(row.task_id)
            task_changed = row.task_sha is not None and now is not None and row.task_sha != now
            if agent_changed:
                by_agent.setdefault(row.agent, Counter())[row.agent_fingerprint or ""] += 1
            if task_changed:
                tasks_changed.add(row.task_id)
            if agent_changed or task_changed:
                out.keys.add(row.key)
        for label, old_ids in sorted(by_agent.items()):
            n = sum(old_ids.values())
            old = (history or {}).get(old_ids.most_common(1)[0][0])
            out.messages.append(
                f"Agent {label} changed since {n} of its results were recorded "
                f"({describe_change(old, self.agents[label])}): those attempts run again."
            )
        if tasks_changed:
            names = ", ".join(sorted(tasks_changed)[:5]) + (" ..." if len(tasks_changed) > 5 else "")
            out.messages.append(
                f"{len(tasks_changed)} task(s) changed since their results were recorded ({names}): "
                "their attempts run again."
            )
        return out
