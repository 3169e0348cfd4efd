"""Warm jailed agent workers on the harness's side (the other end of :mod:`.jail_worker`).

:class:`JailPool` keeps up to ``size`` workers per agent (label), each a bubblewrap jail built by
:mod:`.agent_jail` for that agent's plugin, started once and reused for up to ``recycle_after``
pairs. A worker is killed (its whole jail) on a timeout, a crash, a protocol violation, and when
the run stops. :meth:`JailPool.run_pair` sends one pair, answers the worker's bridge requests
(:class:`~.bridge.BridgeHost`) until it is done, and copies the agent's workspace out into the
pair's task folder (:mod:`.jail_archive`): regular files and folders only, never over a file the
harness wrote.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from pptarena.run.folder.records import AgentOutcome
from pptarena.run.folder.rundir import AGENT_STDERR
from pptarena.run.jail.agent_jail import worker_cgroup, worker_command
from pptarena.run.jail.bridge import AgentRenders, BridgeHost
from pptarena.run.jail.bridge_calls import LATE, answer_by, asked
from pptarena.run.jail.jail_archive import (  # noqa: F401 - MAX_*, RESERVED re-exported
    MAX_HEADER_BYTES,
    MAX_UNPACKED_BYTES,
    MAX_UNPACKED_ENTRIES,
    RESERVED,
    host_path,
    unpack_workspace,
)
from pptarena.run.worker import reported_outcome, timed_out_outcome, vanished_outcome
from pptarena.run.worker_pool import PoolOwner, WorkerPool
from pptarena.trust.procs import close_pipes, kill_group, moving_deadline
from pptarena.types import AgentTask, InfraError, Status

BOOT_TIMEOUT = 120.0
MAX_LINE_BYTES = 1024 * 1024 * 1024
"""Largest protocol line a jailed worker may send (a deck or a workspace archive, base64)."""
MAX_STDERR_BYTES = 1024 * 1024
"""What is kept of a worker's stderr per pair (its end); the rest is read from the pipe and dropped."""


class WorkerGone(Exception):
    """The jailed worker ended (or broke the protocol) without finishing the pair."""


class JailWorker:
    """One jailed worker process and its pipes, in a cgroup of its own where the machine has one."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        self._err = bytearray()  # the end of what the agent printed on stderr (a pipe, drained as it runs)
        self._err_open = True
        self.group = worker_cgroup()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=env,
                preexec_fn=self.group.preexec() if self.group is not None else None,  # noqa: PLW1509
            )
        except BaseException:
            if self.group is not None:
                self.group.__exit__(None, None, None)
            raise
        assert self.proc.stderr is not None
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.pairs = 0
        self._buf = bytearray()
        self._searched = 0  # the start of _buf holds no line end up to here
        self.scanned = 0
        """Bytes searched for a line end so far: each byte once, so reading is linear in what comes
        back (searching the whole buffer after every pipe read made a 200 MB line take minutes)."""
        try:
            ready = self.read(time.monotonic() + BOOT_TIMEOUT)
        except WorkerGone as exc:
            self.kill()
            raise InfraError(
                f"the agent's jailed worker exited while starting (code {self.proc.poll()})"
            ) from exc
        if not ready or not ready.get("ready"):
            self.kill()
            raise InfraError(f"the agent's jailed worker did not start within {BOOT_TIMEOUT:g}s")

    def read(self, deadline: float) -> dict[str, Any] | None:
        """The next message, None at ``deadline``; raises :class:`WorkerGone`."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            line = self._next_line()
            if line is not None:
                try:
                    message = json.loads(line)
                except ValueError as exc:
                    raise WorkerGone("the worker sent a line that is not JSON") from exc
                if not isinstance(message, dict):
                    raise WorkerGone("the worker sent a message that is not an object")
                return message
            if len(self._buf) > MAX_LINE_BYTES:
                raise WorkerGone(f"the worker sent a line longer than {MAX_LINE_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            err = [self.proc.stderr.fileno()] if self._err_open and self.proc.stderr is not None else []
            ready, _, _ = select.select([fd, *err], [], [], remaining)
            if err and err[0] in ready:
                self._drain_stderr()
            if fd not in ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerGone("the worker closed its output")
            self._buf += chunk

    def _next_line(self) -> bytearray | None:
        """The next complete line taken off the buffer (without its newline), or None; searches only
        the bytes that arrived since the last search."""
        end = self._buf.find(b"\n", self._searched)
        self.scanned += (len(self._buf) if end < 0 else end + 1) - self._searched
        if end < 0:
            self._searched = len(self._buf)
            return None
        line, self._buf = self._buf, self._buf[end + 1 :]  # the rest (usually nothing) is copied
        del line[end:]  # truncating the end costs nothing
        self._searched = 0
        return line

    def _drain_stderr(self, reads: int = 16) -> None:
        """Read what is waiting on the stderr pipe (at most ``reads`` MB at a time), keeping its last
        :data:`MAX_STDERR_BYTES`: a flood costs the harness reading time, never memory or disk."""
        if not self._err_open or self.proc.stderr is None:
            return
        for _ in range(reads):
            try:
                chunk = os.read(self.proc.stderr.fileno(), 1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            except (OSError, ValueError):
                chunk = b""
            if not chunk:
                self._err_open = False
                return
            self._err += chunk
            if len(self._err) > 2 * MAX_STDERR_BYTES:
                del self._err[:-MAX_STDERR_BYTES]

    def take_stderr(self, path: Path, cap: int = MAX_STDERR_BYTES) -> None:
        """Move what the worker printed since the last pair into ``path`` (a new file; the last ``cap``
        bytes, at most :data:`MAX_STDERR_BYTES`, are kept)."""
        self._drain_stderr(reads=64)
        data = bytes(self._err[-cap:])
        self._err.clear()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message; raises :class:`WorkerGone` when the worker is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message, default=str).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise WorkerGone("the worker closed its input") from exc

    def kill(self) -> None:
        """SIGKILL the jail (bwrap's session: the worker and everything in its namespace)."""
        kill_group(self.proc)
        if self.group is not None:
            group, self.group = self.group, None
            group.__exit__(None, None, None)  # kills whatever is left in it and removes it
        close_pipes(self.proc.stdin, self.proc.stdout, self.proc.stderr)

    def retire(self) -> None:
        """Ask the worker to exit, then make sure the jail is gone."""
        try:
            self.send({"op": "exit"})
            self.proc.wait(timeout=2)
        except (WorkerGone, subprocess.TimeoutExpired):
            pass
        self.kill()


class JailPool(PoolOwner[JailWorker]):
    """Warm jailed workers, up to ``size`` per agent label, one pair at a time each (their lifecycle:
    :class:`~pptarena.run.worker_pool.WorkerPool`, keyed by the label)."""

    def __init__(self, size: int, recycle_after: int = 100):
        self._workers: WorkerPool[JailWorker] = WorkerPool(size, recycle_after, "jailed worker pool")

    def _checkout(self, key: str, agent: Any) -> JailWorker:
        def spawn() -> JailWorker:
            argv, env = worker_command(agent.spec, agent.options)
            return JailWorker(argv, env)

        return self._workers.checkout(spawn, key)

    def run_pair(
        self,
        agent: Any,
        task: AgentTask,
        ws: Any,
        host: BridgeHost,
        timeout: float,
        renderer: bool,
        wait: Any = None,
    ) -> AgentOutcome:
        """Run ``agent`` (a ComponentConfig) on ``task`` in a jailed worker; copy its workspace into
        ``ws.dir``. ``wait``: the pair's :class:`~pptarena.run.batches.BatchWait` when the run batches
        its calls: the ``timeout`` does not count what its calls wait for batch jobs, and while it
        waits for a free worker it gives its agent slot back (pairs whose batch was answered hold
        workers and need a slot to go on: holding the slot here would make both wait forever)."""
        from pptarena.run.jail.agent_view import options_json

        key = agent.label
        stderr_path = Path(ws.dir) / AGENT_STDERR
        with wait.waiting() if wait is not None else contextlib.nullcontext():
            worker = self._checkout(key, agent)

        message: dict[str, Any] | None = None
        gone = False
        try:
            worker.pairs += 1
            worker.send(
                {
                    "op": "pair",
                    "agent": {
                        "module": agent.spec.factory.__module__,
                        "qualname": agent.spec.factory.__qualname__,
                        "options": options_json(agent.options),
                        "name": agent.use,
                        "label": agent.label,
                    },
                    "task": task.to_json(),
                    "deck": base64.b64encode(Path(ws.input_deck).read_bytes()).decode("ascii"),
                    "deck_name": Path(ws.input_deck).name,
                    "timeout": timeout,
                    "renderer": renderer,
                }
            )
            deadline = moving_deadline(timeout, wait.seconds if wait is not None else None)
            while True:
                message = worker.read(deadline())
                if message is None or message.get("op") == "done":
                    break
                if message.get("op") == "log":
                    host.handle(message)
                    continue
                # a model call or a render: never past the pair's deadline (less its batch waits)
                answer = answer_by(asked(host.handle, message, batch=wait is not None), deadline)
                if answer is LATE:
                    message = None  # the call goes on in the background; the pair has timed out
                    break
                if answer is not None:
                    worker.send(answer)
        except WorkerGone:
            gone = True
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.proc.wait(timeout=2)
        finally:
            with contextlib.suppress(OSError, ValueError):
                worker.take_stderr(stderr_path)
            done = message is not None and message.get("op") == "done" and not gone
            self._workers.checkin(worker, healthy=done)
        if gone:
            return vanished_outcome(worker.proc.returncode, stderr_path)
        if message is None:
            return timed_out_outcome(timeout)
        problem = unpack_workspace(message.get("archive"), Path(ws.dir))
        outcome = host_decided(
            reported_outcome(message.get("outcome") if isinstance(message.get("outcome"), dict) else "null"),
            host,
        )
        if outcome.prediction is not None:
            outcome.prediction.path = host_path(outcome.prediction.path, Path(ws.dir))
            files = outcome.prediction.metadata.get("files")
            if isinstance(files, dict):
                outcome.prediction.metadata["files"] = {
                    str(k): str(host_path(v, Path(ws.dir)))
                    for k, v in files.items()
                    if host_path(v, Path(ws.dir))
                }
        if problem:
            ws.log.write("workspace_copy", note=problem)
        return outcome


def host_decided(outcome: AgentOutcome, host: BridgeHost) -> AgentOutcome:
    """A jailed worker's reported outcome with its failure status decided by the harness.

    What the worker says is the agent's word (agent code runs in that process and can raise
    :class:`~pptarena.types.InfraError`, or write the protocol itself). A reported ``infra_error``
    stands only when ``host`` answered a request of this pair with an infrastructure failure
    (:attr:`~pptarena.run.jail.bridge.BridgeHost.infra_failures`); any other failure it reports
    (``infra_error`` without one, ``timeout``, ``judge_error``: the harness decides those itself) is
    ``agent_error``. A worker that could not import or build its agent reports ``infra_error`` too:
    the host cannot tell that from a claim, so it is the agent's as well.
    """
    status = outcome.status
    if status is None or status == Status.AGENT_ERROR:
        return outcome
    if status == Status.INFRA_ERROR and host.infra_failures:
        outcome.error = f"{outcome.error} (the harness saw: {host.infra_failures[0]})"
        return outcome
    outcome.status = Status.AGENT_ERROR
    outcome.error = (
        f"{outcome.error} [reported as {status} by the agent's jailed worker, but the harness saw no "
        "infrastructure failure during this pair: counted as the agent's (a jailed agent that cannot "
        "be imported or built, or raises InfraError itself, fails on its own account)]"
    )
    return outcome


def _table_keys(name: str, info: Any) -> set[str]:
    """The keys of a config table that set the option field ``name`` (its name and aliases)."""
    return {name} | {a for a in (info.alias, info.validation_alias) if isinstance(a, str)}


def table_models(agent: Any) -> set[str]:
    """The ``"<backend>/<model>"`` references the agent's own ``[[agents]]`` table names (``agent.raw``):
    the values of its model fields that the table sets, never a default of its plugin's Options."""
    from pptarena.run.configuration.config_options import model_refs

    table = set(agent.raw or ())
    fields = type(agent.options).model_fields
    named = set()
    for key, ref in model_refs(agent.options).items():
        field = key.partition("[")[0]  # "models[1]" -> "models"
        if _table_keys(field, fields[field]) & table:
            named.add(ref)
    return named


def run_jailed(
    pool: JailPool,
    components: Any,
    agent: Any,
    task: AgentTask,
    ws: Any,
    timeout: float,
    *,
    renders: AgentRenders | None,
    judge_models: frozenset[str] = frozenset(),
    wait: Any = None,
) -> AgentOutcome:
    """Run ``agent`` on ``task`` on ``pool`` with the run's ``components`` on the host side of the
    bridge: only the models the agent's config table names (:func:`table_models`; a refusal of one of
    ``judge_models``, the run's judges' models, says so), ``renders`` (the run's renderer with a
    capped cache of its own), the pair's log; usage and cost are counted here, never as the worker
    reports them, and a failure's status is decided here (:func:`host_decided`). ``wait``: the
    pair's :class:`~pptarena.run.batches.BatchWait` when the run batches its calls (see
    :meth:`JailPool.run_pair`)."""
    from pptarena.models import UsageBook

    book = UsageBook()
    host = BridgeHost(
        components.agent_models(agent, book=book, log=ws.log),
        renders,
        ws.log,
        models=table_models(agent),
        judge_models=judge_models,
    )
    out = pool.run_pair(agent, task, ws, host, timeout, renderer=renders is not None, wait=wait)
    out.model_usage = book.total().as_dict()
    out.model_cost = book.cost()
    return out
