"""Who is to blame for a deck the engine rejects: the dataset (its original) or the agent (its prediction).

A broken reference deck is the dataset's fault (:mod:`.configuration.datacheck` names it before any
pair runs); the runner checks the prediction before any judge sees it, with the same loader the
judges use (a deck the engine rejects is the agent's fault: ``agent_error``, never a
``judge_error``). Both checks apply the deck engine's size, entry and ratio limits.
"""

from __future__ import annotations

from pathlib import Path


def deck_problem(path: Path | None) -> str | None:
    """Why the deck engine rejects ``path`` (None when it loads)."""
    if path is None:
        return "there is no deck"
    try:
        from pptarena.deck import DeckError, open_presentation
    except ImportError:  # pragma: no cover - the deck engine is part of the core
        return None
    from pptarena.trust.render_guard import check_deck

    try:
        open_presentation(path)
        check_deck(Path(path))  # a bomb-deep deck is refused here, before any renderer sees it
    except DeckError as exc:
        return str(exc)
    except (OSError, MemoryError, RecursionError) as exc:
        return f"{Path(path).name}: cannot be loaded ({type(exc).__name__}: {exc})"
    return None
