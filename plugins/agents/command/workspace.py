"""The CLI workspace, laid out like PPT-Eval's CLI protocol::

<workspace>/
  <customization_dir>/*   copied first, when given (reserved names skipped)
  TASK.md                 "# Task: <id>", "## Goal", the instruction, a pointer to the I/O contract
  OUTPUT_INSTRUCTIONS.md  input path, the exact output path, "only the requested changes"
  inputs/<deck name>      a copy of the input deck
  output/                 empty; the agent must write output/<task_id><suffix>
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pptarena.types import AgentError, Task

RESERVED = ("TASK.md", "OUTPUT_INSTRUCTIONS.md", "inputs", "output")


def task_markdown(task_id: str, instruction: str) -> str:
    """TASK.md as PPT-Eval writes it."""
    return (
        f"# Task: {task_id}\n\n## Goal\n\n{instruction.strip()}\n\n"
        "## Input and output\n\n"
        "See OUTPUT_INSTRUCTIONS.md for where the deck is and where the result must go.\n"
    )


def output_instructions(input_rel: str, output_rel: str) -> str:
    """OUTPUT_INSTRUCTIONS.md: the I/O contract."""
    return (
        "# Output instructions\n\n"
        f"- Input deck: `{input_rel}` (read-only: copy it before editing).\n"
        f"- Save the edited deck **exactly** as `{output_rel}`.\n"
        "- Make only the requested changes; keep everything else as it is.\n"
        "- Slide numbers are 1-based.\n"
        "- When the file is written, exit.\n"
    )


def deck_names(task: Task, input_deck: Path) -> tuple[str, str]:
    """The input deck's file name and the output's (``<task_id><suffix>``, made file-name safe)."""
    name = task.original.name or input_deck.name
    suffix = Path(name).suffix or ".pptx"
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in task.id) or "task"
    return name, f"{safe_id}{suffix}"


def workspace_paths(root: Path, task: Task, input_deck: Path) -> dict[str, Path]:
    """The placeholder paths (workspace, task_md, input, output_dir, output) of a workspace at ``root``."""
    name, output = deck_names(task, input_deck)
    return {
        "workspace": root,
        "task_md": root / "TASK.md",
        "input": root / "inputs" / name,
        "output_dir": root / "output",
        "output": root / "output" / output,
    }


def prepare_workspace(
    root: Path, task: Task, input_deck: Path, customization: Path | None
) -> dict[str, Path]:
    """Lay out the CLI workspace in ``root`` (emptied first); return its paths (:func:`workspace_paths`)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    if customization is not None:
        if not customization.is_dir():
            raise AgentError(f"customization_dir {customization} is not a folder")
        for item in customization.iterdir():
            if item.name in RESERVED:
                continue
            if item.is_dir():
                shutil.copytree(item, root / item.name, symlinks=True)
            else:
                shutil.copy2(item, root / item.name)
    paths = workspace_paths(root, task, input_deck)
    (root / "inputs").mkdir()
    (root / "output").mkdir()
    shutil.copyfile(input_deck, paths["input"])
    (root / "TASK.md").write_text(task_markdown(task.id, task.instruction), encoding="utf-8")
    (root / "OUTPUT_INSTRUCTIONS.md").write_text(
        output_instructions(f"inputs/{paths['input'].name}", f"output/{paths['output'].name}"),
        encoding="utf-8",
    )
    return paths
