"""The run folder and its records: where every file lives, what a line of ``results.jsonl`` is, and
what makes a row trustworthy.

:mod:`.rundir` (the folder's layout, the one place its names are spelled), :mod:`.records` (typed
result rows and the one definition of a valid results line), :mod:`.results` (the append-only store
and its summary), :mod:`.resume` and :mod:`.runlock` (which folder a run uses, one run at a time),
:mod:`.manifest_record` and :mod:`.summary_record` (the typed ``manifest.json`` and
``summary.json``), :mod:`.fingerprint` and :mod:`.provenance` (judge and agent fingerprints, task
hashes) and :mod:`.reporting` (reporters that log a finished run elsewhere).
"""
