"""Entry point of the ``osworld`` dataset: registers :class:`.dataset.OsworldDataset`."""

from __future__ import annotations

from typing import Any

import pptarena

from .dataset import OsworldDataset


@pptarena.hookimpl
def register_datasets(register: Any) -> None:
    """Register the ``osworld`` dataset."""
    register("osworld", OsworldDataset)
