"""``arena dataset fetch NAME [--dir DIR] [--task GLOB]... [--source S]``: download a dataset's public files.

The dataset component says what to fetch (:mod:`pptarena.fetch`: ``fetch_description`` and
``fetch`` class methods); the licence is printed before anything is downloaded, and the command
ends with the ``[dataset]`` table that uses the files.
"""

from __future__ import annotations

from pathlib import Path

import click


def fetchable(registry: object) -> list[str]:
    """Names of the registered datasets that describe a fetch."""
    names = sorted({n for p in registry.plugins.values() for n in p.components.get("datasets", [])})  # type: ignore[attr-defined]
    return [n for n in names if hasattr(registry.get("datasets", n).factory, "fetch")]  # type: ignore[attr-defined]


@click.command("fetch")
@click.argument("name")
@click.option(
    "--dir",
    "dest",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to download into (default ~/data/pptarena/NAME).",
)
@click.option(
    "--task", "task_globs", multiple=True, help="Only the files of these task ids (glob, repeatable)."
)
@click.option("--source", default=None, help="A mirror URL or local copy of the dataset's source.")
@click.pass_context
def fetch_command(
    ctx: click.Context, name: str, dest: Path | None, task_globs: tuple[str, ...], source: str | None
) -> None:
    """Download the public files of dataset NAME (resumable; run again after an interruption)."""
    from pptarena.cli.main import registry_from
    from pptarena.fetch import Fetcher, FetchError
    from pptarena.run.configuration.registry import AmbiguousComponentError, UnknownComponentError
    from pptarena.types import PptArenaError

    registry = registry_from(ctx, warn=False)
    try:
        factory = registry.get("datasets", name).factory
    except (UnknownComponentError, AmbiguousComponentError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not hasattr(factory, "fetch"):
        raise click.ClickException(
            f"dataset {name!r} has no files arena can download (docs/datasets.md says where they are); "
            f"datasets with a fetch: {', '.join(fetchable(registry))}"
        )
    dest = (dest or Path("~/data/pptarena") / name).expanduser()
    about = factory.fetch_description()
    click.echo(f"{name}: {about.source}", err=True)
    click.echo(f"Licence: {about.licence}", err=True)
    for note in about.notes:
        click.echo(f"Note: {note}", err=True)
    click.echo(f"Downloading into {dest}", err=True)
    fetcher = Fetcher(dest)
    try:
        table = factory.fetch(fetcher, dest, list(task_globs), source)
    except (FetchError, PptArenaError, OSError, ValueError) as exc:
        raise click.ClickException(f"{exc} ({fetcher.summary()} so far)") from exc
    click.echo(fetcher.summary(), err=True)
    click.echo(f"Use it in a run config:\n\n{table}")
