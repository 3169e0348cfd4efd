"""The ``command`` agent: runs any CLI agent (Claude Code, Codex CLI, aider, a script).

The workspace follows PPT-Eval's CLI protocol (:mod:`.workspace`): ``TASK.md``,
``OUTPUT_INSTRUCTIONS.md``, ``inputs/<deck>``, an empty ``output/`` where the agent must write
``output/<task_id><suffix>``. ``command`` is a list of arguments or a string split like a shell
would (no shell runs), with placeholders ``{task_md}``, ``{input}``, ``{output_dir}``, ``{output}``,
``{workspace}``, ``{task_id}``, ``{prompt}``. stdout and stderr go to ``cli.stdout.txt`` and
``cli.stderr.txt`` in the task folder (redacted).

The CLI gets PATH, HOME, LANG, LC_ALL, TMPDIR and the ``env`` the config lists (values may be
``{ env = "VAR" }`` secrets, never logged); ``inherit_env = true`` hands it the harness's whole
environment instead, judge keys included.

With ``sandbox = "auto"`` (the default) and bubblewrap usable (:mod:`pptarena.trust.isolation`), the
command runs in a jail (:mod:`.jail`): its own PID, mount, IPC and **network** namespaces; its
workspace a size-capped tmpfs copied out to ``cli/`` in the pair folder when it ends (regular files
only); a cgroup bounding its processes and memory (:mod:`pptarena.trust.limits`); egress only to the hosts its
config names, through a proxy (:mod:`.proxy`, :mod:`.network`). It sees the system folders, the
Python installation, its program and what the program leads to (links, its virtualenv and that
virtualenv's base installation, its npm package, ``#!`` interpreters: :mod:`.programs`), files named
by absolute path in the command and ``read_only_paths``; the run folder, the cache, the dataset and
your home stay hidden (a program inside them is refused, naming the path for ``read_only_paths``).

No output deck → :class:`AgentError` naming the expected path; a program that cannot be started →
:class:`ComponentUnavailable` (recorded as ``infra_error``). The result's metadata records the
isolation in force.
"""

from .agent import DEFAULT_PROMPT, CommandAgent
from .options import PLACEHOLDERS, CommandOptions
from .workspace import RESERVED, output_instructions, prepare_workspace, task_markdown

__all__ = [
    "DEFAULT_PROMPT",
    "PLACEHOLDERS",
    "RESERVED",
    "CommandAgent",
    "CommandOptions",
    "output_instructions",
    "prepare_workspace",
    "task_markdown",
]
