"""Running an evaluation: plugins and config in, the run folder out.

In the order ``arena run`` uses them: :mod:`.registry` (plugins and their components),
:mod:`.config` (the TOML run config), :mod:`.components` (building configured components),
:mod:`.references` (reference renders of originals and targets), :mod:`.runner` (the run: plan,
resume, budget, the executor, results), :mod:`.attempt` (one attempt: agent, judges, row) with
:mod:`.launchers` (where its agent runs), :mod:`.agent_view` and :mod:`.trust` (what an agent gets,
where it runs), :mod:`.jail_pool`, :mod:`.jail_worker`, :mod:`.agent_jail` and :mod:`.bridge`
(jailed agent workers), :mod:`.worker` (one agent attempt in a plain process), :mod:`.judging`
(judges on a prediction), :mod:`.results` (the results file and its summary), :mod:`.progress` (the
progress display) and :mod:`.rundir` (where every file of a run lives).
"""
