"""``arena label new``: choose the items of a campaign, share them among annotators, issue tokens.

Items are the attempts of the runs that left a prediction (absolute), or two such attempts of the
same task — two agents, two epochs or two runs (pairwise). With ``sample`` a seeded random
sample is kept. Each item goes to one annotator (round robin over a seeded shuffle); a seeded
``overlap`` share of the items goes to **every** annotator, so agreement between people can be
measured on them. Each annotator's queue is shuffled with the seed and the annotator's name, and in
pairwise campaigns the side each prediction is shown on is drawn per annotator and item.
"""

from __future__ import annotations

import random
import re
import secrets
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

from pptarena.label.store import PROTOCOLS, Campaign, CampaignError, create_campaign
from pptarena.run.folder.records import ResultRow
from pptarena.run.folder.rundir import RESULTS

ANNOTATOR_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
CAMPAIGNS_DIR = "campaigns"


def parse_annotators(text: str) -> list[str]:
    """``alice,bob`` as names; :class:`CampaignError` for an empty list, a duplicate or a bad name."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise CampaignError("--annotators: give at least one name")
    for n in names:
        if not ANNOTATOR_NAME.match(n):
            raise CampaignError(f"annotator name {n!r}: use 1-64 letters, digits, and . _ @ -")
    if len(set(names)) != len(names):
        raise CampaignError("--annotators: a name is given twice")
    return names


def attempts(run_dirs: list[Path]) -> list[tuple[int, ResultRow]]:
    """(run index, result row) of every attempt that left a prediction deck."""
    from pptarena.report.rescore import prediction_path
    from pptarena.run.folder.results import read_results

    out = []
    for i, run in enumerate(run_dirs):
        results = run / RESULTS
        if not results.is_file():
            raise CampaignError(f"{run} is not a run directory (no {RESULTS})")
        for row in read_results(results):
            if prediction_path(run, row) is not None:
                out.append((i, row))
    return out


def choose_items(
    found: list[tuple[int, ResultRow]], protocol: str, sample: int | None, seed: int
) -> list[tuple[int, str, str, int, str | None, int | None, int | None]]:
    """The campaign's items (see :func:`pptarena.label.store.create_campaign`), sampled when asked."""
    keyed = sorted(((i, r.task_id, r.agent, r.epoch) for i, r in found), key=str)
    items: list[tuple[int, str, str, int, str | None, int | None, int | None]] = []
    if protocol == "absolute":
        items = [(i, t, a, e, None, None, None) for i, t, a, e in keyed]
    else:
        by_task: dict[str, list[tuple[int, str, int]]] = {}
        for i, t, a, e in keyed:
            by_task.setdefault(t, []).append((i, a, e))
        for t, group in sorted(by_task.items()):
            for (i, a, e), (j, b, f) in combinations(group, 2):
                items.append((i, t, a, e, b, f, j))
    if sample is not None and sample < len(items):
        items = sorted(random.Random(seed).sample(items, sample), key=str)
    return items


def share(
    n_items: int, annotators: list[str], overlap: float, seed: int, pairwise: bool
) -> dict[str, list[tuple[int, bool]]]:
    """Each annotator's queue of (item number from 1, shown swapped) (see the module doc)."""
    rng = random.Random(seed)
    numbers = list(range(1, n_items + 1))
    rng.shuffle(numbers)
    n_shared = round(overlap * n_items) if len(annotators) > 1 else 0
    queues: dict[str, list[int]] = {a: [] for a in annotators}
    for k, item in enumerate(numbers):
        if k < n_shared:
            for a in annotators:
                queues[a].append(item)
        else:
            queues[annotators[(k - n_shared) % len(annotators)]].append(item)
    out = {}
    for a in annotators:
        own = random.Random(f"{seed}:{a}")
        order = sorted(queues[a])
        own.shuffle(order)
        out[a] = [(item, pairwise and own.random() < 0.5) for item in order]
    return out


def default_path(run_dir: Path, name: str) -> Path:
    """``RUN_DIR/campaigns/<name>.sqlite``."""
    return Path(run_dir) / CAMPAIGNS_DIR / f"{name}.sqlite"


def new_campaign(
    run_dirs: list[Path],
    *,
    protocol: str,
    annotators: list[str],
    overlap: float = 0.2,
    sample: int | None = None,
    seed: int = 0,
    blind: bool = True,
    name: str | None = None,
    out: Path | None = None,
    instructions: str | None = None,
    instructions_source: str = "arena label new",
) -> tuple[Campaign, dict[str, str]]:
    """Create a campaign file; returns it and each annotator's token (shown once, stored hashed).

    ``instructions``: the markdown of the campaign's instructions page, checked before the file
    is made and stored in it (:mod:`pptarena.label.instructions`).
    """
    from pptarena.label.instructions import check_text, set_instructions

    if instructions is not None:
        check_text(instructions)
    if protocol not in PROTOCOLS:
        raise CampaignError(f"protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    if not 0 <= overlap <= 1:
        raise CampaignError("--overlap must be between 0 and 1")
    if not run_dirs:
        raise CampaignError("give at least one --run")
    runs = [Path(r).resolve() for r in run_dirs]
    items = choose_items(attempts(runs), protocol, sample, seed)
    if not items:
        what = "attempt with a prediction" if protocol == "absolute" else "two predictions of one task"
        raise CampaignError(f"the runs hold no {what} to label")
    name = name or f"{protocol}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    if not re.match(r"^[A-Za-z0-9_.-]{1,80}$", name):
        raise CampaignError(f"campaign name {name!r}: use letters, digits, and . _ -")
    path = Path(out) if out is not None else default_path(runs[0], name)
    tokens = {a: secrets.token_urlsafe(24) for a in annotators}
    queues = share(len(items), annotators, overlap, seed, protocol == "pairwise")
    meta = {
        "blind": blind,
        "seed": seed,
        "overlap": overlap,
        "sample": sample,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    campaign = create_campaign(
        path,
        name=name,
        protocol=protocol,
        runs=[str(r) for r in runs],
        items=items,
        queues=queues,
        tokens=tokens,
        meta=meta,
    )
    if instructions is not None:
        set_instructions(campaign, instructions, source=instructions_source)
    return campaign, tokens


def find_campaigns(run_dir: Path) -> list[Path]:
    """The campaign files in ``RUN_DIR/campaigns/``."""
    folder = Path(run_dir) / CAMPAIGNS_DIR
    return sorted(p for p in folder.glob("*.sqlite") if p.is_file()) if folder.is_dir() else []
