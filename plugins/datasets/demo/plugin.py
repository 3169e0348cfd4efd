"""Entry point of the ``demo`` dataset: registers :class:`.dataset.DemoDataset`."""

from __future__ import annotations

from typing import Any

import pptarena

from .dataset import DemoDataset


@pptarena.hookimpl
def register_datasets(register: Any) -> None:
    """Register the ``demo`` dataset."""
    register("demo", DemoDataset)
