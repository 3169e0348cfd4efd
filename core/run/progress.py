"""Progress display for long runs: a rich bar with counts per status on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any, TextIO

from pptarena.run.records import ResultRow
from pptarena.types import STATUSES


class Progress:
    """Reports (agent, task) results as they finish.

    On a terminal it shows a rich progress bar with a count per status; when
    output is piped or in CI it prints one plain line per result.
    """

    def __init__(
        self, total: int, *, stream: TextIO | None = None, live: bool | None = None, quiet: bool = False
    ):
        self.total = total
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = (self.stream.isatty() if live is None else live) and not quiet
        self.counts: Counter[str] = Counter()
        self.done = 0
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task_id: Any = None

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("[bold]running"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[counts]}"),
                console=Console(file=self.stream),
                transient=False,
            )
            self._progress.__enter__()
            self._task_id = self._progress.add_task("run", total=self.total, counts="")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def _counts_text(self) -> str:
        return "  ".join(f"{s}={self.counts[s]}" for s in STATUSES if self.counts[s])

    def result(self, row: ResultRow) -> None:
        """Record one finished result."""
        with self._lock:
            self.done += 1
            self.counts[row.status] += 1
            if self._progress is not None:
                self._progress.update(self._task_id, advance=1, counts=self._counts_text())
            elif not self.quiet:
                scores = " ".join(
                    f"{j}={v.score:.2f}" for j, v in sorted(row.scores.items()) if v.score is not None
                )
                err = f" ({row.error[:120]})" if row.error else ""
                print(
                    f"[{self.done}/{self.total}] {row.agent} {row.task_id}: {row.status} {scores}{err}",
                    file=self.stream,
                    flush=True,
                )

    def message(self, text: str) -> None:
        """Print a message without breaking the bar."""
        if self.quiet:
            return
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            print(text, file=self.stream, flush=True)
