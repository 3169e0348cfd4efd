"""Entry point of the ``libreoffice`` renderer: registers :class:`.renderer.LibreOfficeRenderer`."""

from __future__ import annotations

from typing import Any

import pptarena

from .renderer import RENDERER_NAME, LibreOfficeRenderer


@pptarena.hookimpl
def register_renderers(register: Any) -> None:
    """Register the ``libreoffice`` renderer."""
    register(RENDERER_NAME, LibreOfficeRenderer)
