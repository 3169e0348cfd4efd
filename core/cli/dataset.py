"""``arena dataset export``: write any dataset in PPTArena's or PPT-Eval's published layout;
``arena dataset check``: check that every reference deck of a config's tasks opens (and renders).

:func:`export_dataset` does the work on a list of :class:`~pptarena.types.Task`; the click
command only loads the config and builds the dataset through the registry.

PPTArena layout (``--format pptarena``)::

    evaluation_pairs_refined.json   list of {name, prompt, style_target, original, ground_truth,
                                    category, edit_type}
    Original/<deck>.pptx            originals (identical decks written once)
    GroundTruth/<task id>.pptx      targets

PPT-Eval layout (``--format ppteval``)::

    task_registry/tasks.json        {id: {goal, rubric_path, tags, misc: {difficulty, pptarena}, file_path}}
    task_registry/rubrics/<id>.json the rubric, unmodified
    data/files/PowerPoint/<deck>.pptx
    data/files/targets/<id>.pptx    targets, referenced from misc.pptarena (ignored by PPT-Eval)

Both are read back by the ``pptarena`` and ``ppteval`` datasets with the same task ids,
instructions and decks, as long as ids are already in the form the PPTArena loader derives
(``case-<N>`` or a lower-case slug); other ids are renamed by the PPTArena loader (reported).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from pptarena.cli.options import config_file_option
from pptarena.types import PptArenaError, Task

FORMATS = ("pptarena", "ppteval")
_CASE_NAME = re.compile(r"^\s*Case\s+(\d+)\s*:", re.IGNORECASE)
_UNSAFE_FILE_CHARS = re.compile(r'[\\/\x00-\x1f<>:"|?*]')


class ExportError(PptArenaError, ValueError):
    """The dataset cannot be written in the requested layout."""


def pptarena_id(name: str) -> str:
    """The task id the ``pptarena`` dataset derives from a case name (same rule as its loader)."""
    match = _CASE_NAME.match(name)
    if match:
        return f"case-{int(match.group(1))}"
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def _safe_file_name(text: str) -> str:
    cleaned = _UNSAFE_FILE_CHARS.sub("_", text).strip().strip(".")
    return cleaned or "deck"


class _DeckPool:
    """Copies decks into one folder: identical decks once, clashing names made unique."""

    def __init__(self, out_root: Path, folder: str):
        self.out_root = out_root
        self.folder = folder
        self.by_hash: dict[str, str] = {}
        self.used: set[str] = set()

    def add(self, source: Path, name: str) -> str:
        """Copy ``source`` (as ``name``) unless already present; return its path relative to out_root."""
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        if digest in self.by_hash:
            return self.by_hash[digest]
        stem, suffix = Path(name).stem, Path(name).suffix or ".pptx"
        candidate, n = f"{stem}{suffix}", 1
        while candidate.lower() in self.used:
            n += 1
            candidate = f"{stem}-{n}{suffix}"
        self.used.add(candidate.lower())
        relative = f"{self.folder}/{candidate}"
        target = self.out_root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        self.by_hash[digest] = relative
        return relative


def _case_name(task: Task) -> tuple[str, bool]:
    """A PPTArena case name for ``task`` and whether the loader will give back the same id."""
    name = task.metadata.get("name")
    if isinstance(name, str) and pptarena_id(name) == task.id:
        return name, True
    return task.id, pptarena_id(task.id) == task.id


def _export_pptarena(tasks: list[Task], out: Path, notes: list[str]) -> None:
    originals, targets = _DeckPool(out, "Original"), _DeckPool(out, "GroundTruth")
    cases = []
    renamed = []
    for task in tasks:
        name, same_id = _case_name(task)
        if not same_id:
            renamed.append(f"{task.id} -> {pptarena_id(name)}")
        category = task.metadata.get("category") or []
        cases.append(
            {
                "name": name,
                "prompt": task.instruction,
                "style_target": task.style_target if task.style_target is not None else "",
                "original": originals.add(task.original, _safe_file_name(task.original.name)),
                "ground_truth": targets.add(task.target, _safe_file_name(task.id) + ".pptx")
                if task.target
                else None,
                "category": [category] if isinstance(category, str) else list(category),
                "edit_type": task.metadata.get("edit_type") or "",
            }
        )
    (out / "evaluation_pairs_refined.json").write_text(
        json.dumps(cases, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    if renamed:
        notes.append(f"{len(renamed)} task id(s) will read back under the PPTArena id rule: {renamed[:10]}")
    missing_gt = [t.id for t in tasks if t.target is None]
    if missing_gt:
        notes.append(
            f"{len(missing_gt)} task(s) have no target deck (ground_truth is null): {missing_gt[:10]}"
        )


def _export_ppteval(tasks: list[Task], out: Path, notes: list[str]) -> None:
    registry_dir = out / "task_registry"
    (registry_dir / "rubrics").mkdir(parents=True)
    decks, targets = _DeckPool(out, "data/files/PowerPoint"), _DeckPool(out, "data/files/targets")
    registry: dict[str, Any] = {}
    no_rubric = []
    rubric_names: set[str] = set()  # lower-cased: ids that clean to one file name must not overwrite
    for task in tasks:
        misc: dict[str, Any] = {}
        difficulty = task.metadata.get("difficulty")
        if isinstance(difficulty, str) and difficulty:
            misc["difficulty"] = difficulty.capitalize()
        extension: dict[str, Any] = {
            "style_target": task.style_target,
            "category": list(task.metadata.get("category") or []),
            "edit_type": task.metadata.get("edit_type"),
        }
        if task.target is not None:
            extension["target"] = targets.add(task.target, _safe_file_name(task.id) + ".pptx")
        misc["pptarena"] = {k: v for k, v in extension.items() if v not in (None, [], "")}
        entry: dict[str, Any] = {"goal": task.instruction}
        if task.rubric is not None:
            stem = _safe_file_name(task.id)
            rubric_name, n = stem + ".json", 1
            while rubric_name.lower() in rubric_names:
                n += 1
                rubric_name = f"{stem}-{n}.json"
            rubric_names.add(rubric_name.lower())
            (registry_dir / "rubrics" / rubric_name).write_text(
                json.dumps(task.rubric, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            entry["rubric_path"] = f"task_registry/rubrics/{rubric_name}"
        else:
            no_rubric.append(task.id)
        tags = task.metadata.get("tags")
        entry["tags"] = list(tags) if isinstance(tags, list) and tags else ["powerpoint"]
        entry["misc"] = misc
        entry["file_path"] = decks.add(task.original, _safe_file_name(task.original.name))
        registry[task.id] = entry
    (registry_dir / "tasks.json").write_text(
        json.dumps(registry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    if no_rubric:
        notes.append(
            f"{len(no_rubric)} task(s) have no rubric, so no rubric_path (PPT-Eval's own loader skips "
            f"them; the ppteval dataset loads them without a rubric): {no_rubric[:10]}"
        )


def export_dataset(tasks: Iterable[Task], fmt: str, out_dir: Path) -> dict[str, Any]:
    """Write ``tasks`` in the ``fmt`` layout ("pptarena" or "ppteval") into the new or empty ``out_dir``.

    Returns ``{"format", "out", "tasks", "decks", "notes"}``; ``notes`` lists anything that does
    not round-trip exactly. Raises :class:`ExportError` for a bad format, a non-empty folder,
    duplicate ids or missing decks (nothing is written then).
    """
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    tasks = list(tasks)
    out = Path(out_dir).expanduser()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"export folder {out} exists and is not empty")
    ids = [t.id for t in tasks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ExportError(f"duplicate task ids: {duplicates}")
    missing = sorted(
        {str(p) for t in tasks for p in (t.original, t.target) if p is not None and not p.is_file()}
    )
    if missing:
        raise ExportError(f"{len(missing)} deck(s) missing:\n  " + "\n  ".join(missing))
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    if fmt == "pptarena":
        _export_pptarena(tasks, out, notes)
    else:
        _export_ppteval(tasks, out, notes)
    decks = sum(1 for p in out.rglob("*.pptx"))
    return {"format": fmt, "out": str(out), "tasks": len(tasks), "decks": decks, "notes": notes}


@click.group("dataset")
def dataset_group() -> None:
    """Dataset tools: fetch a dataset's public files, check its decks, export it in a published layout."""


def _fetch() -> None:
    from pptarena.cli.fetch import fetch_command

    dataset_group.add_command(fetch_command)


_fetch()


@dataset_group.command("export")
@config_file_option("Run config whose [dataset] (and [run] tasks/limit) selects the tasks.", required=True)
@click.option("--format", "fmt", required=True, type=click.Choice(FORMATS), help="Layout to write.")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.pass_context
def export_command(ctx: click.Context, config_path: str, fmt: str, out_dir: Path) -> None:
    """Write the config's dataset to OUT_DIR in PPTArena's or PPT-Eval's layout."""
    from pptarena.cli.main import load_run_config
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.tasks import NothingSelectedError
    from pptarena.run.runner import select_tasks

    config, registry = load_run_config(ctx, config_path, require_secrets=False)
    try:
        dataset = Components(config, registry).build(config.dataset)
        tasks = select_tasks(list(dataset.tasks()), config.run.tasks, config.run.limit)
        summary = export_dataset(tasks, fmt, out_dir)
    except NothingSelectedError as exc:
        raise _NothingSelected(str(exc)) from exc
    except (PptArenaError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"wrote {summary['tasks']} task(s) and {summary['decks']} deck(s) in the {fmt} layout to {out_dir}"
    )
    for note in summary["notes"]:
        click.echo(f"note: {note}", err=True)


NOTHING_SELECTED_EXIT = 3
"""Exit code of ``arena dataset check`` and ``export`` when the selection holds no task (as ``arena run``)."""


class _NothingSelected(click.ClickException):
    """The selection holds no task: one line, exit :data:`NOTHING_SELECTED_EXIT`."""

    exit_code = NOTHING_SELECTED_EXIT


class _CheckProgress:
    """The progress display of ``arena dataset check``: a bar on a terminal, a line every
    :attr:`every` steps otherwise (nothing for a short check)."""

    every = 25

    def __init__(self, live: bool):
        self.live = live
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _CheckProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def __call__(self, done: int, total: int, what: str) -> None:
        """Report that ``done`` of ``total`` steps are finished (the last one on ``what``)."""
        if self.live:
            if self._bar is None:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
                from rich.progress import Progress as RichProgress

                self._bar = RichProgress(
                    TextColumn("[bold]checking"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=Console(stderr=True),
                    transient=True,
                )
                self._bar.__enter__()
                self._task = self._bar.add_task("check", total=total)
            self._bar.update(self._task, completed=done)
        elif total > self.every and (done % self.every == 0 or done == total):
            click.echo(f"checked {done}/{total} step(s)", err=True)


@dataset_group.command("check")
@config_file_option("Run config whose [dataset] (and [run] tasks/limit) selects the tasks.", required=True)
@click.option("--task", "task_globs", multiple=True, help="Task-id glob (repeatable; default: [run] tasks).")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N tasks.")
@click.option(
    "--no-render",
    "no_render",
    is_flag=True,
    help="Only open the decks (default: also render them when the config's judges render).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def check_command(
    ctx: click.Context,
    config_path: str,
    task_globs: tuple[str, ...],
    limit: int | None,
    no_render: bool,
    as_json: bool,
) -> None:
    """Check that every original, target and style deck of the selected tasks opens (and renders).

    Prints one line per problem (task, file, why) and a summary line. Exits 0 when the data is
    clean, 6 when a problem was found (a dataset that does not load at all included) and 3 when
    the selection holds no task.
    """
    import sys

    from pptarena.cli.main import load_run_config
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.datacheck import (
        DATASET_ERRORS_EXIT,
        DataCheckError,
        check_tasks,
        render_roles,
    )
    from pptarena.run.configuration.tasks import load_tasks, select_tasks

    config, registry = load_run_config(ctx, config_path, require_secrets=False)
    components = Components(config, registry)
    try:
        try:
            every_task = load_tasks(components)
        except (PptArenaError, ValueError, OSError) as exc:
            click.echo(f"dataset error: the dataset does not load: {exc}", err=True)
            ctx.exit(DATASET_ERRORS_EXIT)
        try:  # check_files=False: a file not fetched yet is reported per task below
            tasks = select_tasks(
                every_task, list(task_globs) or config.run.tasks, limit or config.run.limit, check_files=False
            )
        except (PptArenaError, ValueError) as exc:  # the selection holds no task
            raise _NothingSelected(str(exc)) from exc
        if not tasks:
            globs = list(task_globs) or config.run.tasks
            raise _NothingSelected(
                f"no task matches {' '.join(map(repr, globs))} (the dataset has {len(every_task)} tasks)"
            )
        roles = frozenset() if no_render else render_roles(config)
        if not as_json:
            how = f"; rendering the {', '.join(sorted(roles))} decks" if roles else ""
            why = "" if roles or no_render else " (no judge of this config renders)"
            click.echo(f"checking {len(tasks)} task(s): opening every reference deck{how}{why}", err=True)
        try:
            with _CheckProgress(live=sys.stderr.isatty() and not as_json) as progress:
                report = check_tasks(tasks, components, render=roles, progress=progress)
        except DataCheckError as exc:
            raise click.ClickException(f"{exc} (--no-render checks without rendering)") from exc
    finally:
        components.close()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        for problem in report.problems:
            click.echo(problem.line())
        hints = dict.fromkeys(
            str(t.metadata.get("missing_files_hint") or "")
            for t in tasks
            if t.metadata.get("missing_files") and t.id in report.bad_tasks()
        )
        for hint in hints:
            if hint:
                click.echo(hint, err=True)
        click.echo(report.summary_line())
    if not report.ok:
        ctx.exit(DATASET_ERRORS_EXIT)
