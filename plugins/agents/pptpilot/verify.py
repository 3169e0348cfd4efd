"""Checking candidate decks, and the render → verify → repair loop.

:class:`DeckChecker` accepts a candidate deck only when python-pptx opens it
(through :func:`pptarena.deck.open_presentation`) and, when a renderer is
available and rendering is on, when it renders. If a candidate does not
render, the input deck is rendered once too: when that fails as well the
renderer is broken and :class:`~pptarena.types.InfraError` is raised (not the
agent's fault); otherwise the failure goes back to the model.

:func:`verify_loop` runs up to ``loops`` rounds: render the current deck,
ask the verifier model (renders, instruction, edits from the original as
text) for ``done`` or feedback, and repair the current state with the branch.
A failed repair keeps the last good state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pptarena.models import Message
from pptarena.plugins.agents.pptpilot.branch import CandidateError
from pptarena.plugins.agents.pptpilot.context import (
    ModelCaller,
    ViewLimits,
    find_json_object,
    pick_slides,
    request_text,
    slide_images,
)
from pptarena.types import InfraError, SlideImage, Workspace

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.plugins.agents.pptpilot.branch import Branch
    from pptarena.plugins.agents.pptpilot.context import EditRequest

MAX_DIFF_CHARS = 20_000


class DeckChecker:
    """Opens (and optionally renders) candidate decks; keeps their renders for later prompts."""

    def __init__(self, workspace: Workspace, render_dir: Path, *, render: bool, baseline: Path):
        self.workspace = workspace
        self.renderer = workspace.renderer
        self.render_dir = render_dir
        self.render_enabled = render and self.renderer is not None
        self.baseline = baseline
        self._baseline_ok: bool | None = None
        self._renders: dict[Path, list[SlideImage]] = {}

    def check(self, deck: Path, label: str) -> None:
        """Raise :class:`CandidateError` naming the problem when ``deck`` is not a usable deck."""
        from pptarena.deck import DeckError, open_presentation, slide_ids

        if not deck.is_file():
            raise CandidateError(f"no deck was written to {deck.name}")
        try:
            open_presentation(deck)
            slides = slide_ids(deck)
        except DeckError as exc:
            raise CandidateError(f"the edited deck does not open: {exc}") from None
        except Exception as exc:  # python-pptx raises many types on broken parts
            raise CandidateError(
                f"the edited deck does not open with python-pptx: {type(exc).__name__}: {exc}"
            ) from None
        if not slides:
            raise CandidateError("the edited deck has no slides")
        if self.render_enabled:
            self.renders(deck, label, as_candidate=True)

    def renders(self, deck: Path, label: str, *, as_candidate: bool = False) -> list[SlideImage]:
        """Renders of ``deck`` (made once per deck); [] without a renderer."""
        deck = Path(deck)
        if deck in self._renders:
            return self._renders[deck]
        if self.renderer is None:
            return []
        try:
            images = list(self.renderer.render(deck, self.render_dir / label))
        except Exception as exc:  # noqa: BLE001 - decided below: the deck's fault or the renderer's
            if deck != self.baseline and self._renderer_works():
                self.workspace.log.write(
                    "render_failed", deck=str(deck), error=f"{type(exc).__name__}: {exc}"
                )
                if as_candidate:
                    raise CandidateError(f"the edited deck does not render: {exc}") from None
                return []
            raise InfraError(f"the renderer fails on the task's input deck too: {exc}") from exc
        self._renders[deck] = images
        return images

    def _renderer_works(self) -> bool:
        if self._baseline_ok is None:
            try:
                self.renders(self.baseline, "input")
                self._baseline_ok = True
            except InfraError:
                self._baseline_ok = False
        return self._baseline_ok


@dataclass
class Verdict:
    """The verifier's answer: done, or feedback; ``parsed`` False when the reply made no sense."""

    done: bool
    feedback: str
    parsed: bool


def parse_verdict(reply: str) -> Verdict:
    """Read ``{"done": true}`` / ``{"done": false, "feedback": ...}``, or text starting DONE / REVISE."""
    obj = find_json_object(reply)
    if obj is not None and "done" in obj:
        done = obj["done"]
        if isinstance(done, str):
            done = done.strip().lower() in ("true", "yes", "done")
        feedback = str(obj.get("feedback") or obj.get("reason") or "").strip()
        if not done and not feedback:
            return Verdict(False, "", False)
        return Verdict(bool(done), feedback, True)
    head = reply.strip()
    upper = head.upper()
    if upper.startswith("DONE"):
        return Verdict(True, "", True)
    for word in ("REVISE", "FEEDBACK", "NOT DONE"):
        if upper.startswith(word):
            feedback = head[len(word) :].lstrip(" :-\n").strip()
            return Verdict(False, feedback, bool(feedback))
    return Verdict(False, "", False)


def edits_text(original: Path, current: Path) -> str:
    """The structural edits from ``original`` to ``current`` as text (bounded)."""
    from pptarena.deck.diff import diff_decks

    text = diff_decks(original, current).to_text()
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + "\n…[more edits cut]"


def changed_slide_numbers(original: Path, current: Path) -> list[int]:
    """Slide numbers (in ``current``) that the diff touches, in order."""
    from pptarena.deck.diff import diff_decks

    found: list[int] = []
    for edit in diff_decks(original, current).edits:
        n = edit.get("slide")
        if isinstance(n, int) and n not in found:
            found.append(n)
    return found


def verify_loop(
    *,
    caller: ModelCaller,
    verifier_model: str,
    request: EditRequest,
    branch: Branch,
    checker: DeckChecker,
    original: Path,
    current: Path,
    loops: int,
    limits: ViewLimits,
) -> tuple[Path, list[dict[str, Any]]]:
    """Run up to ``loops`` verify/repair rounds from ``current``; return the final deck and round
    summaries.
    """
    from pptarena.plugins.agents.pptpilot.prompts import VERIFY_SYSTEM

    log = caller.workspace.log
    rounds: list[dict[str, Any]] = []
    for k in range(1, loops + 1):
        diff = edits_text(original, current)
        renders = checker.renders(current, f"verify-{k}") if limits.max_images else []
        changed = changed_slide_numbers(original, current)
        numbers = pick_slides(len(renders), changed, limits.max_images) if renders else []
        parts: list[Any] = [
            request_text(replace(request, feedback=None, diff=None)),
            f"Edits made to the original deck:\n{diff}",
        ]
        if renders:
            parts.append(f"Images of {len(numbers)} of the edited deck's {len(renders)} slides follow.")
            parts += slide_images(renders, numbers, limits.image_max_px)
        else:
            parts.append("(No renders are available; judge from the edits.)")
        reply = caller.call("verify", verifier_model, [Message.system(VERIFY_SYSTEM), Message.user(*parts)])
        verdict = parse_verdict(reply)
        summary: dict[str, Any] = {
            "round": k,
            "done": verdict.done,
            "parsed": verdict.parsed,
            "feedback": verdict.feedback,
        }
        log.write("verify", **summary, slides_shown=numbers)
        if not verdict.parsed:
            log.write("verify_stop", round=k, reason="unparseable verifier reply; keeping the current deck")
            rounds.append(summary)
            break
        if verdict.done:
            rounds.append(summary)
            break
        outcome = branch.edit(request.repair(verdict.feedback, diff), current, f"repair-{k}")
        summary.update(repair_ok=outcome.ok, repair_attempts=outcome.attempts, repair_error=outcome.error)
        rounds.append(summary)
        if not outcome.ok or outcome.path is None:
            log.write("repair_failed", round=k, error=outcome.error, kept=str(current))
            break
        if outcome.unchanged:
            log.write("repair_unchanged", round=k)
            break
        current = outcome.path
        log.write("repair", round=k, deck=str(current), attempts=outcome.attempts)
    return current, rounds
