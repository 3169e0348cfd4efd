"""The ``command`` agent itself: fills in the command, builds its environment, runs it and takes its deck.

Why it is long: besides the edit itself (run plain or jailed, then check and take the deck), it
decides what the jail shows the command (``_shown``, ``_follow_program``, ``_program_view``: the
harness's interpreter, the program and whatever it leads to, the folders never shown); that
view-building could move next to :mod:`.programs` (not done yet).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
import time
from pathlib import Path

from pydantic import SecretStr

from pptarena.trust.procs import run_in_session
from pptarena.types import AgentError, Component, ComponentUnavailable, Prediction, Task, Workspace

from . import deck_tools
from . import jail as cli_jail
from .network import allow_entries, slirp_executable
from .options import CommandOptions
from .programs import ProgramFollower, ProgramView, Shown, UnshownProgram
from .workspace import prepare_workspace, workspace_paths

DEFAULT_PROMPT = (
    "Read TASK.md and OUTPUT_INSTRUCTIONS.md in the current directory, do the task, write the edited deck "
    "to the exact output path given there, then exit."
)
TAIL_CHARS = 2000
MINIMAL_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-TAIL_CHARS:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


def _regular(path: Path) -> bool:
    """True when ``path`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def run_folder(pair: Path) -> Path:
    """The run folder holding a pair folder (``<run>/tasks/<agent>/<task id>``), else the pair folder."""
    from pptarena.run import TASKS

    return next((folder.parent for folder in pair.parents if folder.name == TASKS), pair)


def start_hint(view: ProgramView) -> str:
    """What to do when the jail could not start a program it was shown: the folder to add to
    ``read_only_paths``."""
    shown = ", ".join(str(p) for p in view.binds) or "nothing beyond the system and the interpreter"
    needs = view.needs()
    return f"the jail showed {shown}; if the program needs more of its installation, add " + (
        f"{needs} to read_only_paths" if needs else "its folder to read_only_paths"
    )


class CommandAgent(Component):
    """Runs a CLI agent in a PPT-Eval-style workspace and hands in the deck it writes."""

    Options = CommandOptions

    @classmethod
    def launched_isolation(cls, options: CommandOptions) -> str:
        """What the CLI runs in for these options (asked by the harness for its row's ``isolation``,
        pptarena.run.jail.boundary.row_isolation): ``none`` with ``sandbox = "off"``, else the jail's
        level."""
        from pptarena.trust import isolation

        if options.sandbox == "off" or isolation.base_flags() is None:
            return "none"
        return isolation.BWRAP_LEVEL

    def argv(self, paths: dict[str, Path], task: Task) -> list[str]:
        """The command with its placeholders filled in."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        raw = shlex.split(opts.command) if isinstance(opts.command, str) else list(opts.command)
        values = {k: str(v) for k, v in paths.items()}
        values.update(task_id=task.id, prompt=DEFAULT_PROMPT)
        return [arg.format(**values) for arg in raw]

    def environment(self) -> dict[str, str]:
        """The child's environment: PATH/HOME/LANG/LC_ALL/TMPDIR (or, with ``inherit_env``, the
        harness's whole environment) plus ``env`` with secrets revealed."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        if opts.inherit_env:
            env = dict(os.environ)
        else:
            env = {k: os.environ[k] for k in MINIMAL_ENV if k in os.environ}
        for key, value in opts.env.items():
            env[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        return env

    def isolation_level(self) -> str:
        """``"bwrap"`` when the command will run jailed here, else ``"none"``."""
        return self.launched_isolation(self.options)  # type: ignore[arg-type]

    def edit(self, task: Task, workspace: Workspace) -> Prediction:
        """Prepare the workspace, run the command, check and hand in ``output/<task_id><suffix>``."""
        from pptarena.deck import DeckError, open_presentation
        from pptarena.trust.redact import redact_file
        from pptarena.trust.safeio import UnsafeFileError, copy_regular

        opts: CommandOptions = self.options  # type: ignore[assignment]
        root = workspace.dir / "cli"
        paths = workspace_paths(root, task, workspace.input_deck)
        argv = self.argv(paths, task)
        cwd = Path(opts.cwd or root)
        timeout = opts.timeout or (workspace.timeout * 0.95 if workspace.timeout else None)
        out_file, err_file = workspace.dir / "cli.stdout.txt", workspace.dir / "cli.stderr.txt"
        env = self.environment()
        level = self.isolation_level()
        workspace.log.write(
            "command_start",
            argv=argv,
            cwd=str(cwd),
            timeout=timeout,
            env_keys=sorted(opts.env),
            isolation=level,
            network=opts.network if level != "none" else "host",
        )
        if opts.mcp:
            deck_tools.require_sdk()
        started = time.monotonic()
        renders = 0
        with (
            deck_tools.render_service(workspace.renderer if opts.mcp else None, workspace.log) as service,
            out_file.open("wb") as out,
            err_file.open("wb") as err,
        ):
            entries = self.server_entries(root, paths, service.socket_path if service else None)
            if entries and "CODEX_HOME" not in opts.env:
                env["CODEX_HOME"] = str(root / deck_tools.CODEX_DIR)
            if entries:
                workspace.log.write(
                    "command_mcp",
                    servers=[e.name for e in entries],
                    configs=list(deck_tools.CONFIG_FILES),
                    render_service=service is not None,
                )
            if level == "none":
                prepare_workspace(root, task, workspace.input_deck, opts.customization_dir)
                if entries:
                    deck_tools.write_configs(root, entries)
                code, timed_out = self._run_plain(argv, cwd, env, out, err, timeout)
            else:
                code, timed_out = self._run_jailed(
                    task, workspace, argv, cwd, env, out, err, timeout, entries, service
                )
            renders = service.renders if service else 0
        duration = round(time.monotonic() - started, 3)
        tools = self._tool_counts(root, workspace, renders) if entries else None
        workspace.log.write(
            "command_end",
            returncode=code,
            timed_out=timed_out,
            duration_s=duration,
            stdout=str(out_file),
            stderr=str(err_file),
        )
        for f in (out_file, err_file):
            redact_file(f)
        expected = paths["output"]
        if timed_out and not _regular(expected):
            raise AgentError(f"command timed out after {timeout:.0f}s without writing {expected}")
        if not _regular(expected):
            try:
                found = sorted(p.name for p in paths["output_dir"].iterdir())
            except OSError:
                found = []
            raise AgentError(
                f"command did not write the output deck {expected} (exit status {code}; output/ holds "
                f"{', '.join(found) or 'nothing'}); stderr tail: {_tail(err_file)[-500:]}"
            )
        try:
            copy_regular(expected, workspace.output_deck, opts.max_output_mb * 1024 * 1024)
        except (UnsafeFileError, OSError) as exc:
            raise AgentError(f"the command's output deck cannot be taken: {exc}") from None
        try:
            open_presentation(workspace.output_deck)
        except DeckError as exc:
            raise AgentError(f"the command's output deck does not open: {exc}") from None
        notes = (
            f"command exited with status {code}"
            if not timed_out
            else "command timed out after writing its output"
        )
        metadata = {
            "returncode": code,
            "timed_out": timed_out,
            "duration_s": duration,
            "argv0": argv[0],
            "isolation": level,
        }
        if tools is not None:
            metadata["tools"] = tools
        return Prediction(path=workspace.output_deck, notes=notes, metadata=metadata)

    def server_entries(
        self, root: Path, paths: dict[str, Path], socket: Path | None
    ) -> list[deck_tools.ServerEntry]:
        """The MCP servers written into the CLI's configs: the deck tools (``mcp = true``) and
        ``mcp_servers``."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        entries = [deck_tools.deck_server(root, paths, socket)] if opts.mcp else []
        entries += [deck_tools.ServerEntry(s.name, list(s.command), dict(s.env)) for s in opts.mcp_servers]
        return entries

    def _tool_counts(self, root: Path, workspace: Workspace, renders: int) -> dict[str, object]:
        """``Prediction.metadata["tools"]``: the servers the CLI had, the deck tools' calls as the jail
        reported them (copied into the pair's log) and the renders the host service did."""
        from pptarena.mcp.servers import server_record

        opts: CommandOptions = self.options  # type: ignore[assignment]
        calls = deck_tools.read_tool_log(root, workspace.log) if opts.mcp else {}
        servers = [deck_tools.deck_server_record()] if opts.mcp else []
        servers += [server_record(s) for s in opts.mcp_servers]
        tools = {"servers": servers, "calls": dict(sorted(calls.items())), "renders": renders}
        workspace.log.write("mcp_tools", **tools)
        return tools

    @staticmethod
    def _run_plain(
        argv: list[str], cwd: Path, env: dict[str, str], out: object, err: object, timeout: float | None
    ) -> tuple[int | None, bool]:
        """The command without a jail (``sandbox = "off"`` or no bubblewrap here)."""
        try:
            return run_in_session(argv, cwd=cwd, env=env, stdout=out, stderr=err, timeout=timeout)  # type: ignore[arg-type]
        except FileNotFoundError as exc:  # the program is missing here: infra_error, not the agent's failure
            raise ComponentUnavailable(f"command not found: {argv[0]!r} ({exc.strerror})") from None
        except OSError as exc:
            raise ComponentUnavailable(f"cannot start command {argv[0]!r}: {exc}") from None

    def _shown(self, workspace: Workspace) -> Shown:
        """What every jail of this command shows already (system folders, the harness's interpreter) and
        what is never shown automatically: the harness cache and the run folder."""
        from pptarena.run import default_cache_dir
        from pptarena.trust import isolation

        view = isolation.python_view()
        caches = {Path(self.context.cache_dir), default_cache_dir()}
        protected = {cache.resolve(): "the harness cache" for cache in caches}
        protected[run_folder(workspace.dir).resolve()] = "the run folder"
        return Shown(
            folders=(
                *(Path(d) for d in (*isolation.SYSTEM_DIRS, *isolation.ETC_PATHS)),
                *(p for p in view.read_only if p.is_dir()),
            ),
            files=tuple(p for p in view.read_only if not p.is_dir()),
            masked=view.masked,
            protected=protected,
        )

    def _follow_program(self, follower: ProgramFollower, argv0: str, cwd: Path, root: Path) -> None:
        """Follow the command's program on the host (:mod:`.programs`), unless it comes with the
        workspace (a relative path, or a name the customization folder holds)."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        local = [Path.cwd(), cwd, *filter(None, [opts.customization_dir])]
        in_workspace = any((base / argv0).exists() for base in local)
        if "/" in argv0 and not os.path.isabs(argv0):
            if not cwd.is_relative_to(root) and (cwd / argv0).exists():
                follower.command(str(cwd / argv0))
            elif not (argv0.startswith("./") or in_workspace):
                raise UnshownProgram(f"command not found: {argv0!r}")
            return
        if "/" not in argv0 and follower.find(argv0) is None and in_workspace:
            return  # (the workspace is made inside the jail: a program there)
        follower.command(argv0)

    def _program_view(
        self, argv: list[str], cwd: Path, root: Path, env: dict[str, str], workspace: Workspace
    ) -> ProgramView:
        """What the jailed command is shown besides the system and the interpreter: ``read_only_paths``,
        files named in the command, ``cwd`` when outside the workspace, and its program with whatever
        it leads to (links, virtualenv, installation, ``#!`` interpreters: :mod:`.programs`)."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        harness_venv = Path(sys.prefix) if sys.prefix != sys.base_prefix else None
        follower = ProgramFollower(self._shown(workspace), env.get("PATH") or os.defpath, harness_venv)
        for path in opts.read_only_paths:
            follower.explicit(Path(path).expanduser())
        # files named in the command (a script, a config) are the user's choice: readable inside
        for arg in argv[1:]:
            if arg.startswith("/") and Path(arg).is_file():
                follower.explicit(Path(arg))
        if cwd != root and not cwd.is_relative_to(root):
            follower.explicit(cwd)
        for server in opts.mcp_servers:  # they run in the jail too: their programs are shown
            for arg in server.command[1:]:
                if arg.startswith("/") and Path(arg).is_file():
                    follower.explicit(Path(arg))
        try:
            self._follow_program(follower, argv[0], cwd, root)
            for server in opts.mcp_servers:
                self._follow_program(follower, server.command[0], cwd, root)
        except UnshownProgram as exc:
            raise ComponentUnavailable(str(exc)) from None
        return follower.finish()

    def _run_jailed(
        self,
        task: Task,
        workspace: Workspace,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        out: object,
        err: object,
        timeout: float | None,
        entries: list[deck_tools.ServerEntry] | None = None,
        service: object | None = None,
    ) -> tuple[int | None, bool]:
        """The command in its jail (:mod:`.jail`); its workspace is copied out to ``cli/`` at the end.
        ``entries`` (MCP servers) are written into its configs; with the deck tools the jail also
        shows the interpreter and distributions their server needs and the render service's folder."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        root = workspace.dir / "cli"
        if opts.network == "open" and slirp_executable() is None:
            raise ComponentUnavailable(
                'network = "open" needs slirp4netns (Debian/Ubuntu package slirp4netns; scripts/setup.sh '
                'installs it), or use network = "allowlist" with allow_hosts'
            )
        env["HOME"] = str(root)
        env["TMPDIR"] = "/tmp"
        if root.is_symlink() or (root.exists() and not root.is_dir()):
            root.unlink()
        elif root.exists():  # an earlier attempt's copy (rmtree never follows links inside)
            shutil.rmtree(root)

        def prepare(stage: Path) -> None:
            prepare_workspace(stage, task, workspace.input_deck, opts.customization_dir)
            if entries:
                deck_tools.write_configs(stage, entries)

        view = self._program_view(argv, cwd, root, env, workspace)
        extra: list[Path] = deck_tools.server_binds() if opts.mcp else []
        socket = getattr(service, "socket_path", None)
        if socket is not None:
            extra.append(Path(socket).parent)
        workspace.log.write(
            "command_program",
            shown=[str(p) for p in view.binds],
            links={str(p): t for p, t in view.links.items()},
            followed=[str(p) for p in view.chain],
        )

        spec = cli_jail.JailSpec(
            argv=argv,
            workspace=root,
            prepare=prepare,
            cwd=cwd,
            env=env,
            read_only=[*view.binds, *(p for p in extra if p not in view.binds)],
            links={str(path): target for path, target in view.links.items()},
            timeout=timeout,
            network=opts.network,
            allow=allow_entries(
                opts.allow_hosts,
                [v.get_secret_value() if isinstance(v, SecretStr) else v for v in opts.env.values()],
            ),
            workspace_mb=opts.workspace_mb,
            max_processes=opts.max_processes,
            memory_mb=opts.memory_mb,
            output_mb=opts.max_output_mb,
            keep_mb=opts.keep_mb,
            log_mb=opts.log_mb,
        )
        outcome = cli_jail.run(spec, out, err)  # type: ignore[arg-type]
        egress = outcome.egress
        workspace.log.write(
            "command_jail",
            limits=outcome.limits,
            network=opts.network,
            allowed_hosts=[f"{e.host}:{'/'.join(map(str, e.ports))}" for e in spec.allow],
            egress_allowed=dict(egress.allowed) if egress else {},
            egress_refused=dict(egress.refused) if egress else {},
            copied=(
                {k: v for k, v in vars(outcome.copy).items() if k not in ("skipped", "examples")}
                if outcome.copy
                else {}
            ),
            skipped=outcome.copy.skipped if outcome.copy else {},
            skipped_examples=outcome.copy.examples if outcome.copy else [],
            error=outcome.error,
        )
        if outcome.start_error:
            raise ComponentUnavailable(
                f"cannot start command {argv[0]!r} in its jail: {outcome.start_error}; " + start_hint(view)
            )
        if outcome.error and not outcome.started:
            raise ComponentUnavailable(
                f"the command's jail could not start: {outcome.error}; stderr tail: "
                + _tail(workspace.dir / "cli.stderr.txt")[-500:]
            )
        if outcome.error and not outcome.timed_out:
            raise AgentError(
                f"the command's jail failed: {outcome.error}; stderr tail: "
                + _tail(workspace.dir / "cli.stderr.txt")[-500:]
            )
        return outcome.returncode, outcome.timed_out
