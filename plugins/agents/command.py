"""The ``command`` agent: runs any CLI agent (Claude Code, Codex CLI, aider, a script).

The workspace follows PPT-Eval's CLI protocol, inside the task folder::

    cli/                      (the command's working directory unless ``cwd`` is set)
      <customization_dir>/*   copied first, when given (reserved names skipped)
      TASK.md                 "# Task: <id>", "## Goal", the instruction, a pointer to the I/O contract
      OUTPUT_INSTRUCTIONS.md  input path, the exact output path, "only the requested changes"
      inputs/<deck name>      a copy of the input deck
      output/                 empty; the agent must write output/<task_id><suffix>

``command`` is a list of arguments or a string split like a shell would (no
shell runs). Placeholders in every argument: ``{task_md}``, ``{input}``,
``{output_dir}``, ``{output}``, ``{workspace}``, ``{task_id}``, ``{prompt}`` (the
default prompt: read TASK.md and OUTPUT_INSTRUCTIONS.md, write the output,
exit). ``env`` adds variables (values may be ``{ env = "VAR" }`` secrets; they
never reach a log). stdout and stderr go to ``cli.stdout.txt`` and
``cli.stderr.txt`` in the task folder. The command runs in its own process
group, killed on ``timeout``.

With ``sandbox = "auto"`` (the default) and bubblewrap usable (:mod:`pptarena.isolation`), the
command runs in its own PID, mount and IPC namespaces with the network kept (for its model API):
it sees the system folders, the Python installation, the folder of its program, files named by
absolute path in the command, the ``read_only_paths`` you list and its workspace (writable, also
its HOME); the run folder, the cache, the dataset and your home stay hidden, and the whole
process tree dies on timeout. The
output deck is read without following links, size-capped. The result's metadata records the
isolation in force. No output deck → :class:`AgentError` naming the
expected path; a program that cannot be started (not found, not executable) →
:class:`ComponentUnavailable` (recorded as ``infra_error``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

import pptarena
from pptarena.procs import run_in_session
from pptarena.types import AgentError, Component, ComponentUnavailable, Options, Prediction, Task, Workspace

RESERVED = ("TASK.md", "OUTPUT_INSTRUCTIONS.md", "inputs", "output")
DEFAULT_PROMPT = (
    "Read TASK.md and OUTPUT_INSTRUCTIONS.md in the current directory, do the task, write the edited deck "
    "to the exact output path given there, then exit."
)
PLACEHOLDERS = ("task_md", "input", "output_dir", "output", "workspace", "task_id", "prompt")
TAIL_CHARS = 2000


class CommandOptions(Options):
    """Options of the ``command`` agent."""

    command: list[str] | str = Field(
        description="the CLI to run; placeholders {task_md} {input} {output_dir} ..."
    )
    env: dict[str, str | SecretStr] = Field(default_factory=dict, description="extra environment variables")
    inherit_env: bool = Field(
        True, description="start from this process's environment (else PATH/HOME/LANG only)"
    )
    timeout: float | None = Field(None, gt=0, description="seconds; default: the task timeout minus 5%")
    cwd: Path | None = Field(None, description="working directory; default: the CLI workspace folder")
    customization_dir: Path | None = Field(
        None, description="copied into the workspace first (e.g. CLAUDE.md)"
    )
    sandbox: Literal["auto", "off"] = Field(
        "auto", description="auto: run under bubblewrap (network kept) where it works; off: no sandbox"
    )
    read_only_paths: list[Path] = Field(
        default_factory=list,
        description="extra host paths the sandboxed command may read (its install, config)",
    )
    max_output_mb: int = Field(300, gt=0, description="largest output deck accepted, in MB")

    @field_validator("command")
    @classmethod
    def _command_valid(cls, value: list[str] | str) -> list[str] | str:
        argv = shlex.split(value) if isinstance(value, str) else list(value)
        if not argv or not argv[0].strip():
            raise ValueError("command is empty")
        for arg in argv:
            try:
                arg.format(**{p: "" for p in PLACEHOLDERS})
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"command argument {arg!r}: bad placeholder ({exc}); known: "
                    + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                    + " (write {{ }} for literal braces)"
                ) from None
        return value


def task_markdown(task_id: str, instruction: str) -> str:
    """TASK.md as PPT-Eval writes it."""
    return (
        f"# Task: {task_id}\n\n## Goal\n\n{instruction.strip()}\n\n"
        "## Input and output\n\n"
        "See OUTPUT_INSTRUCTIONS.md for where the deck is and where the result must go.\n"
    )


def output_instructions(input_rel: str, output_rel: str) -> str:
    """OUTPUT_INSTRUCTIONS.md: the I/O contract."""
    return (
        "# Output instructions\n\n"
        f"- Input deck: `{input_rel}` (read-only: copy it before editing).\n"
        f"- Save the edited deck **exactly** as `{output_rel}`.\n"
        "- Make only the requested changes; keep everything else as it is.\n"
        "- Slide numbers are 1-based.\n"
        "- When the file is written, exit.\n"
    )


def prepare_workspace(
    root: Path, task: Task, input_deck: Path, customization: Path | None
) -> dict[str, Path]:
    """Lay out the CLI workspace; return its paths (workspace, task_md, input, output_dir, output)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if customization is not None:
        if not customization.is_dir():
            raise AgentError(f"customization_dir {customization} is not a folder")
        for item in customization.iterdir():
            if item.name in RESERVED:
                continue
            if item.is_dir():
                shutil.copytree(item, root / item.name, symlinks=True)
            else:
                shutil.copy2(item, root / item.name)
    (root / "inputs").mkdir()
    (root / "output").mkdir()
    name = task.original.name or input_deck.name
    deck = root / "inputs" / name
    shutil.copyfile(input_deck, deck)
    suffix = Path(name).suffix or ".pptx"
    safe_id = "".join(c if c.isalnum() or c in "-_." else "_" for c in task.id) or "task"
    output = root / "output" / f"{safe_id}{suffix}"
    (root / "TASK.md").write_text(task_markdown(task.id, task.instruction), encoding="utf-8")
    (root / "OUTPUT_INSTRUCTIONS.md").write_text(
        output_instructions(f"inputs/{name}", f"output/{output.name}"), encoding="utf-8"
    )
    return {
        "workspace": root,
        "task_md": root / "TASK.md",
        "input": deck,
        "output_dir": root / "output",
        "output": output,
    }


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()[-TAIL_CHARS:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


class CommandAgent(Component):
    """Runs a CLI agent in a PPT-Eval-style workspace and hands in the deck it writes."""

    Options = CommandOptions

    def argv(self, paths: dict[str, Path], task: Task) -> list[str]:
        """The command with its placeholders filled in."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        raw = shlex.split(opts.command) if isinstance(opts.command, str) else list(opts.command)
        values = {k: str(v) for k, v in paths.items()}
        values.update(task_id=task.id, prompt=DEFAULT_PROMPT)
        return [arg.format(**values) for arg in raw]

    def environment(self) -> dict[str, str]:
        """The child's environment: inherited (or minimal) plus ``env`` with secrets revealed."""
        opts: CommandOptions = self.options  # type: ignore[assignment]
        if opts.inherit_env:
            env = dict(os.environ)
        else:
            env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR") if k in os.environ}
        for key, value in opts.env.items():
            env[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        return env

    def edit(self, task: Task, workspace: Workspace) -> Prediction:
        """Prepare the workspace, run the command, check and hand in ``output/<task_id><suffix>``."""
        from pptarena.deck import DeckError, open_presentation

        opts: CommandOptions = self.options  # type: ignore[assignment]
        paths = prepare_workspace(workspace.dir / "cli", task, workspace.input_deck, opts.customization_dir)
        argv = self.argv(paths, task)
        cwd = opts.cwd or paths["workspace"]
        timeout = opts.timeout or (workspace.timeout * 0.95 if workspace.timeout else None)
        out_file, err_file = workspace.dir / "cli.stdout.txt", workspace.dir / "cli.stderr.txt"
        env = self.environment()
        run_argv, level = self.jailed(argv, paths["workspace"], Path(cwd), env)
        workspace.log.write(
            "command_start",
            argv=argv,
            cwd=str(cwd),
            timeout=timeout,
            env_keys=sorted(opts.env),
            isolation=level,
        )
        started = time.monotonic()
        try:
            with out_file.open("wb") as out, err_file.open("wb") as err:
                code, timed_out = run_in_session(
                    run_argv, cwd=cwd, env=env, stdout=out, stderr=err, timeout=timeout
                )
        except FileNotFoundError as exc:  # the program is missing here: infra_error, not the agent's failure
            raise ComponentUnavailable(f"command not found: {argv[0]!r} ({exc.strerror})") from None
        except OSError as exc:
            raise ComponentUnavailable(f"cannot start command {argv[0]!r}: {exc}") from None
        duration = round(time.monotonic() - started, 3)
        workspace.log.write(
            "command_end",
            returncode=code,
            timed_out=timed_out,
            duration_s=duration,
            stdout=str(out_file),
            stderr=str(err_file),
        )
        from pptarena.redact import redact_file

        for f in (out_file, err_file):
            redact_file(f)
        expected = paths["output"]
        if timed_out and not _regular(expected):
            raise AgentError(f"command timed out after {timeout:.0f}s without writing {expected}")
        if not _regular(expected):
            found = sorted(p.name for p in paths["output_dir"].iterdir())
            raise AgentError(
                f"command did not write the output deck {expected} (exit status {code}; output/ holds "
                f"{', '.join(found) or 'nothing'}); stderr tail: {_tail(err_file)[-500:]}"
            )
        from pptarena.safeio import UnsafeFileError, copy_regular

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
        return Prediction(
            path=workspace.output_deck,
            notes=notes,
            metadata={
                "returncode": code,
                "timed_out": timed_out,
                "duration_s": duration,
                "argv0": argv[0],
                "isolation": level,
            },
        )

    def jailed(
        self, argv: list[str], workspace: Path, cwd: Path, env: dict[str, str]
    ) -> tuple[list[str], str]:
        """``argv`` wrapped in bubblewrap (network kept) when ``sandbox = "auto"`` and it works here."""
        from pptarena import isolation

        opts: CommandOptions = self.options  # type: ignore[assignment]
        if opts.sandbox == "off" or isolation.base_flags() is None:
            return argv, "none"
        visible = [Path(p).expanduser() for p in opts.read_only_paths]
        program = shutil.which(argv[0], path=env.get("PATH"))
        if program:
            visible += [Path(program).parent, Path(program).resolve().parent]
        elif not Path(argv[0]).exists() and not (Path(cwd) / argv[0]).exists():
            raise ComponentUnavailable(f"command not found: {argv[0]!r}")
        # files named in the command (a script, a config) are the user's choice: readable inside
        visible += [Path(a) for a in argv[1:] if a.startswith("/") and Path(a).is_file()]
        if cwd.resolve() != workspace.resolve():
            visible.append(cwd)
        env["HOME"] = str(workspace)
        env["TMPDIR"] = "/tmp"
        jail = isolation.Jail(
            workdir=workspace,
            workdir_host=workspace,
            read_only=[p for p in visible if p.exists()],
            network=True,
            tmpfs_mb=512,
        )
        command = isolation.command(jail, argv)
        at = command.index("--chdir")
        command[at + 1] = str(cwd)
        return command, isolation.BWRAP_LEVEL


def _regular(path: Path) -> bool:
    """True when ``path`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


@pptarena.hookimpl
def register_agents(register: Any) -> None:
    """Register the ``command`` agent."""
    register("command", CommandAgent)
