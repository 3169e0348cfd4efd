"""The ``tools`` agent: a model calling MCP tools (the harness's deck tools) in a plain loop.

:mod:`.agent` (the agent and its options), :mod:`.loop` (the loop and its budget),
:mod:`.conversation` (the messages of each step), :mod:`.schemas` (MCP tools as backend tool specs,
tool calls read from answers), :mod:`.results` (MCP results as tool results), :mod:`.plugin`
(registration). See docs/agents.md.
"""
