"""Click options several `arena` commands share, each written once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

Decorator = Callable[[Any], Any]


def config_file_option(
    help: str, *, required: bool = False, dest: str = "config_path", path_type: type | None = None
) -> Decorator:
    """``--config FILE``: an existing run config file (the commands differ only in what they take from it)."""
    return click.option(
        "--config",
        dest,
        required=required,
        type=click.Path(exists=True, dir_okay=False, path_type=path_type),
        default=None,
        help=help,
    )


def no_renders_option(help: str) -> Decorator:
    """``--no-renders``: do the work without rendering slides (what is lost depends on the command)."""
    return click.option("--no-renders", is_flag=True, help=help)


def max_images_option(default: int) -> Decorator:
    """``--max-images N``: at most N slide images in one model request."""
    return click.option(
        "--max-images",
        type=click.IntRange(0, 64),
        default=default,
        show_default=True,
        help="Slide images sent at most.",
    )
