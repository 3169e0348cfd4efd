"""A third-party MCP server's stdio process for one pair, jailed like the agent's other untrusted parts.

:class:`JailedServer` starts one :class:`~pptarena.mcp.servers.McpServerSpec` for one pair and hands
its pipes to the SDK's own stdio client (:meth:`JailedServer.transport`, a transport for
``mcp.Client``). The process runs

* under bubblewrap (:func:`pptarena.trust.isolation.command`, the same command line the code sandbox
  builds): no network, a read-only view of the system folders, of the Python interpreter with the
  MCP SDK and its requirements (:func:`server_python_view`) and of the folders named in
  ``read_only`` (plus the installation of a program named by an absolute path), a tmpfs ``/tmp``;
  the pair's server folder ``workdir`` is its only writable folder and its working directory;
* in a cgroup of its own with a process cap and a memory cap for all its processes together
  (:class:`pptarena.trust.limits.SandboxCgroup`; where no cgroup can be made, a host uid of its own), and
  with per-process CPU-time, address-space and file-size limits
  (:func:`pptarena.trust.sandbox.rlimit_values`);
* with the environment the SDK's client passes (its few safe variables) plus ``HOME`` and
  ``TMPDIR`` and the spec's own ``env``; nothing else of the harness's environment.

The SDK's ``stdio_client`` starts the process itself, so the limits cannot be set between fork and
exec by this process: it starts this module as a small launcher (``python -m
pptarena.mcp.jailed_stdio PLAN``) that joins the cgroup, sets the limits, makes the staged mounts of
the ``uid`` level, drops to that uid and then execs bubblewrap. Leaving the ``with`` block kills every
process of the server (the cgroup, or the uid) whatever the client did.

Where bubblewrap is unusable the server is refused (:class:`ServerJailUnavailable`) unless the
caller allows weak isolation; it then runs under the sandbox's weaker mechanism
(:func:`pptarena.trust.sandbox.fallback_argv`: ``unshare`` where possible) and :attr:`JailedServer.isolation`
and :attr:`JailedServer.notes` say so.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pptarena.trust import isolation
from pptarena.trust.limits import SandboxCgroup
from pptarena.types import InfraError

from .servers import McpServerSpec

SERVER_DISTRIBUTIONS: tuple[str, ...] = ("mcp", "cryptography")  # cryptography: pyjwt[crypto] of mcp
"""What of the harness's Python a server sees: the MCP SDK and its requirements (a server written for
the SDK runs on the harness's interpreter; others bring their own installation, see ``read_only``)."""


class ServerJailUnavailable(InfraError):
    """A server would run without bubblewrap and weak isolation was not allowed."""


@dataclass(frozen=True)
class ServerLimits:
    """The limits of one server process tree."""

    memory_mb: int = 2048  # all its processes together (cgroup) and each one's address space
    max_processes: int = 128  # alive at once (cgroup pids, or RLIMIT_NPROC in the uid level)
    cpu_seconds: int = 3600  # CPU time of each process
    file_size_mb: int = 256  # largest file it may write (its stderr log in the pair folder too)
    tmp_mb: int = 256  # its /tmp and /dev/shm (tmpfs)


def server_python_view() -> isolation.PythonView:
    """The Python a jailed server sees: the interpreter and :data:`SERVER_DISTRIBUTIONS`."""
    return isolation.python_view(SERVER_DISTRIBUTIONS)


def jail_argv(
    argv: Sequence[str], workdir: Path, limits: ServerLimits, read_only: Sequence[Path], env: dict[str, str]
) -> list[str]:
    """The bubblewrap command line running ``argv`` with ``workdir`` (a host folder, bound at its own
    path) as its only writable folder and working directory (see the module doc)."""
    from pptarena.trust.sandbox import program_read_only

    jail = isolation.Jail(
        workdir=workdir,
        workdir_host=workdir,
        tmpfs_mb=limits.tmp_mb,
        read_only=[*read_only, *program_read_only(argv, env)],
        network=False,
        python_view=server_python_view(),
    )
    return isolation.command(jail, list(argv))


class JailedServer:
    """One MCP server of an agent's ``mcp_servers``, jailed for one pair (a ``with`` block).

    :param spec: the server (its ``command`` is run, its ``env`` added to its environment).
    :param workdir: the pair's server folder: the server's working directory and only writable folder.
    :param log_dir: a folder of the harness (not visible to the server) for its stderr log.
    :param read_only: more host folders the server may read (e.g. its installation).
    :param allow_weak: without bubblewrap, run under the weaker mechanism instead of refusing.
    """

    def __init__(
        self,
        spec: McpServerSpec,
        workdir: Path,
        log_dir: Path,
        *,
        limits: ServerLimits = ServerLimits(),
        read_only: Sequence[Path] = (),
        allow_weak: bool = False,
    ):
        self.spec = spec
        self.workdir = Path(workdir).resolve()
        self.log_dir = Path(log_dir)
        self.limits = limits
        self.read_only = [Path(p) for p in read_only]
        self.allow_weak = allow_weak
        self.isolation = "none"
        self.notes: list[str] = []
        self.stderr_path = self.log_dir / f"mcp-{spec.name}.stderr.txt"
        self._group: SandboxCgroup | None = None
        self._private: Path | None = None
        self._errlog: IO[str] | None = None
        self._command: list[str] = []
        self._env: dict[str, str] = {}

    # ------------------------------------------------------------------ set-up

    def __enter__(self) -> JailedServer:
        use_bwrap = isolation.base_flags() is not None
        if not use_bwrap and not self.allow_weak:
            raise ServerJailUnavailable(
                f"MCP server {self.spec.name!r}: bubblewrap is not usable here (not installed, no user "
                "namespaces, or PPTARENA_SANDBOX=off), so the server cannot be jailed; install bubblewrap "
                "(scripts/setup.sh) or allow weak isolation (arena run --allow-weak-isolation)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._env = {"HOME": str(self.workdir), "TMPDIR": "/tmp" if use_bwrap else str(self.workdir)}
        self._env.update(self.spec.env)
        argv = list(self.spec.command)
        self._private = Path(tempfile.mkdtemp(prefix="pptarena-mcp-server-"))
        try:
            self._group = SandboxCgroup(self.limits.max_processes, self.limits.memory_mb).__enter__()
            mounts: list[tuple[str, str]] = []
            if use_bwrap:
                cmd = jail_argv(argv, self.workdir, self.limits, self.read_only, self._env)
                self.isolation = isolation.BWRAP_LEVEL
            else:
                from pptarena.trust.sandbox import SandboxLimits, fallback_argv

                cmd, net, fs = fallback_argv(argv, self.workdir, SandboxLimits(), [], self.notes)
                self.isolation = "unshare" if net and fs else "rlimits"
                self.notes.append(
                    f"bubblewrap unavailable: MCP server {self.spec.name!r} runs with isolation "
                    f"{self.isolation!r} (it can read the user's files)"
                )
            if self._group.uid is not None:
                from pptarena.trust.sandbox import as_sandbox_uid

                cmd, mounts = as_sandbox_uid(cmd, self.workdir, self._private, self._group.uid, use_bwrap)
            self.notes += self._group.notes
            self._command = self._launcher(cmd, mounts)
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._errlog = self.stderr_path.open("w", encoding="utf-8", errors="replace")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _launcher(self, cmd: list[str], mounts: list[tuple[str, str]]) -> list[str]:
        """The command the SDK's client starts: this module's launcher with the plan for ``cmd``."""
        from pptarena.trust.sandbox import SandboxLimits, rlimit_values

        group = self._group
        assert group is not None
        sandbox_limits = SandboxLimits(
            timeout=float(self.limits.cpu_seconds),
            cpu_seconds=self.limits.cpu_seconds,
            memory_mb=self.limits.memory_mb,
            file_size_mb=self.limits.file_size_mb,
        )
        plan = {
            "procs": sorted(str(d / "cgroup.procs") for d in set(group.dirs.values())),
            "rlimits": [[which, soft, hard] for which, (soft, hard) in rlimit_values(sandbox_limits)],
            "mounts": [list(m) for m in mounts],
            "uid": group.uid,
            "nproc": self.limits.max_processes,
            "argv": cmd,
        }
        return [sys.executable, "-s", "-m", "pptarena.mcp.jailed_stdio", json.dumps(plan)]

    def transport(self) -> Any:
        """The SDK's stdio client over this server's process (a transport for ``mcp.Client``); the
        process starts when the client connects."""
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if self._errlog is None:
            raise RuntimeError("JailedServer.transport() outside its with block")
        params = StdioServerParameters(
            command=self._command[0],
            args=self._command[1:],
            env=self._env,
            cwd=str(self._private if self.isolation == isolation.BWRAP_LEVEL else self.workdir),
        )
        return stdio_client(params, errlog=self._errlog)

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of what the server wrote to stderr (for an error message)."""
        from pptarena.trust.redact import redact_text
        from pptarena.trust.safeio import read_tail

        try:
            return redact_text(read_tail(self.stderr_path, limit).decode("utf-8", errors="replace"))
        except (OSError, ValueError):
            return ""

    def events(self) -> dict[str, Any]:
        """What the caps did (the cgroup's counters; see :meth:`SandboxCgroup.events`)."""
        return self._group.events() if self._group is not None else {}

    def __exit__(self, *exc: Any) -> None:
        if self._group is not None:
            self._group.__exit__(None, None, None)  # every process of the server is killed
            self._group = None
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None


# ---------------------------------------------------------------------- the launcher


def launch(plan: dict[str, Any]) -> None:
    """Run as the process the SDK's client starts: join the server's cgroup, set its limits, make the
    staged mounts and drop to the sandbox uid when the plan has them, then exec the jail."""
    import resource

    for procs in plan["procs"]:
        with open(procs, "w") as fh:
            fh.write("0")
    for which, soft, hard in plan["rlimits"]:
        resource.setrlimit(which, (soft, hard))
    if plan["mounts"]:
        isolation.mount_staged([tuple(m) for m in plan["mounts"]])  # type: ignore[misc]
    uid = plan["uid"]
    if uid is not None:
        if plan["nproc"] is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (plan["nproc"], plan["nproc"]))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    argv = plan["argv"]
    os.execvp(argv[0], argv)


if __name__ == "__main__":  # pragma: no cover - runs in the launched process
    launch(json.loads(sys.argv[1]))
