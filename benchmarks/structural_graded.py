"""The structural judge on a graded set of near misses built from ../shared/corpus decks.

Usage: python benchmarks/structural_graded.py [--tasks 12] [--out DIR] [--json FILE] [--dataset DIR]

Builds the graded set of ``tests/support/graded_set.py`` (tasks of three sub-edits; per task nine attempts:
none, one, two, complete, damage, wrong_value, wrong_object, overlay, over_edit, each with a
repair-cost label), scores every attempt with the ``structural`` judge and prints:

* Kendall τ_b (and Spearman ρ) between the labels and the judge's scores over all attempts;
* the mean score per attempt kind;
* per task, the orderings the judge must keep: complete > wrong_value, complete > overlay,
  complete > over_edit > damage, wrong_object ≤ two;
* the miss classes the judge reported, per kind (when the judge reports them).

``--dataset DIR`` also writes the set as a ``folder`` dataset with one ``precomputed`` agent per
attempt kind, a run config and ``labels.csv``, so ``arena run`` and ``arena meta-eval --labels``
reproduce the numbers through the CLI (see BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"

ORDERINGS = (
    ("complete", ">", "wrong_value"),
    ("complete", ">", "overlay"),
    ("complete", ">", "over_edit"),
    ("over_edit", ">", "damage"),
    ("wrong_object", "<=", "two"),
)


def make_judge(**options: Any) -> Any:
    """A ``structural`` judge with ``options``."""
    from pptarena.plugins.judges.structural.judge import StructuralJudge
    from pptarena.types import ComponentContext

    ctx = ComponentContext(
        cache_dir=Path(tempfile.gettempdir()), model=lambda ref: None, name="structural", label="structural"
    )
    return StructuralJudge(StructuralJudge.Options(**options), ctx)


def score_set(tasks: list[Any], work: Path, **options: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """Judge every attempt; (task_id, kind) -> {"score", "metrics"}."""
    from pptarena.deck import summarize
    from pptarena.deck.diff import diff_summaries
    from pptarena.evidence import Evidence
    from pptarena.types import Prediction, Task
    from tests.support.graded_set import iter_attempts

    summaries: dict[Path, dict[str, Any]] = {}

    def summary(path: Path) -> dict[str, Any]:
        if path not in summaries:
            summaries[path] = summarize(path)
        return summaries[path]

    class SharedEvidence(Evidence):
        """Evidence whose diffs reuse deck summaries across the attempts of a task."""

        def diff(self, a: str = "original", b: str = "prediction") -> Any:
            return self._memo(
                ("diff", a, b), lambda: diff_summaries(summary(self._require(a)), summary(self._require(b)))
            )

    judge = make_judge(**options)
    out = {}
    for task, kind, deck in iter_attempts(tasks):
        t = Task(id=task.task_id, instruction="three edits", original=task.original, target=task.target)
        ev = SharedEvidence(t, Prediction(path=deck), work / task.task_id / kind, renderer=None)
        v = judge.judge(t, Prediction(path=deck), ev)
        out[(task.task_id, kind)] = {"score": v.score, "metrics": v.metrics}
    return out


def report(tasks: list[Any], scores: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """τ_b, per-kind means and ordering checks."""
    from pptarena.report.meta_stats import kendall_tau_b, spearman
    from tests.support.graded_set import ALTERNATIVE_COSTS, KINDS, label_of

    labels, judged = [], []
    per_kind: dict[str, list[float]] = defaultdict(list)
    classes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for t in tasks:
        for kind in KINDS:
            s = scores[(t.task_id, kind)]
            labels.append(label_of(kind, t))
            judged.append(s["score"])
            per_kind[kind].append(s["score"])
            for cls in ("wrong_value", "wrong_object", "overlay", "missed"):
                if s["metrics"].get(f"miss_{cls}"):
                    classes[kind][cls] += int(s["metrics"][f"miss_{cls}"])
    alternative = {}
    for name, costs in ALTERNATIVE_COSTS.items():
        alt = [label_of(kind, t, costs) for t in tasks for kind in KINDS]
        alternative[name] = round(kendall_tau_b(alt, judged), 4)
    violations = []
    for t in tasks:
        for a, op, b in ORDERINGS:
            sa, sb = scores[(t.task_id, a)]["score"], scores[(t.task_id, b)]["score"]
            ok = sa > sb if op == ">" else sa <= sb
            if not ok:
                violations.append(f"{t.task_id}: {a} {sa:.3f} {op} {b} {sb:.3f} fails")
    return {
        "tasks": len(tasks),
        "attempts": len(labels),
        "kendall_tau_b": round(kendall_tau_b(labels, judged), 4),
        "spearman": round(spearman(labels, judged), 4),
        "kendall_tau_b_other_cost_models": alternative,
        "mean_label": {k: round(sum(label_of(k, t) for t in tasks) / len(tasks), 4) for k in KINDS},
        "mean_score": {k: round(sum(v) / len(v), 4) for k, v in per_kind.items()},
        "miss_classes": {k: dict(v) for k, v in classes.items()},
        "ordering_violations": violations,
    }


def write_dataset(tasks: list[Any], folder: Path) -> Path:
    """The set as a folder dataset + precomputed agents + config + labels.csv; returns the config path."""
    import shutil

    from tests.support.graded_set import KINDS, write_labels

    data = folder / "tasks"
    for t in tasks:
        d = data / t.task_id
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(t.original, d / "original.pptx")
        shutil.copyfile(t.target, d / "target.pptx")
        kinds = ", ".join(e.kind for e in t.edits)
        (d / "task.toml").write_text(
            f'instruction = "Graded near-miss task on {t.source.name}: {kinds}."\n'
            'original = "original.pptx"\ntarget = "target.pptx"\n',
            encoding="utf-8",
        )
        for kind in KINDS:
            p = folder / "attempts" / kind
            p.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(t.attempts[kind], p / f"{t.task_id}.pptx")
    write_labels(tasks, folder / "labels.csv")
    lines = [
        "[run]",
        f'out = "{folder / "run"}"',
        "jobs = 1",
        "",
        "[dataset]",
        'use = "folder"',
        f'root = "{data}"',
        "",
    ]
    for kind in KINDS:
        lines += [
            "[[agents]]",
            'use = "precomputed"',
            f'label = "{kind}"',
            f'dir = "{folder / "attempts" / kind}"',
            "",
        ]
    lines += ["[[judges]]", 'use = "structural"', ""]
    cfg = folder / "graded.toml"
    cfg.write_text("\n".join(lines), encoding="utf-8")
    return cfg


def main() -> None:
    """Build, score, print (and optionally write JSON / a dataset)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument(
        "--out", type=Path, default=None, help="where to write the decks (default: a temp folder)"
    )
    ap.add_argument("--json", type=Path, default=None, help="write the report here")
    ap.add_argument(
        "--dataset", type=Path, default=None, help="also write a folder dataset + config + labels here"
    )
    args = ap.parse_args()
    from tests.support.graded_set import build_set

    if not CORPUS.is_dir():
        sys.exit(f"{CORPUS} is not available")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        t0 = time.perf_counter()
        tasks = build_set(CORPUS, out / "decks", limit=args.tasks)
        built = time.perf_counter() - t0
        scores = score_set(tasks, out / "judged")
        rep = report(tasks, scores)
        rep["seconds"] = {"build": round(built, 1), "judge": round(time.perf_counter() - t0 - built, 1)}
        rep["machine"] = f"{platform.machine()} {platform.system()} python {platform.python_version()}"
        rep["task_ids"] = [t.task_id for t in tasks]
        rep["scores"] = {f"{k[0]}/{k[1]}": round(v["score"], 4) for k, v in scores.items()}
        if args.dataset:
            rep["config"] = str(write_dataset(tasks, args.dataset))
    text = json.dumps(rep, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    short = {k: v for k, v in rep.items() if k != "scores"}
    print(json.dumps(short, indent=2))


if __name__ == "__main__":
    main()
