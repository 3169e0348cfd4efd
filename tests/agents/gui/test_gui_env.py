"""The gui agent's environment: missing programs, process cleanup on every exit path, focus, loop limits.

Tests marked ``gui`` start a real Xvfb and LibreOffice Impress.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pptx import Presentation

from pptarena.types import AgentLog, ComponentContext, ComponentUnavailable

pytestmark = pytest.mark.slow

HAVE_PROGRAMS = all(shutil.which(p) for p in ("Xvfb", "xdotool", "soffice"))
needs_screen = pytest.mark.skipif(not HAVE_PROGRAMS, reason="needs xvfb, xdotool and libreoffice-impress")


def make_deck(path: Path) -> Path:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = "Hello"
    prs.save(str(path))
    return path


def gone(pids: list[int], within: float = 10.0) -> bool:
    from pptarena.plugins.agents.gui.env import _alive

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


# --------------------------------------------------------------------------- missing programs


def test_missing_programs_name_the_debian_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pptarena.plugins.agents.gui import GuiAgent

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: nothing is found
    context = ComponentContext(cache_dir=tmp_path, model=lambda ref: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ComponentUnavailable) as info:
        GuiAgent(GuiAgent.Options(model="scripted/x"), context)
    message = str(info.value)
    for package in ("xvfb", "xdotool", "libreoffice-impress"):
        assert package in message
    assert "apt-get install" in message


def test_only_the_missing_program_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pptarena.plugins.agents.gui.env import check_programs

    if not HAVE_PROGRAMS:
        pytest.skip("needs the programs to hide just one")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for prog in ("Xvfb", "soffice"):
        (bin_dir / prog).symlink_to(shutil.which(prog))
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(ComponentUnavailable, match=r"needs xdotool on PATH.*apt-get install xdotool$"):
        check_programs()


def test_options_validate_sizes() -> None:
    from pydantic import ValidationError

    from pptarena.plugins.agents.gui import GuiOptions

    with pytest.raises(ValidationError, match="1280x800"):
        GuiOptions(model="scripted/x", screen="big")
    with pytest.raises(ValidationError):
        GuiOptions(model="no-backend")
    with pytest.raises(ValidationError):
        GuiOptions(model="scripted/x", action_space="pyautogui")
    assert GuiOptions(model="scripted/x").max_steps == 30


# --------------------------------------------------------------------------- cleanup on every path

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pptarena.plugins.agents.gui.actions import Screen
    from pptarena.plugins.agents.gui.env import ImpressScreen
    env = ImpressScreen(Screen(800, 600))
    env.open(Path(sys.argv[1]))
    print(json.dumps([env.pids(), str(env.workdir)]), flush=True)
    if sys.argv[2] == "hang":
        time.sleep(600)
    # "exit": leave without close(); the atexit hook must stop everything
    """
)


def start_child(deck: Path, mode: str) -> tuple[subprocess.Popen, list[int], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(deck), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        pytest.fail(f"child did not start the screen: {proc.stderr.read()[-2000:]}")
    pids, workdir = json.loads(line)
    return proc, pids, Path(workdir)


@pytest.mark.gui
@needs_screen
def test_killing_the_worker_process_group_leaves_no_orphans(tmp_path: Path) -> None:
    proc, pids, workdir = start_child(make_deck(tmp_path / "d.pptx"), "hang")
    assert len(pids) >= 3  # Xvfb, the soffice launcher and soffice.bin
    names = {Path(f"/proc/{p}/comm").read_text().strip() for p in pids}
    assert "Xvfb" in names and "soffice.bin" in names
    os.killpg(proc.pid, signal.SIGKILL)  # what a runner does on task timeout
    proc.wait(timeout=10)
    assert gone(pids), [p for p in pids if Path(f"/proc/{p}").exists()]
    shutil.rmtree(workdir)  # a killed process cannot remove its scratch folder


@pytest.mark.gui
@needs_screen
def test_exiting_without_close_stops_everything_at_exit(tmp_path: Path) -> None:
    proc, pids, workdir = start_child(make_deck(tmp_path / "d.pptx"), "exit")
    assert proc.wait(timeout=30) == 0
    assert gone(pids, within=2.0)
    assert not workdir.exists()


@pytest.mark.gui
@needs_screen
def test_a_deck_impress_cannot_open_fails_cleanly(tmp_path: Path) -> None:
    from pptarena.plugins.agents.gui.actions import Screen
    from pptarena.plugins.agents.gui.env import ImpressScreen, ScreenError

    broken = tmp_path / "broken.pptx"
    broken.write_bytes(b"PK\x03\x04 this is not a presentation")
    env = ImpressScreen(Screen(800, 600), start_timeout=8)
    try:
        with pytest.raises(ScreenError, match="could not open broken.pptx"):
            env.open(broken)
        pids = env.pids()
        assert pids  # Xvfb (and maybe soffice showing an error) are still up before close()
    finally:
        env.close()
    assert gone(pids, within=2.0)
    assert not env.workdir.exists()


# --------------------------------------------------------------------------- focus and loop limits


@pytest.mark.gui
@needs_screen
def test_dialog_focus_loop_limits_and_saving_from_odd_states(tmp_path: Path) -> None:
    from pptarena.models import Completion
    from pptarena.plugins.agents.gui import actions as A
    from pptarena.plugins.agents.gui.actions import Screen
    from pptarena.plugins.agents.gui.adapters import JsonAdapter
    from pptarena.plugins.agents.gui.env import ImpressScreen, ScreenError
    from pptarena.plugins.agents.gui.loop import Trajectory, run_episode

    class Replies:
        """A ModelClient stand-in answering every call with one text (the loop only calls complete)."""

        def __init__(self, text: str):
            self.text, self.calls = text, 0

        def complete(self, messages, **params):
            self.calls += 1
            return Completion(text=self.text, model="m")

    with ImpressScreen(Screen(1024, 768)) as env:
        env.open(make_deck(tmp_path / "d.pptx"))
        main = env.main_window
        # a keyboard shortcut opens a dialog: settle() gives it the focus, as a window manager would
        env.execute(A.key("ctrl+h"))  # Find & Replace
        time.sleep(1.0)
        env.settle()
        focused = env.xdo("getwindowfocus").strip()
        assert focused != main and focused in dict(env.windows())
        env.execute(A.key("Escape"))
        time.sleep(0.5)
        env.settle()
        assert env.xdo("getwindowfocus").strip() == main

        log = AgentLog(tmp_path / "log.jsonl")
        client = Replies('{"action": "wait", "seconds": 0}')
        result = run_episode(
            env,
            client,
            JsonAdapter(),
            "Do nothing.",
            trajectory=Trajectory(tmp_path / "t1"),
            log=log,
            max_steps=2,
            step_delay=0,
        )
        assert (result.stop_reason, result.steps, client.calls) == ("max_steps", 2, 2)

        result = run_episode(
            env,
            client,
            JsonAdapter(),
            "Do nothing.",
            trajectory=Trajectory(tmp_path / "t2"),
            log=log,
            max_steps=5,
            deadline=time.monotonic(),
            step_delay=0,
        )
        assert (result.stop_reason, result.steps, client.calls) == ("deadline", 0, 2)
        lines = (tmp_path / "t2" / "trajectory.jsonl").read_text().splitlines()
        assert json.loads(lines[-1])["stop_reason"] == "deadline"
        assert (tmp_path / "t2" / "final.png").stat().st_size > 1000

        bad = Replies("I would like to click somewhere.")
        result = run_episode(
            env,
            bad,
            JsonAdapter(),
            "x",
            trajectory=Trajectory(tmp_path / "t3"),
            log=log,
            max_steps=1,
            step_delay=0,
        )
        step = json.loads((tmp_path / "t3" / "trajectory.jsonl").read_text().splitlines()[0])
        assert step["actions"] == [] and "no JSON action" in step["errors"][0]
        assert result.action_errors == 1

        # the same point twice in a row (xdotool's --sync would wait forever for a pointer that never moves)
        for _ in range(2):
            env.execute(A.click((600, 700)))
            env.execute(A.move((600, 700)))
            env.execute(A.scroll((600, 700), 0, 1))

        # the agent left a slide show and a menu open: saving still works
        env.execute(A.click((15, 9)))  # File menu
        time.sleep(0.5)
        env.execute(A.key("Escape"))
        env.execute(A.key("F5"))
        time.sleep(1.5)
        env.settle()
        assert any(w != main for w, _ in env.windows())
        env.save_as(tmp_path / "saved.pptx")
        assert Presentation(str(tmp_path / "saved.pptx")).slides[0].shapes.title.text == "Hello"

        # the agent closed the presentation (Impress shows its Start Center): a clear error, at once
        env.execute(A.key("ctrl+w"))
        time.sleep(1.5)
        with pytest.raises(ScreenError, match="presentation window was closed"):
            env.save_as(tmp_path / "never.pptx")
