"""Settings the GUI agent's model cannot change: a read-only configuration layer for Impress.

Keystrokes alone used to give code execution: Alt+F12 ▸ Expert Configuration ▸
``DisableMacrosExecution`` = false, then Tools ▸ Macros ▸ Edit Macros ▸ ``Shell(...)`` ▸ F5. The
macro settings the harness wrote into the *user* profile were only defaults the user (the model)
could change.

LibreOffice reads its configuration as a stack of layers (``CONFIGURATION_LAYERS`` in the office's
``fundamentalrc``): installation data, extensions, and last the user's ``registrymodifications.xcu``.
A value marked ``oor:finalized="true"`` in a layer cannot be changed by any later one. The office is
started with ``-env:CONFIGURATION_LAYERS=`` set to its own list plus one more layer, just before the
user's, holding (all finalized):

- ``Office.Common/Security/Scripting``, the whole group: macros disabled
  (``DisableMacrosExecution``), security level "very high" (``MacroSecurityLevel`` 3), no trusted
  locations (``SecureURL``) and, the group being finalized, no trusted authors added later;
- ``Office.Common/Security/EnableExpertConfiguration`` = false: the Expert Configuration button is
  gone (LibreOffice 7.x and later; older offices ignore the unknown value);
- ``Office.Commands/Execute/Disabled``: the UNO commands behind the macro menus, the Basic IDE, the
  script organisers, the macro recorder and the XML filter settings (XSLT);
- ``Office.ExtensionManager/ExtensionSecurity``: no extension installed or removed (an extension's
  components would run code whatever the macro settings say).

The layer is written into the screen's work folder (removed with it) and the jail binds it read-only
over its own place, so the office cannot change it. Where the guarantee ends: the office itself is
trusted to honour finalized values (a bug in LibreOffice that ignores them is out of reach here);
the jail (no network, only its own folders, its own X socket, a scrubbed environment) bounds what
such a bug could reach.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pptarena.types import ComponentUnavailable

DISABLED_COMMANDS = (
    "RunMacro",
    "ChooseMacro",
    "MacroDialog",
    "MacrosMenu",
    "BasicIDEAppear",
    "MacroOrganizer",
    "ScriptOrganizer",
    "MacroRecorder",
    "StopRecording",
    "MacroSignature",
    "RunBasic",
    "LoadBasic",
    "CompileBasic",
    "ExecuteMacroField",
    "OpenXMLFilterSettings",
)
"""UNO commands (without ``.uno:``) the office refuses to run, whatever the menus offer."""

_SCRIPTING = {
    "DisableMacrosExecution": "true",
    "MacroSecurityLevel": "3",
    "CheckDocumentEvents": "true",
    "AllowedDocumentEventURLs": "",
    "SecureURL": "",
}

_OOR = (
    'xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
)


def common_xcu() -> str:
    """``org/openoffice/Office/Common.xcu`` of the lockdown layer."""
    scripting = "".join(
        f'<prop oor:name="{name}" oor:finalized="true"><value>{value}</value></prop>'
        for name, value in _SCRIPTING.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<oor:component-data {_OOR} oor:package="org.openoffice.Office" oor:name="Common">\n'
        ' <node oor:name="Security">\n'
        '  <prop oor:name="EnableExpertConfiguration" oor:finalized="true"><value>false</value></prop>\n'
        f'  <node oor:name="Scripting" oor:finalized="true">{scripting}</node>\n'
        " </node>\n"
        "</oor:component-data>\n"
    )


def commands_xcu() -> str:
    """``org/openoffice/Office/Commands.xcu`` of the lockdown layer."""
    entries = "".join(
        f'<node oor:name="pptarena{i}" oor:op="replace"><prop oor:name="Command"><value>{cmd}</value>'
        "</prop></node>"
        for i, cmd in enumerate(DISABLED_COMMANDS)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<oor:component-data {_OOR} oor:package="org.openoffice.Office" oor:name="Commands">\n'
        f' <node oor:name="Execute"><node oor:name="Disabled" oor:finalized="true">{entries}</node></node>\n'
        "</oor:component-data>\n"
    )


def extension_manager_xcu() -> str:
    """``org/openoffice/Office/ExtensionManager.xcu``: no extension can be installed or removed (an
    extension's components run code whatever the macro settings say)."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<oor:component-data {_OOR} oor:package="org.openoffice.Office" oor:name="ExtensionManager">\n'
        ' <node oor:name="ExtensionSecurity" oor:finalized="true">'
        '<prop oor:name="DisableExtensionInstallation"><value>true</value></prop>'
        '<prop oor:name="DisableExtensionRemoval"><value>true</value></prop></node>\n'
        "</oor:component-data>\n"
    )


def write_layer(folder: Path) -> Path:
    """Write the lockdown layer (``data/org/openoffice/Office/*.xcu``) into ``folder``; returns it."""
    data = Path(folder) / "data" / "org" / "openoffice" / "Office"
    data.mkdir(parents=True, exist_ok=True)
    (Path(folder) / "schema").mkdir(exist_ok=True)
    (data / "Common.xcu").write_text(common_xcu(), encoding="utf-8")
    (data / "Commands.xcu").write_text(commands_xcu(), encoding="utf-8")
    (data / "ExtensionManager.xcu").write_text(extension_manager_xcu(), encoding="utf-8")
    for path in [folder, *Path(folder).rglob("*")]:
        os.chmod(path, 0o755 if Path(path).is_dir() else 0o444)
    return Path(folder)


def _fundamentalrc(soffice: str) -> Path | None:
    real = Path(os.path.realpath(soffice))
    for cand in (
        real.with_name("fundamentalrc"),
        real.with_name("fundamental.ini"),
        real.parent.parent / "Resources" / "fundamentalrc",  # macOS bundle
    ):
        if cand.is_file():
            return cand
    return None


def configuration_layers(soffice: str, layer: Path) -> str:
    """The ``-env:CONFIGURATION_LAYERS=…`` argument: the office's own layers with ``layer`` (a folder
    from :func:`write_layer`) inserted just before the user's layer.

    :raises ComponentUnavailable: the office's layer list cannot be found (the lock cannot be applied).
    """
    rc = _fundamentalrc(soffice)
    value = None
    if rc is not None:
        for line in rc.read_text(errors="replace").splitlines():
            match = re.match(r"\s*CONFIGURATION_LAYERS\s*=(.*)$", line)
            if match:
                value = match.group(1).strip()
    if not value:
        raise ComponentUnavailable(
            f"the gui agent cannot lock LibreOffice's macro settings: no CONFIGURATION_LAYERS found next to "
            f"{os.path.realpath(soffice)} (fundamentalrc); this office installation is not supported"
        )
    ours = "xcsxcu:" + Path(layer).resolve().as_uri()
    tokens = value.split()
    at = next((i for i, tok in enumerate(tokens) if tok.startswith("user:")), len(tokens))
    tokens.insert(at, ours)
    return "-env:CONFIGURATION_LAYERS=" + " ".join(tokens)
