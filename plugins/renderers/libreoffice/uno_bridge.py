"""Warm-LibreOffice bridge: starts one soffice and drives it over UNO.

This file is executed as a script by a Python interpreter that can ``import
uno`` (on Debian/Ubuntu that is ``/usr/bin/python3`` with ``python3-uno``),
which is often not the Python running pptarena. It must therefore import
nothing from pptarena and nothing outside the standard library and ``uno``.

Protocol (JSON lines on stdin/stdout):

* started as ``python3 uno_bridge.py SPEC_JSON`` where the spec holds
  ``office`` (the soffice command as a list, without ``--accept``),
  ``connect`` (a UNO connection string such as ``pipe,name=X;urp;``) and
  ``timeout`` (seconds allowed for start-up) and optionally ``prepare``
  (true: record in the fresh profile that this office version has already
  started, so later offices copied from it skip the first-start work, and
  flush the profile to disk before answering);
* the bridge starts soffice in its own session (so the caller can kill the
  whole group), connects, and writes ``{"ready": true, "office_pid": PID}``
  or ``{"ready": false, "error": ...}`` and exits;
* for every request line ``{"id": N, "src": PATH, "dst": PATH}`` it loads the
  deck hidden and read-only, exports it to PDF **with hidden slides**, answers
  ``{"id": N, "ok": true}`` (and then closes the deck before reading the next
  line) or ``{"id": N, "ok": false, "error": "...", "fatal": bool}``
  (``fatal``: the office is gone; the bridge exits).

No orphans: soffice gets a parent-death signal (Linux) so it dies with the
bridge, and the bridge kills soffice and exits when its stdin closes or its
parent process disappears.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

RESTART_EXIT_CODE = 81  # soffice.bin asks to be restarted after creating a fresh profile


def _reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _set_parent_death_signal():
    """Runs in the soffice child before exec: die when the bridge dies (Linux only)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Office:
    """The soffice process owned by this bridge."""

    def __init__(self, command, connect):
        self.command = list(command) + ["--accept=" + connect + "StarOffice.ComponentContext"]
        self.proc = None

    def start(self):
        """Start soffice (again)."""
        self.proc = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") else None,
        )

    def exited(self):
        """The exit code, or None while running."""
        return None if self.proc is None else self.proc.poll()

    def kill(self):
        """Kill soffice's whole process group."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, AttributeError, OSError):
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except Exception:
            pass


def _props(**kw):
    from com.sun.star.beans import PropertyValue  # available once uno is imported

    out = []
    for key, value in kw.items():
        p = PropertyValue()
        p.Name = key
        p.Value = value
        out.append(p)
    return tuple(out)


def _connect(uno, office, connect, timeout):
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + timeout
    last = None
    restarts = 0
    while time.monotonic() < deadline:
        code = office.exited()
        if code is not None:
            if code == RESTART_EXIT_CODE and restarts < 2:
                restarts += 1
                office.start()
                continue
            raise RuntimeError(f"soffice exited with code {code} while starting")
        try:
            ctx = resolver.resolve("uno:" + connect + "StarOffice.ComponentContext")
            return ctx, ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
        except Exception as exc:  # NoConnectException until soffice listens
            last = exc
            time.sleep(0.02)
    raise RuntimeError(f"soffice did not accept a UNO connection within {timeout}s ({last})")


def _prepare_profile(ctx):
    """Mark the profile as set up for this office version and write it to disk; returns the version.

    An office whose profile lacks ``ooSetupLastVersion`` believes it was just upgraded and runs its
    graphics self-tests at every start (most of a warm start); headless, nothing else ever records
    the version, so a profile is never "finished" on its own.
    """
    smgr = ctx.ServiceManager
    provider = smgr.createInstanceWithContext("com.sun.star.configuration.ConfigurationProvider", ctx)
    args = _props(nodepath="/org.openoffice.Setup/Product")
    version = provider.createInstanceWithArguments(
        "com.sun.star.configuration.ConfigurationAccess", args
    ).getByName("ooSetupVersion")
    update = provider.createInstanceWithArguments(
        "com.sun.star.configuration.ConfigurationUpdateAccess", args
    )
    update.replaceByName("ooSetupLastVersion", version)
    update.commitChanges()
    provider.flush()
    return version


def _close(doc):
    try:
        doc.close(True)
    except Exception:
        try:
            doc.dispose()
        except Exception:
            pass


def _convert(uno, desktop, src, dst, done):
    """Load ``src`` hidden and read-only, export it to the PDF ``dst`` and close it.

    ``done()`` is called as soon as the PDF is written, before the document is closed (closing a
    big deck takes a while, and the caller can already rasterise the PDF meanwhile).
    """
    load = _props(Hidden=True, ReadOnly=True, MacroExecutionMode=0, UpdateDocMode=0)
    doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(src), "_blank", 0, load)
    if doc is None:
        raise RuntimeError("LibreOffice could not open the file (unsupported format or damaged)")
    try:
        filter_data = uno.Any("[]com.sun.star.beans.PropertyValue", _props(ExportHiddenSlides=True))
        store = _props(FilterName="impress_pdf_Export", FilterData=filter_data, Overwrite=True)
        uno.invoke(doc, "storeToURL", (uno.systemPathToFileUrl(dst), store))
    except Exception:
        _close(doc)
        raise
    done()
    _close(doc)


def _watch_parent(office, parent):
    """Kill soffice and exit when the process that started the bridge is gone."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            office.kill()
            os._exit(0)


def main(argv):
    """Run the bridge; returns the process exit code."""
    spec = json.loads(argv[1])
    try:
        import uno
    except ImportError as exc:
        _reply({"ready": False, "error": f"this Python ({sys.executable}) cannot import uno: {exc}"})
        return 2
    office = Office(spec["office"], spec["connect"])
    threading.Thread(target=_watch_parent, args=(office, os.getppid()), daemon=True).start()
    try:
        office.start()
        ctx, desktop = _connect(uno, office, spec["connect"], float(spec["timeout"]))
        prepared = _prepare_profile(ctx) if spec.get("prepare") else None
    except Exception as exc:
        office.kill()
        _reply({"ready": False, "error": str(exc)})
        return 3
    _reply({"ready": True, "office_pid": office.proc.pid, "prepared": prepared})
    code = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        try:
            answer = {"id": req.get("id"), "ok": True}
            _convert(uno, desktop, req["src"], req["dst"], lambda answer=answer: _reply(answer))
        except Exception as exc:
            name = type(exc).__name__
            fatal = name == "DisposedException" or office.exited() is not None
            _reply({"id": req.get("id"), "ok": False, "error": f"{name}: {exc}", "fatal": fatal})
            if fatal:
                code = 4
                break
    office.kill()  # no desktop.terminate(): it can hang; the profile is throwaway
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
