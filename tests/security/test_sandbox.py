"""The sandbox really limits time, memory and network, and passes results back."""

from __future__ import annotations

import os

import pytest

from pptarena.trust.sandbox import (
    SandboxLimits,
    filesystem_isolation_available,
    network_isolation_available,
    run_python,
)


def test_result_and_inputs_round_trip():
    res = run_python("sandbox_result({'twice': SANDBOX_INPUT['x'] * 2})", inputs={"x": 21})
    assert res.ok and res.result == {"twice": 42}


def test_exception_is_reported_with_traceback():
    res = run_python("def f():\n    raise ValueError('boom')\nf()\n")
    assert not res.ok and "ValueError: boom" in res.error_text()


def test_timeout_kills():
    res = run_python("import time\nwhile True: time.sleep(0.1)", limits=SandboxLimits(timeout=1.5))
    assert res.timed_out and "timed out" in res.error_text()


def test_memory_limit():
    res = run_python(
        "x = bytearray(800 * 1024 * 1024)\nsandbox_result('allocated')", limits=SandboxLimits(memory_mb=300)
    )
    assert not res.ok and res.result is None and "MemoryError" in res.stderr


def test_secrets_not_inherited(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    res = run_python("import os\nsandbox_result(os.environ.get('OPENAI_API_KEY'))")
    assert res.ok and res.result is None


def test_own_working_directory_is_removed():
    res = run_python("import os\nopen('f.txt','w').write('x')\nsandbox_result(os.getcwd())")
    assert res.ok and not os.path.exists(res.result)


@pytest.mark.skipif(not network_isolation_available(), reason="unshare -rn is not available here")
def test_no_network():
    code = (
        "import socket\ns = socket.socket()\ns.settimeout(2)\n"
        "try:\n    s.connect(('127.0.0.1', 9))\n    sandbox_result('connected')\n"
        "except OSError as e:\n    sandbox_result(type(e).__name__)\n"
    )
    res = run_python(code)
    assert res.ok and res.network_isolated and res.result != "connected"
    assert (
        "Network is unreachable"
        in run_python("import socket\nsocket.create_connection(('10.0.0.1', 80), timeout=2)").stderr
    )


def test_extra_files_are_importable_helper_modules():
    res = run_python("import helper\nsandbox_result(helper.VALUE)", extra_files={"helper.py": "VALUE = 7\n"})
    assert res.ok and res.result == 7


@pytest.mark.skipif(
    not filesystem_isolation_available(), reason="user and mount namespaces are not available here"
)
def test_only_the_working_directory_and_named_paths_are_writable(tmp_path):
    outside = tmp_path / "outside.txt"
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    code = (
        "import sys\n"
        "results = {}\n"
        "for name, path in SANDBOX_INPUT.items():\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        results[name] = 'written'\n"
        "    except OSError as exc:\n"
        "        results[name] = exc.strerror\n"
        "sandbox_result(results)\n"
    )
    paths = {
        "outside": str(outside),
        "allowed": str(allowed / "f.txt"),
        "cwd": "here.txt",
        "home": "/root/.pptarena-escape",
    }
    res = run_python(code, inputs=paths, writable=[allowed])
    assert res.ok and res.filesystem_isolated, res.stderr
    # under bubblewrap the host's tmp folder is a private tmpfs: the write lands there, not on the host
    outside_outcome = "written" if res.isolation == "bwrap" else "Read-only file system"
    home = res.result.pop("home")
    assert res.result == {"outside": outside_outcome, "allowed": "written", "cwd": "written"}
    # /root exists read-only in the sandbox only when the interpreter lives under it (pyenv); with a
    # system interpreter the jail has no /root at all: either way nothing is written to the home folder
    assert home in ("Read-only file system", "No such file or directory"), home
    assert not os.path.exists("/root/.pptarena-escape")
    assert not outside.exists() and (allowed / "f.txt").read_text() == "x"
    assert run_python(
        code, inputs={"outside": str(outside)}, limits=SandboxLimits(write_anywhere=True)
    ).result == {"outside": "written"}
