"""The statistics of a run's summary: bootstrap intervals, paired sign-flip tests, pass@k, split
figures, and the helper process that computes them for large runs.

:mod:`.stats` (the user-facing figures), :mod:`.summary_stats` (their blocks in ``summary.json``),
:mod:`.columns` (result lines as columns), :mod:`.resample`, :mod:`.bootdraws` and :mod:`.signflip`
(the seeded draws, fast and exact), :mod:`.statsworker` and :mod:`.statsjobs` (the helper process),
:mod:`.split_figures` (PPTArena's per-split leaderboard) and :mod:`.blas` (BLAS threads). Nothing
here knows about agents, jails or executors.
"""
