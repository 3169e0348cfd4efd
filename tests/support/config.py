"""One builder of run configs (the TOML `arena run --config` reads) from keyword arguments.

Tests say what a run is made of, not how TOML spells it::

    run_toml(dataset=fake_dataset(count=2), renderer="dummy", agents=["noop", use("slowcopy", sleep=0.4)],
             judges=["title"], run={"task_timeout": 3})

A component is its name (``"noop"`` is ``{"use": "noop"}``) or a table (``use(name, **options)``
builds one); ``agents``, ``judges`` and ``datasets`` become ``[[agents]]`` tables, ``dataset``,
``renderer``, ``executor`` and ``run`` single tables, ``backends`` one ``[backends.NAME]`` per entry.
Tests whose subject is the TOML text itself (parse errors, quoting edge cases) keep their literal text.
The ``run_config`` fixture of tests/conftest.py writes one into the test's tmp folder.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "Component",
    "command_agent",
    "demo_dataset",
    "fake_dataset",
    "fake_run_toml",
    "run_toml",
    "use",
    "write_run_config",
]

Component = str | Mapping[str, Any]
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
# the order tables are written in; anything else follows in the order given
_ORDER = ("run", "dataset", "datasets", "renderer", "agents", "judges", "executor", "backends")


def use(name: str, **options: Any) -> dict[str, Any]:
    """The table of one component: ``use(name)`` plus its options (``label``, ``model``, ...)."""
    return {"use": name, **options}


def fake_dataset(count: int = 3, root: str = "data", **options: Any) -> dict[str, Any]:
    """tests/plugin_modules/fakeplugins.py's ``fake`` dataset: ``count`` one-slide tasks under ``root``."""
    return use("fake", root=root, count=count, **options)


def demo_dataset(*ids: str, **options: Any) -> dict[str, Any]:
    """The bundled demo dataset, narrowed to task ``ids`` when given."""
    return use("demo", **({"ids": list(ids)} if ids else {}), **options)


def command_agent(*argv: Any, label: str = "cli", **options: Any) -> dict[str, Any]:
    """The ``command`` agent running ``argv`` (paths are written as strings), labelled ``cli``."""
    return use("command", label=label, command=[str(a) for a in argv], **options)


def run_toml(
    *,
    dataset: Component | None = None,
    datasets: Iterable[Component] = (),
    renderer: Component | None = None,
    agents: Iterable[Component] = (),
    judges: Iterable[Component] = (),
    executor: Component | None = None,
    run: Mapping[str, Any] | None = None,
    backends: Mapping[str, Component] | None = None,
    extra: str = "",
    **tables: Any,
) -> str:
    """The TOML text of a run config; ``tables`` adds other top-level tables, ``extra`` raw text at the
    end (a table of its own: it starts with a header)."""
    doc: dict[str, Any] = {
        "run": dict(run) if run else None,
        "dataset": _component(dataset),
        "datasets": [_component(d) for d in datasets],
        "renderer": _component(renderer),
        "agents": [_component(a) for a in agents],
        "judges": [_component(j) for j in judges],
        "executor": _component(executor),
        "backends": {k: _component(v) for k, v in (backends or {}).items()},
        **tables,
    }
    keys = [k for k in _ORDER if k in doc] + [k for k in doc if k not in _ORDER]
    text = "".join(_top(k, doc[k]) for k in keys if doc[k] not in (None, [], {}))
    return text + extra


def fake_run_toml(
    count: int = 3,
    agents: Iterable[Component] = (),
    judges: Iterable[Component] = ("title",),
    renderer: Component | None = "dummy",
    **parts: Any,
) -> str:
    """The usual config of the runner tests: the ``fake`` dataset, the ``dummy`` renderer and the
    ``title`` judge of fakeplugins, with ``agents`` (and any other part of :func:`run_toml`)."""
    dataset = parts.pop("dataset", None) or fake_dataset(count)
    return run_toml(dataset=dataset, renderer=renderer, agents=agents, judges=judges, **parts)


def write_run_config(path: Path, text: str | None = None, **parts: Any) -> Path:
    """Writes ``text`` (or ``run_toml(**parts)``) to ``path`` and returns ``path``."""
    path.write_text(text if text is not None else run_toml(**parts), encoding="utf-8")
    return path


def _component(spec: Component | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    return {"use": spec} if isinstance(spec, str) else dict(spec)


def _top(key: str, value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
        return "".join(_table(f"[[{_key(key)}]]", v) for v in value)
    if isinstance(value, Mapping):
        return _table(f"[{_key(key)}]", value, prefix=_key(key))
    return f"{_key(key)} = {_value(value)}\n"


def _table(header: str, values: Mapping[str, Any], prefix: str | None = None) -> str:
    """One table; mappings under a single table become sub-tables, under an array item inline tables."""
    lines = [header]
    subtables = []
    for k, v in values.items():
        if prefix is not None and isinstance(v, Mapping) and v:
            subtables.append(_table(f"[{prefix}.{_key(k)}]", v, prefix=f"{prefix}.{_key(k)}"))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    return "\n".join(lines) + "\n" + "".join(subtables)


def _key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ("-" if value < 0 else "") + ("nan" if math.isnan(value) else "inf")
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}: {value!r}")
