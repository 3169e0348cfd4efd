"""Baseline agents: ``noop`` (hands in the input deck unchanged), ``oracle``
(hands in the task's reference target) and ``precomputed`` (predictions made
elsewhere, one file per task).

``noop`` and ``precomputed`` run in a jailed worker like every agent (``precomputed`` names its
folder through ``jail_paths`` so the jail can read it, honoured for pptarena's own agents only); they
are registered ``inert=True`` (they copy a file). ``oracle`` is the one reference baseline: registered
with ``placement="reference"`` (honoured for pptarena's own agents only), the runner hands it the
judge-side task (with its target) in the harness's process; its rows say ``isolation: none`` and
``agent_process: reference``, and the run
says so when it starts (docs/security.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import Field

import pptarena
from pptarena.types import AgentError, AgentTask, Component, Prediction, Task, Workspace
from pptarena.types import Options as OptionsBase


class NoopAgent(Component):
    """Returns the input deck unchanged: the floor every real agent must beat."""

    deterministic = True  # every attempt gives the same deck: run once, reused for every epoch

    class Options(OptionsBase):
        """No options."""

    def edit(self, task: AgentTask, workspace: Workspace) -> Prediction:
        """Copy the input deck to the output path."""
        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        return Prediction(path=workspace.output_deck, notes="unchanged input deck")


class OracleAgent(Component):
    """Returns the task's human reference target: the ceiling judges should give full marks.

    A reference baseline, not an agent under test: the runner hands it the full :class:`Task`.
    """

    needs_target = True  # tasks without a target deck are skipped with the reason, not failed
    deterministic = True  # every attempt gives the same deck: run once, reused for every epoch

    class Options(OptionsBase):
        """No options."""

    def edit(self, task: Task, workspace: Workspace) -> Prediction:
        """Copy the target deck to the output path."""
        if task.target is None:
            raise AgentError(
                f"task {task.id} has no reference target deck, so the oracle agent cannot answer it"
            )
        if not Path(task.target).is_file():
            raise AgentError(f"task {task.id}: target deck {task.target} does not exist")
        shutil.copyfile(task.target, workspace.output_deck)
        return Prediction(path=workspace.output_deck, notes="reference target deck")


class PrecomputedOptions(OptionsBase):
    """Options of the ``precomputed`` agent."""

    dir: Path = Field(description="folder holding one prediction deck per task")
    pattern: str = Field("{task_id}.pptx", description="file name pattern; {task_id} is replaced")


class PrecomputedAgent(Component):
    """Hands in predictions made elsewhere: ``dir``/``pattern`` per task."""

    deterministic = True  # every attempt gives the same deck: run once, reused for every epoch
    Options = PrecomputedOptions

    @classmethod
    def jail_paths(cls, options: PrecomputedOptions) -> list[Path]:
        """The predictions' folder: bound read-only into the agent's jail."""
        return [options.dir]

    def edit(self, task: AgentTask, workspace: Workspace) -> Prediction:
        """Copy the task's precomputed deck; a missing file is an agent error for this task only."""
        opts: PrecomputedOptions = self.options  # type: ignore[assignment]
        name = opts.pattern.format(task_id=task.id)
        src = (opts.dir / name).resolve()
        if opts.dir.resolve() not in src.parents:
            raise AgentError(f"pattern {opts.pattern!r} escapes {opts.dir} for task {task.id}")
        if not src.is_file():
            raise AgentError(f"no precomputed prediction for task {task.id}: {src} does not exist")
        shutil.copyfile(src, workspace.output_deck)
        return Prediction(path=workspace.output_deck, notes=f"precomputed from {src}")


@pptarena.hookimpl
def register_agents(register):
    """Register the baseline agents."""
    register("noop", NoopAgent, inert=True)  # runs no untrusted code: no refusal without bubblewrap
    register("oracle", OracleAgent, placement="reference")  # handed the task's answer, in the harness
    register("precomputed", PrecomputedAgent, inert=True)  # copies a file
