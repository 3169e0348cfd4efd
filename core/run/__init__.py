"""Running an evaluation: plugins and config in, the run folder out.

The run itself lives here: :mod:`.runner` (plan, resume, budget, the executor, results),
:mod:`.attempts` (epochs and budgets), :mod:`.attempt` (one attempt: agent, checks, judges, row)
with :mod:`.launchers` (where its agent runs), :mod:`.worker` and :mod:`.worker_pool` (agent worker
processes), :mod:`.executors` (the executor protocol), :mod:`.sessions` (multi-turn tasks),
:mod:`.judging` and :mod:`.batches` (judges on a prediction, judge and agent calls through batch
APIs) with :mod:`.batch_service` (the batch queue served to agent worker processes),
:mod:`.references` (reference decks re-saved by an agent's tool), :mod:`.blame` (who broke a deck),
:mod:`.progress` and :mod:`.interrupts` (the display, Ctrl-C).

By concern, in sub-packages: :mod:`.configuration` (config, registry, components, tasks),
:mod:`.folder` (the run folder and its records), :mod:`.statistics` (the summary's statistics) and
:mod:`.jail` (the agent jail and the trust boundary).

What plugins may use of the run stage is exported here, and only here (an executor carries pairs
out, an agent that jails its own tools reuses the jail's view of the interpreter): plugins import
``from pptarena.run import X``, never a module below it, and ``tests/architecture/test_layering.py``
holds them to it. Each name is imported on first use.
"""

from __future__ import annotations

from pptarena._imports import lazy_exports

_EXPORTS = {
    "Attempts": "attempt",
    **dict.fromkeys(["BatchWait", "current_wait"], "batches"),
    "agent_pool_size": "launchers",
    **dict.fromkeys(["Components", "default_cache_dir"], "configuration.components"),
    "parse_config": "configuration.config",
    **dict.fromkeys(
        [
            "ExecutorError",
            "PairJob",
            "RunHandle",
            "infra_error_row",
            "pack_task_folder",
            "unpack_task_folder",
        ],
        "executors",
    ),
    **dict.fromkeys(["AgentOutcome", "ResultRow"], "folder.records"),
    "FinishedRun": "folder.reporting",
    **dict.fromkeys(["AGENT_STDERR", "EXECUTOR_RECORD", "RunDir", "TASKS"], "folder.rundir"),
    **dict.fromkeys(
        [
            "distribution_closure",
            "distribution_paths",
            "forbidden_roots",
            "interpreter_paths",
            "plugin_paths",
            "site_dirs",
        ],
        "jail.agent_jail",
    ),
    **dict.fromkeys(["WEAK_ISOLATION_ENV", "agent_process", "weak_isolation_allowed"], "jail.boundary"),
    **dict.fromkeys(
        [
            "execute",
            "reported_outcome",
            "timed_out_outcome",
            "vanished_outcome",
            "worker_registry",
            "workspace_spec",
        ],
        "worker",
    ),
    **dict.fromkeys(["PoolOwner", "PooledWorker", "WorkerPool"], "worker_pool"),
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
