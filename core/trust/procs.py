"""Running a program in its own session, so that it and everything it starts can be killed together."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a process started with ``start_new_session=True`` and everything in its session."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        pass


def close_pipes(*pipes: IO[Any] | None) -> None:
    """Close a killed process's pipes, ignoring those already gone."""
    for pipe in pipes:
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass


def take_protocol_pipes() -> tuple[IO[bytes], IO[bytes]]:
    """In a worker spoken to over stdin/stdout: private copies of the two protocol pipes, with fds 0 and
    1 pointed at ``/dev/null``, so that nothing the agent prints or reads can touch the protocol."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return requests, replies


def run_in_session(
    argv: Sequence[str],
    *,
    cwd: str | Path | None,
    env: Mapping[str, str] | None,
    stdout: IO[bytes] | int | None,
    stderr: IO[bytes] | int | None,
    timeout: float | None,
    stdin_bytes: bytes | None = None,
    preexec_fn: Callable[[], None] | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
    pass_fds: Sequence[int] = (),
    paused: Callable[[], float] | None = None,
) -> tuple[int | None, bool]:
    """Run ``argv`` in a new session; on exit or timeout kill the whole session.

    :param on_start: called with the process right after it starts (e.g. to let
        another thread kill it on Ctrl-C).
    :param pass_fds: file descriptors the program inherits (e.g. a result pipe).
    :param paused: seconds so far that the timeout does not count (a batched agent's waiting on
        batch jobs); the deadline moves by it. Only without ``stdin_bytes`` or piped output.
    :returns: ``(returncode, timed_out)``; ``returncode`` is None after a timeout.
    :raises OSError: when the program cannot be started (e.g. not found).
    """
    communicate = stdin_bytes is not None or subprocess.PIPE in (stdout, stderr)
    if paused is not None and communicate:
        raise ValueError("run_in_session: a paused timeout needs no stdin_bytes and no piped output")
    proc = subprocess.Popen(
        list(argv),
        cwd=str(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else None,
        stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        preexec_fn=preexec_fn,
        pass_fds=tuple(pass_fds),
    )
    if on_start is not None:
        on_start(proc)
    timed_out = False
    try:
        if not communicate:
            timed_out = not wait_exit(proc, timeout, paused)
        else:
            proc.communicate(stdin_bytes, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        kill_group(proc)
    return (None if timed_out else proc.returncode), timed_out


def moving_deadline(timeout: float, paused: Callable[[], float] | None = None) -> Callable[[], float]:
    """A deadline ``timeout`` seconds from now (``time.monotonic()`` time) that moves later by what
    ``paused()`` (seconds the timeout does not count, e.g. a batched agent's waiting on batch jobs)
    grows by from now on; call it whenever the deadline is checked."""
    end = time.monotonic() + timeout
    if paused is None:
        return lambda: end
    base = paused()
    return lambda: end + paused() - base


def wait_exit(
    proc: subprocess.Popen[Any], timeout: float | None, paused: Callable[[], float] | None = None
) -> bool:
    """Wait for ``proc`` to exit, at most ``timeout`` seconds (plus what ``paused()`` grew by since the
    start, read again whenever the deadline comes: seconds the timeout does not count); True when it
    exited (and was reaped).

    Wakes the moment the process exits (a pidfd on Linux): ``Popen.wait(timeout)`` polls with sleeps
    growing to 50 ms, which added 25 ms on average to every short sandboxed run.
    """
    if timeout is None:
        proc.wait()
        return True
    deadline = moving_deadline(max(0.0, timeout), paused)

    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        while True:
            try:
                proc.wait(timeout=max(0.0, deadline() - time.monotonic()))
                return True
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline():
                    return False
    try:
        while True:  # a day at a time: select refuses timeouts past the platform's time_t
            exited = bool(
                select.select([pidfd], [], [], min(86400.0, max(0.0, deadline() - time.monotonic())))[0]
            )
            if exited or time.monotonic() >= deadline():
                break
    finally:
        os.close(pidfd)
    if exited:
        proc.wait()  # already exited: reaps at once
    return exited


def die_with_parent(expected_parent: int | None = None) -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere).

    With ``expected_parent``, exit at once if the parent is already gone (the race before the call).
    """
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)


def _drain(pipe: IO[bytes], keep: int, tail: bool, out: bytearray) -> None:
    """Read ``pipe`` to its end, keeping at most ``keep`` bytes of it (the first, or with ``tail`` the
    last) in ``out``: a program printing without end costs no memory here."""
    while True:
        chunk = pipe.read(1 << 16)
        if not chunk:
            return
        if tail:
            out.extend(chunk)
            del out[: max(0, len(out) - keep)]
        elif len(out) <= keep:
            out.extend(chunk[: keep + 1 - len(out)])


def run_capped(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin_bytes: bytes,
    timeout: float,
    keep_stdout: int,
    keep_stderr: int = 64 * 1024,
    preexec_fn: Callable[[], None] | None = None,
) -> tuple[int | None, bytes, bytes]:
    """Run ``argv`` in a new session, feeding it ``stdin_bytes``; its output is read as it comes, the
    first ``keep_stdout`` + 1 bytes of stdout and the last ``keep_stderr`` of stderr kept (a caller sees
    an answer over its cap by its length). On timeout the whole session is killed.

    :returns: ``(returncode or None after a timeout, stdout kept, stderr kept)``.
    """
    import threading

    proc = subprocess.Popen(
        list(argv),
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec_fn,  # noqa: PLW1509 - moves the child into its cgroup
    )
    out, err = bytearray(), bytearray()
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, keep_stdout, False, out), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, keep_stderr, True, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        assert proc.stdin is not None
        proc.stdin.write(stdin_bytes)
    except BrokenPipeError:
        pass
    finally:
        close_pipes(proc.stdin)
    finished = wait_exit(proc, timeout)
    kill_group(proc)
    for reader in readers:
        reader.join(timeout=5)
    close_pipes(proc.stdout, proc.stderr)
    return (proc.returncode if finished else None), bytes(out), bytes(err)
