"""A pre-initialised LibreOffice user profile, built once and copied for every new office.

A fresh profile costs an office two starts (soffice.bin creates the profile, exits with code 81
and is started again), and a profile in which no office ever recorded its version
(``/org.openoffice.Setup/Product/ooSetupLastVersion``, which nothing sets in headless use) makes
*every* start believe the office was just upgraded and run its graphics self-tests: about
0.7 s of CPU per start on the development VM, most of a warm start. So the renderer builds one
*template* profile per LibreOffice build: an office is started on an empty profile with the
bridge's ``prepare`` flag, which records the version through the configuration API and flushes
the profile to disk; the office is then killed and the folder checked and installed.

Layout: ``<root>/<key>/profile/`` (the user installation) and ``<root>/<key>/pptarena-profile.json``
(the stamp: format, office fingerprint, version), ``key`` derived from the office fingerprint, so
another LibreOffice build gets its own template.

Safety:

- the template is built in a private temporary folder next to its final place and renamed into
  place (atomic), so concurrent commands never see a half-written template; when two build at once
  the first rename wins and the other's copy is deleted;
- a template whose stamp or ``registrymodifications.xcu`` is missing, unreadable or names another
  office is *stale*: it is moved aside (renamed, then deleted) and rebuilt;
- every copy is checked again after copying (a template deleted mid-copy by another command leaves
  a broken copy, which is removed: the office then starts on an empty profile as before).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from pptarena.types import InfraError

from .soffice import WarmOffice, office_version

log = logging.getLogger(__name__)

PROFILE_FORMAT = 1  # bump when what a template holds or how it is checked changes
STAMP_NAME = "pptarena-profile.json"
_OOR = "{http://openoffice.org/2001/registry}"
_build_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def template_dir(root: Path, soffice: Path) -> Path:
    """Where the template for ``soffice`` lives under ``root``."""
    fingerprint = office_version(soffice)
    key = hashlib.sha256(f"{PROFILE_FORMAT}|{fingerprint}".encode()).hexdigest()[:16]
    return Path(root) / key


def recorded_version(profile: Path) -> str | None:
    """The ``ooSetupLastVersion`` recorded in ``profile`` (None when absent or unreadable)."""
    xcu = Path(profile) / "user" / "registrymodifications.xcu"
    try:
        items = ET.parse(xcu).getroot()
    except (OSError, ET.ParseError):
        return None
    for item in items:
        if item.get(f"{_OOR}path") != "/org.openoffice.Setup/Product":
            continue
        for prop in item:
            if prop.get(f"{_OOR}name") == "ooSetupLastVersion":
                value = (prop.findtext("value") or "").strip()
                return value or None
    return None


def is_valid(template: Path, soffice: Path) -> bool:
    """True when ``template`` was finished for this very office and its profile is readable."""
    try:
        stamp = json.loads((Path(template) / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict):
        return False
    if stamp.get("format") != PROFILE_FORMAT or stamp.get("office") != office_version(soffice):
        return False
    version = recorded_version(Path(template) / "profile")
    return version is not None and version == stamp.get("version")


def recorded_uno_python(root: Path, soffice: Path) -> str | None:
    """The Python (with ``uno``) that built the valid template for ``soffice``, if it still exists.

    Saves probing interpreters (a child process importing ``uno``, 0.1-0.2 s) on every command; should
    it have lost ``uno`` since, the office fails to start and the template is discarded and rebuilt.
    """
    template = template_dir(root, soffice)
    if not is_valid(template, soffice):
        return None
    try:
        found = json.loads((template / STAMP_NAME).read_text()).get("uno_python")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) and os.path.isfile(found) else None


def discard(template: Path) -> None:
    """Remove ``template`` safely: rename it aside first (so nobody copies a half-deleted one)."""
    template = Path(template)
    trash = template.with_name(f".trash-{uuid.uuid4().hex}")
    try:
        os.rename(template, trash)
    except OSError:
        return  # already gone (or being replaced by another command)
    shutil.rmtree(trash, ignore_errors=True)


def build(template: Path, soffice: Path, uno_python: str, start_timeout: float) -> None:
    """Build the template for ``soffice`` and install it at ``template`` (atomically).

    :raises InfraError: when the office does not start or does not record its version.
    """
    template = Path(template)
    template.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=template.parent))
    try:
        office = WarmOffice(soffice, uno_python, tmp / "profile", start_timeout, prepare=True)
        office.start()
        office.close()
        version = recorded_version(tmp / "profile")
        if not version or version != office.prepared:
            raise InfraError(
                f"LibreOffice did not record its version in the new profile (got {office.prepared!r})"
            )
        (tmp / "profile" / "user" / ".lock").unlink(missing_ok=True)
        stamp = {
            "format": PROFILE_FORMAT,
            "office": office_version(soffice),
            "version": version,
            "uno_python": uno_python,
        }
        (tmp / STAMP_NAME).write_text(json.dumps(stamp))
        if template.exists() and not is_valid(template, soffice):
            discard(template)
        try:
            os.rename(tmp, template)
        except OSError:
            pass  # another command installed one first: keep theirs (checked by the caller)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure(root: Path, soffice: Path, uno_python: str, start_timeout: float) -> Path:
    """A valid template for ``soffice`` under ``root``: the cached one, or one built now.

    Threads of one process build at most once (a lock per template); processes race safely.

    :raises InfraError: when no valid template could be built.
    """
    template = template_dir(root, soffice)
    if is_valid(template, soffice):
        return template
    with _locks_guard:
        lock = _build_locks.setdefault(template, threading.Lock())
    with lock:
        if is_valid(template, soffice):
            return template
        if template.exists():
            log.info("office profile template %s is stale or damaged; rebuilding it", template)
        build(template, soffice, uno_python, start_timeout)
        if not is_valid(template, soffice):
            raise InfraError(f"the office profile template at {template} could not be built")
        return template


def install(template: Path, profile: Path) -> bool:
    """Copy the template's profile to ``profile`` (which must not exist); False if the copy is unusable.

    An unusable copy (the template vanished or changed mid-copy) is removed again.
    """
    profile = Path(profile)
    try:
        shutil.copytree(Path(template) / "profile", profile, ignore=shutil.ignore_patterns(".lock"))
    except (OSError, shutil.Error):
        shutil.rmtree(profile, ignore_errors=True)
        return False
    if recorded_version(profile) is None:
        shutil.rmtree(profile, ignore_errors=True)
        return False
    return True
