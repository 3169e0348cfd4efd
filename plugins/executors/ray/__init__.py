"""The ``ray`` executor: every (agent, task) pair is a Ray task on a cluster.

:mod:`.plugin` registers it; :mod:`.executor` is the driver's side; :mod:`.connect` joins or
starts a cluster; :mod:`.remote` is the code each Ray task runs on a node (it reuses the
``local`` executor's worker pool, :mod:`pptarena.plugins.executors.local.pool`).
"""
