"""``arena init [NAME] [DIR]``: write one of the bundled example run configs into a folder.

The examples ship as package data (:mod:`pptarena.examples`), so a wheel install can start from
``arena init demo && arena run --config demo.toml``. After writing, the config is loaded the way
``arena run`` would load it; anything that still stands in the way (an unset API key, a dataset
folder that does not exist yet) is printed, so the user knows exactly what is missing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

_FOLDER_KEYS = re.compile(r'^\s*(root|files_dir|decks_dir)\s*=\s*"([^"]+)"', re.MULTILINE)


def example_text(name: str, dest: Path) -> str:
    """Example ``name`` with its own ``examples/NAME.toml`` mentions pointing at ``dest``."""
    from pptarena import examples

    return examples.read(name).replace(f"examples/{name}.toml", str(dest))


def missing_folders(text: str) -> list[str]:
    """The dataset folders (``root``, ``files_dir``, ``decks_dir``) a config names that do not exist."""
    return [
        f"{key} = {value!r}"
        for key, value in _FOLDER_KEYS.findall(text)
        if not Path(value).expanduser().exists()
    ]


def readiness(ctx: click.Context, path: Path) -> list[str]:
    """What still stands between the config at ``path`` and ``arena run`` (empty when nothing)."""
    from pptarena.cli.main import registry_from
    from pptarena.run.configuration.config import ConfigError, load_config

    problems = [f"the folder in `{item}` does not exist" for item in missing_folders(path.read_text())]
    try:
        config = load_config(path, registry_from(ctx, warn=False), require_secrets=False)
    except ConfigError as exc:
        return [*problems, str(exc)]
    problems += [f"a secret: {missing}" for missing in sorted(config.missing_secrets)]
    return problems


def _list_examples() -> None:
    from pptarena import examples

    for name in examples.names():
        click.echo(f"{name:<26}{examples.summary(name)}")


@click.command("init")
@click.argument("name", default="demo")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--list", "list_only", is_flag=True, help="List the bundled examples and exit.")
@click.option("--force", is_flag=True, help="Overwrite an existing NAME.toml.")
@click.pass_context
def init_command(ctx: click.Context, name: str, directory: Path, list_only: bool, force: bool) -> Any:
    """Write the example config NAME (default demo) as DIRECTORY/NAME.toml (`arena init --list`)."""
    from pptarena import examples

    if list_only:
        _list_examples()
        return
    if name not in examples.names():
        from difflib import get_close_matches

        close = get_close_matches(name, examples.names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise click.ClickException(
            f"no example config named {name!r}{hint}; choose one of: {', '.join(examples.names())}"
        )
    dest = directory / f"{name}.toml"
    if dest.exists() and not force:
        raise click.ClickException(f"{dest} already exists (--force overwrites it)")
    directory.mkdir(parents=True, exist_ok=True)
    dest.write_text(example_text(name, dest), encoding="utf-8")
    click.echo(f"wrote {dest}: {examples.summary(name)}")
    problems = readiness(ctx, dest)
    if problems:
        click.echo("Before it runs, it still needs (see the comments at the top of the file):")
        for problem in problems:
            click.echo(f"  - {problem}")
    click.echo(f"Run it with: arena run --config {dest}")
