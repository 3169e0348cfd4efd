"""The ``ray`` executor: every (agent, task) pair is a Ray task on a cluster.

Inputs (the run config, each task's decks) travel through Ray's object store;
each pair's whole task folder (prediction, renders, judge evidence, logs)
comes back to the driver, which unpacks it into the run folder and hands the
row to the runner (the only writer of ``results.jsonl``). With ``shared_dir``
the folder stays on a file system every node mounts and is moved instead.

A pair whose node or worker dies is retried ``max_retries`` times by Ray and
then recorded as ``infra_error``; each pair yields exactly one row. Ctrl-C
cancels every pending task (killing its worker, whose agent worker then kills
its own process group); when the driver is killed outright, Ray fails the
driver's tasks and kills their workers, and the agent workers follow their
parent. Re-running the same command resumes.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pptarena.run import ExecutorError, PairJob, ResultRow, RunHandle, infra_error_row, unpack_task_folder
from pptarena.types import Component, ComponentUnavailable, Options

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class AgentPlacement(BaseModel):
    """What each pair of one agent needs from a node."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_cpus: float | None = Field(
        None, ge=0, description="CPUs each pair reserves (default: the executor's num_cpus)"
    )
    resources: dict[str, float] = Field(
        default_factory=dict, description="custom Ray resources each pair needs, e.g. { desktop = 1 }"
    )


class RayOptions(Options):
    """Options of the ``ray`` executor."""

    address: str | None = Field(
        None,
        description="cluster to join ('auto', 'HOST:6379', 'ray://HOST:10001'); "
        "default: start a local cluster",
    )
    num_cpus: float = Field(1.0, ge=0, description="CPUs each pair reserves")
    agents: dict[str, AgentPlacement] = Field(
        default_factory=dict,
        description="per agent label: num_cpus and resources (e.g. gui = { resources = { desktop = 1 } })",
    )
    max_retries: int = Field(
        2, ge=0, le=100, description="retries of a pair whose node or worker died (infrastructure only)"
    )
    runtime_env: dict[str, Any] = Field(
        default_factory=dict, description="Ray runtime_env passed through as is"
    )
    shared_dir: Path | None = Field(
        None, description="a folder every node mounts at the same path: task folders are moved, not shipped"
    )
    forward_env: bool = Field(
        True, description="send the environment variables the config references as { env = ... }"
    )
    local_cpus: int | None = Field(
        None,
        ge=1,
        description="CPUs of the local cluster started when address is unset (default: [run] jobs)",
    )
    object_store_memory: int | None = Field(
        None, ge=78_643_200, description="object store bytes of the local cluster (default: Ray's)"
    )
    max_in_flight: int = Field(1000, ge=1, description="pairs submitted to Ray at once")
    recycle_after: int = Field(100, ge=1, description="replace a node's agent worker after this many pairs")
    log_to_driver: bool = Field(
        False, description="stream the workers' stdout/stderr to the driver's terminal"
    )
    node_ip_address: str | None = Field(
        None,
        description="this driver's address as the cluster sees it (default: the host of `address` when "
        "that is a loopback address such as 127.0.0.2, else Ray's choice)",
    )
    connect_timeout: int = Field(
        10, ge=1, le=600, description="seconds to wait for the cluster's head before giving up"
    )


def _env_refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return {value["env"]}
        return set().union(*(_env_refs(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_env_refs(v) for v in value)) if value else set()
    return set()


class RayExecutor(Component):
    """Pairs as Ray tasks on a local or remote cluster."""

    Options = RayOptions
    judges_on_host = False  # each node judges its own pairs (batch mode then calls directly)

    def __init__(self, options: Any, context: Any):
        super().__init__(options, context)
        self._pending: dict[Any, PairJob] = {}
        self._owns_ray = False
        self._stopped = False
        self._limiter_actor: tuple[str, Any] | None = None  # (name, handle) of the run's rate limiters

    @classmethod
    def check_config(cls, options: RayOptions, agent_labels: list[str]) -> list[str]:
        """Every ``agents.LABEL`` must name an agent of the config."""
        return [
            f"agents.{label}: no agent is labelled {label!r}; agents: {', '.join(agent_labels)}"
            for label in options.agents
            if label not in agent_labels
        ]

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise ComponentUnavailable("the ray executor needs Ray: pip install 'pptarena[ray]'") from exc
        return ray

    def start(self, run: RunHandle) -> None:
        """Join (or start) the cluster; called by the runner before it creates the run folder."""
        self._connect(run)

    def _connect(self, run: RunHandle) -> Any:
        opts: RayOptions = self.options  # type: ignore[assignment]
        if not opts.address:
            # a private local cluster listens on 127.0.0.1 only (Ray otherwise advertises the host's address)
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        ray = self._ray()
        if ray.is_initialized():
            return ray
        if opts.address:
            from .connect import join_cluster

            join_cluster(ray, opts.address, opts.node_ip_address, opts.connect_timeout, self._init_kwargs())
            self._owns_ray = True
            return ray
        cpus = opts.local_cpus or run.jobs
        # this host can run every agent of the run: advertise the custom resources they ask for
        wanted = {name for a in run.config.agents for name in self._resources_of(a)}
        ray.init(
            address="local",
            _node_ip_address="127.0.0.1",
            num_cpus=cpus,
            resources={name: float(cpus) for name in sorted(wanted)} or None,
            object_store_memory=opts.object_store_memory,
            **self._init_kwargs(),
        )
        self._owns_ray = True
        return ray

    def _init_kwargs(self) -> dict[str, Any]:
        opts: RayOptions = self.options  # type: ignore[assignment]
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": opts.log_to_driver,
            "configure_logging": False,
            "namespace": "pptarena",
        }
        if opts.runtime_env:
            kwargs["runtime_env"] = opts.runtime_env
        return kwargs

    def _resources_of(self, agent: Any) -> dict[str, float]:
        opts: RayOptions = self.options  # type: ignore[assignment]
        own = opts.agents.get(agent.label)
        if own is not None and own.resources:
            return dict(own.resources)
        return dict(getattr(agent.spec.factory, "resources", None) or {})

    def _check_feasible(self, ray: Any, jobs: Sequence[PairJob]) -> None:
        """Fail before submitting when no node advertises a resource an agent needs (Ray would wait
        forever).
        """
        have = ray.cluster_resources()
        for job in {j.agent.label: j for j in jobs}.values():
            for name, amount in self.placement(job).get("resources", {}).items():
                if have.get(name, 0) < amount:
                    raise ExecutorError(
                        f"agent {job.agent.label!r} needs {amount:g} {name!r} per pair, but the Ray cluster "
                        f"advertises {have.get(name, 0):g}; start nodes with "
                        f"`ray start --resources='{{\"{name}\": N}}'` "
                        f"or set [executor.agents.{job.agent.label}] resources"
                    )

    def placement(self, job: PairJob) -> dict[str, Any]:
        """Ray task options for ``job``: the agent's table in ``agents``, else the agent class's
        ``resources``.
        """
        opts: RayOptions = self.options  # type: ignore[assignment]
        own = opts.agents.get(job.agent.label)
        resources = self._resources_of(job.agent)
        num_cpus = own.num_cpus if own is not None and own.num_cpus is not None else opts.num_cpus
        out: dict[str, Any] = {"num_cpus": num_cpus}
        if resources:
            out["resources"] = resources
        return out

    def _boot(self, run: RunHandle) -> dict[str, Any]:
        opts: RayOptions = self.options  # type: ignore[assignment]
        run_id = uuid.uuid4().hex[:8]
        env = {}
        if opts.forward_env:
            env = {name: os.environ[name] for name in sorted(_env_refs(run.config.raw)) if name in os.environ}
        return {
            "config": run.config.raw,
            "config_path": str(run.config.path),
            "manual_plugins": dict(run.registry.manual),
            "strict": run.strict,
            "env": env,
            "shared_dir": str(opts.shared_dir) if opts.shared_dir else None,
            "recycle_after": opts.recycle_after,
            "run_id": run_id,
            "limiter_actor": self._limiter_name(run) if run.config.backends else None,
        }

    def _limiter_name(self, run: RunHandle) -> str:
        """The run's rate-limiter actor, started on first use (every node's model calls draw from it)."""
        if self._limiter_actor is None:
            from .limiter import start_actor

            name = f"pptarena-limiter-{uuid.uuid4().hex[:12]}"
            self._limiter_actor = (name, start_actor(self._ray(), name))
        return self._limiter_actor[0]

    def execute(self, jobs: Sequence[PairJob], run: RunHandle) -> Iterator[tuple[PairJob, dict[str, Any]]]:
        """Submit pairs as Ray tasks (at most ``max_in_flight`` at once) and yield rows as they come back."""
        if not jobs:
            return
        ray = self._connect(run)
        from ray.exceptions import RayError

        self._check_feasible(ray, jobs)

        from .remote import run_pair

        opts: RayOptions = self.options  # type: ignore[assignment]
        remote = ray.remote(run_pair)
        boot = ray.put(self._boot(run))
        decks: dict[str, Any] = {}  # deck path -> object ref (a task's decks are shared by all agents)

        def deck_ref(path: Path) -> Any:
            key = str(path)
            if key not in decks:
                decks[key] = ray.put(Path(path).read_bytes())
            return decks[key]

        queue = list(jobs)
        started: dict[Any, float] = {}
        while queue or self._pending:
            while queue and len(self._pending) < opts.max_in_flight and not self._stopped:
                job = queue.pop(0)
                files = {"original": deck_ref(job.task.original)}
                if job.task.target is not None and Path(job.task.target).is_file():
                    files["target"] = deck_ref(job.task.target)
                task_json = job.task.to_json()
                ref = remote.options(
                    name=f"pptarena {job.agent.label} {job.task.id}",
                    max_retries=opts.max_retries,
                    retry_exceptions=False,
                    **self.placement(job),
                ).remote(boot, job.agent_index, task_json, files, job.epoch)
                self._pending[ref] = job
                started[ref] = time.monotonic()
            if self._stopped:
                return
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=0.5)
            for ref in ready:
                job = self._pending.pop(ref)
                t0 = started.pop(ref)
                try:
                    out = ray.get(ref)
                except RayError as exc:
                    yield (
                        job,
                        infra_error_row(
                            job, self._failure(exc, job, Path(run.run_dir)), time.monotonic() - t0
                        ),
                    )
                    continue
                if out["row"] is None:
                    continue
                self._collect(out, Path(run.run_dir))
                try:
                    row = ResultRow.from_json(out["row"])
                except ValueError as exc:
                    row = infra_error_row(job, f"the node sent back an invalid result line: {exc}")
                yield job, row

    def _failure(self, exc: Exception, job: PairJob, run_dir: Path) -> str:
        """The error text of a pair Ray could not run; the full report goes to the task folder's
        executor.error.txt.
        """
        from ray.exceptions import RayTaskError

        from pptarena.run import RunDir

        opts: RayOptions = self.options  # type: ignore[assignment]
        task_dir = RunDir(run_dir).attempt(job.agent.label, job.task.id, job.epoch)
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "executor.error.txt").write_text(_ANSI.sub("", str(exc)), encoding="utf-8")
        if isinstance(exc, RayTaskError):
            cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
            return (
                f"ray: the pair's task raised {type(cause).__name__}: "
                f"{_ANSI.sub('', str(cause)).strip()[:300]}"
            )
        return f"ray: the pair was lost after {opts.max_retries} retries ({type(exc).__name__})"

    @staticmethod
    def _collect(out: dict[str, Any], run_dir: Path) -> None:
        dest = run_dir / out["relpath"]
        if out.get("shared_path"):
            src = Path(out["shared_path"])
            tmp = dest.with_name(f".{dest.name}.incoming")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(src, tmp, symlinks=False)
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
            shutil.rmtree(src, ignore_errors=True)
        elif out.get("archive") is not None:
            unpack_task_folder(out["archive"], dest)

    def stop(self) -> None:
        """Cancel every pending pair (force: its worker is killed, and with it the agent's process group)."""
        self._stopped = True
        if not self._pending:
            return
        ray = self._ray()
        for ref in list(self._pending):
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort: the task may have finished meanwhile
                pass
        self._pending.clear()

    def close(self) -> None:
        """Cancel leftovers and shut down the local cluster this executor started."""
        if self._pending:
            self.stop()
        if self._limiter_actor is not None:
            try:
                self._ray().kill(self._limiter_actor[1])
            except Exception:  # noqa: BLE001 - the cluster may be gone already
                pass
            self._limiter_actor = None
        if self._owns_ray:
            self._ray().shutdown()
            self._owns_ray = False
