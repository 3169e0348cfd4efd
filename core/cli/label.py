"""``arena label``: labelling campaigns — create one, see agreement, export and import labels,
adjudicate disagreements (gold labels) and seed known-answer items.

Why it is long: the group has nine subcommands over one campaign file (new, stats, export,
import, pack, adjudicate, gold, seed, instructions), each a thin layer of click options and
error messages around :mod:`pptarena.label`; they share ``_open`` and are listed together by
``arena label --help``."""

from __future__ import annotations

import json
from pathlib import Path

import click


def _open(path: str):  # noqa: ANN202 - a Campaign
    from pptarena.label.store import Campaign, CampaignError

    try:
        return Campaign.open(Path(path))
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group("label")
def label_group() -> None:
    """Human labelling campaigns over run folders (work through them in `arena view`)."""


@label_group.command("new")
@click.option("--run", "runs", multiple=True, required=True, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--protocol", type=click.Choice(["absolute", "pairwise"]), default="absolute", show_default=True
)
@click.option("--annotators", required=True, help="Comma-separated names, e.g. alice,bob.")
@click.option("--overlap", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="Share of items every annotator labels (agreement between people).")  # fmt: skip
@click.option("--sample", type=click.IntRange(1), default=None, help="Only K items, drawn with --seed.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--blind/--no-blind", default=True, show_default=True, help="Hide agent names and judge scores."
)
@click.option("--name", default=None, help="Campaign name (default: protocol and time).")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Campaign file (default RUN_DIR/campaigns/<name>.sqlite of the first run).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="Host for the printed links.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port for the printed links.")
@click.option("--instructions", "instructions", type=click.Path(dir_okay=False), default=None,
              help="A markdown file (at most 1 MiB) shown to each annotator before their first item; "
                   "stored in the campaign file.")  # fmt: skip
def new_command(
    runs, protocol, annotators, overlap, sample, seed, blind, name, out, host, port, instructions
) -> None:  # noqa: ANN001, E501
    """Create a campaign and print each annotator's link (shown once; only digests are stored)."""
    import sqlite3

    from pptarena.label.campaign import CAMPAIGNS_DIR, new_campaign, parse_annotators
    from pptarena.label.instructions import read_instructions_file
    from pptarena.label.store import CampaignError
    from pptarena.report.fileio import ReadOnlyFolderError, writing_into

    where = Path(out).absolute().parent if out else Path(runs[0]).absolute() / CAMPAIGNS_DIR
    instead = "write the campaign file elsewhere with --out FILE.sqlite"
    try:
        text = read_instructions_file(Path(instructions)) if instructions else None
        with writing_into(where, instead):
            campaign, tokens = new_campaign(
                [Path(r).absolute() for r in runs], protocol=protocol,
                annotators=parse_annotators(annotators), overlap=overlap, sample=sample, seed=seed,
                blind=blind, name=name, out=Path(out).absolute() if out else None,
                instructions=text, instructions_source=f"file {Path(instructions or '').name}",
            )  # fmt: skip
    except (CampaignError, ReadOnlyFolderError) as exc:
        raise click.ClickException(str(exc)) from exc
    except sqlite3.OperationalError as exc:  # SQLite's own words for a folder it cannot write
        if "readonly" not in str(exc) and "unable to open" not in str(exc):
            raise
        raise click.ClickException(f"cannot write into {where} ({exc}): {instead}") from exc
    click.echo(
        f"Campaign {campaign.name}: {len(campaign.items)} {protocol} items, "
        f"overlap {100 * campaign.overlap():.0f}%, {'blind' if blind else 'not blind'}"
    )
    click.echo(f"File: {campaign.path}")
    if instructions:
        click.echo(f"Instructions: {instructions} (shown to each annotator before their first item)")
    from pptarena.label.campaign import find_campaigns

    found = any(campaign.path.resolve() in [p.resolve() for p in find_campaigns(Path(r))] for r in runs)
    extra = "" if found else f" --campaign {campaign.path}"
    click.echo(f"Serve it: arena view {' '.join(runs)}{extra} --host {host} --port {port}")
    shown = f"[{host}]" if ":" in host else host
    for who, token in tokens.items():
        click.echo(f"  {who}: http://{shown}:{port}/login?token={token}")


@label_group.command("stats")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--bootstrap", type=click.IntRange(10, 100_000), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--gold",
    is_flag=True,
    help="People against judges: an item's gold label replaces its annotators' labels.",
)
@click.option(
    "--min-accuracy",
    type=click.FloatRange(0, 1),
    default=0.7,
    show_default=True,
    help="Flag annotators below this accuracy on the known-answer items.",
)
@click.option(
    "--tolerance",
    type=click.IntRange(0, 4),
    default=0,
    show_default=True,
    help="Known-answer items: levels an ordinal answer may be off and still count as right.",
)
def stats_command(
    campaign: str, as_json: bool, bootstrap: int, seed: int, gold: bool, min_accuracy: float, tolerance: int
) -> None:
    """Agreement between annotators (Krippendorff's α, κ) and with the judges (as `arena meta-eval`),
    and each annotator's accuracy on the known-answer items (flagged below --min-accuracy)."""
    from pptarena.label.stats import campaign_stats, stats_text

    with _open(campaign) as opened:
        stats = campaign_stats(
            opened, n_boot=bootstrap, seed=seed, gold=gold, min_accuracy=min_accuracy, tolerance=tolerance
        )
    click.echo(json.dumps(stats, indent=2) if as_json else stats_text(stats))


@label_group.command("export")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl", "label-studio"]), default="csv")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="File to write.")
@click.option("--images", type=click.Choice(["data", "none"]), default="data", show_default=True,
              help="label-studio: slides embedded as data URIs, or none.")  # fmt: skip
@click.option("--no-render", is_flag=True,
              help="label-studio: only slide renders already made (never run the renderer).")  # fmt: skip
@click.option(
    "--gold",
    is_flag=True,
    help="csv: an item's gold label replaces its annotators' rows; jsonl: gold versions added.",
)
def export_command(campaign: str, fmt: str, out: str, images: str, no_render: bool, gold: bool) -> None:
    """Write the labels (csv: the `arena meta-eval --labels` format, with annotator and epoch;
    label-studio: tasks with the instruction, the slides and the labels, plus the config)."""
    from pptarena.label.exchange import export
    from pptarena.label.store import CampaignError

    try:
        with _open(campaign) as opened:
            written = export(opened, fmt, Path(out), images=images, render=not no_render, gold=gold)
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    for path in written:
        click.echo(f"wrote {path}")


@label_group.command("import")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["label-studio"]), default="label-studio")
@click.option("--annotator-map", default=None, metavar="ID=NAME,...",
              help="Name Label Studio users: numeric id (or name in the file) = annotator name.")  # fmt: skip
def import_command(campaign: str, file: str, fmt: str, annotator_map: str | None) -> None:
    """Append the annotations of a Label Studio JSON export as new label versions.

    Numeric Label Studio user ids are named from the file's own user data (the `completed_by`
    objects, `created_username`) or --annotator-map; an annotation whose annotator stays nameless
    is skipped (and listed), never filed under a number.
    """
    from pptarena.label.exchange import import_label_studio, parse_annotator_map
    from pptarena.label.store import CampaignError

    try:
        mapping = parse_annotator_map(annotator_map)
        with _open(campaign) as opened:
            got = import_label_studio(opened, Path(file), mapping)
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"imported {got['added']} label(s), {got['unchanged']} unchanged")
    for why in got["skipped"][:20]:
        click.echo(f"  skipped: {why}", err=True)
    if len(got["skipped"]) > 20:
        click.echo(f"  … and {len(got['skipped']) - 20} more skipped", err=True)
    for who, token in got["new_annotators"].items():
        click.echo(f"  new annotator {who}: /login?token={token}")


@label_group.command("pack")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
def pack_command(campaign: str, out: str) -> None:
    """Write a self-contained copy of a campaign to OUT (one file, every label committed so far).

    Uses SQLite's online backup, so it is safe while `arena view` serves the campaign and
    annotators write; OUT is never overwritten. Copying CAMPAIGN alone while it is open is not a
    copy of the campaign: labels not yet checkpointed are in CAMPAIGN-wal.
    """
    from pptarena.label.store import CampaignError

    try:
        with _open(campaign) as opened:
            written = opened.pack(Path(out))
            count = len(opened.history())
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc}") from exc
    click.echo(f"packed {campaign} ({count} label version(s)) into {written}")


@label_group.command("adjudicate")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--sort",
    type=click.Choice(["disagreement", "item", "if", "vq", "damage", "choice", "labels"]),
    default="disagreement",
    show_default=True,
    help="Order (item ascending, the others largest first).",
)
@click.option("--all", "include_agreed", is_flag=True, help="Also the items every annotator agrees on.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N items.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def adjudicate_command(
    campaign: str, sort: str, include_agreed: bool, limit: int | None, as_json: bool
) -> None:
    """List the items where annotators disagree, each annotator's label side by side, with the
    item's gold label when it has one (record one with `arena label gold`)."""
    from pptarena.label.adjudication import disagreements, disagreements_text

    with _open(campaign) as opened:
        rows = disagreements(opened, sort=sort, include_agreed=include_agreed)[:limit]
        click.echo(json.dumps(rows, indent=2) if as_json else disagreements_text(rows, opened))


@label_group.command("gold")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.argument("item", type=int)
@click.argument("label", required=False)
@click.option("--note", default="", help="Why this is the answer (kept with the version).")
@click.option("--by", "by", required=True, help="The adjudicator's name.")
@click.option("--clear", is_flag=True, help="Withdraw the item's gold label (a new version).")
def gold_command(campaign: str, item: int, label: str | None, note: str, by: str, clear: bool) -> None:
    """Record the gold label of ITEM: LABEL is `if=4,vq=3,damage=no` (or JSON) in absolute
    campaigns, `a`, `b` or `tie` in pairwise ones. Appended as a new version: the latest wins."""
    from pptarena.label.adjudication import gold_history, label_text, parse_label, record_gold
    from pptarena.label.store import CampaignError

    if clear == (label is not None):
        raise click.UsageError("give LABEL, or --clear to withdraw the gold label")
    try:
        with _open(campaign) as opened:
            fields = None if clear else parse_label(opened.protocol, label or "")
            g = record_gold(opened, item, fields, note=note, by=by)
            versions = len(gold_history(opened, item))
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    what = "withdrawn" if g.fields is None else label_text(g.fields)
    click.echo(f"item {item}: gold label {what} (version {versions} of this item, by {g.adjudicator})")


@label_group.command("seed")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--from-file",
    "from_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Mark items of the campaign: CSV or JSON of expected labels "
    "(task_id, agent[, agent_b, epoch, run] and if/vq/damage or choice).",
)
@click.option(
    "--oracle-noop",
    "oracle_noop",
    type=click.IntRange(1),
    default=None,
    help="Mark N of the campaign's oracle / no-op items (oracle: if 4, no-op: if 0).",
)
@click.option(
    "--add-from-file",
    "add_from_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Add new items to every queue, hidden among the others: CSV or JSON naming each attempt "
    "(task_id, agent, epoch, run[, agent_b, epoch_b, run_b]) and its expected label.",
)
@click.option(
    "--add-oracle-noop",
    "add_oracle_noop",
    type=click.IntRange(1),
    default=None,
    help="Add N new items to every queue, hidden among the others, from the oracle / no-op "
    "attempts of the runs that are not items yet.",
)
@click.option(
    "--run",
    "runs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="--add-…: the run folders to take the attempts from (default: the campaign's runs).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Draws the items and their places.")
@click.option("--oracle-agent", default="oracle", show_default=True)
@click.option("--noop-agent", default="noop", show_default=True)
@click.option("--by", "by", default="admin", show_default=True, help="Who seeded them (kept with each mark).")
def seed_command(
    campaign: str,
    from_file: str | None,
    oracle_noop: int | None,
    add_from_file: str | None,
    add_oracle_noop: int | None,
    runs: tuple[str, ...],
    seed: int,
    oracle_agent: str,
    noop_agent: str,
    by: str,
) -> None:
    """Known-answer items, to check annotators: mark items of the campaign with their expected labels
    (--from-file, --oracle-noop; annotators see nothing different), or add new ones to every
    annotator's queue at hidden places (--add-from-file, --add-oracle-noop). `arena label stats`
    then reports each annotator's accuracy on them."""
    from pptarena.label.gold_items import (
        add_known_items,
        known_answers,
        new_oracle_noop_items,
        read_new_items_file,
        seed_from_file,
        seed_oracle_noop,
    )
    from pptarena.label.store import CampaignError

    given = [x is not None for x in (from_file, oracle_noop, add_from_file, add_oracle_noop)]
    if sum(given) != 1:
        raise click.UsageError(
            "give one of --from-file F, --oracle-noop N, --add-from-file F and --add-oracle-noop N"
        )
    if runs and add_from_file is None and add_oracle_noop is None:
        raise click.UsageError("--run goes with --add-from-file or --add-oracle-noop")
    folders = [Path(r) for r in runs] or None
    added: list[int] = []
    try:
        with _open(campaign) as opened:
            problems: list[str] = []
            if from_file is not None:
                marked, problems = seed_from_file(opened, Path(from_file), by=by)
            elif oracle_noop is not None:
                marked = seed_oracle_noop(
                    opened, oracle_noop, seed=seed, by=by, oracle=oracle_agent, noop=noop_agent
                )
            else:
                if add_from_file is not None:
                    new, problems = read_new_items_file(opened, Path(add_from_file), folders)
                    source = f"new item, file {Path(add_from_file).name}"
                else:
                    new = new_oracle_noop_items(
                        opened, add_oracle_noop or 0, runs=folders, seed=seed, oracle=oracle_agent,
                        noop=noop_agent,
                    )  # fmt: skip
                    source = f"new item, oracle-noop (seed {seed})"
                if new:
                    added = add_known_items(opened, new, seed=seed, source=source, by=by)
                marked = added
            total = len(known_answers(opened))
            queues = len(opened.annotators)
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    for why in problems[:20]:
        click.echo(f"  skipped: {why}", err=True)
    if len(problems) > 20:
        click.echo(f"  … and {len(problems) - 20} more skipped", err=True)
    if add_from_file is not None and not added:
        raise click.ClickException(f"no item added: every row of {add_from_file} was skipped")
    if add_from_file is not None or add_oracle_noop is not None:
        click.echo(
            f"added {len(added)} new known-answer item(s) to each of {queues} queue(s); "
            f"the campaign has {total}"
        )
    else:
        click.echo(f"marked {len(marked)} known-answer item(s); the campaign has {total}")


@label_group.command("instructions")
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False))
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--clear", is_flag=True, help="Withdraw the instructions page (a new version).")
@click.option("--by", "by", default="admin", show_default=True, help="Who changed them.")
def instructions_command(campaign: str, file: str | None, clear: bool, by: str) -> None:
    """Replace the campaign's instructions page with FILE (markdown, at most 1 MiB), or withdraw it
    with --clear; with neither, print the current instructions. Each change is a new version kept in
    the campaign file; annotators are shown the new instructions before their next item."""
    from pptarena.label.instructions import (
        current_instructions,
        instructions_history,
        read_instructions_file,
        set_instructions,
    )
    from pptarena.label.store import CampaignError

    if file is not None and clear:
        raise click.UsageError("give FILE, or --clear to withdraw the instructions, not both")
    try:
        text = read_instructions_file(Path(file)) if file is not None else None
        with _open(campaign) as opened:
            if file is None and not clear:
                ins = current_instructions(opened)
                if ins is None:
                    raise click.ClickException(f"campaign {opened.name} has no instructions page")
                click.echo(ins.text, nl=not (ins.text or "").endswith("\n"))
                return
            set_instructions(opened, text, source=f"file {Path(file).name}" if file else "cleared", by=by)
            versions = len(instructions_history(opened))
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from exc
    what = "withdrawn" if clear else f"set from {file}"
    click.echo(f"instructions {what} (version {versions}); annotators see them before their next item")
