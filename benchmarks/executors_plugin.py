"""Benchmark-only agents for executors_bench.py: the same cheap edit in a worker process and in process."""

from __future__ import annotations

import shutil

import pptarena
from pptarena.types import Component, Options, Prediction


class CheapAgent(Component):
    """Copies the input deck: almost no work, so a run's time is the executor's overhead."""

    class Options(Options):
        """No options."""

    def edit(self, task, workspace):
        """Copy the input deck to the output path."""
        shutil.copyfile(workspace.input_deck, workspace.output_deck)
        return Prediction(path=workspace.output_deck)


class CheapInProcessAgent(CheapAgent):
    """The same edit run in the driver's threads (the zero-overhead reference: ``trusted = true``)."""


@pptarena.hookimpl
def register_agents(register):
    """Register the benchmark agents."""
    register("cheap", CheapAgent)
    register("cheap-inproc", CheapInProcessAgent)
