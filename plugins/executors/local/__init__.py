"""The ``local`` executor: pairs run on this host, ``[run] jobs`` at a time.

:mod:`.plugin` registers it; :mod:`.executor` is the executor; :mod:`.pool` the pool of warm
agent worker processes (the driver's side), :mod:`.pool_worker` the code each worker runs.
"""
