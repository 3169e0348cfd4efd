"""The ``arena`` command line. Click commands only: the work happens in the runner and the components.

Subcommands living in other modules are imported only when invoked, so
``arena --help`` stays fast and works even when a plugin is broken.

Why it is long: besides the root group and its lazy command table it holds the commands that are
always loaded (plugins, options, tasks, run); ``arena run`` with its exit-code helpers
(``_finished_run_exit_code``, ``_dataset_errors_code``, ``_check_selection``) is the largest part
and could move to a lazily loaded module of its own like the commands in ``LAZY_COMMANDS`` (not done
yet).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pptarena._version import __version__
from pptarena.cli import exit_codes
from pptarena.cli.exit_codes import CONFIG_ERROR, NOTHING_SELECTED, ExitError

if TYPE_CHECKING:  # the CLI imports the run's modules only when a command needs them
    from pptarena.run.folder.summary_record import Summary

LAZY_COMMANDS = {
    "init": ("pptarena.cli.init", "init_command", "Write an example run config (`arena init --list`)."),
    "summarize": ("pptarena.cli.deck", "summarize_command", "Summarize a deck as JSON or text."),
    "diff": ("pptarena.cli.deck", "diff_command", "Show the structural edits from deck A to deck B."),
    "render": ("pptarena.cli.render", "render_command", "Render decks to one PNG per slide."),
    "dataset": ("pptarena.cli.dataset", "dataset_group", "Dataset tools: fetch files, export layouts."),
    "report": ("pptarena.cli.report", "report_command", "Show a run's leaderboard and write report.html."),
    "rescore": ("pptarena.cli.report", "rescore_command", "Re-judge a run's predictions with other judges."),
    "export": (
        "pptarena.cli.export",
        "export_group",
        "Export a run's verdicts (PPTArena's judged-results CSV).",
    ),
    "meta-eval": ("pptarena.cli.report", "meta_eval_command", "Agreement of judges with human labels."),
    "compare": (
        "pptarena.cli.report",
        "compare_command",
        "Compare runs: score differences with intervals, moved tasks, τ_b.",
    ),
    "docs": ("pptarena.cli.docs", "docs_command", "Show the documentation pages (`arena docs --list`)."),
    "author": ("pptarena.cli.author", "author_group", "Draft and check tasks, rubrics and style targets."),
    "provider-sim": (
        "pptarena.cli.provider_sim",
        "provider_sim_command",
        "Serve a simulated model provider on loopback (rate limits, faults, batches) for tests.",
    ),
    "view": ("pptarena.cli.view", "view_command", "Browse runs live in a local web app and label them."),
    "label": ("pptarena.cli.label", "label_group", "Labelling campaigns: create, agreement, export, import."),
    "mcp": ("pptarena.cli.mcp", "mcp_command", "Serve a deck's tools (summary, renders, parts) over MCP."),
}


class LazyGroup(click.Group):
    """A click group whose extra commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None or cmd_name not in LAZY_COMMANDS:
            return cmd
        module_name, attr, help_text = LAZY_COMMANDS[cmd_name]
        try:
            module = importlib.import_module(module_name)
            return getattr(module, attr)
        except (ImportError, AttributeError) as exc:
            reason = str(exc)

            @click.command(
                cmd_name,
                help=f"{help_text} (unavailable: {reason})",
                context_settings={"ignore_unknown_options": True},
            )
            @click.argument("args", nargs=-1, type=click.UNPROCESSED)
            def unavailable(args: Any) -> None:
                raise click.ClickException(
                    f"`arena {cmd_name}` is not available in this installation: {reason}"
                )

            return unavailable

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS and name not in self.commands:
                rows.append((name, LAZY_COMMANDS[name][2]))
            else:
                cmd = self.commands.get(name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit=80)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def registry_from(ctx: click.Context, warn: bool = True) -> Any:
    """The process registry, honouring ``--strict``; plugin failures become click errors in strict mode
    (exit code 2: nothing was started).

    A command given ``--config`` first puts the config's folder on the import path
    (:func:`config_folder_on_path`), so ``PPTARENA_PLUGINS`` finds a plugin module kept beside it.
    """
    from pptarena.run.configuration.registry import PluginLoadError, get_registry

    config_path = ctx.params.get("config_path")
    if config_path:
        config_folder_on_path(config_path)
    strict = bool(ctx.find_root().params.get("strict")) or None
    try:
        registry = get_registry(strict=strict)
    except PluginLoadError as exc:
        raise ExitError(str(exc), CONFIG_ERROR) from exc
    for info in registry.broken if warn else ():
        click.echo(f"warning: plugin {info.name!r} is broken and was skipped: {info.error}", err=True)
    return registry


def load_run_config(ctx: click.Context, path: str, *, require_secrets: bool = True) -> tuple[Any, Any]:
    """Load and validate a config (errors become click errors).

    Commands that never call a model pass ``require_secrets=False``: they work without the
    config's ``{ env = VAR }`` secrets set.
    """
    from pptarena.run.configuration.config import ConfigError, load_config

    config_folder_on_path(path)
    registry = registry_from(ctx)
    try:
        return load_config(path, registry, require_secrets=require_secrets), registry
    except ConfigError as exc:
        raise ExitError(str(exc), CONFIG_ERROR) from exc


def config_folder_on_path(config_path: str | os.PathLike[str]) -> None:
    """With ``PPTARENA_PLUGINS`` set, put the folder of a config file on the import path, and on
    ``PYTHONPATH`` for the worker processes started later: ``PPTARENA_PLUGINS=mymodule`` then finds
    ``mymodule.py`` kept beside the config, from any working folder. Call it before the registry is
    loaded; a folder already on the path is left where it is.
    """
    if not os.environ.get("PPTARENA_PLUGINS"):
        return
    folder = str(Path(config_path).expanduser().resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)  # after the installed packages: never shadows one of them
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if folder not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([*parts, folder])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="pptarena")  # no metadata look-up
@click.option(
    "--strict", is_flag=True, help="Make any plugin load failure fatal (also PPTARENA_STRICT_PLUGINS=1)."
)
def cli(strict: bool) -> None:
    """pptarena: evaluate agents that edit PowerPoint decks in place."""


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def plugins_command(ctx: click.Context, as_json: bool) -> None:
    """List installed plugins and the components each provides."""
    registry = registry_from(ctx, warn=False)
    infos = sorted(registry.plugins.values(), key=lambda p: (not p.builtin, p.name))
    if as_json:
        click.echo(json.dumps([p.to_json() for p in infos], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pptarena plugins")
    for col in ("plugin", "distribution", "version", "code", "components"):
        table.add_column(col, overflow="fold")  # a long name wraps onto more lines, never cut to "…"
    for p in infos:
        comps = "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(p.components.items()) if v)
        table.add_row(
            p.name,
            p.distribution or "-",
            p.version or "-",
            "built-in" if p.builtin else "installed (trusted)",
            f"[red]broken: {p.error}[/red]" if p.error else comps,
        )
    Console().print(table)
    click.echo(
        "Plugins listed here are imported by the harness: code you trust (their agents still run jailed). "
        "Take an agent under test from elsewhere with `package = ...` in its [[agents]] table: it gets an "
        "environment of its own the harness never imports (docs/security.md)."
    )


@cli.command("options", short_help="Show the options a component accepts in its config table.")
@click.argument(
    "kind", type=click.Choice(["dataset", "agent", "renderer", "judge", "backend", "executor", "reporter"])
)
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def options_command(ctx: click.Context, kind: str, name: str, as_json: bool) -> None:
    """Show the options a component accepts in its config table (e.g. `arena options judge dual`)."""
    from pptarena.run.configuration.registry import AmbiguousComponentError, UnknownComponentError

    registry = registry_from(ctx, warn=False)
    try:
        spec = registry.get(kind + "s", name)
    except (UnknownComponentError, AmbiguousComponentError) as exc:
        raise click.ClickException(str(exc)) from exc
    rows = spec.describe_options()
    if as_json:
        click.echo(json.dumps({"component": spec.provenance(), "options": rows}, indent=2, default=str))
        return
    doc = (spec.factory.__doc__ or "").strip().splitlines()
    click.echo(
        (
            f"{kind} {spec.name!r} from plugin {spec.plugin} "
            f"({spec.distribution or '?'} {spec.version or ''})"
        ).rstrip()
    )
    if doc:
        click.echo(f"  {doc[0]}")
    extra = ", plus `label`" if kind in ("agent", "judge") else ""
    click.echo(f'Config table: `use = "{spec.name}"`{extra}, and:' if rows else "It takes no options.")
    for row in rows:
        need = "required" if row["required"] else f"default {json.dumps(row['default'], default=str)}"
        desc = f" — {row['description']}" if row["description"] else ""
        click.echo(f"  {row['name']}: {row['type']} ({need}){desc}")


@cli.command("tasks")
@click.option(
    "--config", "config_path", required=True, type=click.Path(dir_okay=False), help="Run config (TOML)."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--limit", type=int, default=None, help="Only the first N tasks.")
@click.option("--task", "task_globs", multiple=True, help="Task-id glob (repeatable).")
@click.pass_context
def tasks_command(
    ctx: click.Context, config_path: str, as_json: bool, limit: int | None, task_globs: tuple[str, ...]
) -> None:
    """List the tasks a config's dataset provides (exit code 3 when the selection holds none)."""
    from pptarena.run.configuration.components import Components
    from pptarena.run.configuration.tasks import NothingSelectedError, load_tasks, select_tasks
    from pptarena.types import PptArenaError

    config, registry = load_run_config(ctx, config_path, require_secrets=False)
    try:
        tasks = select_tasks(
            load_tasks(Components(config, registry)),
            list(task_globs) or config.run.tasks,
            limit or config.run.limit,
            check_files=False,  # list tasks whose files are not fetched yet too (marked below)
        )
    except NothingSelectedError as exc:
        raise ExitError(f"nothing selected: {exc}", NOTHING_SELECTED) from exc
    except (PptArenaError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(
            json.dumps(
                [
                    {k: v for k, v in t.to_json().items() if k != "rubric"}
                    | {"has_rubric": t.rubric is not None}
                    for t in tasks
                ],
                indent=2,
            )
        )
        return
    for t in tasks:
        meta = ", ".join(
            f"{k}={v}" for k, v in t.metadata.items() if k in ("category", "edit_type", "difficulty")
        )
        missing = len(t.metadata.get("missing_files") or [])
        click.echo(
            f"{t.id}\t{t.instruction[:80]!r}\t{meta}" + (f"\t({missing} file(s) missing)" if missing else "")
        )
    absent = sum(1 for t in tasks if t.metadata.get("missing_files"))
    click.echo(
        f"{len(tasks)} tasks" + (f", {absent} with files missing (arena dataset fetch)" if absent else ""),
        err=True,
    )


@cli.command("run")
@click.option(
    "--config", "config_path", required=True, type=click.Path(dir_okay=False), help="Run config (TOML)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Run directory (default from [run] out, else runs/<config>-<time>).",
)
@click.option("--jobs", type=click.IntRange(1, 256), default=None, help="(agent, task) pairs in flight.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N tasks.")
@click.option("--task", "task_globs", multiple=True, help="Task-id glob (repeatable).")
@click.option(
    "--retry-errors", is_flag=True, help="On resume, re-run pairs that ended in infra_error or timeout."
)
@click.option("--new", is_flag=True, help="Start a new run directory instead of resuming an unfinished one.")
@click.option(
    "--allow-weak-isolation",
    is_flag=True,
    help="Run agents even where bubblewrap is unusable (their code can then read the answer key).",
)
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.option(
    "--no-report", is_flag=True, help="Skip writing report.html (write it later with `arena report`)."
)
@click.option(
    "--epochs",
    type=click.IntRange(1, 100),
    default=None,
    help="Attempts per (agent, task) (default [run] epochs, 1).",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(0),
    default=None,
    help="USD: start no new attempt once the run spent this much.",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    help="Skip the check of the model backends before the first pair (same as [run] preflight = false).",
)
@click.option(
    "--batch",
    is_flag=True,
    help="Send judge calls through the providers' batch APIs: half price, answers within hours; a killed "
    "run resumes polling the same batches (same as [run] batch = true).",
)
@click.pass_context
def run_command(
    ctx: click.Context,
    config_path: str,
    out: str | None,
    jobs: int | None,
    limit: int | None,
    task_globs: tuple[str, ...],
    retry_errors: bool,
    new: bool,
    quiet: bool,
    no_report: bool,
    epochs: int | None = None,
    max_cost: float | None = None,
    allow_weak_isolation: bool = False,
    no_preflight: bool = False,
    batch: bool = False,
) -> None:
    """Run every agent of a config on every task and judge the predictions.

    Before the first pair, every model backend the agents and judges name is checked once: SDK
    installed, key present, server reachable, model known (skip it with --no-preflight).

    \b
    Exit codes (the same in README.md; docs/ci.md uses them):
      0    the run finished; agent failures (agent_error, timeout) are scores, not errors
      1    an unexpected error (run folder in use, dataset files missing, executor, ...)
      2    a config or preflight error: one line per problem on stderr, nothing started
      3    nothing selected: --task, [run] tasks or the dataset give no task; no run folder is made
      4    the run finished with judge or infrastructure errors left (infra_error, judge_error)
      5    --max-cost stopped the run before every pair ran
      6    the run finished, but tasks whose reference decks do not open were skipped (dataset errors)
      130  interrupted (Ctrl-C); run the same command again to resume
      143  stopped by SIGTERM; run the same command again to resume
    """
    from pptarena.models.preflight import PreflightError
    from pptarena.run.configuration.tasks import NothingSelectedError
    from pptarena.run.folder.resume import choose_run_dir
    from pptarena.run.runner import RunInterrupted, Runner
    from pptarena.types import PptArenaError

    config, registry = load_run_config(ctx, config_path)
    if no_preflight:
        config.run.preflight = False
    if batch:
        config.run.batch = True
    from pptarena.run.jail.boundary import check_isolation

    try:  # before any run folder is made (the runner checks again)
        check_isolation(config.agents, allow_weak_isolation or config.run.allow_weak_isolation)
    except PptArenaError as exc:
        raise ExitError(str(exc), CONFIG_ERROR) from exc
    run_dir, resuming = choose_run_dir(config, out, new=new)
    runner = Runner(
        config,
        registry,
        run_dir,
        jobs=jobs,
        limit=limit,
        task_globs=list(task_globs),
        retry_errors=retry_errors,
        strict=bool(ctx.find_root().params.get("strict")),
        quiet=quiet,
        epochs=epochs,
        max_cost=max_cost,
        allow_weak_isolation=allow_weak_isolation,
    )
    runner.on_interrupt = _say_interrupted
    resume = f"arena run --config {config_path} --out {runner.run_dir}"
    with exit_codes.SignalWatch() as signals:
        try:
            _check_selection(runner)  # nothing selected: one line, before "Starting run in" and any folder
            runner.start_executor()  # a cluster that cannot be joined fails here, before "Starting run in"
            if not quiet:
                click.echo(f"{'Resuming' if resuming else 'Starting'} run in {run_dir}", err=True)
            summary = runner.run()
            _print_leaderboard(Path(runner.run_dir), summary, quiet, no_report)
            _log_to_reporters(config, registry, Path(runner.run_dir), summary)
        except (RunInterrupted, KeyboardInterrupt) as exc:
            if not isinstance(exc, RunInterrupted):  # outside the runner's loop: it said nothing
                _say_interrupted(f"Interrupted. Resume with: {resume}")
            sys.stderr.flush()
            os._exit(signals.exit_code())  # results are fsynced line by line; in-flight judges are dropped
        except PreflightError as exc:
            click.echo(str(exc), err=True)
            click.echo("Nothing was started (arena run --no-preflight skips this check).", err=True)
            ctx.exit(CONFIG_ERROR)
        except NothingSelectedError as exc:
            raise ExitError(
                f"nothing selected: {exc} (`arena tasks --config {config_path}` lists the tasks)",
                NOTHING_SELECTED,
            ) from exc
        except (PptArenaError, ValueError, OSError) as exc:
            raise click.ClickException(str(exc)) from exc
        if signals.received() is not None:  # its KeyboardInterrupt was swallowed on the way
            _say_interrupted(f"Interrupted. Run the same command again to resume: {resume}")
            ctx.exit(signals.exit_code())
    if quiet and runner.budget is not None and runner.budget.stopped:  # otherwise the runner said so already
        click.echo(runner.budget.message(), err=True)
    ctx.exit(_finished_run_exit_code(runner, resume))


def _finished_run_exit_code(runner: Any, resume: str) -> int:
    """The exit code of a run that finished: stopped by its budget (5), errors that are not the
    agents' left in it (4, saying how many and how to re-run them), tasks skipped for dataset errors
    (6), else 0."""
    if runner.budget is not None and runner.budget.stopped:
        return exit_codes.BUDGET_STOPPED
    left = exit_codes.errors_left(runner.store.read())
    if not left:
        return _dataset_errors_code(runner)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(left.items()))
    hints = []
    if left["infra_error"]:
        hints.append(f"re-run the infra errors with: {resume} --retry-errors")
    if left["judge_error"]:
        hints.append(
            f"re-judge the predictions once the judge is fixed: arena rescore {runner.run_dir} "
            "--config CONFIG"
        )
    click.echo(
        f"{sum(left.values())} pair(s) left without a full verdict ({counts}); " + "; ".join(hints),
        err=True,
    )
    return exit_codes.ERRORS_LEFT


def _dataset_errors_code(runner: Any) -> int:
    """6 when the run skipped tasks for dataset errors (saying how many, and the command that lists
    them), else 0."""
    from pptarena.run.configuration.datacheck import is_dataset_error
    from pptarena.run.folder.manifest_record import Manifest
    from pptarena.run.folder.rundir import RunDir

    skipped = Manifest.read(RunDir(runner.run_dir).manifest).skipped
    broken = sorted({str(s.get("task_id")) for s in skipped if is_dataset_error(s.get("reason"))})
    if not broken:
        return exit_codes.OK
    click.echo(
        f"{len(broken)} task(s) skipped for dataset errors ({', '.join(broken[:5])}"
        f"{' ...' if len(broken) > 5 else ''}): `arena dataset check --config {runner.config.path}` "
        "lists them",
        err=True,
    )
    return exit_codes.DATASET_ERRORS


def _check_selection(runner: Any) -> None:
    """Raise :class:`~pptarena.run.configuration.tasks.NothingSelectedError` when the run's task globs and
    limit
    select no task of its dataset (the runner selects again, once its run folder is locked)."""
    from pptarena.run.configuration.tasks import load_tasks, select_tasks

    select_tasks(load_tasks(runner.components), runner.task_globs, runner.limit, check_files=False)


def _log_to_reporters(config: Any, registry: Any, run_dir: Path, summary: Any) -> None:
    """Hand the finished run to the config's ``[[reporters]]`` (MLflow, W&B, ...); a reporter that
    fails prints one warning line and changes nothing of the run (:mod:`pptarena.run.folder.reporting`)."""
    if not getattr(config, "reporters", None):
        return
    from pptarena.run.folder.reporting import report_run

    for line in report_run(config, registry, run_dir, summary):
        click.echo(line, err=True)


def _say_interrupted(message: str) -> None:
    """Print the Ctrl-C message at once: the clean-up after it may be cut short (a crashing executor)."""
    click.echo(f"\n{message}", err=True)
    sys.stderr.flush()


def _print_leaderboard(run_dir: Path, summary: Summary, quiet: bool, no_report: bool = False) -> None:
    from pptarena.report.show import print_summary

    print_summary(run_dir, summary, html=not no_report)


def _one_line_warning(message: Any, category: Any, filename: str, lineno: int, line: Any = None) -> str:
    return f"warning: {message}\n"  # not Python's "file:line: Category: ..." with a source line


def main() -> None:
    """Console-script entry point."""
    import warnings

    warnings.formatwarning = _one_line_warning
    cli(prog_name="arena")


if __name__ == "__main__":  # pragma: no cover
    main()
