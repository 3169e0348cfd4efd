"""The trust layer: how the harness runs and reads what it cannot trust.

:mod:`.isolation` (which isolation this machine gives untrusted code, the bubblewrap command),
:mod:`.limits` (process and memory limits per sandbox that hold for root), :mod:`.procs` (programs
in their own session, killed together), :mod:`.sandbox` (untrusted Python: model-written edit code,
rubric leaf code), :mod:`.safeio` (reading, copying and rewriting files the agent side could have
written), :mod:`.redact` (secrets removed from every text that leaves a run),
:mod:`.render_guard` (what a renderer may be given) and :mod:`.unix_service` (a socket only the
harness's own child processes reach). Plugins use these modules directly; the old
paths (``pptarena.safeio`` and the rest) still import, with a deprecation warning.
"""
