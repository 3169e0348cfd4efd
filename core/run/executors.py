"""The executor protocol: how a run's (agent, task) pairs are carried out.

The runner decides *what* runs (pending pairs after resume) and owns the run
folder; an executor decides *where*: threads on this host, a pool of warm
worker processes, a Ray cluster, a batch scheduler. Executors are components
registered through the ``register_executors`` hook and picked by the
``[executor]`` table of the run config (``use = "local"`` by default).

An executor receives :class:`PairJob` items and hands back one result row per
job (the dict the runner appends to ``results.jsonl``). It never writes
``results.jsonl`` itself. A remote executor ships each pair's task folder back
and unpacks it under ``run.run_dir`` (see :func:`unpack_task_folder`) before
yielding the row, so the driver's run folder is complete without a shared
file system.
"""

from __future__ import annotations

import io
import os
import tarfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pptarena.run.folder.records import ResultRow
from pptarena.types import AgentTask, PptArenaError, Task, Workspace

if TYPE_CHECKING:
    from pptarena.run.attempt import Attempts
    from pptarena.run.folder.records import AgentOutcome

#: Largest task folder an executor ships back (compressed), and largest total once unpacked.
MAX_TASK_ARCHIVE_BYTES = 512 * 1024 * 1024
MAX_TASK_FOLDER_BYTES = 2 * 1024 * 1024 * 1024


@dataclass(frozen=True)
class PairJob:
    """One (agent, task) pair to run.

    ``agent`` is the agent's :class:`pptarena.run.configuration.config.ComponentConfig`;
    ``agent_index`` its position in the config's ``[[agents]]`` list (what a
    process elsewhere uses to find it again after re-reading the config).
    """

    agent: Any
    agent_index: int
    task: Task
    epoch: int = 1

    @property
    def key(self) -> tuple[str, str, int]:
        """``(agent label, task id, epoch)``: the identity of the attempt's result line."""
        return (self.agent.label, self.task.id, self.epoch)


AgentLauncher = Callable[[Any, AgentTask, Workspace], "AgentOutcome"]
"""Runs one agent on one task (its answer-free view) in a workspace and says what came of it
(e.g. on a warm worker pool); see :class:`pptarena.run.launchers.Launcher`."""


@runtime_checkable
class RunHandle(Protocol):
    """What the runner hands an executor (:class:`pptarena.run.runner.Runner` implements it).

    ``attempts`` (:class:`pptarena.run.attempt.Attempts`) runs one attempt of a pair *in this
    process*: ``attempts.run(agent, task, epoch)`` prepares the task folder under ``run_dir``, runs
    the agent, judges the prediction, writes ``verdicts.json`` and returns the result row without
    appending it (None when the run is stopping). An executor with its own way of starting host
    agent workers passes it in: ``attempts.using(launcher).run(...)`` (the ``local`` executor's warm
    pool). ``compute_pair(agent, task, epoch)`` is ``attempts.run``.

    ``batch_service`` (read it with ``getattr(run, "batch_service", None)``): in batch mode with a
    batched agent on the host, the run's :class:`~pptarena.run.batch_service.BatchService`. An
    executor that starts host agent workers itself registers each pair's
    :data:`~pptarena.run.batches.current_wait` under its worker's pid for the pair
    (``batch_service.waiting(pid, wait)``) and moves the pair's deadline by the seconds waited (the
    ``local`` executor's pool does).
    """

    config: Any
    registry: Any
    run_dir: Path
    jobs: int
    strict: bool
    attempts: Attempts

    def compute_pair(self, agent: Any, task: Task, epoch: int = 1) -> ResultRow | None: ...

    def stopping(self) -> bool: ...


@runtime_checkable
class Executor(Protocol):
    """Carries out pairs and hands back finished result rows.

    An executor may also define ``start(run)``: the runner calls it before it creates the run
    folder (the ``ray`` executor joins its cluster there), so one that cannot start leaves nothing.
    """

    def execute(self, jobs: Sequence[PairJob], run: RunHandle) -> Iterator[tuple[PairJob, ResultRow]]:
        """Yield ``(job, row)`` for every job as it finishes (any order, each job exactly once).

        A pair that cannot be run because of the executor's infrastructure
        (a lost node, retries exhausted) yields a row with status
        ``infra_error`` (see :func:`infra_error_row`), never nothing.
        """
        ...

    def stop(self) -> None:
        """Stop at once (Ctrl-C): cancel pending pairs and end everything the run started."""
        ...

    def close(self) -> None:
        """Release workers after a run (also called after :meth:`stop`)."""
        ...


class ExecutorError(PptArenaError):
    """An executor could not start or lost its infrastructure as a whole."""


def infra_error_row(job: PairJob, error: str, duration_s: float = 0.0) -> ResultRow:
    """The result row of a pair the infrastructure failed to run (:meth:`ResultRow.infra_failure`)."""
    return ResultRow.infra_failure(
        job.agent.label, job.task.id, job.epoch, error, metadata=job.task.metadata, duration_s=duration_s
    )


def pack_task_folder(task_dir: Path) -> bytes:
    """A gzip'd tar of one task folder: regular files and folders only, walked without following a
    link (:func:`pptarena.trust.safeio.walk_tree`; links, FIFOs, sockets and devices are dropped).

    The sizes are added up before anything is read: a folder over ``MAX_TASK_FOLDER_BYTES`` (a
    2 GiB sparse file, say) is refused at once; the archive is capped at ``MAX_TASK_ARCHIVE_BYTES``.
    """
    from pptarena.trust.safeio import UnsafeFileError, open_at, walk_tree

    try:
        entries = [e for e in walk_tree(task_dir) if e.kind in ("file", "dir")]
    except (OSError, UnsafeFileError) as exc:
        raise ExecutorError(f"task folder {task_dir} cannot be packed: {exc}") from None
    total = sum(e.size for e in entries)
    if total > MAX_TASK_FOLDER_BYTES:
        raise ExecutorError(f"task folder {task_dir} holds {total} bytes, over {MAX_TASK_FOLDER_BYTES}")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for e in walk_tree(task_dir):  # again: each file is opened while its folder is held open
            if e.kind == "dir":
                info = tarfile.TarInfo(e.rel)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif e.kind == "file":
                try:
                    fd = open_at(e.dir_fd, e.name, MAX_TASK_FOLDER_BYTES, e.rel)
                except (OSError, UnsafeFileError):
                    continue  # swapped for something else meanwhile
                with open(fd, "rb") as fh:
                    st = os.fstat(fd)
                    info = tarfile.TarInfo(e.rel)
                    info.size, info.mode, info.mtime = st.st_size, st.st_mode & 0o777, int(st.st_mtime)
                    tar.addfile(info, fh)
            if buf.tell() > MAX_TASK_ARCHIVE_BYTES:
                break
    data = buf.getvalue()
    if len(data) > MAX_TASK_ARCHIVE_BYTES:
        raise ExecutorError(
            f"task folder {task_dir} is larger than {MAX_TASK_ARCHIVE_BYTES} bytes compressed"
        )
    return data


_unpack_lock = threading.Lock()


def unpack_task_folder(data: bytes, dest: Path) -> None:
    """Replace ``dest`` by the task folder packed in ``data``
    (untrusted: regular files and folders only, no escapes).

    The folder is unpacked next to ``dest`` and renamed into place, so a crash
    never leaves half a folder under its final name.
    """
    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.incoming")
    import shutil

    with _unpack_lock:
        if tmp.exists():
            shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    total = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise ExecutorError(f"task archive for {dest} holds an unsafe path {member.name!r}")
            target = tmp.joinpath(*name.parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                total += member.size
                if total > MAX_TASK_FOLDER_BYTES:
                    raise ExecutorError(
                        f"task archive for {dest} unpacks to more than {MAX_TASK_FOLDER_BYTES} bytes"
                    )
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                assert src is not None
                with target.open("wb") as out:
                    shutil.copyfileobj(src, out)
            # links, devices and fifos are skipped
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(dest)
