"""The progress display: an ETA per agent from the pairs finished in this process, and messages that
wrap on word boundaries instead of being cut (issue 33)."""

from __future__ import annotations

import io

from rich.console import Console

from pptarena.run.folder.records import ResultRow
from pptarena.run.progress import EtaEstimator, Progress, format_eta, wrap_line

LONG_ERROR = (
    "the prediction /tmp/runs/demo/tasks/oracle/qbr-fix-typos/prediction-lab.pptx: not a zip file "
    "(bwrap: Can't find source path /work/data/lab.pptx: No such file or directory)"
)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def row(agent: str, task: str, duration: float | None = 1.0, **fields) -> ResultRow:
    return ResultRow(
        agent=agent, task_id=task, status=fields.pop("status", "scored"), duration_s=duration, **fields
    )


# ------------------------------------------------------------------ the estimate


def test_no_estimate_before_a_pair_finished():
    assert EtaEstimator({"a": 3}, jobs=1).seconds_left() is None
    assert format_eta(None) == ""


def test_each_agent_priced_at_its_own_mean_and_divided_by_jobs():
    eta = EtaEstimator({"fast": 10, "slow": 10}, jobs=2)
    eta.finished("fast", 2.0)
    eta.finished("fast", 4.0)  # mean 3, 8 left
    eta.finished("slow", 60.0)  # mean 60, 9 left
    assert eta.seconds_left() == (3.0 * 8 + 60.0 * 9) / 2


def test_an_agent_without_a_finished_pair_uses_the_overall_mean():
    eta = EtaEstimator({"a": 5, "b": 4}, jobs=1)
    eta.finished("a", 10.0)
    eta.finished("a", 20.0)  # a: mean 15, 3 left; b: none finished, overall mean 15
    assert eta.seconds_left() == 15.0 * 3 + 15.0 * 4
    eta.finished("b", 1.0)  # b now at its own mean
    assert eta.seconds_left() == 15.0 * 3 + 1.0 * 3


def test_done_means_zero_left():
    eta = EtaEstimator({"a": 1}, jobs=4)
    eta.finished("a", 5.0)
    assert eta.seconds_left() == 0.0


def test_concurrency_inferred_from_wall_time_when_jobs_unknown():
    clock = Clock()
    eta = EtaEstimator(total_remaining=10, clock=clock)
    clock.now += 10.0  # four pairs of 10 s each finished after 10 s of wall time: four at a time
    for _ in range(4):
        eta.finished("a", 10.0)
    assert eta.concurrency() == 4.0
    assert eta.seconds_left() == 10.0 * 6 / 4


def test_missing_duration_priced_by_wall_time():
    clock = Clock()
    eta = EtaEstimator(total_remaining=4, jobs=2, clock=clock)
    clock.now += 30.0
    eta.finished("a", None)  # 30 s of wall time for one pair at 2 jobs: 60 s of pair time
    assert eta.seconds_left() == 60.0 * 3 / 2


def test_format_eta():
    assert format_eta(42) == "ETA 42s"
    assert format_eta(12 * 60 + 10) == "ETA 12m"
    assert format_eta(3600 + 5 * 60) == "ETA 1h05m"


# ------------------------------------------------------------------ in the display


def test_resumed_pairs_are_not_instantly_done():
    """A resumed run: 90 of 100 pairs already recorded must not make the rate look instant."""
    out = io.StringIO()
    progress = Progress(100, stream=out, live=False, jobs=1)
    progress.done = 90  # what the runner sets for the recorded pairs
    with progress:
        progress.result(row("a", "t1", 60.0))
    assert progress.eta_text() == "ETA 9m"  # 9 pairs left at 60 s each, not ~0 from 91 pairs "done"
    assert "ETA 9m" in out.getvalue()


def test_plan_prices_agents_apart_in_the_display():
    progress = Progress(6, stream=io.StringIO(), live=False)
    progress.plan({"fast": 3, "slow": 3}, jobs=1)
    with progress:
        progress.result(row("fast", "t1", 1.0))
        progress.result(row("slow", "t1", 100.0))
    assert progress._eta.seconds_left() == 1.0 * 2 + 100.0 * 2
    assert progress.eta_text() == "ETA 3m"


def test_reused_copies_do_not_feed_the_rate():
    progress = Progress(3, stream=io.StringIO(), live=False, jobs=1)
    progress.plan({"a": 3})
    with progress:
        progress.result(row("a", "t1", 50.0))
        progress.result(row("a", "t1", 0.0, epoch=2, reused_from_epoch=1))
    assert progress._eta.seconds_left() == 50.0


def test_eta_shown_in_the_bar():
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=True, color_system=None)
    progress = Progress(4, stream=out, live=True, jobs=1, console=console)
    with progress:
        progress.result(row("a", "t1", 120.0))
    assert "ETA 6m" in out.getvalue()


def test_quiet_shows_nothing():
    out = io.StringIO()
    progress = Progress(4, stream=out, quiet=True, jobs=1)
    with progress:
        progress.result(row("a", "t1", 120.0, status="agent_error", error=LONG_ERROR))
        progress.message(LONG_ERROR)
    assert out.getvalue() == ""
    assert progress.eta_text() == ""


# ------------------------------------------------------------------ no line cut mid-word


def words_intact(text: str, message: str, width: int | None = None) -> None:
    """The lines of ``text`` hold the whole ``message``, and no word is cut: every word appears whole
    on a line (a word wider than ``width`` itself, a long path, may only be folded at the width)."""
    lines = text.splitlines()
    assert "".join(message.split()) in "".join("".join(lines).split())  # nothing dropped
    tokens = {t for line in lines for t in line.split()}
    for word in message.split():
        if width is None or len(word) < width:
            assert word in tokens, f"{word!r} cut in {text!r}"


def test_plain_result_line_keeps_the_whole_error():
    out = io.StringIO()
    progress = Progress(2, stream=out, live=False)
    with progress:
        progress.result(row("oracle", "qbr-fix-typos", status="agent_error", error=LONG_ERROR))
    assert f"({LONG_ERROR})" in out.getvalue()  # was cut at 120 characters: "...lab.pptx: not)"


def test_wrap_line_never_cuts_a_word():
    text = f"[1/2] oracle qbr-fix-typos: agent_error ({LONG_ERROR})"
    wrapped = wrap_line(text, 40)
    assert all(len(line) <= 40 or " " not in line.strip() for line in wrapped.splitlines())
    assert len(wrapped.splitlines()) > 1
    words_intact(wrapped, text)


def test_narrow_console_wraps_messages_and_failures_in_full():
    out = io.StringIO()
    console = Console(file=out, width=40, color_system=None)
    progress = Progress(2, stream=out, live=True, console=console)
    message = f"Skipped task qbr-fix-typos for agent oracle: {LONG_ERROR}."
    with progress:
        progress.message(message)
        progress.result(row("oracle", "qbr-fix-typos", status="infra_error", error=LONG_ERROR))
    lines = [line for line in out.getvalue().splitlines() if "running" not in line]
    assert all(len(line) <= 40 for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("oracle qbr-fix-typos"))
    words_intact("\n".join(lines[:start]), message, 40)
    words_intact("\n".join(lines[start:]), f"oracle qbr-fix-typos: infra_error ({LONG_ERROR})", 40)
