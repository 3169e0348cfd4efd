"""``arena author``: draft tasks, rubrics and style targets with a model, and check rubrics.

Wired into ``arena`` lazily as ``pptarena.cli.author:author_group``. The work happens in
:mod:`pptarena.authoring.propose`, :mod:`pptarena.authoring.rubric`, :mod:`pptarena.authoring.style`
and :mod:`pptarena.authoring.check`; this module only parses options and prints reports.
See docs/authoring.md.

Why it is long: it holds the options and printed reports of all four ``arena author`` subcommands
(propose, rubric, style-target, check), which share the task resolution, writable-folder and
``_author`` log helpers at its top; the work is in :mod:`pptarena.authoring`, but each report
(rejected proposals with the reply they came from, failed drafts, the check table) is printed here.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from pptarena.authoring.llm import AuthorError
from pptarena.cli.options import max_images_option, no_renders_option

EXIT_FLAGGED = 1


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


def _env(config: str | None, renders: bool = True) -> Any:
    from pptarena.authoring.llm import open_author_env

    try:
        return open_author_env(config, renders=renders)
    except AuthorError as exc:
        raise _fail(exc) from exc


def _params(max_tokens: int | None) -> dict[str, Any]:
    return {"max_tokens": max_tokens} if max_tokens else {}


def _resolve_task(env: Any, task_path: Path | None, task_id: str | None, config: str | None) -> Any:
    from pptarena.authoring.files import load_config_tasks, load_task_folder

    if task_path is not None:
        return load_task_folder(env.registry, task_path, env.cache_dir)
    if task_id is None or config is None:
        raise click.UsageError("give --task FOLDER, or --config CONFIG with --task-id ID")
    refs = load_config_tasks(env, [task_id])
    if len(refs) != 1:
        raise click.UsageError(f"--task-id {task_id!r} matches {len(refs)} tasks; give one exact id")
    return refs[0]


def _writable_folder(env: Any, ref: Any, out: Path | None, what: str) -> Path | None:
    """Where drafts of ``ref`` go: ``None`` when ``out`` is given, else its task folder (never the cache)."""
    if out is not None:
        return None
    folder = ref.folder
    if folder is None:
        raise click.UsageError(f"task {ref.task.id} has no task folder to write {what} into; give --out FILE")
    cache = Path(env.cache_dir).resolve()
    if cache in Path(folder).resolve().parents:
        raise click.UsageError(
            f"task {ref.task.id} lives in the cache ({folder}); give --out FILE for the {what}"
        )
    return Path(folder)


def _log(folder: Path, name: str, data: Any) -> Path:
    from pptarena.authoring.files import write_json_file

    log_dir = folder / "_author"
    log_dir.mkdir(exist_ok=True)
    path = log_dir / name
    write_json_file(path, data)
    return path


model_option = click.option(
    "--model", "model", required=True, help="Model as <backend>/<model>, e.g. openai/gpt-4o."
)
config_option = click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False),
    default=None,
    help="Run config: [backends.*] options, [renderer]; its dataset for --task-id.",
)


def one_task_options(command: Any) -> Any:
    """``--task FOLDER`` or ``--task-id ID`` (with ``--config``): the task an authoring command works on."""
    command = click.option("--task-id", "task_id", default=None, help="Task id in the --config dataset.")(
        command
    )
    return click.option(
        "--task",
        "task_path",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="Task folder (holding task.toml).",
    )(command)


attempts_option = click.option(
    "--attempts",
    type=click.IntRange(1, 10),
    default=3,
    show_default=True,
    help="Model calls at most (problems are fed back after each).",
)
tokens_option = click.option(
    "--max-tokens",
    type=click.IntRange(1, 200_000),
    default=8000,
    show_default=True,
    help="max_tokens per model call.",
)


@click.group("author")
def author_group() -> None:
    """Draft tasks, rubrics and style targets with a model, and check rubrics against known answers."""


# --------------------------------------------------------------------------- propose


@author_group.command("propose")
@click.option(
    "--deck",
    "deck",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The deck to propose edit tasks for.",
)
@click.option("--n", "n", type=click.IntRange(1, 50), default=5, show_default=True, help="How many tasks.")
@click.option(
    "--out",
    "out",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder dataset to write (created; existing tasks are kept). Default: ./<deck name>-tasks",
)
@model_option
@config_option
@no_renders_option("Do not render the deck for the model.")
@max_images_option(8)
@attempts_option
@tokens_option
def propose_command(
    deck: Path,
    n: int,
    out: Path | None,
    model: str,
    config: str | None,
    no_renders: bool,
    max_images: int,
    attempts: int,
    max_tokens: int,
) -> None:
    """Ask MODEL for N grounded edit tasks on DECK and write them as a folder dataset in OUT."""
    out = out or Path(f"{deck.stem}-tasks")
    from pptarena.authoring.files import load_dataset_tasks
    from pptarena.authoring.propose import propose_tasks, render_for_prompt, write_proposals
    from pptarena.deck import DeckError, summarize
    from pptarena.types import PptArenaError

    env = _env(config, renders=not no_renders)
    try:
        summary = summarize(deck)
        with tempfile.TemporaryDirectory(prefix="pptarena-propose-") as work:
            images = render_for_prompt(env.renderer(), deck, Path(work), max_images)
            result = propose_tasks(
                env.model(model), summary, n, images=images, attempts=attempts, params=_params(max_tokens)
            )
        folders = (
            write_proposals(result, deck, out, model=model, record={"images": len(images)})
            if result.proposals
            else []
        )
        if folders:
            load_dataset_tasks(
                env.registry, "folder", {"root": out, "ids": [f.name for f in folders]}, env.cache_dir
            )
    except (AuthorError, DeckError, PptArenaError, OSError, LookupError, ValueError) as exc:
        raise _fail(exc) from exc
    finally:
        env.close()
    for i, r in enumerate(result.rejected):
        click.echo(
            f"rejected: reply {_reply_of(result, i)}, task {r['index'] + 1}: {'; '.join(r['problems'])}"
        )
    for folder in folders:
        click.echo(f"wrote {folder / 'task.toml'}")
    click.echo(
        f"{len(folders)} of {n} task(s) proposed after {len(result.replies)} model call(s)"
        + (f" ({len(images)} slide images sent)" if images else " (no slide images)")
    )
    if not result.complete:
        raise SystemExit(EXIT_FLAGGED)


def _rubric_path(out: Path | None, folder: Path | None, ok: bool) -> Path:
    """Where a drafted rubric goes: ``--out`` or ``<folder>/rubric.json``; failed drafts get
    ``.draft.json``.
    """
    base = out if out is not None else (folder or Path(".")) / "rubric.json"
    return base if ok else base.with_name(base.stem + ".draft.json")


def _reply_of(result: Any, rejected_index: int) -> int:
    """The 1-based reply number a rejected proposal came from."""
    return int(result.rejected[rejected_index].get("reply", 0)) + 1


# --------------------------------------------------------------------------- rubric


@author_group.command("rubric")
@one_task_options
@model_option
@config_option
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the rubric here instead of <task folder>/rubric.json (task.toml is then not changed).",
)
@click.option("--no-run", is_flag=True, help="Only the static checks; do not run drafts on the task's decks.")
@no_renders_option("No renderer for drafts whose leaves read screenshots.")
@attempts_option
@tokens_option
def rubric_command(
    task_path: Path | None,
    task_id: str | None,
    model: str,
    config: str | None,
    out: Path | None,
    no_run: bool,
    no_renders: bool,
    attempts: int,
    max_tokens: int,
) -> None:
    """Draft a PPT-Eval rubric for a task with MODEL, validate it, and write rubric.json."""
    from pptarena.authoring.check import RubricChecker
    from pptarena.authoring.files import set_top_level_keys, write_json_file
    from pptarena.authoring.rubric import draft_rubric
    from pptarena.deck import DeckError
    from pptarena.types import PptArenaError

    env = _env(config, renders=not no_renders)
    checker = None
    try:
        ref = _resolve_task(env, task_path, task_id, config)
        folder = _writable_folder(env, ref, out, "rubric")
        if not no_run:
            checker = RubricChecker(
                env.registry,
                cache_dir=env.cache_dir,
                renderer=None if no_renders else env.renderer,
                model=model,
                model_factory=env.model,
            )
        draft = draft_rubric(
            env.model(model),
            ref.task,
            checker=checker,
            folder=ref.folder,
            attempts=attempts,
            params=_params(max_tokens),
        )
        rubric = draft.rubric
        target = _rubric_path(out, folder, draft.ok)
        if rubric is not None:
            write_json_file(target, rubric)
        if folder is not None:
            _log(
                folder,
                "rubric.json",
                {
                    "model": model,
                    "ok": draft.ok,
                    "attempts": [a.to_json() for a in draft.result.attempts],
                    "check": draft.check.to_json() if draft.check else None,
                },
            )
        if draft.ok and out is None and folder is not None:
            set_top_level_keys(folder / "task.toml", {"rubric": "rubric.json"}, done_todo="rubric")
    except (AuthorError, DeckError, PptArenaError, OSError, LookupError, ValueError) as exc:
        raise _fail(exc) from exc
    finally:
        if checker is not None:
            checker.close()
        env.close()
    click.echo(draft.result.report())
    if draft.check is not None:
        from pptarena.authoring.check import format_table

        click.echo(format_table([draft.check]))
    elif not no_run and draft.ok:
        click.echo("note: the draft was not run on decks")
    if rubric is None:
        click.echo("no rubric JSON could be parsed from the model's replies; nothing written", err=True)
        raise SystemExit(EXIT_FLAGGED)
    click.echo(f"{'wrote' if draft.ok else 'draft FAILED validation, kept as'} {target}")
    if not draft.ok:
        raise SystemExit(EXIT_FLAGGED)


# --------------------------------------------------------------------------- style target


@author_group.command("style-target")
@one_task_options
@model_option
@config_option
@click.option(
    "--file",
    "file_name",
    default=None,
    help="Write the style target to this file in the task folder (style_target_file) instead of inline.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the style target to this file only (task.toml is not changed).",
)
@no_renders_option("Do not send slide renders.")
@max_images_option(6)
@attempts_option
@tokens_option
def style_target_command(
    task_path: Path | None,
    task_id: str | None,
    model: str,
    config: str | None,
    file_name: str | None,
    out: Path | None,
    no_renders: bool,
    max_images: int,
    attempts: int,
    max_tokens: int,
) -> None:
    """Draft a PPTArena style target from a task's original and target decks with MODEL."""
    from pptarena.authoring.style import draft_style_target
    from pptarena.deck import DeckError
    from pptarena.types import PptArenaError

    env = _env(config, renders=not no_renders)
    try:
        ref = _resolve_task(env, task_path, task_id, config)
        folder = _writable_folder(env, ref, out, "style target")
        with tempfile.TemporaryDirectory(prefix="pptarena-style-") as work:
            draft = draft_style_target(
                env.model(model),
                ref.task,
                renderer=env.renderer(),
                work=Path(work),
                max_images=max_images,
                attempts=attempts,
                params=_params(max_tokens),
            )
        written = _write_style_target(draft.text, folder, out, file_name) if draft.ok and draft.text else None
        if folder is not None:
            _log(
                folder,
                "style-target.json",
                {"model": model, "ok": draft.ok, "attempts": [a.to_json() for a in draft.result.attempts]},
            )
    except (AuthorError, DeckError, PptArenaError, OSError, LookupError, ValueError) as exc:
        raise _fail(exc) from exc
    finally:
        env.close()
    click.echo(draft.result.report())
    if draft.text:
        click.echo("--- style target ---\n" + draft.text + "\n---")
    if written:
        click.echo(f"wrote {written}")
    else:
        click.echo("the style target FAILED validation; nothing written", err=True)
        raise SystemExit(EXIT_FLAGGED)


def _write_style_target(text: str, folder: Path | None, out: Path | None, file_name: str | None) -> str:
    """Write an accepted style target (``--out`` file, ``--file`` in the task folder, or inline);
    returns where.
    """
    from pptarena.authoring.files import set_top_level_keys

    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
        return str(out)
    assert folder is not None  # _writable_folder gives a folder whenever out is None
    if file_name is not None:
        if Path(file_name).name != file_name or file_name in ("task.toml", "rubric.json"):
            raise AuthorError(f"--file must be a plain file name in the task folder, got {file_name!r}")
        (folder / file_name).write_text(text + "\n", encoding="utf-8")
        set_top_level_keys(
            folder / "task.toml",
            {"style_target": None, "style_target_file": file_name},
            done_todo="style target",
        )
        return f"{folder / file_name} (style_target_file in task.toml)"
    set_top_level_keys(
        folder / "task.toml", {"style_target_file": None, "style_target": text}, done_todo="style target"
    )
    return f"{folder / 'task.toml'} (style_target)"


# --------------------------------------------------------------------------- check


@author_group.command("check")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@config_option
@click.option("--task-id", "task_ids", multiple=True, help="Task-id glob (repeatable).")
@click.option(
    "--model", "model", default=None, help="Model for leaves calling llm_call / vlm_call (optional)."
)
@no_renders_option("No renderer: rubrics reading screenshots are reported, not run.")
@click.option(
    "--leaf-timeout",
    type=click.FloatRange(1, 3600),
    default=60.0,
    show_default=True,
    help="Seconds per leaf.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def check_command(
    path: Path | None,
    config: str | None,
    task_ids: tuple[str, ...],
    model: str | None,
    no_renders: bool,
    leaf_timeout: float,
    as_json: bool,
) -> None:
    """Run every rubric on the original (expect 0), target (expect 1.0) and partial decks; flag bad rubrics.

    PATH is a task folder or a folder dataset root; without PATH the --config dataset is used.
    Exit status 1 when any rubric is flagged.
    """
    from pptarena.authoring.check import RubricChecker, format_table
    from pptarena.authoring.files import (
        TASK_FILE,
        TaskRef,
        load_config_tasks,
        load_dataset_tasks,
        task_folder_of,
    )
    from pptarena.types import PptArenaError

    if path is None and config is None:
        raise click.UsageError("give a task folder / dataset folder, or --config")
    env = _env(config, renders=not no_renders)
    checker = None
    try:
        if path is not None:
            root, ids = (path.parent, [path.name]) if (path / TASK_FILE).is_file() else (path, [])
            options: dict[str, Any] = {"root": root.resolve()}
            if task_ids or ids:
                options["ids"] = list(task_ids) or ids
            tasks = load_dataset_tasks(env.registry, "folder", options, env.cache_dir)
            refs = [TaskRef(t, task_folder_of(t, root)) for t in tasks]
        else:
            refs = load_config_tasks(env, list(task_ids) or None)
        checker = RubricChecker(
            env.registry,
            cache_dir=env.cache_dir,
            model=model,
            model_factory=env.model if model else None,
            renderer=None if no_renders else env.renderer,
            leaf_timeout=leaf_timeout,
        )
        checks = checker.check([(r.task, r.folder) for r in refs])
    except (AuthorError, PptArenaError, OSError, LookupError, ValueError) as exc:
        raise _fail(exc) from exc
    finally:
        if checker is not None:
            checker.close()
        env.close()
    if as_json:
        click.echo(json.dumps([c.to_json() for c in checks], indent=2, ensure_ascii=False))
    else:
        click.echo(format_table(checks))
    if any(c.flagged for c in checks):
        raise SystemExit(EXIT_FLAGGED)
