"""Agreement of ``semantics="ppteval"`` with PPT-Eval's reference code, on the full matrix (not run by CI).

Builds the 58 corpus deck pairs of tests/support/ppteval_pairs.py and measures, against the reference
(``../shared/ppteval/reference`` + ai-rubric 0.2.5, the ``ppteval-ref`` extra):

* the nine ``ppt_diff`` lists and every field (``to_dict``, content_hash included) per pair, and
  every Slide / AnimationEffect / SlideTransition of every deck read whole;
* every pure-Python published leaf (372: no ``llm_call`` / ``vlm_call``) on every pair: the same
  score or the same exception type (reference through ai-rubric's ``FunctionScorer``, ours through
  the judge's leaf runner with our ``ppt_diff`` rebuilt from JSON as in the sandbox);
* task scores of the 57 rubrics made only of such leaves on every pair: ai-rubric's
  ``RubricTree.evaluate`` under PPT-Eval's grader rule (any exception: 0.0) against our aggregation
  with the ``ppteval`` leaf-error rule, from our leaf results.

python-pptx loads are memoised per deck path on both sides (no published leaf writes to a deck).
The tests (tests/judges/rubric/test_ppteval_semantics.py) run a subset of the leaf matrix and the real judge.

    python benchmarks/ppteval_agreement.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.ppteval_pairs import build_pairs  # noqa: E402
from tests.support.ppteval_reference import RUBRICS, quiet, reference, rubric_leaves, whole_deck_fields  # noqa: E402


def main() -> None:
    ref, why = reference()
    if ref is None:
        sys.exit(why)
    import pptx

    from pptarena.deck.ppteval import PowerPointDiff
    from pptarena.deck.ppteval_published import published_diff
    from pptarena.plugins.judges.rubric.child import run_leaf
    from pptarena.plugins.judges.rubric.tree import load_rubric, score_tree

    real, cache = pptx.Presentation, {}

    def load(path: Any = None) -> Any:
        if str(path) not in cache:
            cache[str(path)] = real(path)
        return cache[str(path)]

    pptx.Presentation = load  # type: ignore[assignment]
    rubrics = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(RUBRICS.glob("*.json"))}
    pure = lambda code: "llm_call" not in code and "vlm_call" not in code  # noqa: E731
    t0 = time.monotonic()
    pairs = build_pairs(Path(tempfile.mkdtemp(prefix="ppteval-agreement-")))
    lists_ok = fields_ok = slides = runs = leaf_ok = raised = tasks = tasks_ok = nonzero = 0
    decks: set[str] = set()
    for name, a, b, _rows in pairs:
        cache.clear()
        ref_diff = quiet(ref.Evaluator().compare_files, str(a), str(b))
        ours = PowerPointDiff.from_json(json.loads(json.dumps(published_diff(a, b).to_json())))
        lists_ok += ref_diff.to_dict() == ours.to_dict()
        decks |= {str(a), str(b)}
        base = {
            "original_ppt_screenshots": [],
            "modified_ppt_screenshots": [],
            "original_ppt_path": str(a),
            "modified_ppt_path": str(b),
            "llm_call": None,
            "vlm_call": None,
        }
        for tid, rub in rubrics.items():
            leaves = rubric_leaves(rub["root"])
            mine: dict[str, float] = {}
            first_error = None
            for lid, code in leaves:
                if not pure(code):
                    continue
                try:
                    expected: tuple[str, Any] = (
                        "score",
                        quiet(ref.FunctionScorer(code).score, **{**base, "ppt_diff": ref_diff})[0],
                    )
                except ValueError as exc:
                    expected = ("raises", type(exc.__cause__ or exc).__name__)
                rec = run_leaf({"id": lid, "code": code}, {**base, "ppt_diff": ours}, 60.0)
                got = ("raises", rec["error_type"]) if rec.get("error") else ("score", rec["score"])
                runs += 1
                leaf_ok += expected == got
                raised += expected[0] == "raises"
                if expected != got:
                    print(f"leaf disagreement: {name} {tid}:{lid} reference {expected} ours {got}")
                mine[lid] = rec["score"]
                if rec.get("error") and first_error is None:
                    first_error = lid
            if not all(pure(code) for _, code in leaves):
                continue
            tree = ref.RubricTree.from_dict(rub)
            try:
                want = float(
                    quiet(
                        tree.evaluate,
                        **{**base, "ppt_diff": ref_diff},
                        include_reason=False,
                        compute_strategy="default",
                        non_critical_weight=0.3,
                    )[0]
                )
            except Exception:  # noqa: BLE001 - PPT-Eval's grader scores any exception 0.0
                want = 0.0
            have = 0.0 if first_error else score_tree(load_rubric(rub).root, mine)["root"]
            tasks += 1
            tasks_ok += abs(want - have) <= 1e-12
            nonzero += want > 0
            if abs(want - have) > 1e-12:
                print(f"task disagreement: {name} {tid} reference {want} ours {have}")
    for path in sorted(decks):
        want, have = whole_deck_fields(ref, path)
        slides += len(want[0])
        fields_ok += want == have
    print(f"pairs: {len(pairs)}; nine lists + every field equal on {lists_ok}/{len(pairs)}")
    print(
        f"decks read whole: {len(decks)} ({slides} slides); "
        f"every slide/animation/transition field equal on {fields_ok}/{len(decks)}"
    )
    print(f"pure-Python leaf runs: {leaf_ok}/{runs} agree ({raised} raise in the reference)")
    print(f"task scores (57 pure-Python rubrics x pairs): {tasks_ok}/{tasks} identical ({nonzero} above 0)")
    print(f"wall time {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
