"""The agent jail: what an agent is given of a task, where its code runs, and how it talks to the
harness across the trust boundary.

:mod:`.agent_view` (the task as the agent sees it, the answer left out), :mod:`.boundary` (refusing
weak isolation, the isolation a run records), :mod:`.agent_jail` (the bubblewrap command),
:mod:`.jail_pool` and :mod:`.jail_worker` (warm jailed workers, both ends), :mod:`.jail_archive`
(the workspace coming back), :mod:`.bridge` (model calls, renders and log events for a jailed
agent) with :mod:`.bridge_calls` (each answered under the pair's deadline), and :mod:`.agent_env`,
:mod:`.agent_probe` and :mod:`.env_agents` (agents from
environments of their own, which the harness never imports).
"""
