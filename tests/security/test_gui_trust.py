"""Attacks through the GUI agent's office (issue 23, item 4), each performed as the attack.

- macros switched on the way Alt+F12 ▸ Expert Configuration does (the user layer of the profile
  says ``DisableMacrosExecution = false``, ``MacroSecurityLevel = 0``), then a Basic macro run by
  the office: it must not run (the finalized lockdown layer wins over the user's settings);
- the office's environment (``/proc/<soffice.bin>/environ`` read from the host) holds no secret of
  the harness's environment;
- the jail's ``/tmp/.X11-unix`` holds only its own display's socket, while another display runs;
- the saved deck swapped for a link to the task's target is refused, not followed;
- ``registrymodifications.xcu`` made a link to ``/proc/self/environ`` is not copied.
"""

from __future__ import annotations

import os
import shutil
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from pptx import Presentation

from pptarena.types import AgentError, AgentLog, ComponentContext, Task, Workspace

HAVE_PROGRAMS = all(shutil.which(p) for p in ("Xvfb", "xdotool", "soffice"))
needs_screen = pytest.mark.skipif(not HAVE_PROGRAMS, reason="needs xvfb, xdotool and libreoffice-impress")
SECRET = "sk-issue23-never-in-the-office-0c1d"

# What the Expert Configuration dialog writes into the user layer when the model flips the settings.
ATTACK_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" \
oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" \
oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="WarnAlienFormat" \
oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""


def make_deck(path: Path) -> Path:
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[0]).shapes.title.text = "Hello"
    prs.save(str(path))
    return path


def macro_presentation(path: Path, marker: Path) -> Path:
    """An ODF presentation whose document Basic macro, bound to "open document", writes ``marker``."""
    module = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" '
        'script:language="StarBasic">Sub Main\n'
        f"  Open &quot;{marker}&quot; For Output As #1\n  Print #1, Environ(&quot;HOME&quot;)\n  Close #1\n"
        "End Sub\n</script:module>\n"
    )
    libraries = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<library:libraries '
        'xmlns:library="http://openoffice.org/2000/library" xmlns:xlink="http://www.w3.org/1999/xlink">'
        '<library:library library:name="Standard" library:link="false"/></library:libraries>\n'
    )
    library = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<library:library '
        'xmlns:library="http://openoffice.org/2000/library" library:name="Standard" '
        'library:readonly="false" library:passwordprotected="false">'
        '<library:element library:name="Module1"/></library:library>\n'
    )
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
        'xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:dom="http://www.w3.org/2001/xml-events" '
        'xmlns:ooo="http://openoffice.org/2004/office" '
        'office:version="1.3">'
        '<office:scripts><office:event-listeners><script:event-listener script:language="ooo:script" '
        'script:event-name="dom:load" xlink:type="simple" '
        'xlink:href="vnd.sun.star.script:Standard.Module1.Main?language=Basic&amp;location=document"/>'
        "</office:event-listeners></office:scripts>"
        '<office:body><office:presentation><draw:page draw:name="page1"/></office:presentation>'
        "</office:body></office:document-content>\n"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
        '<manifest:file-entry manifest:full-path="/" manifest:version="1.3" '
        'manifest:media-type="application/vnd.oasis.opendocument.presentation"/>'
        + "".join(
            f'<manifest:file-entry manifest:full-path="{p}" manifest:media-type="text/xml"/>'
            for p in (
                "content.xml",
                "Basic/script-lc.xml",
                "Basic/Standard/script-lb.xml",
                "Basic/Standard/Module1.xml",
            )
        )
        + "</manifest:manifest>\n"
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.presentation", zipfile.ZIP_STORED)
        for name, text in (
            ("content.xml", content),
            ("Basic/script-lc.xml", libraries),
            ("Basic/Standard/script-lb.xml", library),
            ("Basic/Standard/Module1.xml", module),
            ("META-INF/manifest.xml", manifest),
        ):
            z.writestr(name, text, zipfile.ZIP_DEFLATED)
    return path


def open_with_user_settings(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, unlocked: bool
) -> bool:
    """Open the macro presentation with the attacker's user settings; True when the macro ran."""
    from pptarena.plugins.agents.gui import env as env_module
    from pptarena.plugins.agents.gui import lockdown
    from pptarena.plugins.agents.gui.actions import Screen

    folder = tmp_path / name
    folder.mkdir()
    marker = folder / "macro-ran.txt"
    deck = macro_presentation(folder / "macro.odp", marker)
    with monkeypatch.context() as patch:
        patch.setattr(env_module, "_profile_xml", lambda: ATTACK_XCU)
        if unlocked:  # the control: the same office without the lockdown layer
            patch.setattr(lockdown, "configuration_layers", lambda soffice, layer: "--nologo")
        with env_module.ImpressScreen(Screen(1024, 768)) as screen:
            screen.open(deck)
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and not marker.exists():
                time.sleep(0.2)
    return marker.exists()


@pytest.mark.slow
@pytest.mark.gui
@needs_screen
def test_macros_enabled_in_the_user_settings_still_do_not_run(tmp_path, monkeypatch):
    # control: without the lockdown layer the attacker's settings let the document's macro run
    assert open_with_user_settings(tmp_path, "unlocked", monkeypatch, unlocked=True)
    assert not open_with_user_settings(tmp_path, "locked", monkeypatch, unlocked=False)


@pytest.mark.gui
@needs_screen
def test_the_office_has_no_secret_in_its_environment_and_only_its_own_x_socket(tmp_path, monkeypatch):
    from pptarena.plugins.agents.gui.actions import Screen
    from pptarena.plugins.agents.gui.env import ImpressScreen

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("PPTARENA_JUDGE_TOKEN", SECRET)
    deck = make_deck(tmp_path / "d.pptx")
    with ImpressScreen(Screen(800, 600)) as other, ImpressScreen(Screen(800, 600)) as screen:
        other.start_display()  # another display (another GUI pair, the reference round trip…)
        screen.open(deck)
        (office,) = [p for p in screen.pids() if Path(f"/proc/{p}/comm").read_text().strip() == "soffice.bin"]
        environ = Path(f"/proc/{office}/environ").read_bytes()
        assert SECRET.encode() not in environ
        assert f"DISPLAY={screen.display}".encode() in environ.split(b"\0")
        if screen.isolation != "bwrap":
            pytest.skip("bubblewrap is not usable here: the office sees the host's /tmp/.X11-unix")
        view = sorted(os.listdir(f"/proc/{office}/root/tmp/.X11-unix"))
        assert view == [f"X{screen.display.lstrip(':')}"]
        # the lockdown layer sits in the writable work folder but is mounted read-only for the office
        (lock,) = [
            ln.split()
            for ln in Path(f"/proc/{office}/mountinfo").read_text().splitlines()
            if "office-lock" in ln
        ]
        assert lock[4].endswith("/office-lock") and "ro" in lock[5].split(",")
        assert len(os.listdir("/tmp/.X11-unix")) >= 2  # the host has more than the office sees


# --------------------------------------------------------------------------- hand-back copies


class PlantingScreen:
    """Stands in for :class:`ImpressScreen` in ``GuiAgent.edit``: "saves" the deck, then does what a
    shell started from a macro inside the jail could do to the files the harness copies out."""

    plant: str = ""
    target: Path | None = None

    def __init__(self, screen, *, workdir: Path, start_timeout: float):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.deck: Path | None = None

    def open(self, deck: Path) -> None:
        self.deck = Path(deck)

    def office_running(self) -> bool:
        return True

    def save_as(self, path: Path, timeout: float = 60) -> None:
        assert self.deck is not None
        shutil.copyfile(self.deck, path)
        settings = self.workdir / "profile" / "user" / "registrymodifications.xcu"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(ATTACK_XCU)
        if self.plant == "deck":
            path.unlink()
            path.symlink_to(self.target)
        elif self.plant == "settings":
            settings.unlink()
            settings.symlink_to("/proc/self/environ")

    def close(self) -> None:
        pass


def run_gui_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str, target: Path):
    from pptarena.plugins.agents import gui
    from pptarena.plugins.agents.gui import env as env_module
    from pptarena.plugins.agents.gui import loop

    monkeypatch.setattr(gui, "check_programs", lambda: None, raising=False)
    monkeypatch.setattr(env_module, "check_programs", lambda: None)
    monkeypatch.setattr(env_module, "ImpressScreen", PlantingScreen)
    monkeypatch.setattr(PlantingScreen, "plant", plant)
    monkeypatch.setattr(PlantingScreen, "target", target)
    done = SimpleNamespace(note="", steps=1, stop_reason="done", action_errors=0)
    monkeypatch.setattr(loop, "run_episode", lambda *a, **k: done)
    src = make_deck(tmp_path / "input.pptx")
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    client = SimpleNamespace(usage=SimpleNamespace(as_dict=lambda: {}))
    workspace = Workspace(
        dir=task_dir,
        input_deck=src,
        output_deck=task_dir / "prediction.pptx",
        renderer=None,
        model=lambda ref: client,
        log=AgentLog(task_dir / "agent.log.jsonl"),
        timeout=240,
    )
    context = ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: client)  # type: ignore[arg-type]
    agent = gui.GuiAgent(gui.GuiAgent.Options(model="scripted/x"), context)
    task = Task(id="t1", instruction="x", original=src)
    return task_dir, lambda: agent.edit(task, workspace)


def test_a_saved_deck_swapped_for_a_link_to_the_target_is_refused(tmp_path, monkeypatch):
    target = make_deck(tmp_path / "target.pptx")
    prs = Presentation(str(target))
    prs.slides[0].shapes.title.text = "THE ANSWER"
    prs.save(str(target))
    task_dir, edit = run_gui_edit(tmp_path, monkeypatch, "deck", target)
    with pytest.raises(AgentError, match="link"):
        edit()
    prediction = task_dir / "prediction.pptx"
    assert not prediction.exists() or prediction.read_bytes() != target.read_bytes()


def test_settings_linked_to_proc_self_environ_are_not_copied(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    task_dir, edit = run_gui_edit(tmp_path, monkeypatch, "settings", Path("/"))
    prediction = edit()
    assert prediction.metadata["files"] == {}
    assert (task_dir / "prediction.pptx").is_file()
    for path in task_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_the_lockdown_layer_goes_just_before_the_users_and_is_required(tmp_path):
    from pptarena.plugins.agents.gui import lockdown
    from pptarena.types import ComponentUnavailable

    program = tmp_path / "lo" / "program"
    program.mkdir(parents=True)
    (program / "soffice").write_text("")
    (program / "fundamentalrc").write_text(
        "[Bootstrap]\nCONFIGURATION_LAYERS=xcsxcu:file:///a res:file:///a "
        "user:!${X}/user/registrymodifications.xcu\n"
    )
    layer = lockdown.write_layer(tmp_path / "lock")
    arg = lockdown.configuration_layers(str(program / "soffice"), layer)
    assert arg == (
        f"-env:CONFIGURATION_LAYERS=xcsxcu:file:///a res:file:///a xcsxcu:{layer.resolve().as_uri()} "
        "user:!${X}/user/registrymodifications.xcu"
    )
    common = (layer / "data/org/openoffice/Office/Common.xcu").read_text()
    assert '<node oor:name="Scripting" oor:finalized="true">' in common
    assert '"EnableExpertConfiguration" oor:finalized="true"><value>false' in common
    assert "BasicIDEAppear" in (layer / "data/org/openoffice/Office/Commands.xcu").read_text()
    (program / "fundamentalrc").unlink()
    with pytest.raises(ComponentUnavailable, match="cannot lock"):
        lockdown.configuration_layers(str(program / "soffice"), layer)


LOCK_PROBE = r"""
import json, subprocess, sys, time, uno
from com.sun.star.beans import PropertyValue
office, name = json.loads(sys.argv[1]), sys.argv[2]
cmd = office + ["--accept=pipe,name=%s;urp;" % name]
proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
ctx = None
for _ in range(600):
    if proc.poll() == 81:  # a fresh profile: started again
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ctx = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % name)
        break
    except Exception:
        time.sleep(0.1)
smgr = ctx.ServiceManager
provider = smgr.createInstanceWithContext("com.sun.star.configuration.ConfigurationProvider", ctx)
def node(path):
    arg = PropertyValue(); arg.Name = "nodepath"; arg.Value = path
    return provider.createInstanceWithArguments("com.sun.star.configuration.ConfigurationAccess", (arg,))
scripting = node("/org.openoffice.Office.Common/Security/Scripting")
disabled = node("/org.openoffice.Office.Commands/Execute/Disabled")
security = node("/org.openoffice.Office.Common/Security")
extensions = node("/org.openoffice.Office.ExtensionManager/ExtensionSecurity")
print(json.dumps({
    "DisableMacrosExecution": scripting.getByName("DisableMacrosExecution"),
    "MacroSecurityLevel": scripting.getByName("MacroSecurityLevel"),
    "EnableExpertConfiguration": security.getByName("EnableExpertConfiguration"),
    "DisableExtensionInstallation": extensions.getByName("DisableExtensionInstallation"),
    "disabled": sorted(disabled.getByName(n).Command for n in disabled.ElementNames),
}))
proc.kill()
proc.wait()
"""

# The user layer as the Expert Configuration (or a hand-edited profile) would leave it, also trying
# to take a command off the disabled list.
ATTACK_LAYER = ATTACK_XCU.replace(
    "</oor:items>",
    '<item oor:path="/org.openoffice.Office.Common/Security"><prop oor:name="EnableExpertConfiguration" '
    'oor:op="fuse"><value>true</value></prop></item>\n'
    '<item oor:path="/org.openoffice.Office.ExtensionManager/ExtensionSecurity"><prop '
    'oor:name="DisableExtensionInstallation" oor:op="fuse"><value>false</value></prop></item>\n'
    '<item oor:path="/org.openoffice.Office.Commands/Execute/Disabled"><node oor:name="pptarena2" '
    'oor:op="remove"/></item>\n</oor:items>',
)


def office_settings(tmp_path: Path, name: str, layers: str | None) -> dict:
    import json
    import subprocess

    from pptarena.plugins.renderers.libreoffice.soffice import find_soffice, find_uno_python

    python = find_uno_python()
    if python is None:
        pytest.skip("no Python with the uno module (python3-uno)")
    profile = tmp_path / name
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(ATTACK_LAYER)
    binary = Path(os.path.realpath(find_soffice())).with_name("soffice.bin")
    office = [str(binary), f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore"]
    office += [layers] if layers else []
    out = subprocess.run(
        [python, "-c", LOCK_PROBE, json.dumps(office), f"pptarena-lock-{os.getpid()}-{name}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_the_finalized_layer_wins_over_the_users_settings_in_a_running_office(tmp_path):
    from pptarena.plugins.agents.gui import lockdown

    # control: without the layer the user's settings are what the office uses
    free = office_settings(tmp_path, "free", None)
    assert (
        free["DisableMacrosExecution"],
        free["MacroSecurityLevel"],
        free["EnableExpertConfiguration"],
    ) == (
        False,
        0,
        True,
    )
    layer = lockdown.write_layer(tmp_path / "lock")
    locked = office_settings(
        tmp_path, "locked", lockdown.configuration_layers(shutil.which("soffice"), layer)
    )
    assert (
        locked["DisableMacrosExecution"],
        locked["MacroSecurityLevel"],
        locked["EnableExpertConfiguration"],
    ) == (
        True,
        3,
        False,
    )
    assert locked["disabled"] == sorted(lockdown.DISABLED_COMMANDS)
    assert (free["DisableExtensionInstallation"], locked["DisableExtensionInstallation"]) == (False, True)
