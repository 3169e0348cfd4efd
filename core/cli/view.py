"""``arena view``: serve run folders (and their labelling campaigns) as a live local web app."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("view")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (non-loopback: tokens)."
)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port.")
@click.option(
    "--campaign",
    "campaigns",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A campaign file outside the runs' campaigns/ folders (repeatable).",
)
@click.option("--no-render", is_flag=True, help="Never render decks (show only renders already made).")
def view_command(
    paths: tuple[str, ...], host: str, port: int, campaigns: tuple[str, ...], no_render: bool
) -> None:
    """Browse runs live (leaderboard, task table, pairs, comparisons) and label them.

    PATHS are run folders or folders holding runs (default: the current folder). On an address
    other than 127.0.0.1 every page needs the admin link printed at start-up; annotators use the
    links `arena label new` printed. A read-only run is served (slides it lacks renders of are not
    rendered); a campaign in a read-only folder is not (copy it and pass --campaign FILE).
    """
    try:
        import uvicorn

        from pptarena.view.app import ViewState, create_app
    except ImportError as exc:
        raise click.ClickException(
            f"`arena view` needs the view extra: pip install 'pptarena[view]' ({exc})"
        ) from exc
    from pptarena.label.store import CampaignError

    try:
        state = ViewState(
            [Path(p) for p in paths or (".",)],
            host=host,
            port=port,
            campaigns=[Path(c) for c in campaigns],
            render=not no_render,
        )
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    for warning in state.warnings:
        click.echo(f"warning: {warning}", err=True)
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"Serving {len(state.runs)} run(s) and {len(state.campaigns)} campaign(s) on http://{shown}:{port}/"
    )
    if state.access.admin_token:
        click.echo(
            f"Admin link (keep it private): http://{shown}:{port}/login?token={state.access.admin_token}"
        )
    for c in state.campaigns.values():
        click.echo(f"Campaign {c.campaign.name}: http://{shown}:{port}/c/{c.id}")
    try:
        uvicorn.run(create_app(state), host=host, port=port, log_level="warning")
    finally:  # fold each campaign's -wal into its .sqlite: the one file is the campaign again
        for c in list(state.campaigns.values()):
            c.campaign.close()
