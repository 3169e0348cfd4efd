"""What a CLI's program needs its jail to show, found on the host: :class:`ProgramFollower`.

The jail shows the system folders, the harness's interpreter, ``read_only_paths`` and the files the
command names. A CLI's program often lives elsewhere and leads further: a virtualenv's ``bin/python``
links to pyenv's, conda's or uv's interpreter, whose installation holds the standard library; an npm
global links into ``node_modules``; a script's ``#!`` line names its interpreter, or runs
``#!/usr/bin/env python3`` through the CLI's PATH. The follower walks all of that and says what to
show, read-only and at the same paths (:class:`ProgramView`):

- every symlink on the way (of the program, of a folder on its path, of each interpreter) is made
  again in the jail, unless a folder the jail shows already holds it;
- a file in a virtualenv (``pyvenv.cfg`` beside its folder) shows the virtualenv (its site-packages)
  and the installation its ``pyvenv.cfg`` ``home`` names (that interpreter's ``sys.base_prefix``,
  holding ``lib/pythonX.Y``);
- a file in a Python installation's ``bin`` shows that installation; a file under ``node_modules``
  shows its package's folder; any other file is shown alone, never its siblings;
- a ``#!`` interpreter is followed the same way; ``env NAME`` runs the first NAME of the CLI's PATH
  (a version manager's ``shims`` folder is skipped: a shim needs the manager's whole tree, and the
  jail's ``env`` skips folders it does not show);
- the folder the command names its program in is shown too, unless it is a broad one (``/tmp``, a
  home folder) or harness data.

Nothing inside the harness cache, the run folder or a dataset's task folder (one holding
``task.toml``), and no folder holding one, is shown this way: :class:`UnshownProgram` then names the
path to add to ``read_only_paths`` (the user's word shows it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINKS = 40  # symlinks followed for one path (the kernel's limit): more is a loop
MAX_INTERPRETERS = 4  # nested #! levels followed
TASK_FILE = "task.toml"  # a folder dataset's task folder holds one
SHIMS = "shims"  # a version manager's folder of shims (pyenv, rbenv, asdf)
# folders never shown for a program in them (the program alone is): too much beside it
BROAD = tuple("/ /tmp /var/tmp /dev/shm /home /root /run /mnt /media /srv /opt /var".split())


class UnshownProgram(Exception):
    """What a program needs cannot be shown in its jail automatically; the message says what to add."""


def under(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it (paths compared as written)."""
    return path == folder or path.is_relative_to(folder)


def broad(folder: Path) -> bool:
    """Whether ``folder`` is too broad to show for a program in it (``/tmp``, a home folder, ``/``...)."""
    home = Path.home()
    return str(folder) in BROAD or folder == home or under(home, folder)


def dataset_task_folder(path: Path) -> Path | None:
    """The task folder of a folder dataset (holding ``task.toml``) that ``path`` is in, if any."""
    for folder in [path, *path.parents]:
        if broad(folder):
            return None
        if (folder / TASK_FILE).is_file():
            return folder
    return None


def holds_task_folders(folder: Path) -> bool:
    """Whether ``folder`` is a folder dataset's root (a folder of its holds ``task.toml``)."""
    try:
        return folder.is_dir() and any((child / TASK_FILE).is_file() for child in folder.iterdir())
    except OSError:
        return False


def harness_data(path: Path, protected: dict[Path, str]) -> str | None:
    """What harness data ``path`` is in or holds (a phrase for an error message), or None."""
    for root, what in protected.items():
        if under(path, root):
            return f"inside {what} ({root})"
        if under(root, path):
            return f"a folder holding {what} ({root})"
    task = dataset_task_folder(path)
    if task is not None:
        return f"inside a dataset's task folder ({task} holds {TASK_FILE})"
    if holds_task_folders(path):
        return f"a dataset's folder (its folders hold {TASK_FILE})"
    return None


def venv_of(path: Path) -> Path | None:
    """The virtualenv ``path`` is an interpreter or script of (``pyvenv.cfg`` in its folder's parent
    or in its folder, where Python looks for it), or None."""
    for folder in (path.parent.parent, path.parent):
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def venv_home(venv: Path) -> Path | None:
    """The ``home`` of a virtualenv's ``pyvenv.cfg``: the folder of its base interpreter."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home" and os.path.isabs(value.strip()):
            return Path(value.strip())
    return None


def installation_of(bin_folder: Path) -> Path | None:
    """The Python installation (prefix) whose ``bin`` is ``bin_folder``: it holds ``lib/pythonX.Y/os.py``."""
    prefix = bin_folder.parent
    if bin_folder.name != "bin" or prefix == bin_folder:
        return None
    return prefix if any((prefix / "lib").glob("python*/os.py")) else None


def package_of(path: Path) -> Path | None:
    """The npm package folder (``node_modules/<name>`` or ``node_modules/@scope/<name>``, the outermost)
    holding ``path``, or None."""
    parts = path.parts
    if "node_modules" not in parts:
        return None
    at = parts.index("node_modules")
    end = at + (3 if len(parts) > at + 1 and parts[at + 1].startswith("@") else 2)
    return Path(*parts[:end]) if len(parts) > end else None


def shebang(path: Path) -> list[str]:
    """The words of ``path``'s ``#!`` line (the interpreter, then its argument split on blanks), or []."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").split()


def env_command(args: list[str]) -> str | None:
    """The program ``env`` runs with ``args`` (its options and ``NAME=value`` settings skipped), or None."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-u", "--unset", "-C", "--chdir"):
            skip = True
        elif not (arg.startswith("-") or "=" in arg):
            return arg
    return None


@dataclass(frozen=True)
class Shown:
    """What every jail of the command shows already, and what must never be shown automatically.

    :param folders: shown whole at their path (system folders; a link among them is made as a link).
    :param files: shown at their path with the content they resolve to (the harness's interpreter):
        a link there is no link inside the jail, so it is not followed.
    :param masked: folders under those hidden by an empty tmpfs (the harness's site-packages).
    :param protected: folder -> what it is (the harness cache, the run folder).
    """

    folders: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()
    protected: dict[Path, str] = field(default_factory=dict)

    def covers(self, path: Path) -> bool:
        """Whether the jail shows ``path`` already (the deepest shown folder holding it is below any mask)."""
        if path in self.files:
            return True
        depth = max((len(f.parts) for f in self.folders if under(path, f)), default=0)
        return depth > max((len(m.parts) for m in self.masked if under(path, m)), default=0)


@dataclass
class ProgramView:
    """What to show of a program: host paths bound read-only at the same path, links to make
    (path inside -> target), and the files followed (the program's, then each interpreter's)."""

    binds: list[Path] = field(default_factory=list)
    links: dict[Path, str] = field(default_factory=dict)
    chain: list[Path] = field(default_factory=list)

    def needs(self) -> Path | None:
        """The folder to name for ``read_only_paths`` when the program still does not start: the
        installation of the last file followed (the innermost interpreter), i.e. its folder, or the
        folder above when that is a ``bin``."""
        if not self.chain:
            return None
        folder = self.chain[-1].parent
        return folder.parent if folder.name == "bin" and folder.parent != folder else folder


class ProgramFollower:
    """Follows programs on the host and collects what their jail must show (module doc)."""

    def __init__(self, shown: Shown, path_env: str, harness_venv: Path | None = None):
        self.shown = shown
        self.path_env = path_env
        self.harness_venv = harness_venv  # the harness's own virtualenv: shown as the harness decides
        self.view = ProgramView()
        self.met: dict[Path, str] = {}  # every symlink met: path -> its target
        self.walked: list[Path] = []  # the symlinks met by the last real_path

    # ------------------------------------------------------------------ what is shown

    def covers(self, path: Path) -> bool:
        """Whether the jail shows ``path`` already or through a bind chosen so far."""
        return self.shown.covers(path) or any(under(path, b) for b in self.view.binds)

    def explicit(self, path: Path) -> None:
        """Show ``path``, named by the user (``read_only_paths``, a file of the command): its real
        path and the links leading there; never refused."""
        if not os.path.lexists(path):
            return
        real = self.real_path(path)
        if real.exists() and not self.covers(real):
            self.view.binds.append(real)

    def bind(self, path: Path, named: Path) -> None:
        """Show ``path`` (needed by the program ``named``) unless shown already; refuse harness data."""
        if self.covers(path):
            return
        reason = harness_data(path, self.shown.protected)
        if reason is not None:
            raise UnshownProgram(
                f"{named} needs {path}, which is {reason}: harness data is never shown to a CLI "
                f"automatically; add {path} to read_only_paths to show it anyway, or install the "
                "program elsewhere"
            )
        self.view.binds.append(path)

    def finish(self) -> ProgramView:
        """The view: binds inside another bind dropped, and the links met that nothing shown holds."""
        binds = list(dict.fromkeys(self.view.binds))
        self.view.binds = [b for b in binds if not any(b != o and under(b, o) for o in binds)]
        self.view.links = {p: t for p, t in self.met.items() if not self.covers(p)}
        return self.view

    # ------------------------------------------------------------------ following

    def real_path(self, path: Path) -> Path:
        """``path`` with every symlink on the way followed, like :func:`os.path.realpath`; each link
        met is recorded (the jail makes it again)."""
        self.walked = []
        return self._walk(path if path.is_absolute() else Path.cwd() / path)

    def _walk(self, path: Path) -> Path:
        """:meth:`real_path` of an absolute path, one component at a time."""
        current = Path("/")
        for part in path.parts[1:]:
            if part == "..":
                current = current.parent
                continue
            step = current / part
            if not step.is_symlink():
                current = step
                continue
            if len(self.walked) >= MAX_LINKS:
                raise UnshownProgram(f"{path}: too many levels of symbolic links")
            target = os.readlink(step)
            self.met[step] = target
            self.walked.append(step)
            current = self._walk(current / target)
        return current

    def find(self, name: str) -> Path | None:
        """The first ``name`` on the CLI's PATH that can run in the jail (a shim is skipped unless shown)."""
        for folder in self.path_env.split(os.pathsep):
            candidate = Path(folder) / name
            if not (os.path.isabs(folder) and candidate.is_file() and os.access(candidate, os.X_OK)):
                continue
            if Path(folder).name == SHIMS and not self.covers(candidate):
                continue
            return candidate
        return None

    def command(self, argv0: str) -> None:
        """Show the command's program (a path, or a name looked up on the CLI's PATH) and its folder."""
        named = Path(argv0) if "/" in argv0 else self.find(argv0)
        if named is None or not os.path.lexists(named):
            raise UnshownProgram(f"command not found: {argv0!r}")
        if named in self.shown.files:
            return
        self.program(named, depth=0)
        folder = self.real_path(named.parent)
        if not (broad(folder) or harness_data(folder, self.shown.protected) or self.covers(folder)):
            self.view.binds.append(folder)

    def program(self, named: Path, depth: int) -> None:
        """Show the program ``named`` (its links, its file or tree, its virtualenv) and its interpreter."""
        if named in self.shown.files:
            return
        real = self.real_path(named)
        if not real.is_file():
            raise UnshownProgram(f"{named} leads to {real}, which is not a file on this machine")
        self.view.chain.append(real)
        places = [named, *self.walked, real]
        for venv in dict.fromkeys(v for v in map(venv_of, places) if v is not None):
            self.show_venv(venv, named)
        self.show_file(real, named)
        for interpreter in self.interpreters(real):
            if depth >= MAX_INTERPRETERS:
                raise UnshownProgram(f"{named}: more than {MAX_INTERPRETERS} nested #! interpreters")
            self.program(interpreter, depth + 1)

    def show_file(self, real: Path, named: Path) -> None:
        """Show a program's real file: its npm package, its Python installation, or the file alone."""
        if self.covers(real):
            return
        tree = package_of(real) or installation_of(real.parent)
        self.bind(tree or real, named)

    def show_venv(self, venv: Path, named: Path) -> None:
        """Show a virtualenv and the installation its ``pyvenv.cfg`` ``home`` names."""
        if venv == self.harness_venv:
            return
        self.bind(venv, named)
        home = venv_home(venv)
        if home is None:
            return
        real_home = self.real_path(home)
        if self.covers(real_home):
            return
        prefix = installation_of(real_home)
        if prefix is None:
            raise UnshownProgram(
                f"the virtualenv {venv} names {home} as its base interpreter's folder (pyvenv.cfg "
                f"home), where no Python installation was recognised (no lib/pythonX.Y/os.py in "
                f"{real_home.parent}); add {real_home.parent} to read_only_paths"
            )
        self.bind(prefix, named)

    def interpreters(self, real: Path) -> Iterable[Path]:
        """The programs ``real``'s ``#!`` line runs: its interpreter and, for ``env NAME``, NAME on the
        CLI's PATH."""
        words = shebang(real)
        if not words or not os.path.isabs(words[0]):
            return []
        interpreter = Path(words[0])
        name = env_command(words[1:]) if interpreter.name == "env" else None
        if name is None:
            return [interpreter]
        found = self.find(name) if "/" not in name else Path(name)
        if found is None:
            raise UnshownProgram(
                f"{real} runs {name!r} through env (#! line), and no folder of the CLI's PATH holds it "
                f"(PATH={self.path_env}); set PATH in the command's env"
            )
        return [interpreter, found]
