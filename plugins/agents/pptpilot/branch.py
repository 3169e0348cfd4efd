"""The shared retry loop of the ``code`` and ``xml`` editing branches.

A branch turns an :class:`~.context.EditRequest` and a deck (the current
state) into a new deck. Each attempt is one model call whose reply the branch
turns into a candidate deck; the candidate is checked (opens with python-pptx,
renders); a failure goes back to the model as a new user message, at most
``retries`` times. Every attempt is logged as an ``attempt`` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pptarena.models import ImagePart, Message
from pptarena.plugins.agents.pptpilot.context import (
    EditRequest,
    ModelCaller,
    mentioned_slides,
    pick_slides,
    slide_images,
)

if TYPE_CHECKING:  # pragma: no cover
    from pptarena.plugins.agents.pptpilot.verify import DeckChecker
    from pptarena.types import Workspace


class CandidateError(Exception):
    """A model reply could not be turned into a good deck; the message goes back to the model."""


@dataclass
class BranchOutcome:
    """What one branch run produced.

    ``path`` is the new deck when ``ok``; ``unchanged`` is True when the model said
    no change was needed (``path`` is then the input state). ``error`` is the last
    failure when not ``ok``.
    """

    branch: str
    ok: bool
    path: Path | None
    attempts: int
    error: str | None = None
    unchanged: bool = False
    details: dict[str, Any] = field(default_factory=dict)


class Unchanged(Exception):
    """The model answered that the deck needs no change."""


class Branch:
    """Base class of the editing branches: subclasses build prompts and turn replies into decks."""

    name = "branch"

    def __init__(
        self,
        *,
        caller: ModelCaller,
        model: str,
        workspace: Workspace,
        checker: DeckChecker,
        work_dir: Path,
        retries: int,
        view: Any,
    ):
        self.caller = caller
        self.model = model
        self.workspace = workspace
        self.checker = checker
        self.work_dir = work_dir
        self.retries = retries
        self.view = view
        self.runs = 0

    # -- subclass hooks ------------------------------------------------------------

    def prepare(self, request: EditRequest, state: Path) -> list[Message]:
        """The first messages of a run (may make model calls of its own, e.g. to pick parts)."""
        raise NotImplementedError

    def produce(self, reply: str, state: Path, candidate: Path, attempt: int) -> dict[str, Any]:
        """Turn a reply into ``candidate``; raise :class:`CandidateError` or :class:`Unchanged`."""
        raise NotImplementedError

    def retry_message(self, error: str) -> str:
        """The user message that reports ``error`` to the model."""
        raise NotImplementedError

    # -- shared prompt parts -------------------------------------------------------

    def slide_views(self, request: EditRequest, state: Path) -> list[str | ImagePart]:
        """Renders of deck ``state`` for a prompt: a line saying how many, then labelled images.

        Slides the instruction names come first, up to ``view.max_images``; empty when
        ``max_images`` is 0 or the deck renders no slide.
        """
        renders = self.checker.renders(state, f"{state.stem}-view") if self.view.max_images else []
        if not renders:
            return []
        numbers = pick_slides(
            len(renders), mentioned_slides(request.instruction, len(renders)), self.view.max_images
        )
        return [
            f"Images of {len(numbers)} of the deck's {len(renders)} slides follow.",
            *slide_images(renders, numbers, self.view.image_max_px),
        ]

    # -- the loop ------------------------------------------------------------------

    def edit(self, request: EditRequest, state: Path, label: str) -> BranchOutcome:
        """Edit deck ``state`` for ``request``; the result goes to ``<work_dir>/<label>-<branch>.pptx``."""
        self.runs += 1
        log = self.workspace.log
        try:
            messages = self.prepare(request, state)
        except CandidateError as exc:
            log.write("attempt", branch=self.name, label=label, attempt=0, ok=False, error=str(exc))
            return BranchOutcome(self.name, False, None, 0, error=str(exc))
        error: str | None = None
        details: dict[str, Any] = {}
        for attempt in range(1, self.retries + 2):
            reply = self.caller.call(f"{self.name}_edit", self.model, messages)
            candidate = self.work_dir / f"{label}-{self.name}-a{attempt}.pptx"
            try:
                details = self.produce(reply, state, candidate, attempt)
                self.checker.check(candidate, f"{label}-{self.name}-a{attempt}")
            except Unchanged:
                log.write("attempt", branch=self.name, label=label, attempt=attempt, ok=True, unchanged=True)
                return BranchOutcome(self.name, True, state, attempt, unchanged=True)
            except CandidateError as exc:
                error = str(exc)
                log.write("attempt", branch=self.name, label=label, attempt=attempt, ok=False, error=error)
                candidate.unlink(missing_ok=True)
                messages = [*messages, Message.assistant(reply), Message.user(self.retry_message(error))]
                continue
            log.write(
                "attempt",
                branch=self.name,
                label=label,
                attempt=attempt,
                ok=True,
                deck=str(candidate),
                **details,
            )
            return BranchOutcome(self.name, True, candidate, attempt, details=details)
        return BranchOutcome(self.name, False, None, self.retries + 1, error=error)
