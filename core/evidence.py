"""Evidence handed to judges: lazily computed, cached summaries, diffs, renders and SSIM.

Judges refer to decks by role: ``"original"``, ``"prediction"`` or ``"target"``.
Nothing is computed until a judge asks, and nothing is computed twice for the
same (agent, task) pair, however many judges ask.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InfraError, PptArenaError

if TYPE_CHECKING:
    from .models import ModelClient
    from .types import Prediction, Renderer, SlideImage, Task

ROLES = ("original", "prediction", "target")

RENDERS = "renders"
"""The folder of a pair's slide renders, one sub-folder per role (:meth:`Evidence.renders`)."""
JUDGES = "judges"
"""The folder of a pair's judge evidence, one sub-folder per judge label (:meth:`Evidence.judge_dir`).

Both are names of the run folder's layout (:mod:`pptarena.run.folder.rundir` lists them with the rest);
they are defined here, in the plugin contract, because judges write there and the contract imports
nothing from the run stage."""


class Evidence:
    """Lazy evidence about one (task, prediction) pair.

    :param task: the task.
    :param prediction: the agent's prediction (``prediction.path`` is the edited deck).
    :param task_dir: the pair's folder in the run directory.
    :param renderer: the run's renderer, or a callable returning it (built on first use).
    :param model: ``model("<backend>/<model>")`` → :class:`ModelClient` for judges that call models.
    :param references: replacement decks for the roles ``"original"`` and ``"target"``: the same
        decks as re-saved, unedited, by the agent's editing tool (see
        :func:`pptarena.run.references.normalized_references`), so judges compare like with like.
    """

    def __init__(
        self,
        task: Task,
        prediction: Prediction,
        task_dir: Path,
        renderer: Renderer | Callable[[], Renderer] | None,
        model: Callable[[str], ModelClient] | None = None,
        references: dict[str, Path] | None = None,
    ):
        self.task = task
        self.references = dict(references or {})
        self.prediction = prediction
        self.task_dir = Path(task_dir)
        self._renderer = renderer
        self._model = model
        self._cache: dict[Any, Any] = {}
        self._locks: dict[Any, threading.Lock] = {}
        self._guard = threading.Lock()
        self.clients: list[ModelClient] = []

    # ------------------------------------------------------------------ helpers

    def _memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                try:
                    self._cache[key] = ("ok", compute())
                except Exception as exc:  # noqa: BLE001 - remembered so every judge sees the same failure
                    self._cache[key] = ("err", exc)
            state, value = self._cache[key]
        if state == "err":
            raise value
        return value

    def path(self, role: str) -> Path | None:
        """The deck path for a role (None when the task has no target)."""
        if role not in ROLES:
            raise ValueError(f"unknown deck role {role!r}; expected one of {ROLES}")
        if role in self.references:
            return self.references[role]
        if role == "original":
            return self.task.original
        if role == "target":
            return self.task.target
        return self.prediction.path

    def _require(self, role: str) -> Path:
        p = self.path(role)
        if p is None:
            raise PptArenaError(f"task {self.task.id} has no {role} deck")
        return p

    def judge_dir(self, label: str) -> Path:
        """The folder ``judges/<label>/`` where a judge keeps what it looked at (prompts, leaf results...).

        ``label`` is the judge's own label, ``self.context.label`` in a judge component: the
        ``label`` of its ``[[judges]]`` table, by default its registered name. Two configured
        instances of one judge (``use = "edits-left"`` twice, labelled ``strict`` and ``lenient``)
        have different labels, so each keeps its own folder; a constant written in the judge's code
        would make them overwrite each other's files.

        Made below the pair's folder without following links (:func:`pptarena.trust.safeio.ensure_dir`):
        a ``judges`` link an agent planted there is refused, never written through.

        :raises ValueError: for an empty label, or one with ``/`` or a leading ``.`` (the rule the
            config applies to labels): it would not name a folder of its own.
        """
        from .trust.safeio import ensure_dir

        if not isinstance(label, str) or not label or "/" in label or label.startswith("."):
            raise ValueError(
                f"judge evidence needs the judge's own label (self.context.label), got {label!r}"
            )
        return ensure_dir(self.task_dir / JUDGES / label, self.task_dir)

    def write_json(self, label: str, name: str, data: Any) -> Path:
        """Write the JSON evidence file ``judges/<label>/<name>``; returns its path.

        Pass the judge's own label, ``evidence.write_json(self.context.label, "counts.json", data)``,
        so two labels of one judge in a run keep separate files (see :meth:`judge_dir`).
        """
        from .trust.safeio import write_replacing

        p = self.judge_dir(label) / name
        write_replacing(p, json.dumps(data, indent=2, ensure_ascii=False, default=str).encode("utf-8"))
        return p

    def model(self, ref: str) -> ModelClient:
        """A model client for ``"<backend>/<model>"``; its usage is counted for this pair."""
        if self._model is None:
            raise PptArenaError("no model backends are available to this judge")
        client = self._model(ref)
        self.clients.append(client)
        return client

    # ------------------------------------------------------------------ deck engine

    def summary(self, role: str) -> dict[str, Any]:
        """The deck engine's JSON summary of a deck."""
        from .deck import summarize

        return self._memo(("summary", role), lambda: summarize(self._require(role)))

    def diff(self, a: str = "original", b: str = "prediction") -> Any:
        """The structural diff (``pptarena.deck.DeckDiff``) from deck ``a`` to deck ``b``."""
        from .deck import diff_decks

        return self._memo(("diff", a, b), lambda: diff_decks(self._require(a), self._require(b)))

    def ppteval_diff(self, a: str = "original", b: str = "prediction", semantics: str = "corrected") -> Any:
        """The PPT-Eval-compatible ``ppt_diff`` view from ``a`` to ``b`` (``semantics``: corrected
        or ppteval).
        """
        from .deck import ppteval_diff

        return self._memo(
            ("ppteval_diff", a, b, semantics),
            lambda: ppteval_diff(self._require(a), self._require(b), semantics=semantics),
        )

    # ------------------------------------------------------------------ renders

    def renderer(self) -> Renderer:
        """The run's renderer."""
        if self._renderer is None:
            raise InfraError("no renderer is configured for this run")
        if not hasattr(self._renderer, "render"):
            self._renderer = self._renderer()  # type: ignore[operator]
        return self._renderer  # type: ignore[return-value]

    def renders(self, role: str) -> list[SlideImage]:
        """One image per slide of a deck (rendering failures raise :class:`InfraError`)."""

        def compute() -> list[SlideImage]:
            from .trust.safeio import ensure_dir

            deck = self._require(role)
            try:  # a renders folder the agent planted as a link is refused, never rendered into
                out = ensure_dir(self.task_dir / RENDERS / role, self.task_dir)
                return self.renderer().render(deck, out)
            except InfraError:
                raise
            except PptArenaError:
                raise
            except Exception as exc:  # noqa: BLE001 - a renderer crash is an infrastructure failure
                raise InfraError(f"rendering the {role} deck failed: {exc}") from exc

        return self._memo(("renders", role), compute)

    def changed_slides(self, a: str = "original", b: str = "prediction", **kwargs: Any) -> Any:
        """Slides whose rendering changed visibly from ``a`` to ``b`` (see :mod:`pptarena.ssim`)."""
        from .ssim import changed_slides

        key = ("changed", a, b, tuple(sorted(kwargs.items())))

        def compute() -> Any:
            matches = self.diff(a, b).slide_matches
            return changed_slides(self.renders(a), self.renders(b), matches=matches, **kwargs)

        return self._memo(key, compute)
