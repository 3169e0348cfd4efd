"""Click commands of the deck engine: ``arena summarize`` and ``arena diff``.

The core CLI wires them in as ``pptarena.cli.deck:summarize_command`` and
``pptarena.cli.deck:diff_command``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from pptarena.deck import DeckError, diff_decks, slide_flags, summarize


def _summary_text(summary: dict) -> str:
    size = summary.get("slide_size") or {}
    lines = [
        f"{summary.get('file')}: {len(summary['slides'])} slides, "
        f"{(size.get('cx') or 0) / 914400:.2f}x{(size.get('cy') or 0) / 914400:.2f} in, "
        f"{len(summary.get('masters') or [])} master(s), {len(summary.get('themes') or [])} theme(s)"
    ]
    for slide in summary["slides"]:
        flags = slide_flags(slide, notes=True)
        title = slide.get("title") or "(no title)"
        lines.append(
            f"{slide['number']:>3}. [{slide['sld_id']}] {title[:60]!s}  layout={slide.get('layout')!s}"
            + (f"  ({', '.join(flags)})" if flags else "")
        )
        for shape in slide.get("shapes", []):
            text = (shape.get("text") or "").replace("\n", " / ")
            lines.append(
                f"       - {shape.get('kind')}: {shape.get('name')}" + (f": {text[:60]}" if text else "")
            )
    return "\n".join(lines)


@click.command("summarize")
@click.argument("deck", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the full JSON summary.")
def summarize_command(deck: Path, as_json: bool) -> None:
    """Summarise DECK: slides, shapes, text, timing (--json for the full structure)."""
    try:
        summary = summarize(deck)
    except DeckError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(summary, ensure_ascii=False, indent=1))
    else:
        click.echo(_summary_text(summary))


@click.command("diff")
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the edits as JSON.")
def diff_command(a: Path, b: Path, as_json: bool) -> None:
    """Structural diff of deck A (before) and deck B (after)."""
    try:
        result = diff_decks(a, b)
    except DeckError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=1))
    else:
        click.echo(result.to_text())
