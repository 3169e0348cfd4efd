"""``arena render``: decks → one PNG per slide, through the run's renderer plugins."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from pptarena.types import ComponentContext, ComponentUnavailable, PptArenaError, SlideImage


def _no_models(ref: str) -> Any:
    raise ComponentUnavailable(f"model {ref!r} requested, but `arena render` provides no model backends")


def make_renderer(name: str, options: dict[str, Any], cache_dir: Path | None = None) -> Any:
    """Build renderer ``name`` through the plugin registry with ``options`` (a config-table dict).

    :raises pptarena.run.configuration.registry.UnknownComponentError: for an unknown name (with "did you
    mean").
    :raises ComponentUnavailable: when the renderer cannot work here.
    """
    from pptarena.run.configuration.components import default_cache_dir

    context = ComponentContext(
        cache_dir=Path(cache_dir) if cache_dir else default_cache_dir(),
        model=_no_models,
        name=name,
        label=name,
    )
    return _registry_with_renderer(name).create("renderers", name, options, context)


def _registry_with_renderer(name: str) -> Any:
    """A registry that knows renderer ``name``, loading as few plugins as that takes.

    The ``renderers-*`` entry points are loaded on their own first (0.05 s instead of the 0.3-0.4 s
    of importing every plugin: judges, agents, datasets); when ``name`` is not among them, or
    ``$PPTARENA_PLUGINS`` adds plugin modules, the process-wide registry of all plugins is used.
    """
    import importlib.metadata as md
    import os

    from pptarena.run.configuration.registry import GROUP, get_registry, load_registry

    if not os.environ.get("PPTARENA_PLUGINS"):
        eps = [ep for ep in md.entry_points(group=GROUP) if ep.name.startswith("renderers-")]
        if eps:
            light = load_registry(entry_points=eps)
            try:
                light.get("renderers", name)
                return light
            except LookupError:
                pass
    return get_registry()


def render_decks(renderer: Any, decks: list[Path], out: Path) -> dict[Path, list[SlideImage]]:
    """Render one deck straight into ``out``, or several into ``out/<deck stem>/`` (warm renderer reused)."""
    if len(decks) == 1:
        return {decks[0]: renderer.render(decks[0], out)}
    if hasattr(renderer, "render_many"):
        return dict(renderer.render_many(decks, out))
    from pptarena.render import deck_output_dirs

    dirs = deck_output_dirs(decks, out)
    return {deck: renderer.render(deck, dirs[deck]) for deck in decks}


@click.command("render")
@click.argument(
    "decks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder (one sub-folder per deck when several decks are given).",
)
@click.option(
    "--renderer", "renderer_name", default="libreoffice", show_default=True, help="Registered renderer name."
)
@click.option(
    "--size",
    type=click.IntRange(16, 8192),
    default=None,
    help="Long edge of each PNG in pixels [default: 1280].",
)
@click.option("--no-cache", is_flag=True, help="Render again even if an identical deck was rendered before.")
@click.option(
    "--workers", type=click.IntRange(1, 32), default=None, help="Parallel office instances (libreoffice)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the slide images as JSON.")
def render_command(
    decks: tuple[Path, ...],
    out: Path,
    renderer_name: str,
    size: int | None,
    no_cache: bool,
    workers: int | None,
    as_json: bool,
) -> None:
    """Render DECK... to slide-001.png, slide-002.png, ... (hidden slides included)."""
    options: dict[str, Any] = {}
    if size is not None:
        options["size"] = size
    if no_cache:
        options["cache"] = False
    if workers is not None:
        options["workers"] = workers
    started = time.monotonic()
    try:
        renderer = make_renderer(renderer_name, options)
    except (PptArenaError, LookupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        results = render_decks(renderer, list(dict.fromkeys(d.resolve() for d in decks)), out)
    except (PptArenaError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        close = getattr(renderer, "close", None)
        if callable(close):
            close()
    elapsed = time.monotonic() - started
    if as_json:
        data = {
            str(deck): [
                {
                    "number": i.number,
                    "sld_id": i.sld_id,
                    "path": str(i.path),
                    "width": i.width,
                    "height": i.height,
                    "hidden": i.hidden,
                }
                for i in images
            ]
            for deck, images in results.items()
        }
        click.echo(json.dumps(data, indent=2))
        return
    total = 0
    for deck, images in results.items():
        total += len(images)
        hidden = sum(1 for i in images if i.hidden)
        where = images[0].path.parent if images else out
        extra = f", {hidden} hidden" if hidden else ""
        click.echo(f"{deck} -> {where} ({len(images)} slides{extra})")
    click.echo(f"rendered {total} slides from {len(results)} deck(s) in {elapsed:.1f}s")
