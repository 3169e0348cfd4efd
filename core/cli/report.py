"""Click commands ``arena report``, ``arena rescore`` and ``arena meta-eval`` (wired lazily by
:mod:`pptarena.cli.main`).

Why it is long: it holds the four commands that read finished run folders (report, rescore,
meta-eval and ``arena compare``), which share the run-folder argument type and, between them,
the BLAS thread setting and the skipped-line warnings; ``_meta_tables``, which lays out the
meta-eval report as tables, could move beside :mod:`pptarena.report.meta_eval` the way
``compare_tables`` lives in :mod:`pptarena.report.compare` (not done yet).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pptarena.cli.options import config_file_option

if TYPE_CHECKING:  # imported by the commands themselves, when they run
    from pptarena.report.data import RunData

# absolute from here on: a run folder's paths are handed to judges' jails and child processes, for
# which a path relative to the shell's folder names nothing (issue 33 item 4)
RUN_DIR = click.Path(exists=True, file_okay=False, path_type=Path, resolve_path=True)


def warn_skipped_lines(data: RunData) -> None:
    """Print one warning per result line a run's reader skipped (file and line; see
    pptarena.run.folder.records)."""
    for problem in data.problems:
        click.echo(f"warning: skipped a result line: {problem}", err=True)


def one_blas_thread() -> None:
    """Keep NumPy's BLAS to one thread in this process (unless ``OPENBLAS_NUM_THREADS`` is set).

    The statistics' only BLAS call is the permutation test's small matrix-vector product, for which
    OpenBLAS's extra threads only spin: on two cores two threads took twice the wall time of one
    (and three times the CPU). The numbers are the same. Effective only before NumPy is imported.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _registry(ctx: click.Context) -> Any:
    from pptarena.cli.main import registry_from

    return registry_from(ctx)


@click.command("report")
@click.argument("run_dir", type=RUN_DIR)
@click.option(
    "--no-render",
    is_flag=True,
    help="Do not render missing slide images (the page says where they are missing).",
)
@click.option(
    "--max-renders",
    type=click.IntRange(0),
    default=None,
    help="Most decks rendered for the page (default 120).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="HTML file (default RUN_DIR/report.html).",
)
@click.option("--no-html", is_flag=True, help="Only print the leaderboard.")
@click.option(
    "--layout",
    type=click.Choice(["auto", "single", "pages"]),
    default="auto",
    show_default=True,
    help="single: one page with every task; pages: an index with a filterable task table plus task pages "
    "(report/); auto: pages above 200 pairs.",
)
@click.pass_context
def report_command(
    ctx: click.Context,
    run_dir: Path,
    no_render: bool,
    max_renders: int | None,
    out: Path | None,
    no_html: bool,
    layout: str,
) -> None:
    """Print a run's leaderboard and breakdowns and write report.html."""
    one_blas_thread()
    from pptarena.report.data import RunDirError, load_run
    from pptarena.report.fileio import ReadOnlyFolderError, writing_into
    from pptarena.report.html import DEFAULT_MAX_RENDERS, write_report
    from pptarena.report.tables import print_tables, summary_tables

    try:
        data = load_run(run_dir)
    except RunDirError as exc:
        raise click.ClickException(str(exc)) from exc
    warn_skipped_lines(data)
    print_tables(summary_tables(data.summary, data.rows, {k: v.summary for k, v in data.rescores.items()}))
    if no_html:
        return
    out = out.absolute() if out else None
    try:
        with writing_into(
            out.parent if out else run_dir,
            "write the report elsewhere with --out FILE.html (slides the run lacks are then not rendered), "
            "or copy the run folder",
        ):
            path = write_report(
                run_dir,
                out=out,
                render=not no_render,
                max_renders=DEFAULT_MAX_RENDERS if max_renders is None else max_renders,
                registry=_registry(ctx),
                layout=layout,
                data=data,
                workers=2,  # this process runs no other threads: a forked process may write half the pages
            )
    except ReadOnlyFolderError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Report: {path}")


@click.command("rescore")
@click.argument("run_dir", type=RUN_DIR)
@config_file_option(
    "Take the judges (and backends, renderer) from this config instead of the run's own.", path_type=Path
)
@click.option(
    "--out",
    "name",
    default=None,
    help="Name of the re-score (RUN_DIR/rescore/NAME; default: the config's stem, or 'self').",
)
@click.option("--jobs", type=click.IntRange(1, 64), default=1, help="Predictions judged at once.")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.pass_context
def rescore_command(
    ctx: click.Context, run_dir: Path, config_path: Path | None, name: str | None, jobs: int, quiet: bool
) -> None:
    """Re-judge a run's predictions with other judges, without re-running agents.

    The judges' model backends are checked first, as `arena run` checks them (unless the config says
    [run] preflight = false); a failure exits with code 2, one line per problem on stderr.
    """
    from pptarena.models.preflight import PreflightError, preflight_run
    from pptarena.report.data import load_run
    from pptarena.report.fileio import writing_into
    from pptarena.report.rescore import Rescorer
    from pptarena.report.tables import leaderboard_table, print_tables, rescore_table
    from pptarena.run.configuration.config import ConfigError
    from pptarena.run.progress import Progress
    from pptarena.types import PptArenaError

    registry = _registry(ctx)
    try:
        rescorer = Rescorer(run_dir, registry, config_path=config_path, name=name, jobs=jobs)
        try:  # the judges' model backends answer before the first prediction is judged
            preflight_run(rescorer.judge_config, registry, kinds=("judges",))
        except PreflightError as exc:
            click.echo(str(exc), err=True)
            ctx.exit(2)
        warn_skipped_lines(rescorer.data)
        total = len(rescorer.data.rows)
        with writing_into(
            rescorer.out_dir.parent,
            f"copy the run folder somewhere writable (cp -r {run_dir} COPY) and re-score the copy",
        ):
            summary = rescorer.run(progress=Progress(total, quiet=quiet, row_durations=False))
    except (ConfigError, PptArenaError, OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    base = load_run(run_dir, with_rescores=False).summary
    tables = [leaderboard_table(summary, title=f"Re-score {rescorer.name}")]
    comparison = rescore_table(base, {rescorer.name: summary})
    if comparison is not None:
        tables.append(comparison)
    print_tables(tables)
    click.echo(f"Re-score: {rescorer.out_dir}  (arena report {run_dir} shows it beside the run)")


def _meta_tables(report: dict[str, Any]) -> list[Any]:
    from pptarena.report.tables import TableData, fmt

    tables = []

    def with_ci(block: dict[str, Any] | None) -> str:
        if not block or block.get("value") is None:
            return "–"
        ci = block.get("ci95")
        return f"{fmt(block['value'])} [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else fmt(block["value"])

    if "agreement" in report:
        lab = report["labels"]
        t = TableData(
            f"Agreement with {lab['n']} human labels (scale {lab['scale']}; 95% bootstrap CI)",
            ["judge", "n", "Kendall τ_b", "Spearman ρ", "Pearson r", "accuracy", "per class"],
        )
        for name, a in report["agreement"].items():
            per = ", ".join(f"{c}: {v['accuracy']:.2f} (n={v['n']})" for c, v in a["per_class"].items())
            t.rows.append(
                [
                    name,
                    str(a["n"]),
                    with_ci(a["kendall_tau_b"]),
                    with_ci(a["spearman"]),
                    with_ci(a["pearson"]),
                    with_ci(a["accuracy"]),
                    per,
                ]
            )
        tables.append(t)
    if "within_task" in report:
        t = TableData(
            "Order within each task (pairs of attempts of one task with different labels)",
            ["judge", "pairs", "concordant", "tied", "discordant", "not concordant (label order)"],
        )
        for name, w in report["within_task"].items():
            bad = ", ".join(
                f"{k}: {v['concordant']}/{v['pairs']}" for k, v in list(w["not_concordant"].items())[:6]
            )
            t.rows.append(
                [
                    name,
                    str(w["pairs"]),
                    str(w["concordant"]),
                    str(w["tied"]),
                    str(w["discordant"]),
                    bad or "–",
                ]
            )
        tables.append(t)
    if "kinds" in report:
        names = sorted({n for k in report["kinds"].values() for n in k["series"]})
        t = TableData("Mean per attempt kind (labels CSV column kind)", ["kind", "n", "label", *names])
        for kind, k in report["kinds"].items():
            t.rows.append(
                [kind, str(k["n"]), fmt(k["label_mean"]), *[fmt(k["series"].get(n)) for n in names]]
            )
        tables.append(t)
    if "repeat" in report:
        t = TableData(
            f"Stability over K={report['repeat']['k']} repeats",
            [
                "series",
                "items",
                "mean variance",
                "max variance",
                "majority rate",
                "majority share",
                "unanimous",
            ],
        )
        for name, s in report["repeat"]["series"].items():
            t.rows.append(
                [
                    name,
                    str(s["items"]),
                    fmt(s["mean_variance"], 6),
                    fmt(s["max_variance"], 6),
                    fmt(s["majority_rate"]),
                    fmt(s["majority_share"]),
                    fmt(s["unanimous_rate"]),
                ]
            )
        t.note = (
            "variance of the 0-1 score (population, per item, averaged); "
            "majority rate: items where > K/2 repeats agree"
        )
        tables.append(t)
    return tables


@click.command("meta-eval")
@click.option("--run", "run_dir", type=RUN_DIR, required=True, help="The run whose judges are evaluated.")
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="CSV with columns task_id, agent, label (0-1, 0-5 or a progress class) and optionally kind "
    "and epoch (the attempt labelled; 1 by default).",
)
@click.option(
    "--scale",
    type=click.Choice(["auto", "unit", "five", "classes"]),
    default="auto",
    show_default=True,
    help="Label scale.",
)
@click.option(
    "--repeat",
    type=click.IntRange(0, 100),
    default=0,
    help="Judge every prediction K more times and report stability.",
)
@config_file_option("With --repeat: the judges to repeat (default: the run's).", path_type=Path)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(0, 100_000),
    default=1000,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the full JSON report.")
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the JSON report (default RUN/meta-eval/meta_eval.json; --repeat still keeps "
    "its evidence under RUN/meta-eval/).",
)
@click.pass_context
def meta_eval_command(
    ctx: click.Context,
    run_dir: Path,
    labels_path: Path | None,
    scale: str,
    repeat: int,
    config_path: Path | None,
    n_boot: int,
    seed: int,
    as_json: bool,
    out_path: Path | None = None,
) -> None:
    """Agreement of each judge with human labels; with --repeat K, the judges' stability.

    --config takes what `arena rescore --config` takes: a config with only [[judges]] (and the
    backends they use) works, the dataset and agents being the run's.
    """
    from pptarena.report.fileio import writing_into
    from pptarena.report.meta_eval import meta_eval
    from pptarena.report.tables import print_tables
    from pptarena.run.configuration.config import ConfigError
    from pptarena.run.folder.rundir import RunDir
    from pptarena.types import PptArenaError

    if labels_path is None and not repeat:
        raise click.UsageError("give --labels FILE.csv, --repeat K, or both")
    out_path = out_path.absolute() if out_path else None
    instead = (
        f"copy the run folder somewhere writable (cp -r {run_dir} COPY) and repeat the judges there"
        if repeat
        else "write the report elsewhere with --out FILE.json"
    )
    try:
        with writing_into(out_path.parent if out_path and not repeat else RunDir(run_dir).meta_eval, instead):
            report = meta_eval(
                run_dir,
                labels_path=labels_path,
                scale=scale,
                repeat=repeat,
                config_path=config_path,
                n_boot=n_boot,
                seed=seed,
                registry=_registry(ctx) if repeat else None,
                out=out_path,
            )
    except (ConfigError, PptArenaError, OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    for w in report.get("warnings", []):
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    print_tables(_meta_tables(report))
    click.echo(f"Meta-evaluation: {report['path']}")


@click.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=RUN_DIR)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(0, 100_000),
    default=2000,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the intervals and permutation tests."
)
@click.option("--json", "as_json", is_flag=True, help="Print the full JSON report.")
@click.option(
    "--judge",
    "judge_pairs",
    multiple=True,
    metavar="A=B",
    help="Compare judge A of the first run with judge B of the others (repeatable), e.g. "
    "--judge structural=structural-lenient for a re-score under another label.",
)
def compare_command(
    run_dirs: tuple[Path, ...], n_boot: int, seed: int, as_json: bool, judge_pairs: tuple[str, ...] = ()
) -> None:
    """Compare runs of the same agents and tasks (RUN_B... against RUN_A): score differences,
    moved tasks, τ_b.

    Agents of one run only, judges without a counterpart and tasks one run has and the other not
    are left out of the differences: each is named, with why, after the tables (``left_out`` in
    --json).
    """
    one_blas_thread()
    from pptarena.report.compare import compare_runs, compare_tables, left_out_lines
    from pptarena.report.data import RunDirError
    from pptarena.report.tables import print_tables

    if len(run_dirs) < 2:
        raise click.UsageError("give at least two run directories")
    judge_map = {}
    for item in judge_pairs:
        a, sep, b = item.partition("=")
        if not sep or not a.strip() or not b.strip():
            raise click.UsageError(f"--judge {item!r}: write it as A=B (a judge label of each run)")
        judge_map[a.strip()] = b.strip()
    try:
        report = compare_runs(list(run_dirs), n_boot=n_boot, seed=seed, judge_map=judge_map or None)
    except (RunDirError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    print_tables(compare_tables(report))
    for line in left_out_lines(report):  # whole lines (a table cell would be cut on a narrow terminal)
        click.echo(line)
