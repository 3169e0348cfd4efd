"""Entry point of the ``gui`` agent: registers :class:`.agent.GuiAgent`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pptarena

from .agent import GuiAgent


def resave_through_impress(src: Path, dst: Path) -> None:
    """Save ``src`` unchanged through Impress, as a GUI episode that edits nothing would."""
    from .env import impress_round_trip

    impress_round_trip(Path(src), Path(dst))


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register the ``gui`` agent."""
    # host: Impress runs in a jail of its own; judges see the task's decks re-saved by Impress (judge-side
    # code, pptarena.run.references), as an episode that edits nothing would hand them in
    register("gui", GuiAgent, placement="host", reference_normalizer=resave_through_impress)
