"""The ``osworld`` dataset: OSWorld's LibreOffice Impress tasks with their own checkers.

:mod:`.plugin` registers it; :mod:`.dataset` is the dataset; :mod:`.load` reads OSWorld's task
files; :mod:`.fetch` downloads them (``arena dataset fetch osworld``).
"""

from .dataset import OsworldDataset, blank_deck

__all__ = ["OsworldDataset", "blank_deck"]
