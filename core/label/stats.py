"""``arena label stats``: agreement between the campaign's annotators and between them and the judges.

People against judges goes through :mod:`pptarena.report.meta_eval` (the code of ``arena meta-eval``):
the current labels become :class:`~pptarena.report.meta_eval.Label` objects (the mean over
annotators of an attempt, on 0-1) and each run's judge series (:func:`~pptarena.report.meta_eval.
judge_series`) are compared with :func:`~pptarena.report.meta_eval.series_agreement` — human IF
against every judge's score and the dual judge's ``if_score``, human VQ against ``vq_score``.
Pairwise labels are compared with :func:`~pptarena.report.meta_kinds.within_task_order`: for each
item people preferred one side of, whether the judge orders the two predictions the same way.

**Known-answer items** (:mod:`pptarena.label.gold_items`): each annotator's accuracy on those they
labelled, flagged below ``min_accuracy``. **With gold labels** (``gold=True``,
:mod:`pptarena.label.adjudication`): people against judges takes an item's gold label as its only
human value where it has one (instead of the mean over its annotators, or the annotators' vote
count in pairwise campaigns); agreement between people is still computed on the annotators' own
labels (a gold label is not an annotator), and a ``gold`` block gives each annotator's agreement
with the gold labels of the items they labelled.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any

from pptarena.label.adjudication import GOLD_ANNOTATOR, current_gold, scale_keys
from pptarena.label.agreement import choice_agreement, scale_agreement
from pptarena.label.gold_items import DEFAULT_MIN_ACCURACY, accuracy
from pptarena.label.scales import ABSOLUTE_SCALES
from pptarena.label.store import Campaign
from pptarena.run.folder.rundir import RESULTS

HUMAN_SERIES = {
    "if": lambda name: not name.endswith(".vq_score"),
    "vq": lambda name: name.endswith(".vq_score"),
}
"""Which judge series each human scale is compared with."""


def _units(campaign: Campaign, key: str) -> dict[int, dict[str, Any]]:
    units: dict[int, dict[str, Any]] = {}
    for (annotator, item), v in campaign.current().items():
        if v.fields is not None and key in v.fields:
            units.setdefault(item, {})[annotator] = v.fields[key]
    return units


def people_agreement(campaign: Campaign, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Agreement between annotators: per scale (absolute) or on the choices (pairwise)."""
    if campaign.protocol == "pairwise":
        return {"choice": choice_agreement(_units(campaign, "choice"))}
    out = {
        k: scale_agreement(_units(campaign, k), "ordinal", n_boot=n_boot, seed=seed) for k in ABSOLUTE_SCALES
    }
    out["damage"] = scale_agreement(_units(campaign, "damage"), "nominal", n_boot=n_boot, seed=seed)
    return out


def human_values(campaign: Campaign, gold: bool = False) -> list[tuple[str, int, dict[str, Any]]]:
    """``(annotator, item, fields)`` of every current label; with ``gold``, an item with a gold label
    gives that label alone (annotator :data:`~pptarena.label.adjudication.GOLD_ANNOTATOR`)."""
    settled = {i: g.fields for i, g in current_gold(campaign).items()} if gold else {}
    out = [(GOLD_ANNOTATOR, i, f or {}) for i, f in sorted(settled.items())]
    for (annotator, item_id), v in campaign.current().items():
        if item_id not in settled and v.fields is not None:
            out.append((annotator, item_id, v.fields))
    return out


def _labels_for(campaign: Campaign, run: str, key: str, gold: bool = False) -> list[Any]:
    from pptarena.report.meta_eval import Label, to_class

    by_attempt: dict[tuple[str, str, int], list[int]] = {}
    for _, item_id, fields in human_values(campaign, gold):
        item = campaign.items[item_id]
        if item.run == run and key in fields:
            by_attempt.setdefault((item.task_id, item.agent, item.epoch), []).append(fields[key])
    labels = []
    for (task, agent, epoch), values in sorted(by_attempt.items()):
        mean = sum(values) / len(values) / 4
        labels.append(Label(task, agent, f"{mean * 4:g}", mean, to_class(mean, "unit"), "", epoch))
    return labels


def _pairwise_vs_judges(
    campaign: Campaign, run: str, series: dict[str, Any], gold: bool = False
) -> dict[str, Any]:
    from pptarena.report.meta_eval import Label
    from pptarena.report.meta_kinds import within_task_order

    votes: dict[int, Counter[str]] = {}
    for _, item_id, fields in human_values(campaign, gold):
        if campaign.items[item_id].run == run:
            votes.setdefault(item_id, Counter())[fields["choice"]] += 1
    out: dict[str, Any] = {}
    for name, values in series.items():
        total = {"items": 0, "concordant": 0, "tied": 0, "discordant": 0}
        for item_id, count in votes.items():
            item = campaign.items[item_id]
            if item.run_b not in (None, run):
                continue  # an item across two runs: the two sides are scored in different runs
            a, b = count.get("a", 0), count.get("b", 0)
            if a == b:
                continue
            task = item.task_id
            # the two sides as labels of one task: the preferred one higher, the judge asked to agree
            la = Label(task, item.agent, "a", 1.0 if a > b else 0.0, "", "", item.epoch)
            lb = Label(task, item.agent_b or "", "b", 1.0 if b > a else 0.0, "", "", item.epoch_b or 1)
            got = within_task_order([la, lb], values)
            if got["pairs"]:
                total["items"] += 1
                for k in ("concordant", "tied", "discordant"):
                    total[k] += got[k]
        total["rate"] = round(total["concordant"] / total["items"], 4) if total["items"] else None
        out[name] = total
    return out


_SERIES_CACHE: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_SERIES_LOCK = threading.Lock()
SERIES_CACHE_RUNS = 4
"""How many runs' judge series :func:`run_series` keeps."""


def run_series(results: Path) -> dict[str, Any]:
    """:func:`pptarena.report.meta_eval.judge_series` of a ``results.jsonl`` ({} when absent), read
    again only when the file changed (its path, inode, size and mtime): a campaign's statistics are
    recomputed on each new label, the run's results seldom change. The dict is shared: read it only."""
    from pptarena.report.meta_eval import judge_series
    from pptarena.run.folder.results import read_results

    if not results.is_file():
        return {}
    st = results.stat()
    key = (str(results.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
    with _SERIES_LOCK:
        if key in _SERIES_CACHE:
            _SERIES_CACHE.move_to_end(key)
            return _SERIES_CACHE[key]
    series = judge_series(read_results(results))
    with _SERIES_LOCK:
        _SERIES_CACHE[key] = series
        while len(_SERIES_CACHE) > SERIES_CACHE_RUNS:
            _SERIES_CACHE.popitem(last=False)
    return series


def judge_agreement(
    campaign: Campaign, *, n_boot: int = 1000, seed: int = 0, gold: bool = False
) -> dict[str, Any]:
    """Per run of the campaign: human scales against the run's judge series (see the module doc;
    ``gold``: gold labels replace their items' annotators)."""
    from pptarena.label.fast_tau import series_agreement  # meta_eval's figures, τ_b as matrix products

    out: dict[str, Any] = {}
    for run in dict.fromkeys(campaign.runs.values()):
        series = run_series(Path(run) / RESULTS)
        if campaign.protocol == "pairwise":
            out[run] = {"choice": _pairwise_vs_judges(campaign, run, series, gold)}
            continue
        block = {}
        for key, wanted in HUMAN_SERIES.items():
            labels = _labels_for(campaign, run, key, gold)
            chosen = {n: v for n, v in series.items() if wanted(n)}
            block[key] = series_agreement(chosen, labels, "unit", n_boot=n_boot, seed=seed) if labels else {}
        out[run] = block
    return out


def progress(campaign: Campaign) -> dict[str, dict[str, int]]:
    """Per annotator: items in the queue and items with a current label."""
    done = Counter(a for a, _ in campaign.current())
    return {a: {"queue": len(campaign.queue(a)), "labelled": done.get(a, 0)} for a in campaign.annotators}


def gold_agreement(campaign: Campaign) -> dict[str, Any]:
    """How many items have a gold label, and per annotator the share of their labels of those items
    that give the gold answer, per scale (``if``, ``vq``, ``damage``; pairwise ``choice``)."""
    gold = current_gold(campaign)
    keys = [k for k, _ in scale_keys(campaign.protocol)]
    people: dict[str, Any] = {}
    for (annotator, item_id), v in sorted(campaign.current().items()):
        g = gold.get(item_id)
        if g is None or v.fields is None:
            continue
        p = people.setdefault(annotator, {"items": 0, **{k: 0 for k in keys}})
        p["items"] += 1
        for k in keys:
            p[k] += int(v.fields.get(k) == (g.fields or {}).get(k))
    for p in people.values():
        for k in keys:
            p[k] = round(p[k] / p["items"], 4)
    return {"items": len(gold), "annotators": people}


class OneReading:
    """A campaign whose ``current()`` labels (all annotators) are read once and then shared: the
    statistics read them seven times, and a label written meanwhile would make their figures
    disagree. Everything else is the campaign's own. Read the shared dict only."""

    def __init__(self, campaign: Campaign):
        self._campaign = campaign
        self._current: dict[tuple[str, int], Any] | None = None

    def current(self, annotator: str | None = None) -> dict[tuple[str, int], Any]:
        """The campaign's current labels, read at the first call (``annotator``: read afresh)."""
        if annotator is not None:
            return self._campaign.current(annotator)
        if self._current is None:
            self._current = self._campaign.current()
        return self._current

    def __getattr__(self, name: str) -> Any:
        return getattr(self._campaign, name)


def campaign_stats(
    campaign: Campaign,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    gold: bool = False,
    min_accuracy: float = DEFAULT_MIN_ACCURACY,
    tolerance: int = 0,
) -> dict[str, Any]:
    """Everything ``arena label stats`` prints, as JSON-ready data (``gold``, ``min_accuracy``,
    ``tolerance``: see the module doc and :func:`pptarena.label.gold_items.accuracy`). The current
    labels are read once (:class:`OneReading`): every figure is of the same labels."""
    campaign = OneReading(campaign)  # type: ignore[assignment]
    out = {
        "campaign": campaign.name,
        "protocol": campaign.protocol,
        "items": len(campaign.items),
        "overlap": round(campaign.overlap(), 4),
        "progress": progress(campaign),
        "people": people_agreement(campaign, n_boot=n_boot, seed=seed),
        "judges": judge_agreement(campaign, n_boot=n_boot, seed=seed, gold=gold),
        "bootstrap": {"resamples": n_boot, "seed": seed, "level": 0.95},
    }
    known = accuracy(campaign, min_accuracy=min_accuracy, tolerance=tolerance)
    if known["items"]:
        out["known_answers"] = known
    if gold:
        out["gold"] = gold_agreement(campaign)
    return out


def stats_text(stats: dict[str, Any]) -> str:
    """The stats as plain text lines for the terminal."""
    lines = [
        f"campaign {stats['campaign']} ({stats['protocol']}): {stats['items']} items, "
        f"overlap {100 * stats['overlap']:.0f}%"
    ]
    for a, p in stats["progress"].items():
        lines.append(f"  {a}: {p['labelled']} of {p['queue']} labelled")
    lines.append("Between people:")
    for scale, block in stats["people"].items():
        if "alpha" in block:
            lines.append(
                f"  {scale} ({block['level']}): α = {_num(block['alpha'])} {_ci(block['ci95'])} "
                f"on {block['items']} items"
            )
        for pair, p in block.get("pairs", {}).items():
            extra = f", κ = {_num(p['cohen_kappa'])}" if "cohen_kappa" in p else ""
            alpha = f"α = {_num(p['alpha'])} {_ci(p.get('ci95'))}, " if "alpha" in p else ""
            lines.append(f"    {pair}: {alpha}agreement {_num(p['agreement'])}{extra} on {p['items']} items")
        if "fleiss_kappa" in block:
            lines.append(
                f"  Fleiss' κ = {_num(block['fleiss_kappa'])} on {block['fleiss_items']} items "
                f"({block['fleiss_annotators']} annotators each)"
            )
    if "gold" in stats:
        g = stats["gold"]
        lines.append(f"Gold labels: {g['items']} item(s); people against judges use them where they exist")
        for a, p in g["annotators"].items():
            shares = ", ".join(f"{k} {_num(v)}" for k, v in p.items() if k != "items")
            lines.append(f"  {a} agrees with gold on {p['items']} item(s): {shares}")
    if "known_answers" in stats:
        k = stats["known_answers"]
        tol = f", within {k['tolerance']} level(s)" if k["tolerance"] else ""
        lines.append(f"Known-answer items: {k['items']} (flagged below accuracy {k['min_accuracy']:g}{tol})")
        for a, p in k["annotators"].items():
            flag = "  FLAGGED" if p["flagged"] else ""
            lines.append(
                f"  {a}: {p['right']} of {p['labelled']} right, accuracy {_num(p['accuracy'])} "
                f"({p['queued']} in the queue){flag}"
            )
    lines.append("People against judges:")
    for run, block in stats["judges"].items():
        lines.append(f"  run {run}")
        for scale, series in block.items():
            for name, a in series.items():
                if "rate" in a:
                    lines.append(
                        f"    {scale} vs {name}: same order on {a['concordant']} of {a['items']} "
                        f"items ({_num(a['rate'])}), tied {a['tied']}"
                    )
                    continue
                tau, rho, r = (a.get(k) or {} for k in ("kendall_tau_b", "spearman", "pearson"))
                lines.append(
                    f"    {scale} vs {name}: τ_b {_num(tau.get('value'))} {_ci(tau.get('ci95'))}, "
                    f"ρ {_num(rho.get('value'))} {_ci(rho.get('ci95'))}, "
                    f"r {_num(r.get('value'))} {_ci(r.get('ci95'))} (n={a.get('n')})"
                )
    return "\n".join(lines)


def _num(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}"


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci and None not in ci else ""
