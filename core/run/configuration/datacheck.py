"""Bad data caught up front: every reference deck of the selected tasks opens (and renders).

A task's reference files are its ``original`` deck, its ``target`` deck, its style target when that
is a deck path (a single-line string ending in a deck suffix, relative paths resolved against the
original's folder) and the target deck of each turn of a multi-turn session. :func:`check_tasks`
checks each distinct file once:

1. it exists and is a regular file;
2. the deck engine opens it the way the judges and the runner do: the safe package reader with its
   limits (size on disk, zip entries, uncompressed size and ratio: a zip bomb is a clear
   :class:`~pptarena.deck.DeckError`, never a hang), python-pptx over the hardened parser
   (:func:`pptarena.deck.open_presentation`), the render guard's nesting check
   (:func:`pptarena.trust.render_guard.check_deck`) and the deterministic summary
   (:func:`pptarena.deck.summarize`, what ``arena summarize`` prints);
3. with ``render=True``, the run's renderer renders it (through the renderer's render cache, so
   the run that follows reuses those renders).

The outcome of step 2 is cached by the file's SHA-256 under ``<cache>/datacheck/`` (with the
pptarena version in the folder name, so a new deck engine checks again): a second check of the same
files only hashes them. Only deterministic outcomes are cached (the deck opened, or the engine
rejected it); an :class:`OSError` or a crash is checked again next time.

A broken reference file is the dataset's fault, never an agent's. What a run does with one
(:func:`skip_reasons`): the task is skipped for every agent, with the reason
``dataset error: <role> deck <path> does not open: <why>`` in the manifest's ``skipped`` list
and a warning line; no agent gets a row or a score for it. At judge time (``arena rescore``, a run
that did not check), :func:`reference_failure` turns a reference deck that fails into the same
labelled reason, to record as ``infra_error`` instead of blaming the agent or the judge.

``arena dataset check`` (:mod:`pptarena.cli.dataset`) runs the check from the command line and
exits with :data:`DATASET_ERRORS_EXIT` when it finds a problem.

Why it is long: it is one check used three ways (``arena dataset check``, a run before planning, and
judge time through :func:`reference_failure`), and the three share the list of reference files, the
opening the judges do and the SHA-256 cache, so they cannot disagree about which deck is broken or why.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pptarena.render import file_digest
from pptarena.types import PptArenaError, Task

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.config import RunConfig
    from pptarena.types import Renderer

DATASET_ERRORS_EXIT = 6
"""Exit code of ``arena dataset check`` when it found a dataset problem (0: clean)."""

CHECK_VERSION = 1
"""Bumped when what the open check does changes (cached outcomes of older versions are not reused)."""

CACHE_FOLDER = "datacheck"
DECK_SUFFIXES = (".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".potm")
ALL_ROLES = frozenset({"original", "target", "style"})
RENDERING_JUDGES: dict[str, frozenset[str]] = {
    "dual": frozenset({"original", "target"}),
    "rubric": frozenset({"original"}),
}
"""The reference roles built-in judges render (``dual``: original and target, beside the prediction;
``rubric``: the original, when a leaf asks for screenshots). A plugin judge says what it renders with
a ``uses_renders`` class attribute: True (every role), False, or a collection of role names."""

MAX_MESSAGE = 400

Progress = Callable[[int, int, str], None]
"""``progress(done, total, what)``: called after each step of a check (``what`` names the file)."""


class DataCheckError(PptArenaError):
    """The check itself could not run (e.g. the renderer cannot be built): not a dataset problem."""


@dataclass(frozen=True)
class DeckProblem:
    """One broken reference file of one task.

    ``role`` is ``original``, ``target``, ``style`` or ``target (turn N)``; ``stage`` is
    ``missing`` (no such file), ``open`` (the deck engine rejects it) or ``render`` (the renderer
    fails on it); ``message`` is one line.
    """

    task_id: str
    role: str
    path: str
    stage: str
    message: str

    def reason(self) -> str:
        """The labelled one-line reason a run records: ``dataset error: <role> deck <path> ...``."""
        verb = {"missing": "is missing", "open": "does not open", "render": "does not render"}[self.stage]
        return f"dataset error: {self.role} deck {self.path} {verb}: {self.message}"

    def line(self) -> str:
        """The line ``arena dataset check`` prints: task, file, why."""
        return f"{self.task_id}: {self.reason()}"

    def to_json(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {
            "task_id": self.task_id,
            "role": self.role,
            "path": self.path,
            "stage": self.stage,
            "message": self.message,
            "reason": self.reason(),
        }


@dataclass
class DataCheckReport:
    """What :func:`check_tasks` found."""

    tasks: int = 0
    """Tasks checked."""
    files: int = 0
    """Distinct reference files checked."""
    rendered: bool = False
    """Whether some files were also rendered."""
    renders: int = 0
    """Files handed to the renderer (those of a rendered role that open)."""
    problems: list[DeckProblem] = field(default_factory=list)
    """Every problem, in task order (a file shared by several tasks gives one problem per task)."""
    cache_hits: int = 0
    """Files whose open check came from the cache."""
    opened: int = 0
    """Files the deck engine opened in this check (cache misses)."""

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def bad_tasks(self) -> list[str]:
        """Ids of the tasks with at least one problem, in order."""
        return list(dict.fromkeys(p.task_id for p in self.problems))

    def summary_line(self) -> str:
        """One line: how many tasks and files were checked, and what was found."""
        head = f"{self.tasks} task(s), {self.files} file(s) opened"
        if self.rendered:
            head += f", {self.renders} rendered"
        if self.ok:
            return f"{head}: no problem found"
        bad = self.bad_tasks()
        return f"{head}: {len(self.problems)} problem(s) in {len(bad)} task(s)"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``arena dataset check --json`` prints)."""
        return {
            "ok": self.ok,
            "tasks": self.tasks,
            "files": self.files,
            "rendered": self.rendered,
            "renders": self.renders,
            "cache_hits": self.cache_hits,
            "problems": [p.to_json() for p in self.problems],
            "bad_tasks": self.bad_tasks(),
        }


# --------------------------------------------------------------------------- reference files


def _style_deck(task: Task) -> Path | None:
    text = task.style_target
    if not isinstance(text, str) or "\n" in text or len(text) > 1024:
        return None
    if not text.strip().lower().endswith(DECK_SUFFIXES):
        return None
    path = Path(text.strip()).expanduser()
    return path if path.is_absolute() else Path(task.original).parent / path


def reference_files(task: Task) -> list[tuple[str, Path]]:
    """``(role, path)`` of every reference file of ``task``: original, target, a style target that
    is a deck path, and each turn's target of a multi-turn session."""
    files: list[tuple[str, Path]] = [("original", Path(task.original))]
    if task.target is not None:
        files.append(("target", Path(task.target)))
    style = _style_deck(task)
    if style is not None:
        files.append(("style", style))
    turns = (task.metadata or {}).get("turns")
    if isinstance(turns, list):
        for i, turn in enumerate(turns, start=1):
            if isinstance(turn, dict) and turn.get("target"):
                files.append((f"target (turn {i})", Path(turn["target"])))
    return files


# --------------------------------------------------------------------------- the open check


def _one_line(text: str) -> str:
    line = re.sub(r"\s+", " ", str(text)).strip()
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def _open_deck(path: Path) -> None:
    """Open ``path`` with the deck engine as the judges and the runner do; raise what they raise."""
    from pptarena.deck import open_presentation, summarize
    from pptarena.trust.render_guard import check_deck

    open_presentation(path)
    check_deck(path)
    summarize(path)


def _cache_folder(cache_dir: Path) -> Path:
    from pptarena import __version__

    return Path(cache_dir) / CACHE_FOLDER / f"v{CHECK_VERSION}-{__version__}"


def _cache_read(folder: Path, sha: str) -> tuple[bool, str | None]:
    """``(hit, problem)`` from the cache (``problem`` None: the deck opened)."""
    try:
        data = json.loads((folder / sha[:2] / f"{sha}.json").read_text(encoding="utf-8"))
        problem = data["problem"]
    except (OSError, ValueError, KeyError, TypeError):
        return False, None
    return (True, problem) if problem is None or isinstance(problem, str) else (False, None)


def _cache_write(folder: Path, sha: str, problem: str | None) -> None:
    """Store one outcome (best effort: a read-only or full cache only costs speed)."""
    target = folder / sha[:2] / f"{sha}.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"problem": problem}, fh)
        os.replace(tmp, target)
    except OSError:
        return


def deck_open_problem(path: Path, *, cache_dir: Path | None = None) -> tuple[str, str] | None:
    """Why ``path`` is not a usable reference deck, as ``(stage, one-line message)``; None when it is.

    ``stage`` is ``missing`` or ``open``. With ``cache_dir``, the engine's verdict is cached by the
    file's SHA-256 (see the module docstring).
    """
    return _open_check(Path(path), cache_dir)[0]


def _open_check(path: Path, cache_dir: Path | None) -> tuple[tuple[str, str] | None, bool]:
    """:func:`deck_open_problem`'s answer and whether it came from the cache."""
    if not path.exists():
        return ("missing", "no such file"), False
    if not path.is_file():
        return ("missing", "not a regular file"), False
    from pptarena.deck import DeckError

    folder = _cache_folder(cache_dir) if cache_dir is not None else None
    sha = ""
    if folder is not None:
        try:
            sha = file_digest(path)
        except OSError as exc:
            return ("open", _one_line(f"cannot be read ({type(exc).__name__}: {exc})")), False
        hit, problem = _cache_read(folder, sha)
        if hit:
            return (None if problem is None else ("open", problem)), True
    try:
        _open_deck(path)
    except DeckError as exc:
        problem = _one_line(str(exc))
        if folder is not None:
            _cache_write(folder, sha, problem)
        return ("open", problem), False
    except (OSError, MemoryError, RecursionError) as exc:  # not cached: may pass next time
        return ("open", _one_line(f"{path.name}: cannot be loaded ({type(exc).__name__}: {exc})")), False
    except Exception as exc:  # noqa: BLE001 - any engine crash on a reference deck is the deck's problem
        return (
            "open",
            _one_line(f"{path.name}: the deck engine failed ({type(exc).__name__}: {exc})"),
        ), False
    if folder is not None:
        _cache_write(folder, sha, None)
    return None, False


# --------------------------------------------------------------------------- the check


def _render_problem(renderer: Renderer, path: Path, scratch: Path) -> tuple[str, bool] | None:
    """Why ``path`` does not render and whether the deck engine said so (a :class:`DeckError`: the
    deck's fault for sure); None when it renders."""
    from pptarena.deck import DeckError

    out = Path(tempfile.mkdtemp(prefix="deck-", dir=scratch))
    try:
        images = renderer.render(path, out)
    except DeckError as exc:
        return _one_line(str(exc)), True
    except PptArenaError as exc:  # InfraError: the renderer crashed, hung or gave a wrong PDF on it
        return _one_line(str(exc)), False
    except Exception as exc:  # noqa: BLE001 - a renderer failure on this deck is reported, not raised
        return _one_line(f"{type(exc).__name__}: {exc}"), False
    if not images:
        return "the renderer produced no slide images", False
    return None


def check_tasks(
    tasks: Iterable[Task],
    components: Components | None = None,
    *,
    render: bool | Collection[str],
    cache_dir: Path | None = None,
    renderer: Renderer | None = None,
    progress: Progress | None = None,
) -> DataCheckReport:
    """Check every reference file of ``tasks`` (see the module docstring); never raises for a bad deck.

    :param components: the run's :class:`~pptarena.run.configuration.components.Components`: its ``cache_dir``
        holds the open-check cache and its renderer renders (both may be given directly instead).
    :param render: also render each deck that opens: True for every role, or the roles to render
        (``{"original", "target"}``; :func:`render_roles` gives what a run's judges render).
    :param cache_dir: the cache folder (default: the components'; None without components: no cache).
    :param renderer: the renderer (default: the components' run renderer, built only if ``render``).
    :param progress: ``progress(done, total, what)`` after each step.
    :raises DataCheckError: ``render`` is set and no renderer can be built, or it fails on every one
        (two or more) of the decks that open without the deck engine blaming a deck: the renderer is
        broken, and a run must not skip every task as a dataset error for that.
    """
    tasks = list(tasks)
    if cache_dir is None and components is not None:
        cache_dir = components.cache_dir
    per_task = [(t, reference_files(t)) for t in tasks]
    paths = list(dict.fromkeys(p for _, files in per_task for _, p in files))
    roles = ALL_ROLES if render is True else frozenset(render or ())
    to_render = {p for _, files in per_task for role, p in files if role.split(" ")[0] in roles}
    render = bool(to_render)
    report = DataCheckReport(tasks=len(tasks), files=len(paths), rendered=render)
    if render and renderer is None:
        if components is None:
            raise DataCheckError("rendering was asked for but neither components nor a renderer was given")
        try:
            renderer = components.renderer()
        except Exception as exc:  # noqa: BLE001 - the tool, not the data: one clear error
            raise DataCheckError(
                f"cannot build the run's renderer to check renders: {_one_line(str(exc))}"
            ) from exc
    total = len(paths) + len(to_render)
    done = 0
    outcome: dict[Path, tuple[str, str] | None] = {}
    for path in paths:
        outcome[path], cached = _open_check(path, cache_dir)
        if cached:
            report.cache_hits += 1
        elif outcome[path] is None or outcome[path][0] == "open":  # type: ignore[index]
            report.opened += 1
        done += 1
        if progress is not None:
            progress(done, total, str(path))
    if render:
        assert renderer is not None
        tried, tool_failures = 0, []
        with tempfile.TemporaryDirectory(prefix="pptarena-datacheck-") as scratch:
            for path in [p for p in paths if p in to_render]:
                if outcome[path] is None:
                    tried += 1
                    failed = _render_problem(renderer, path, Path(scratch))
                    if failed is not None:
                        outcome[path] = ("render", failed[0])
                        if not failed[1]:
                            tool_failures.append(failed[0])
                done += 1
                if progress is not None:
                    progress(done, total, str(path))
        report.renders = tried
        if tried > 1 and len(tool_failures) == tried:  # the tool, not the data: never N dataset errors
            raise DataCheckError(
                f"the renderer failed on every one of the {tried} decks that open (first: {tool_failures[0]})"
            )
    for task, files in per_task:
        for role, path in files:
            found = outcome[path]
            if found is not None:
                report.problems.append(DeckProblem(task.id, role, str(path), found[0], found[1]))
    return report


def skip_reasons(report: DataCheckReport) -> dict[str, str]:
    """``{task_id: reason}`` for every task a run must skip (the first problem's labelled reason,
    ``dataset error: <role> deck <path> does not open: <why>``; ``+ N more`` when it has several).

    The runner skips such a task for every agent: the reason goes to the manifest's ``skipped`` list
    for each agent, a warning line is printed, and no pair of it is run or scored.
    """
    reasons: dict[str, list[str]] = {}
    for problem in report.problems:
        reasons.setdefault(problem.task_id, []).append(problem.reason())
    return {
        task_id: found[0] + (f" (+ {len(found) - 1} more problem(s))" if len(found) > 1 else "")
        for task_id, found in reasons.items()
    }


def dataset_skips(
    tasks: Iterable[Task],
    components: Components,
    *,
    render: bool | Collection[str],
    progress: Progress | None = None,
) -> dict[str, str]:
    """:func:`check_tasks` then :func:`skip_reasons`: what a run calls before planning its pairs."""
    return skip_reasons(check_tasks(tasks, components, render=render, progress=progress))


def render_roles(config: RunConfig) -> frozenset[str]:
    """The reference roles a run with ``config`` renders: the union over its judges of
    :data:`RENDERING_JUDGES`, or of what a judge class declares in ``uses_renders``.

    Agents render their own working decks only, so they do not count. Pass the result as
    ``render`` to :func:`check_tasks` (or pass True / False there to decide otherwise).
    """
    roles: set[str] = set()
    for judge in config.judges:
        factory = getattr(getattr(judge, "spec", None), "factory", None)
        declared = getattr(factory, "uses_renders", None)
        if declared is None:
            roles |= RENDERING_JUDGES.get(judge.use, frozenset())
        elif declared is True:
            roles |= ALL_ROLES
        elif declared and not isinstance(declared, str):
            roles |= {str(r) for r in declared}
    return frozenset(roles)


def run_renders(config: RunConfig) -> bool:
    """Whether a run with ``config`` renders any reference deck (see :func:`render_roles`)."""
    return bool(render_roles(config))


# --------------------------------------------------------------------------- judge time


def reference_failure(
    task: Task, *, cache_dir: Path | None = None, roles: Iterable[str] | None = None
) -> str | None:
    """The labelled dataset error of ``task``'s first broken reference deck, or None when all open.

    For judge time: when a judge (or the reference agent, which hands in the target) fails on a
    task, call this before blaming the agent or the judge; a string means the dataset is at fault
    and the pair should be recorded as ``infra_error`` with this reason. ``roles`` limits the check
    (e.g. ``("target",)``); answers are cached by file content with ``cache_dir``.
    """
    wanted = set(roles) if roles is not None else None
    for role, path in reference_files(task):
        if wanted is not None and role not in wanted and role.split(" ")[0] not in wanted:
            continue
        found = deck_open_problem(path, cache_dir=cache_dir)
        if found is not None:
            return DeckProblem(task.id, role, str(path), found[0], found[1]).reason()
    return None


def is_dataset_error(text: str | None) -> bool:
    """Whether an error line is a labelled dataset error (from :meth:`DeckProblem.reason`)."""
    return bool(text) and str(text).startswith("dataset error: ")
