"""Helpers for the authoring tests: writable copies of demo tasks, scripted-backend configs, rubric drafts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

DEMO_TASK = "qbr-fix-typos"


def demo_root(cache: Path) -> Path:
    """The generated demo set (built into ``cache`` on first use)."""
    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set

    return ensure_demo_set(cache)


def copy_demo_tasks(
    cache: Path, dest: Path, *task_ids: str, keep: tuple[str, ...] = ("target.pptx",)
) -> Path:
    """A writable folder dataset at ``dest`` with ``task_ids`` of the demo set.

    Only task.toml and the files in ``keep`` are copied (rubric / style target are stripped
    from task.toml unless ``"rubric.json"`` is kept), so drafts start from scratch.
    """
    import tomllib

    src = demo_root(cache)
    shutil.copytree(src / "_decks", dest / "_decks")
    for task_id in task_ids:
        (dest / task_id).mkdir(parents=True)
        for name in keep:
            shutil.copy2(src / task_id / name, dest / task_id / name)
        data = tomllib.loads((src / task_id / "task.toml").read_text(encoding="utf-8"))
        top = {"instruction": data["instruction"], "original": data["original"]}
        if "target.pptx" in keep:
            top["target"] = "target.pptx"
        if "rubric.json" in keep:
            top["rubric"] = "rubric.json"
        lines = [f"{k} = {json.dumps(v)}" for k, v in top.items()]
        lines += ["", "[metadata]"] + [f"{k} = {json.dumps(v)}" for k, v in data["metadata"].items()]
        (dest / task_id / "task.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def demo_rubric(cache: Path, task_id: str = DEMO_TASK) -> dict[str, Any]:
    """The demo set's own (known good) rubric of ``task_id``."""
    return json.loads((demo_root(cache) / task_id / "rubric.json").read_text(encoding="utf-8"))


def scripted_config(path: Path, responses: list[str], record: Path, *, renderer: str = "libreoffice") -> Path:
    """A config with only ``[backends.scripted]`` (these ``responses``, recorded to ``record``) and a
    renderer."""
    items = ",\n  ".join(json.dumps(r, ensure_ascii=False) for r in responses)
    path.write_text(
        f"[backends.scripted]\nresponses = [\n  {items}\n]\nrecord = {json.dumps(str(record))}\n\n"
        f"[renderer]\nuse = {json.dumps(renderer)}\n",
        encoding="utf-8",
    )
    return path


def requests(record: Path) -> list[dict[str, Any]]:
    """The requests the scripted backend recorded."""
    from pptarena.plugins.backends.scripted import read_record

    return read_record(record)


def last_user_text(request: dict[str, Any]) -> str:
    """The text parts of the last user message of a recorded request."""
    user = [m for m in request["messages"] if m["role"] == "user"][-1]
    return "\n".join(p for p in user["content"] if isinstance(p, str))


def images_sent(request: dict[str, Any]) -> int:
    """How many images a recorded request carried."""
    return sum(1 for m in request["messages"] for p in m["content"] if isinstance(p, dict) and "image" in p)


def fenced(data: Any, prose: str = "Here is the result.") -> str:
    """A model-like reply: prose, then the JSON in a ```json fence."""
    return f"{prose}\n\n```json\n{json.dumps(data, indent=2)}\n```\n"


def leaf(name: str, code: str, critical: bool = True) -> dict[str, Any]:
    """A rubric leaf."""
    return {
        "name": name,
        "description": name,
        "is_critical": critical,
        "metadata": {},
        "scorer": {"type": "function", "function_code": code},
    }


def rubric_of(*leaves: dict[str, Any], name: str = "draft") -> dict[str, Any]:
    """A rubric with ``leaves`` under the root."""
    return {
        "root": {
            "name": name,
            "description": name,
            "is_critical": True,
            "metadata": {},
            "children": list(leaves),
        },
        "metadata": {"task": name},
    }


BROKEN_PYTHON = rubric_of(leaf("typos fixed", "def compute_score(:\n    return ('x', 1.0)\n"))
UNDEFINED_NAMES = rubric_of(
    leaf(
        "typos fixed",
        "def compute_score():\n    from pptx import Presentation\n    prs = Presentation(target_ppt_path)\n"
        "    text = agenda_text(prs)\n    return ('ok', 1.0 if 'Quarterly' in text else 0.0)\n",
    )
)


def run_cli(*args: str) -> Any:
    """Invoke ``arena author ...`` in-process; returns the click Result."""
    from pptarena.cli.main import cli

    return CliRunner().invoke(cli, ["author", *args], catch_exceptions=False)
