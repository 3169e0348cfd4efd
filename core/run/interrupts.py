"""Ctrl-C that cannot be lost.

Python turns SIGINT into a ``KeyboardInterrupt`` raised wherever the main thread happens to be. When that
is a finalizer (``__del__``, a ``weakref.finalize`` callback run by the garbage collector) the exception
is printed as "Exception ignored in ..." and dropped, and library code that catches ``BaseException``
drops it too. A run whose pairs execute in the main thread (an executor that computes pairs in the
driver) then carries on as if nothing had been pressed. :class:`CtrlC` remembers the press itself, so
the runner can act on it at its next check even when the exception was swallowed.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any


class CtrlC:
    """A context manager that records SIGINT in :attr:`pressed` and still raises ``KeyboardInterrupt``.

    It installs its handler only in the main thread and only over Python's default handler: a process
    started with SIGINT ignored (``nohup``, a background job) or an application with its own handler
    keeps it. The previous handler is restored on exit.
    """

    def __init__(self) -> None:
        self.pressed = False  # a plain attribute: setting it in a signal handler takes no lock
        self._previous: Any = None
        self._installed = False

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def __enter__(self) -> CtrlC:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed (its own exception may have been lost)."""
        if self.pressed:
            raise KeyboardInterrupt
