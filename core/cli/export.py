"""``arena export``: a run's verdicts in a published benchmark's format, or its scores as one flat table.

``arena export pptarena-csv RUN_DIR`` writes PPTArena's judged-results CSV per agent
(:mod:`pptarena.report.pptarena_csv`), the file PPTArena's leaderboard reads, so a run can be
ranked beside the published systems. ``arena export scores RUN_DIR --format csv|parquet|jsonl``
writes one flat row per (agent, task, epoch, judge, metric) for pandas or R
(:mod:`pptarena.report.scores_export`, docs/export.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group("export")
def export_group() -> None:
    """Export a run's verdicts in a published format, or its scores as one flat table."""


@export_group.command("pptarena-csv")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--judge", default=None, help="Label of the dual judge to export (default: the run's only one)."
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the CSV files (default: RUN_DIR/export).",
)
def pptarena_csv_command(run_dir: Path, judge: str | None, out_dir: Path | None) -> None:
    """Write <agent>_judge_results.csv (pair_name, instruction_following_score, visual_quality_score...)."""
    from pptarena.report.data import RunDirError, load_run
    from pptarena.report.pptarena_csv import ExportError, export_pptarena_csv

    try:
        data = load_run(run_dir, with_rescores=False)
        written = export_pptarena_csv(data, out_dir or run_dir / "export", judge)
    except (RunDirError, ExportError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    for path in written:
        click.echo(f"wrote {path}")


@export_group.command("scores")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "parquet", "jsonl"]),
    default="csv",
    show_default=True,
    help="File format (parquet needs pyarrow: pip install 'pptarena[parquet]').",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="File to write ('-': standard output; default: RUN_DIR/export/scores.<format>).",
)
def scores_command(run_dir: Path, fmt: str, out: Path | None) -> None:
    """One flat row per (agent, task, epoch, judge, metric), with the task's metadata columns.

    A pair no judge scored is one row with its status and an empty value. Columns: docs/export.md.
    """
    from pptarena.report.data import RunDirError, load_run
    from pptarena.report.scores_export import ScoresExportError, encode, export_scores, score_rows

    try:
        data = load_run(run_dir, with_rescores=False)
        if out is not None and str(out) == "-":
            columns, rows = score_rows(data)
            payload = encode(columns, rows, fmt)
            sys.stdout.flush()
            sys.stdout.buffer.write(payload)
            sys.stdout.buffer.flush()
            return
        path, count = export_scores(data, fmt, out)
    except (RunDirError, ScoresExportError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        where = out if out is not None else run_dir / "export"
        raise click.ClickException(
            f"cannot write {where} ({exc.strerror or exc}); choose another file with --out FILE"
        ) from exc
    click.echo(f"wrote {path} ({count} rows)")
