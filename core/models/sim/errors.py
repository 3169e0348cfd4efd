"""The simulator's configuration error (its own module so that every settings module can raise it)."""

from __future__ import annotations


class SimConfigError(ValueError):
    """A setting of the simulator is out of range or unreadable; the message names it."""


__all__ = ["SimConfigError"]
