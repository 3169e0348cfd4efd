"""The exit codes of ``arena run``, defined once: a script or a CI job can trust them.

Agent failures (``agent_error``, ``timeout``) are scores, not errors: a run whose agents all failed
finished, and exits 0. What a script must act on gets a code of its own:

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     the run finished (every pair has a row; agent failures are scores)
1     an unexpected error (run folder in use, dataset files missing, executor, a bug)
2     a config or preflight error: nothing was started
3     nothing selected: the task globs, ``[run] tasks`` or the dataset give no task; no run folder
4     the run finished with judge or infrastructure errors left (``infra_error``, ``judge_error``)
5     stopped by ``--max-cost`` / ``[run] max_cost`` before every pair ran
6     the run finished, but tasks whose reference decks do not open were skipped (dataset errors);
      ``arena dataset check`` exits 6 when it finds one
130   interrupted by Ctrl-C (SIGINT); run the same command again to resume
143   stopped by SIGTERM; run the same command again to resume
====  ==========================================================================================

README.md, docs/ci.md and ``arena run --help`` list the same table.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterable
from types import FrameType
from typing import Any

import click

OK = 0
"""The run finished; agent failures are scores."""
ERROR = 1
"""An unexpected error."""
CONFIG_ERROR = 2
"""A config or preflight error: nothing was started."""
NOTHING_SELECTED = 3
"""The selection (task globs, ``[run] tasks``, the dataset) holds no task."""
ERRORS_LEFT = 4
"""The run finished, but judge or infrastructure errors are left in it."""
BUDGET_STOPPED = 5
"""``--max-cost`` stopped the run before every pair ran."""
DATASET_ERRORS = 6
"""The run finished, but dataset errors kept tasks out of it (``arena dataset check``: problems found)."""
INTERRUPTED = 128 + signal.SIGINT
"""Ctrl-C (SIGINT): 130."""
TERMINATED = 128 + signal.SIGTERM
"""SIGTERM: 143."""

LEFT_STATUSES = ("infra_error", "judge_error")
"""Row statuses that are not the agent's doing (``timeout`` is the agent's: a score)."""


class ExitError(click.ClickException):
    """A one-line error (``Error: ...`` on stderr) that ends the command with ``code``."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code


def errors_left(rows: Iterable[Any]) -> Counter[str]:
    """How many rows of a run ended in each of :data:`LEFT_STATUSES` (rows: ``ResultRow``s)."""
    return Counter(str(r.status) for r in rows if str(r.status) in LEFT_STATUSES)


class SignalWatch:
    """Notes a SIGINT or SIGTERM that reaches ``arena run`` while it is inside this context.

    SIGTERM is made to do what Ctrl-C does (the current SIGINT handler runs: the runner stops its
    agents and says how to resume) instead of killing the process at once. A SIGINT is seen through
    :func:`signal.set_wakeup_fd`, leaving its handler alone (the runner installs its own), so an
    interrupt is known even when the ``KeyboardInterrupt`` it raised was swallowed somewhere.
    Works in the main thread only; elsewhere it watches nothing.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._fds: tuple[int, int] | None = None
        self._previous_fd = -1
        self._previous_term: Any = None

    def __enter__(self) -> SignalWatch:
        import os
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self
        self._previous_term = signal.signal(signal.SIGTERM, self._on_sigterm)
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        self._fds = (r, w)
        self._previous_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        return self

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.signum = signal.SIGTERM
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)  # raises KeyboardInterrupt, as Ctrl-C does
        raise KeyboardInterrupt

    def received(self) -> int | None:
        """The signal that arrived (SIGTERM wins over SIGINT), or None."""
        if self.signum is None and self._fds is not None:
            import os

            try:
                if signal.SIGINT in os.read(self._fds[0], 4096):
                    self.signum = signal.SIGINT
            except BlockingIOError:
                pass
        return self.signum

    def exit_code(self) -> int:
        """:data:`TERMINATED` after SIGTERM, else :data:`INTERRUPTED`."""
        return TERMINATED if self.received() == signal.SIGTERM else INTERRUPTED

    def __exit__(self, *exc: object) -> None:
        if self._fds is None:
            return
        import os

        self.received()
        signal.set_wakeup_fd(self._previous_fd)
        previous = self._previous_term
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        for fd in self._fds:
            os.close(fd)
        self._fds = None
