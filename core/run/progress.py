"""Progress display for long runs: a rich bar with counts per status and an ETA on a terminal,
plain lines otherwise.

The ETA (:class:`EtaEstimator`) is computed from the pairs finished *in this process*, per agent:
agents differ a lot in speed, so each agent's remaining pairs are priced at its own mean duration
(the overall mean until the agent has finished a pair), and the sum is divided by the run's
concurrency. Pairs a resumed run found already recorded never feed the rate.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from pptarena.run.folder.records import ResultRow
from pptarena.types import STATUSES


def format_eta(seconds: float | None) -> str:
    """``"ETA 45s"``, ``"ETA 12m"``, ``"ETA 1h05m"`` (empty when there is no estimate)."""
    if seconds is None:
        return ""
    s = max(0, round(seconds))
    if s < 60:
        return f"ETA {s}s"
    if s < 3600:
        return f"ETA {round(s / 60)}m"
    h, m = divmod(round(s / 60), 60)
    return f"ETA {h}h{m:02d}m"


class EtaEstimator:
    """Remaining time of a run from the pairs finished in this process, per agent.

    ``remaining`` is the number of pairs each agent still has to run when the estimate starts (pairs
    already recorded by an earlier process are not in it); without it only a total is known
    (``total_remaining``) and every pair is priced at the overall mean. ``jobs`` is the concurrency;
    None infers it from the finished pairs (the sum of their durations over the wall time elapsed,
    at least 1). ``clock`` is injectable for tests (default :func:`time.monotonic`).

    The estimate: ``sum(mean_a * remaining_a) / jobs``, where ``mean_a`` is agent ``a``'s mean
    duration over its finished pairs, or the mean over all finished pairs when ``a`` has none yet.
    No estimate (None) before the first pair has finished.
    """

    def __init__(
        self,
        remaining: Mapping[str, int] | None = None,
        *,
        total_remaining: int | None = None,
        jobs: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.remaining: dict[str, int] = dict(remaining or {})
        self.unassigned = (
            max(0, total_remaining - sum(self.remaining.values())) if total_remaining is not None else 0
        )
        self.jobs = jobs if jobs is None else max(1, int(jobs))
        self.clock = clock
        self.started = clock()
        self._sum: Counter[str] = Counter()
        self._count: Counter[str] = Counter()

    def finished(self, agent: str, duration_s: float | None = None) -> None:
        """One pair of ``agent`` finished in this process and took ``duration_s`` seconds (None: the
        wall time since the estimate started divided by the pairs finished, times the concurrency)."""
        if duration_s is None or duration_s < 0:
            n = sum(self._count.values()) + 1
            duration_s = (self.clock() - self.started) * (self.jobs or 1) / n
        self._sum[agent] += float(duration_s)
        self._count[agent] += 1
        self._take(agent)

    def skipped(self, agent: str) -> None:
        """One pair of ``agent`` is done without having run (a reused copy): one fewer left, no rate."""
        self._take(agent)

    def _take(self, agent: str) -> None:
        if self.remaining.get(agent, 0) > 0:
            self.remaining[agent] -= 1
        elif self.unassigned > 0:
            self.unassigned -= 1

    def concurrency(self) -> float:
        """``jobs`` when given, else the parallelism the finished pairs show (at least 1)."""
        if self.jobs is not None:
            return float(self.jobs)
        elapsed = self.clock() - self.started
        busy = sum(self._sum.values())
        return max(1.0, busy / elapsed) if elapsed > 0 else 1.0

    def seconds_left(self) -> float | None:
        """Estimated seconds until every remaining pair has finished, or None (nothing finished yet)."""
        done = sum(self._count.values())
        if not done:
            return None
        overall = sum(self._sum.values()) / done
        work = overall * self.unassigned
        for agent, left in self.remaining.items():
            if left > 0:
                n = self._count[agent]
                work += (self._sum[agent] / n if n else overall) * left
        return work / self.concurrency()


def wrap_line(text: str, width: int | None, indent: str = "    ") -> str:
    """``text`` wrapped at ``width`` columns on word boundaries, continuation lines indented.

    Nothing is dropped and no word is cut: a word longer than the width (a path) stays whole on a
    line of its own. ``width`` None (not a terminal) returns ``text`` unchanged.
    """
    if not width or len(text) <= width:
        return text
    return textwrap.fill(
        text,
        width=max(20, width),
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
        replace_whitespace=False,
        drop_whitespace=True,
    )


class Progress:
    """Reports (agent, task) results as they finish.

    On a terminal it shows a rich progress bar with a count per status and an ETA, and prints each
    failed pair with its whole error above the bar; when output is piped or in CI it prints one
    plain line per result (the error in full). ``quiet`` prints nothing. ``jobs`` is the run's
    concurrency (for the ETA); :meth:`plan` tells how many pairs each agent still has to run.
    ``row_durations`` False prices pairs by wall time instead of each row's ``duration_s`` (a
    re-score, whose rows keep the agent's original duration). ``console`` is the rich Console the
    bar draws on (default: one on ``stream``).
    """

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        live: bool | None = None,
        quiet: bool = False,
        jobs: int | None = None,
        row_durations: bool = True,
        clock: Callable[[], float] = time.monotonic,
        console: Any = None,
    ):
        self.total = total
        self._console = console
        self.row_durations = row_durations
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = (self.stream.isatty() if live is None else live) and not quiet
        self.counts: Counter[str] = Counter()
        self.done = 0
        self.jobs = jobs
        self._clock = clock
        self._eta: EtaEstimator | None = None
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task_id: Any = None

    def plan(self, remaining: Mapping[str, int], jobs: int | None = None) -> None:
        """The pairs each agent has still to run in this process (resumed pairs excluded) and the
        concurrency: the ETA then prices each agent's pairs at its own speed."""
        if jobs is not None:
            self.jobs = jobs
        self._eta = EtaEstimator(remaining, jobs=self.jobs, clock=self._clock)

    def _estimator(self) -> EtaEstimator:
        """The ETA estimator; without :meth:`plan`, started on the first result with the pairs left."""
        if self._eta is None:
            left = max(0, self.total - self.done)  # ``done`` holds the resumed pairs before the first result
            self._eta = EtaEstimator(total_remaining=left, jobs=self.jobs, clock=self._clock)
        return self._eta

    def eta_text(self) -> str:
        """``"ETA 12m"`` for the pairs left (empty before the first pair finished, when done or quiet)."""
        if self.quiet or self._eta is None or self.done >= self.total:
            return ""
        return format_eta(self._eta.seconds_left())

    def __enter__(self) -> Progress:
        self._estimator()  # the clock starts here (the resumed pairs are in ``done`` by now)
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("[bold]running"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[eta]}"),
                TextColumn("{task.fields[counts]}"),
                console=self._console or Console(file=self.stream),
                transient=False,
            )
            self._progress.__enter__()
            self._task_id = self._progress.add_task("run", total=self.total, counts="", eta="")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def _counts_text(self) -> str:
        return "  ".join(f"{s}={self.counts[s]}" for s in STATUSES if self.counts[s])

    def result_line(self, row: ResultRow) -> str:
        """The line of one result: ``[3/10] agent task: status judge=0.50 (the whole error)``."""
        scores = " ".join(f"{j}={v.score:.2f}" for j, v in sorted(row.scores.items()) if v.score is not None)
        err = f" ({row.error})" if row.error else ""
        eta = self.eta_text()
        eta = f" · {eta}" if eta else ""
        return f"[{self.done}/{self.total}] {row.agent} {row.task_id}: {row.status} {scores}{err}{eta}"

    def _width(self) -> int | None:
        """The terminal's width when plain lines go to a terminal, else None (no wrapping)."""
        try:
            return shutil.get_terminal_size().columns if self.stream.isatty() else None
        except (AttributeError, OSError, ValueError):
            return None

    def result(self, row: ResultRow) -> None:
        """Record one finished result."""
        with self._lock:
            eta = self._estimator()
            self.done += 1
            self.counts[row.status] += 1
            if row.reused_from_epoch:
                eta.skipped(row.agent)
            else:
                eta.finished(row.agent, row.duration_s if self.row_durations else None)
            if self._progress is not None:
                if row.error:  # the bar holds counts only: a failure is printed above it, in full
                    self._progress.console.print(
                        f"{row.agent} {row.task_id}: {row.status} ({row.error})",
                        markup=False,
                        highlight=False,
                        overflow="fold",
                    )
                self._progress.update(
                    self._task_id, advance=1, counts=self._counts_text(), eta=self.eta_text()
                )
            elif not self.quiet:
                print(wrap_line(self.result_line(row), self._width()), file=self.stream, flush=True)

    def message(self, text: str) -> None:
        """Print a message without breaking the bar (wrapped on word boundaries, never cut)."""
        if self.quiet:
            return
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False, overflow="fold")
        else:
            print(wrap_line(text, self._width()), file=self.stream, flush=True)
