"""Reference decks re-saved by an agent's editing tool, so judges compare like with like.

Some agents can only save decks through a program that rewrites much of a
package even when nothing was edited: LibreOffice Impress renames
placeholders, changes theme fonts, writes explicit fills and lines. Diffing
such a prediction against the untouched original charges the agent for its
tool. PPT-Eval avoids this by round-tripping its original decks through
PowerPoint Online before the agent starts.

The re-saving is judge-side code: it is handed the target deck, so no agent
class may provide it (issue 31: one stashed the target in its own package).
pptarena's own agents name it when they register
(``register("gui", GuiAgent, placement="host", reference_normalizer=fn)``,
refused to any other plugin); ``fn(src: Path, dst: Path) -> None`` saves
``src`` unchanged to ``dst`` with the agent's tool. The runner then stores the task's original
and target decks, normalised that way, in ``tasks/<agent>/<task>/references/``
(cached by content across runs), and every judge of that pair — in ``arena
run``, ``arena rescore`` and ``arena meta-eval`` — sees them as the
``original`` and ``target`` roles.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pptarena.render import file_digest
from pptarena.run.folder.rundir import REFERENCES
from pptarena.types import InfraError, Task

CACHE_FOLDER = "references"
"""The folder of the cache (``<cache>/references/<tool>/``) keeping re-saved decks by content."""
ROLES = ("original", "target")


def normalizer_of(spec: object) -> Callable[[Path, Path], None] | None:
    """The reference normalizer a built-in agent registered with (never anything of the agent class)."""
    from pptarena.run.jail.agent_view import is_builtin

    if not is_builtin(spec):
        return None
    fn = getattr(spec, "reference_normalizer", None)
    return fn if callable(fn) else None


def normalized_references(
    task: Task, normalize: Callable[[Path, Path], None], task_dir: Path, cache_dir: Path, tool: str
) -> dict[str, Path]:
    """Normalise the task's original and target decks into ``task_dir/references/``.

    Results are cached under ``cache_dir/references/<tool>/`` by deck content,
    so a deck shared by many tasks is re-saved once.

    :raises InfraError: when the tool fails to re-save a deck (not the agent's fault).
    """
    out_dir = task_dir / REFERENCES
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = cache_dir / CACHE_FOLDER / tool
    cache.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for role in ROLES:
        src = task.original if role == "original" else task.target
        if src is None:
            continue
        suffix = Path(src).suffix or ".pptx"
        cached = cache / f"{file_digest(Path(src))}{suffix}"
        if not cached.is_file():
            tmp = cache / f".{cached.stem}.{os.getpid()}.tmp{suffix}"
            try:
                normalize(Path(src), tmp)
            except Exception as exc:  # noqa: BLE001 - any tool failure is an infrastructure failure
                tmp.unlink(missing_ok=True)
                raise InfraError(f"re-saving the {role} deck with {tool} failed: {exc}") from exc
            if not tmp.is_file():
                raise InfraError(f"re-saving the {role} deck with {tool} produced no file")
            os.replace(tmp, cached)
        dst = out_dir / f"{role}{suffix}"
        shutil.copyfile(cached, dst)
        found[role] = dst
    return found


def stored_references(task_dir: Path) -> dict[str, Path]:
    """The normalised reference decks kept in a task folder, by role (empty when there are none)."""
    folder = Path(task_dir) / REFERENCES
    if not folder.is_dir():
        return {}
    found: dict[str, Path] = {}
    for role in ROLES:
        matches = sorted(folder.glob(f"{role}.*"))
        if matches:
            found[role] = matches[0]
    return found
