"""The ``gui`` agent: a computer-use model edits the deck through LibreOffice Impress on a virtual screen.

Per task: a private Xvfb display, Impress (the full program, own user
profile) opened on a private copy of the input deck, a step loop in which the
model sees screenshots and answers with mouse/keyboard actions (see
:mod:`.adapters` for the action spaces), then the deck is saved as .pptx
through File ▸ Save As and Impress is closed. The trajectory is kept in
``<task folder>/trajectory``. Needs the Debian packages xvfb, xdotool and
libreoffice-impress.

:mod:`.plugin` registers ``gui`` (the agent is in :mod:`.agent`); :mod:`.env` starts Impress in its
jail (:mod:`.impress_jail`, with the settings lock of :mod:`.lockdown`) on a virtual screen;
:mod:`.loop` runs the steps, :mod:`.adapters` and :mod:`.native` read the model's actions and
:mod:`.actions` performs them.
"""

from .agent import SAVE_RESERVE_DEFAULT, GuiAgent, GuiOptions, hand_back_deck

__all__ = ["SAVE_RESERVE_DEFAULT", "GuiAgent", "GuiOptions", "hand_back_deck"]
