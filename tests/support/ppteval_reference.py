"""Load PPT-Eval's reference code (../shared/ppteval/reference) for differential tests only.

The reference's ``diff.py`` is imported under its own module name with stub modules for the
parts it imports but the tests do not need (the screenshot generator, OneDrive). ai-rubric
(``rubric``) is imported with litellm's bundled model-cost map, so nothing reaches the network.
:func:`reference` returns None and a reason when the reference code or its packages are absent.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import sys
import types
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

REFERENCE = ROOT.parent / "shared" / "ppteval" / "reference"
CORPUS = ROOT.parent / "shared" / "corpus"
RUBRICS = ROOT.parent / "shared" / "ppteval" / "task_registry" / "rubrics"

_loaded: dict[str, Any] = {}


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    module = sys.modules.get(name) or types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    sys.modules[name] = module
    return module


def reference() -> tuple[Any, str]:
    """``(namespace with diff, rubric, Evaluator, FunctionScorer, RubricTree)`` or ``(None, why)``."""
    if "ns" in _loaded:
        return _loaded["ns"], ""
    if not (REFERENCE / "ppteval" / "verify" / "ppt" / "diff.py").is_file():
        return None, f"PPT-Eval reference code not found at {REFERENCE} (../shared is absent)"
    for package in ("xmltodict", "rubric"):
        if importlib.util.find_spec(package) is None:
            return None, (
                f"package {package!r} is missing: install the differential-test extra "
                "(pip install -e '.[ppteval-ref]', see scripts/setup.sh)"
            )
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("RUBRIC_DEFAULT_LLM", "stub/none")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import rubric
        from rubric.core.scorer import FunctionScorer

    class _NoScreenshots:
        """Stand-in for the reference's screenshot generator (never used by compare_files)."""

    for pkg in ("ppteval", "ppteval.verify", "ppteval.verify.ppt", "ppteval.utils"):
        _stub(pkg, __path__=[])
    _stub("ppteval.verify.ppt.slide_screenshots_utils", SlideScreenshotGenerator=_NoScreenshots)
    spec = importlib.util.spec_from_file_location(
        "ppteval.verify.ppt.diff", REFERENCE / "ppteval" / "verify" / "ppt" / "diff.py"
    )
    assert spec is not None and spec.loader is not None
    diff = importlib.util.module_from_spec(spec)
    sys.modules["ppteval.verify.ppt.diff"] = diff
    spec.loader.exec_module(diff)
    ns = types.SimpleNamespace(
        diff=diff,
        rubric=rubric,
        FunctionScorer=FunctionScorer,
        Evaluator=diff.PowerPointDiffEvaluator,
        RubricTree=rubric.RubricTree,
    )
    _loaded["ns"] = ns
    return ns, ""


def quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` with its prints to stdout swallowed (the reference code prints as it works)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def rubric_leaves(node: dict[str, Any], path: str = "root") -> list[tuple[str, str]]:
    """``(leaf id, function code)`` of every scorer leaf of a published rubric tree, in order."""
    if "scorer" in node:
        return [(path, node["scorer"]["function_code"])]
    return [leaf for i, c in enumerate(node.get("children", [])) for leaf in rubric_leaves(c, f"{path}.{i}")]


def whole_deck_fields(ref: Any, path: str) -> tuple[tuple[list, list, list], tuple[list, list, list]]:
    """Every slide, animation and transition of the deck at ``path`` as dicts, read by the reference
    code and by ours: ``(reference, ours)``, each ``(slides, animations, transitions)``."""
    from pptarena.deck.ppteval_published import _Deck, read_slides, read_timing

    evaluator = ref.Evaluator()
    ref_slides = [s.to_dict() for s in quiet(evaluator.extract_slides, path)]
    ref_anims, ref_trans = quiet(evaluator.extract_animations_and_transitions, path)
    deck = _Deck(Path(path))
    try:
        our_slides = [s.to_dict() for s, _ in read_slides(deck)]
        our_anims, our_trans = read_timing(deck)
    finally:
        deck.close()
    return (
        (ref_slides, [a.to_dict() for a in ref_anims], [t.to_dict() for t in ref_trans]),
        (our_slides, [a.to_dict() for a in our_anims], [t.to_dict() for t in our_trans]),
    )
