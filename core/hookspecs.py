"""The seven pptarena hooks.

Every hook receives a ``register`` callback and calls it once per component it
provides: ``register(name, factory)``. ``factory`` is a class (or any callable)
with an ``Options`` attribute, a pydantic model that validates the component's
config table (extra keys forbidden). The core builds the component with
``factory(options, context)`` where ``context`` is a :class:`pptarena.types.ComponentContext`.

Plugins implement hooks with the :data:`hookimpl` marker::

    import pptarena

    @pptarena.hookimpl
    def register_judges(register):
        register("wordcount", WordCountJudge)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pluggy

PROJECT = "pptarena"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class RegisterFn(Protocol):
    """The ``register`` callback every ``register_*`` hook receives.

    ``register(name, factory)`` adds a component: ``name`` is what configs write in ``use``
    (no ``:`` or ``/``), ``factory`` is called as ``factory(options, context)`` (usually the
    component class). A name registered by two plugins is reachable as ``plugin:name``.
    """

    def __call__(self, name: str, factory: Callable[..., Any]) -> None: ...


@hookspec
def register_datasets(register: RegisterFn) -> None:
    """Register datasets: sources of tasks.

    :param register: call ``register(name, DatasetClass)`` once per dataset.
        ``DatasetClass.Options`` validates the ``[dataset]`` table (minus
        ``use``); instances implement ``tasks() -> Iterable[Task]``.

    Example::

        @pptarena.hookimpl
        def register_datasets(register):
            register("jsonl", JsonlDataset)
    """


@hookspec
def register_agents(register: RegisterFn) -> None:
    """Register agents: the systems under test that edit a deck.

    :param register: call ``register(name, AgentClass)`` once per agent.
        ``AgentClass.Options`` validates an ``[[agents]]`` table (minus ``use``
        and ``label``); instances implement ``edit(task, workspace) -> Prediction``
        and write the edited deck to ``workspace.output_deck``.

    ``edit`` receives a :class:`pptarena.AgentTask` (the task without its answer). Agents run in
    a jailed worker (:mod:`pptarena.run.jail.agent_jail`) that sees their own distribution and no host
    folder; an agent under test is best installed in an environment of its own (``package = ...``
    in its ``[[agents]]`` table: the harness then never imports it). Only the user puts an agent in
    the harness's process (``trusted = true``). ``register`` also takes ``placement=``, ``inert=``
    and ``reference_normalizer=``, honoured for pptarena's own agents only (any other plugin asking
    for them fails to load): nothing an agent class says decides how far it is trusted.
    """


@hookspec
def register_renderers(register: RegisterFn) -> None:
    """Register renderers: turn a deck into one PNG per slide.

    :param register: call ``register(name, RendererClass)`` once per renderer.
        Instances implement ``render(deck_path, out_dir) -> list[SlideImage]``:
        one image per slide, hidden slides included, in deck order, and
        ``close()`` to release any helper process.
    """


@hookspec
def register_judges(register: RegisterFn) -> None:
    """Register judges: score a prediction against a task.

    :param register: call ``register(name, JudgeClass)`` once per judge.
        ``JudgeClass.Options`` validates a ``[[judges]]`` table (minus ``use``
        and ``label``); instances implement
        ``judge(task, prediction, evidence) -> Verdict`` with a score in [0, 1].
    """


@hookspec
def register_backends(register: RegisterFn) -> None:
    """Register model backends shared by agents and judges.

    :param register: call ``register(name, BackendClass)`` once per backend.
        ``BackendClass.Options`` validates a ``[backends.NAME]`` table; instances
        implement ``complete(messages, *, model, **params) -> Completion``.
        Import the provider SDK inside ``__init__`` (never at module import)
        and raise :class:`pptarena.types.ComponentUnavailable` when it is
        missing, naming the extra to install.
    """


@hookspec
def register_executors(register: RegisterFn) -> None:
    """Register executors: where and how the (agent, task) pairs of a run are carried out.

    :param register: call ``register(name, ExecutorClass)`` once per executor.
        ``ExecutorClass.Options`` validates the ``[executor]`` table (minus
        ``use``); instances implement the :class:`pptarena.run.executors.Executor`
        protocol: ``execute(jobs, run)`` yields ``(job, row)`` for every pair as
        it finishes, ``stop()`` ends everything the run started (Ctrl-C), and
        ``close()`` releases workers. The runner keeps owning the run folder:
        it alone appends ``results.jsonl``, resumes, shows progress and
        summarises, so every executor gets the same guarantees. An executor
        that runs pairs elsewhere copies each pair's task folder back into
        ``run.run_dir`` before yielding its row.

    An optional class method ``check_config(options, agent_labels) -> list[str]``
    reports problems (e.g. options naming an agent label that does not exist)
    before any work starts.

    Example::

        @pptarena.hookimpl
        def register_executors(register):
            register("slurm", SlurmExecutor)
    """


@hookspec
def register_reporters(register: RegisterFn) -> None:
    """Register reporters: log a finished run somewhere else (an experiment tracker, a dashboard).

    :param register: call ``register(name, ReporterClass)`` once per reporter.
        ``ReporterClass.Options`` validates a ``[[reporters]]`` table (minus ``use``
        and ``label``); instances implement the :class:`pptarena.run.folder.reporting.Reporter`
        protocol: ``report(run) -> str | None``, called once when a run finishes with a
        :class:`pptarena.run.folder.reporting.FinishedRun` (the run folder, its config with secrets
        elided, manifest, per-pair rows, summary and ``report.html``), returning one line
        to show the user (where the run was logged) or None.

    Reporters are optional and never change a run: one that raises is shown as one
    warning line, and the run's results, summary and exit code stay what they were.
    Import the tracker's package inside ``__init__`` (never at module import) and raise
    :class:`pptarena.types.ComponentUnavailable` when it is missing, naming the extra to install.

    Example::

        @pptarena.hookimpl
        def register_reporters(register):
            register("mlflow", MlflowReporter)
    """
