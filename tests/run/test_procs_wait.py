"""run_in_session's wait (issue 18): wakes when the process exits, still kills on timeout."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pptarena.trust.procs import run_in_session, wait_exit


def test_wait_exit_reaps_an_exited_process_and_reports_a_timeout():
    quick = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert wait_exit(quick, 30) is True and quick.returncode == 3
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert wait_exit(slow, 0.2) is False and slow.returncode is None
    finally:
        slow.kill()
        slow.wait()
    assert wait_exit(subprocess.Popen(["true"]), None) is True


@pytest.mark.slow
def test_run_in_session_exit_status_timeout_and_grandchildren_killed(tmp_path):
    out = (tmp_path / "out").open("w+b")
    code, timed_out = run_in_session(
        [sys.executable, "-c", "print('hi'); raise SystemExit(5)"],
        cwd=tmp_path,
        env=None,
        stdout=out,
        stderr=subprocess.DEVNULL,
        timeout=30,
    )
    out.seek(0)
    assert (code, timed_out, out.read()) == (5, False, b"hi\n")
    marker = tmp_path / "grandchild-alive"
    late = f"import time; time.sleep(1.5); open({str(marker)!r}, 'w')"
    spawn = (
        f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {late!r}])\ntime.sleep(30)\n"
    )
    code, timed_out = run_in_session(
        [sys.executable, "-c", spawn], cwd=tmp_path, env=None, stdout=None, stderr=None, timeout=0.5
    )
    assert (code, timed_out) == (None, True)
    import time

    time.sleep(2.0)
    assert not marker.exists()  # the whole session was killed at the timeout
    code, timed_out = run_in_session(  # input on stdin still goes through communicate
        [sys.executable, "-c", "import sys; raise SystemExit(len(sys.stdin.read()))"],
        cwd=tmp_path,
        env=None,
        stdout=None,
        stderr=None,
        timeout=30,
        stdin_bytes=b"abcd",
    )
    assert (code, timed_out) == (4, False)
