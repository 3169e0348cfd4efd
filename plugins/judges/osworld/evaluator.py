"""Evaluating an OSWorld ``evaluator`` spec (func / conj / result / expected / options) offline.

OSWorld fetches each side with a *getter* inside its VM; here the sides come from the task and the
prediction (see docs/datasets.md, "osworld"):

* ``vm_file`` on the result side: a deck path (``.pptx``/``.ppt``/``.odp``) is the agent's
  prediction deck; any other file (LibreOffice's ``registrymodifications.xcu``, an exported
  ``res.png``) is looked up by file name in ``prediction.metadata["files"]``;
* ``vm_file`` on the expected side, and ``cloud_file``: the local file the dataset resolved
  (``task.metadata["osworld"]["files"]``, keyed by the getter's ``dest``);
* ``rule``: its ``rules`` dict;
* ``accessibility_tree``: the text of ``prediction.metadata["files"]["accessibility_tree"]``.

A result file the agent did not hand in scores 0, as OSWorld's getter returning nothing does.
Several functions combine like OSWorld: ``and`` stops at the first 0 and otherwise averages,
``or`` stops at the first 1 and otherwise takes the best.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import checks
from .pptx_compare import CheckerOptionError, Outcome, compare_pptx_files, option_problems

DECK_SUFFIXES = (".pptx", ".ppt", ".odp")


@dataclass(frozen=True)
class Checker:
    """One OSWorld metric: our implementation, whether it takes an expected side, its option check."""

    fn: Callable[..., Outcome | None]
    takes_expected: bool
    options: Callable[[dict[str, Any]], list[str]] = field(
        default=lambda o: [f"unknown option {k!r}" for k in o]
    )


CHECKERS: dict[str, Checker] = {
    "compare_pptx_files": Checker(compare_pptx_files, True, option_problems),
    "check_transition": Checker(checks.check_transition, True),
    "check_image_stretch_and_center": Checker(checks.check_image_stretch_and_center, True),
    "evaluate_presentation_fill_to_rgb_distance": Checker(
        checks.evaluate_presentation_fill_to_rgb_distance, True
    ),
    "check_page_number_colors": Checker(checks.check_page_number_colors, True),
    "check_slide_orientation_Portrait": Checker(checks.check_slide_orientation_portrait, False),
    "check_strikethrough": Checker(checks.check_strikethrough, True),
    "check_presenter_console_disable": Checker(checks.check_presenter_console_disable, False),
    "check_auto_saving_time": Checker(checks.check_auto_saving_time, True),
    "check_left_panel": Checker(checks.check_left_panel, False),
    "compare_images": Checker(checks.compare_images, True),
}


class SpecError(ValueError):
    """The evaluator spec cannot be evaluated (unknown function or option, malformed getter)."""


def as_list(value: Any, n: int) -> list[Any]:
    """A per-function list: lists are kept, a single value is repeated ``n`` times."""
    return list(value) if isinstance(value, list) else [value] * n


def normalise(spec: dict[str, Any]) -> dict[str, Any]:
    """``{"func": [...], "conj", "result": [...], "expected": [...], "options": [...]}``;
    raises :class:`SpecError`.
    """
    if not isinstance(spec, dict) or "func" not in spec:
        raise SpecError("evaluator must be an object with 'func'")
    funcs = spec["func"] if isinstance(spec["func"], list) else [spec["func"]]
    n = len(funcs)
    conj = spec.get("conj", "and")
    if conj not in ("and", "or"):
        raise SpecError(f"conj must be 'and' or 'or', got {conj!r}")
    out = {
        "func": funcs,
        "conj": conj,
        "result": as_list(spec.get("result"), n),
        "expected": as_list(spec.get("expected"), n),
        "options": [o or {} for o in as_list(spec.get("options"), n)],
    }
    for key in ("result", "expected", "options"):
        if len(out[key]) != n:
            raise SpecError(f"{key!r} has {len(out[key])} entries for {n} functions")
    return out


def spec_problems(spec: dict[str, Any]) -> list[str]:
    """Every reason :func:`evaluate` would refuse ``spec`` (unknown function, unknown option...)."""
    try:
        norm = normalise(spec)
    except SpecError as exc:
        return [str(exc)]
    problems = []
    for func, options in zip(norm["func"], norm["options"], strict=False):
        checker = CHECKERS.get(func)
        if checker is None:
            problems.append(f"checker {func!r} is not implemented (known: {', '.join(sorted(CHECKERS))})")
            continue
        if not isinstance(options, dict):
            problems.append(f"{func}: options must be an object")
            continue
        live = {k: v for k, v in options.items() if not inert_option(k)}
        problems.extend(f"{func}: {p}" for p in checker.options(live))
    return problems


def inert_option(key: str) -> bool:
    """Whether an option key is an annotation no checker reads (OSWorld's ``_note``/``_config_note``)."""
    return key.startswith("_") and key.endswith("note")


@dataclass
class Sides:
    """Where the two sides of a check come from."""

    prediction: Path | None
    prediction_files: dict[str, Path]
    task_files: dict[str, Path]


def _side(getter: Any, sides: Sides, *, result: bool) -> tuple[Any, str]:
    """(value for the checker, "" or why it is missing)."""
    if getter is None:
        return None, ""
    if not isinstance(getter, dict) or "type" not in getter:
        raise SpecError(f"getter must be an object with 'type', got {getter!r}")
    kind = getter["type"]
    if kind == "rule":
        return getter.get("rules"), ""
    if kind == "vm_file" and result:
        name = Path(str(getter.get("path", ""))).name
        if name.lower().endswith(DECK_SUFFIXES):
            if sides.prediction is None or not sides.prediction.is_file():
                return None, "the agent handed in no deck"
            return sides.prediction, ""
        path = sides.prediction_files.get(name)
        if path is None or not path.is_file():
            return None, f"the agent did not hand back {name!r} (prediction.metadata['files'])"
        return path, ""
    if kind in ("vm_file", "cloud_file"):
        dest = str(getter.get("dest") or Path(str(getter.get("path", ""))).name)
        path = sides.task_files.get(dest)
        if path is None or not path.is_file():
            return None, f"the task's file {dest!r} is missing"
        return path, ""
    if kind == "accessibility_tree":
        path = sides.prediction_files.get("accessibility_tree")
        if path is None or not path.is_file():
            return None, "the agent did not hand back an accessibility tree"
        return path.read_text(encoding="utf-8", errors="replace"), ""
    raise SpecError(f"getter type {kind!r} is not supported offline")


def run_one(func: str, result: Any, expected: Any, options: dict[str, Any], sides: Sides) -> Outcome:
    """Evaluate one function of a spec."""
    checker = CHECKERS.get(func)
    if checker is None:
        raise SpecError(f"checker {func!r} is not implemented")
    value, missing = _side(result, sides, result=True)
    if missing:
        return Outcome(0.0, f"{func}: {missing}")
    args = [value]
    if checker.takes_expected and expected is not None:
        other, missing = _side(expected, sides, result=False)
        if missing:
            raise SpecError(f"{func}: {missing}")
        args.append(other)
    live = {k: v for k, v in options.items() if not inert_option(k)}
    problems = checker.options(live)
    if problems:
        raise CheckerOptionError(f"{func}: " + "; ".join(problems))
    outcome = checker.fn(*args, **live)
    if outcome is None:
        return Outcome(0.0, f"{func}: the checker could not read its input (OSWorld returns None)")
    score = max(0.0, min(1.0, float(outcome.score)))
    return Outcome(score, f"{func}: {outcome.reason}" if outcome.reason else "")


def evaluate(spec: dict[str, Any], sides: Sides) -> tuple[Outcome, list[dict[str, Any]]]:
    """Score a spec like OSWorld; returns the combined outcome and one row per function run."""
    norm = normalise(spec)
    rows: list[dict[str, Any]] = []
    scores: list[float] = []
    first_reason = ""
    for func, result, expected, options in zip(
        norm["func"], norm["result"], norm["expected"], norm["options"], strict=False
    ):
        outcome = run_one(func, result, expected, options, sides)
        rows.append({"func": func, "score": outcome.score, "reason": outcome.reason})
        scores.append(outcome.score)
        first_reason = first_reason or outcome.reason
        if norm["conj"] == "and" and outcome.score == 0:
            return Outcome(0.0, outcome.reason), rows
        if norm["conj"] == "or" and outcome.score == 1:
            return Outcome(1.0), rows
    if norm["conj"] == "and":
        score = sum(scores) / len(scores)
        return Outcome(score, "" if score >= 1 else first_reason), rows
    best = max(scores)
    reasons = "; ".join(r["reason"] for r in rows if r["reason"])
    return Outcome(best, reasons if len(rows) > 1 else first_reason), rows
