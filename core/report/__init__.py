"""Reading a finished run and showing it: tables, the HTML report, re-scoring and judge meta-evaluation.

:mod:`.data` loads a run folder; :mod:`.tables` builds the leaderboard and breakdowns;
:mod:`.show` prints them and writes ``report.html`` through :mod:`.html` (with :mod:`.plots`,
:mod:`.renders` and :mod:`.verdicts`); :mod:`.rescore` re-judges a run's predictions;
:mod:`.meta_eval` and :mod:`.meta_stats` measure judges against human labels.
"""
