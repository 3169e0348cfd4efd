"""The GUI agent's environment: LibreOffice Impress on a private Xvfb display, driven by xdotool.

:class:`ImpressScreen` owns everything it starts (Xvfb, soffice and soffice's
children). Children stay in the caller's process group, so a runner that kills
the worker's process group on timeout also kills them; :meth:`ImpressScreen.close`
(called from ``try/finally`` and, as a last resort, from ``atexit``) stops them
on every other path.

There is no window manager: new dialogs are given the keyboard focus by
:meth:`ImpressScreen.settle` (what a desktop's window manager would do), so
keyboard-only agents can work with dialogs too.

Why it is long: it holds both the screen (Xvfb, Impress and its profile, xdotool actions,
screenshots, Save As) and generic process bookkeeping read from ``/proc`` (``_children_map``,
``_descendants``, ``_pids_with_arg``, ``_alive``, ``_stop_pids``) that lets
:meth:`ImpressScreen.close` stop every soffice child; that bookkeeping could move to its own module
(not done yet).
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from pptarena.trust import safeio
from pptarena.types import ComponentUnavailable, InfraError

from .actions import Action, Screen
from .impress_jail import MAX_DECK_BYTES, jailed_impress, office_env, saved_package

REQUIRED_PROGRAMS = {"Xvfb": "xvfb", "xdotool": "xdotool", "soffice": "libreoffice-impress"}
"""Program → the Debian package that provides it."""

_PROFILE_SETTINGS = {
    # never ask "Use PowerPoint Format / Use ODF Format" when saving a .pptx
    ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat"): "false",
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay"): "false",
    ("/org.openoffice.Office.Common/Misc", "FirstRun"): "false",
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled"): "false",
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled"): "false",
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion"): "99.0",
    # the model drives a full office program: no macros (they could run shell commands). These are
    # only the user layer's defaults: lockdown.py's finalized layer is what the user cannot change
    ("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution"): "true",
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel"): "3",
}
_LIVE: weakref.WeakSet[ImpressScreen] = weakref.WeakSet()


class ScreenError(InfraError):
    """The virtual screen or Impress failed (not the model's fault)."""


class ActionFailed(RuntimeError):
    """xdotool refused an action (reported back to the model, not fatal)."""


def check_programs() -> None:
    """Raise :class:`ComponentUnavailable` naming the Debian packages to install when a program is missing."""
    missing = {prog: pkg for prog, pkg in REQUIRED_PROGRAMS.items() if shutil.which(prog) is None}
    if missing:
        names = ", ".join(sorted(missing))
        pkgs = " ".join(sorted(set(missing.values())))
        raise ComponentUnavailable(
            f"the gui agent needs {names} on PATH; on Debian/Ubuntu install them with: apt-get install {pkgs}"
        )
    try:
        from PIL import features
    except ImportError as exc:  # pragma: no cover - Pillow is a core dependency
        raise ComponentUnavailable("the gui agent needs Pillow (pip install Pillow)") from exc
    if not features.check("xcb"):
        raise ComponentUnavailable("the gui agent needs Pillow built with XCB support for screenshots")


def _profile_xml() -> str:
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for (path, name), value in _PROFILE_SETTINGS.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )


def _children_map() -> dict[int, list[int]]:
    """ppid → pids, read from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _descendants(pid: int) -> list[int]:
    tree = _children_map()
    out, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _pids_with_arg(needle: str) -> list[int]:
    """Processes whose command line contains ``needle`` (our unique profile URL)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes().decode("utf-8", "replace"):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    try:  # a zombie counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def _stop_pids(pids: list[int], grace: float) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL what is left."""
    pids = [p for p in dict.fromkeys(pids) if p != os.getpid()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class ImpressScreen:
    """A private Xvfb display with LibreOffice Impress open on one deck.

    Use as a context manager or call :meth:`close`::

        with ImpressScreen(Screen(1280, 800)) as env:
            env.open(deck_path)
            png = env.screenshot()
            env.execute(actions.click((100, 200)))
            env.save_as(out_path)
    """

    def __init__(self, screen: Screen, *, workdir: Path | None = None, start_timeout: float = 90.0):
        check_programs()
        self.screen = screen
        self.start_timeout = start_timeout
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="pptarena-gui-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.profile_dir = self.workdir / "profile"
        self.profile_url = self.profile_dir.resolve().as_uri()
        self.display: str | None = None
        self.main_window: str | None = None
        self._xvfb: subprocess.Popen[bytes] | None = None
        self._office: subprocess.Popen[bytes] | None = None
        self._known_windows: set[str] = set()
        self.isolation = "none"  # what Impress runs in (see jailed_impress)
        self._lock = threading.Lock()
        self._closed = False
        _LIVE.add(self)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> ImpressScreen:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def env(self) -> dict[str, str]:
        """Environment for programs talking to our display."""
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "SESSION_MANAGER")}
        env["DISPLAY"] = self.display or ""
        env["SAL_USE_VCLPLUGIN"] = "gen"
        return env

    def start_display(self) -> str:
        """Start Xvfb on a free display number (chosen by Xvfb itself) and return ``":N"``."""
        read_fd, write_fd = os.pipe()
        log = (self.workdir / "xvfb.log").open("wb")
        try:
            self._xvfb = subprocess.Popen(
                [
                    "Xvfb",
                    "-displayfd",
                    str(write_fd),
                    "-screen",
                    "0",
                    f"{self.screen}x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ],
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            os.close(write_fd)
            log.close()
        number = b""
        deadline = time.monotonic() + 20
        try:
            while not number.endswith(b"\n") and time.monotonic() < deadline:
                ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    break
                chunk = os.read(read_fd, 16)
                if not chunk:
                    break
                number += chunk
        finally:
            os.close(read_fd)
        if not number.strip().isdigit():
            tail = (self.workdir / "xvfb.log").read_text(errors="replace")[-500:]
            raise ScreenError(f"Xvfb did not start: {tail.strip() or 'no output'}")
        self.display = ":" + number.decode().strip()
        return self.display

    def open(self, deck: Path) -> None:
        """Start the display (if needed) and Impress on ``deck``; wait until its window is shown."""
        if self.display is None:
            self.start_display()
        (self.profile_dir / "user").mkdir(parents=True, exist_ok=True)
        (self.profile_dir / "user" / "registrymodifications.xcu").write_text(_profile_xml(), encoding="utf-8")
        from .lockdown import configuration_layers, write_layer

        lock = write_layer(self.workdir / "office-lock")  # bound read-only over itself in the jail
        layers = configuration_layers(shutil.which("soffice") or "soffice", lock)
        log = (self.workdir / "soffice.log").open("wb")
        command = [
            "soffice",
            f"-env:UserInstallation={self.profile_url}",
            layers,
            "--impress",
            "--norestore",
            "--nologo",
            "--nodefault",
            "--nolockcheck",
            "--nofirststartwizard",
            str(deck),
        ]
        env = office_env(self.display or "", self.workdir)
        command, self.isolation = jailed_impress(
            command, self.workdir, Path(deck).parent, display=self.display or "", lock=lock
        )
        try:
            self._office = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        deadline = time.monotonic() + self.start_timeout
        other_since: float | None = None
        while time.monotonic() < deadline:
            windows = self.windows()
            mains = [w for w, name in windows if name.endswith("LibreOffice Impress")]
            if mains:
                self.main_window = mains[-1]
                break
            if windows:  # some other window (an error message box) and no document window
                other_since = other_since or time.monotonic()
                if time.monotonic() - other_since > 3.0:
                    titles = ", ".join(repr(name) for _, name in windows)
                    raise ScreenError(f"Impress could not open {deck.name}: it shows {titles} instead")
            if self._office.poll() is not None and not _pids_with_arg(self.profile_url):
                tail = (self.workdir / "soffice.log").read_text(errors="replace")[-500:]
                raise ScreenError(f"soffice exited before showing {deck.name}: {tail.strip() or 'no output'}")
            time.sleep(0.2)
        else:
            raise ScreenError(f"Impress did not show {deck.name} within {self.start_timeout:.0f} s")
        self.xdo("windowmove", self.main_window, "0", "0", check=False)
        self.xdo("windowsize", self.main_window, str(self.screen.width), str(self.screen.height), check=False)
        self.xdo("windowfocus", self.main_window, check=False)
        self._known_windows = {w for w, _ in self.windows()}
        time.sleep(1.0)  # first paint

    def close(self) -> None:
        """Quit Impress (politely, then by signal) and stop Xvfb. Safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            if self._office is not None and self.main_window and self.office_running():
                try:
                    if self.main_window:
                        self.xdo("windowfocus", self.main_window, check=False, timeout=3)
                        self.xdo("key", "ctrl+q", check=False, timeout=3)
                    deadline = time.monotonic() + 5
                    while time.monotonic() < deadline and self.office_running():
                        time.sleep(0.1)
                except Exception:  # noqa: BLE001 - shutting down anyway
                    pass
            pids: list[int] = []
            if self._office is not None:
                pids += _descendants(self._office.pid) + [self._office.pid]
            pids += _pids_with_arg(self.profile_url)
            _stop_pids(pids, grace=3)
            if self._office is not None:
                try:
                    self._office.wait(timeout=5)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    pass
        finally:
            if self._xvfb is not None:
                _stop_pids([self._xvfb.pid], grace=3)
                try:
                    self._xvfb.wait(timeout=5)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    pass
            if self._own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def office_running(self) -> bool:
        """True while any soffice process of ours is alive."""
        if self._office is not None and self._office.poll() is None:
            return True
        return any(_alive(p) for p in _pids_with_arg(self.profile_url))

    def pids(self) -> list[int]:
        """Every live process this screen started (for tests and diagnostics)."""
        found = []
        for proc in (self._xvfb, self._office):
            if proc is not None and proc.poll() is None:
                found.append(proc.pid)
        if self._office is not None:
            found += _descendants(self._office.pid)
        found += _pids_with_arg(self.profile_url)
        return sorted(p for p in set(found) if _alive(p))

    # ------------------------------------------------------------------ X helpers

    def xdo(self, *args: str, check: bool = True, timeout: float = 15) -> str:
        """Run ``xdotool`` on our display; raise :class:`ActionFailed` on failure when ``check``."""
        if self.display is None:
            raise ScreenError("the display is not started")
        try:
            proc = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise ActionFailed(f"xdotool {args[0]} timed out") from exc
        if check and proc.returncode != 0:
            msg = proc.stderr.decode("utf-8", "replace").strip()[-300:]
            raise ActionFailed(f"xdotool {args[0]} failed: {msg or 'exit ' + str(proc.returncode)}")
        return proc.stdout.decode("utf-8", "replace")

    def windows(self) -> list[tuple[str, str]]:
        """Visible, named top-level windows of the display as ``(id, title)``, bottom to top."""
        ids = self.xdo("search", "--onlyvisible", "--name", ".", check=False, timeout=5).split()
        out = []
        for wid in ids:
            name = self.xdo("getwindowname", wid, check=False, timeout=5).strip()
            if name:
                out.append((wid, name))
        return out

    def settle(self) -> None:
        """Give the keyboard focus to a newly opened dialog, or back to the top window when it closed.

        This is the one thing a window manager would do for us; without it,
        keys typed after a keyboard shortcut opens a dialog would go nowhere.
        """
        visible = self.windows()
        ids = [w for w, _ in visible]
        new = [w for w in ids if w not in self._known_windows]
        self._known_windows = set(ids)
        focused = self.xdo("getwindowfocus", check=False, timeout=5).strip()
        target = None
        if new:
            target = new[-1]
        elif focused not in ids and ids:
            target = ids[-1]
        if target:
            self.xdo("windowfocus", target, check=False, timeout=5)

    def screenshot(self) -> Any:
        """The whole screen as an RGB ``PIL.Image``."""
        from PIL import ImageGrab

        if self.display is None:
            raise ScreenError("the display is not started")
        try:
            return ImageGrab.grab(xdisplay=self.display).convert("RGB")
        except OSError as exc:
            raise ScreenError(f"screenshot of {self.display} failed: {exc}") from exc

    # ------------------------------------------------------------------ actions

    def execute(self, action: Action) -> None:
        """Perform one action; raise :class:`ActionFailed` when xdotool refuses it."""
        kind = action.kind
        if kind == "click":
            button = {"left": "1", "middle": "2", "right": "3"}[action.button]
            args = [] if action.x is None else ["mousemove", str(action.x), str(action.y)]
            for mod in action.modifiers:
                args += ["keydown", mod]
            args += ["click", "--repeat", str(action.count), "--delay", "90", button]
            for mod in reversed(action.modifiers):
                args += ["keyup", mod]
            self.xdo(*args)
        elif kind == "move":
            self.xdo("mousemove", str(action.x), str(action.y))
        elif kind == "drag":
            (x0, y0), rest = action.path[0], action.path[1:]
            self.xdo("mousemove", str(x0), str(y0), "mousedown", "1")
            try:
                for x, y in rest:
                    time.sleep(0.05)
                    self.xdo("mousemove", str(x), str(y))
                time.sleep(0.05)
            finally:
                self.xdo("mouseup", "1", check=False)
        elif kind in ("mouse_down", "mouse_up"):
            button = {"left": "1", "middle": "2", "right": "3"}[action.button]
            self.xdo("mousedown" if kind == "mouse_down" else "mouseup", button)
        elif kind == "scroll":
            if action.x is not None:
                self.xdo("mousemove", str(action.x), str(action.y))
            for clicks, (neg, pos) in ((action.dy, ("4", "5")), (action.dx, ("6", "7"))):
                if clicks:
                    self.xdo(
                        "click", "--repeat", str(abs(clicks)), "--delay", "30", pos if clicks > 0 else neg
                    )
        elif kind == "type":
            self._type(action.text)
        elif kind == "key":
            self.xdo("key", "--delay", "40", action.keys)
        elif kind == "wait":
            time.sleep(action.seconds)
        elif kind in ("noop", "done"):
            return
        else:  # pragma: no cover - Action kinds are validated at construction
            raise ActionFailed(f"unknown action kind {kind!r}")

    def _type(self, text: str) -> None:
        """Type text; characters outside the keymap are sent one by one, slowly.

        xdotool types a character missing from the keyboard map by remapping a
        spare key; sent quickly, Impress sometimes reads the key after the map
        changed again and drops the character (seen at 120 ms on a loaded 2-core
        machine: "—" lost once in three runs), so such a key is held 300 ms.
        """
        run = ""
        for char in text:
            if char.isascii():
                run += char
                continue
            if run:
                self.xdo("type", "--delay", "12", "--", run, timeout=60)
                run = ""
            self.xdo("type", "--delay", "300", "--", char)
            time.sleep(0.15)
        if run:
            self.xdo("type", "--delay", "12", "--", run, timeout=60)

    # ------------------------------------------------------------------ saving

    def save_as(self, path: Path, timeout: float = 60.0) -> None:
        """Close stray dialogs, then File ▸ Save As the open deck to ``path`` (.pptx, keep format).

        Raises :class:`ScreenError` when the file does not appear (or is not a
        zip package) within ``timeout`` seconds.
        """
        if self.main_window is None:
            raise ScreenError("Impress is not open")
        path = Path(path).resolve()
        if path.exists():
            path.unlink()
        self._dismiss_dialogs()
        if not dict(self.windows()).get(self.main_window, "").endswith("LibreOffice Impress"):
            raise ScreenError("the presentation window was closed")
        self.xdo("windowfocus", self.main_window, check=False)
        self.xdo("key", "Escape", check=False)  # leave text editing
        time.sleep(0.2)
        self.xdo("key", "Escape", check=False)
        self._known_windows = {w for w, _ in self.windows()}
        self.xdo("key", "ctrl+shift+s")
        dialog = self._wait_new_window(15)
        if dialog is None:
            raise ScreenError("the Save As dialog did not open")
        self.xdo("windowfocus", dialog, check=False)
        time.sleep(0.3)
        self.xdo("key", "ctrl+a")
        self.xdo("type", "--delay", "8", "--", str(path), timeout=60)
        time.sleep(0.2)
        self.xdo("key", "Return")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            titles = dict(self.windows())
            if titles.get(self.main_window, "").startswith(path.name) and saved_package(path):
                return
            for wid, name in titles.items():
                # the keep-format question (only asked if the profile setting was lost)
                if wid != self.main_window and "format" in name.lower() and "save" not in name.lower():
                    self.xdo("windowfocus", wid, check=False)
                    self.xdo("key", "Return", check=False)
            time.sleep(0.2)
        raise ScreenError(f"Impress did not save {path.name} within {timeout:.0f} s")

    def _dismiss_dialogs(self, rounds: int = 6) -> None:
        """Press Escape in any window other than the main one (cancels dialogs the agent left open)."""
        for _ in range(rounds):
            others = [w for w, _ in self.windows() if w != self.main_window]
            if not others:
                return
            self.xdo("windowfocus", others[-1], check=False)
            self.xdo("key", "Escape", check=False)
            time.sleep(0.3)

    def _wait_new_window(self, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = [w for w, _ in self.windows() if w not in self._known_windows]
            if new:
                return new[-1]
            time.sleep(0.1)
        return None


def impress_round_trip(src: Path, dst: Path, screen: Screen | None = None) -> Path:
    """Open ``src`` in Impress on a private screen and save it unchanged to ``dst`` through the GUI.

    This is what a GUI episode that edits nothing hands in. Saving through
    Impress rewrites much of a package (theme fonts, layouts, placeholder
    names...), so structural comparisons of GUI predictions are fairest against
    this round trip of the original (PPT-Eval does the same with PowerPoint Online).
    """
    with ImpressScreen(screen or Screen(1280, 800)) as env:
        folder = env.workdir / "deck"  # Impress sees only its own folders, so work on a copy
        folder.mkdir()
        shutil.copyfile(src, folder / Path(src).name)
        env.open(folder / Path(src).name)
        env.save_as(folder / f"saved-{Path(dst).name}")
        # the office could write there: copied out without following a link (safeio)
        safeio.copy_regular(folder / f"saved-{Path(dst).name}", dst, MAX_DECK_BYTES, root=env.workdir)
    return Path(dst)


@atexit.register
def _close_all() -> None:  # pragma: no cover - exercised only when a process exits with a screen open
    for screen in list(_LIVE):
        try:
            screen.close()
        except Exception:  # noqa: BLE001
            pass
