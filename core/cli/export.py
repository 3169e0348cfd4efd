"""``arena export``: a run's verdicts in a published benchmark's format.

``arena export pptarena-csv RUN_DIR`` writes PPTArena's judged-results CSV per agent
(:mod:`pptarena.report.pptarena_csv`), the file PPTArena's leaderboard reads, so a run can be
ranked beside the published systems.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.group("export")
def export_group() -> None:
    """Export a run's verdicts in a published format."""


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
