"""The first process inside a CLI agent's jail (standard library only: it runs as ``python -I -S``).

The harness runs ``python -I -S -c <this file's source> <spec JSON>`` under bubblewrap. In order:

1. it makes itself non-dumpable, so the CLI (same uid) can neither ptrace it nor read its
   descriptors through ``/proc``;
2. it copies the staged workspace (``spec["stage"]``, read-only) into the workspace tmpfs;
3. with ``spec["proxy"]``, it listens on ``127.0.0.1:<port>`` of the jail's own network namespace and
   relays every connection to the harness's egress proxy on a unix socket bound into the jail
   (the jail has no other way out);
4. it runs the CLI (``spec["argv"]`` in ``spec["cwd"]``), at most ``spec["timeout"]`` seconds;
5. it kills every other process of the jail's PID namespace (``kill(-1, SIGKILL)`` until none is
   left), so nothing changes the workspace while the harness copies it out;
6. it writes ``{"returncode": ..., "timed_out": ...}`` on descriptor ``spec["status_fd"]`` and waits
   until the harness closes ``spec["release_fd"]`` (the harness copies the workspace out of this
   mount namespace meanwhile, then ends the jail).

Before step 4 it writes ``{"ready": true}`` on the status descriptor and waits for one byte on
``spec["start_fd"]`` (the harness moves on once the namespaces are set up: it attaches the
user-space network of ``network = "open"`` then, never while bubblewrap still configures them).
"""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

PR_SET_DUMPABLE = 4


def relay(a, b):
    """Copy bytes both ways between two sockets until either side closes."""

    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    t = threading.Thread(target=pump, args=(b, a), daemon=True)
    t.start()
    pump(a, b)
    t.join()
    a.close()
    b.close()


def forward(port, path):
    """Accept TCP connections on 127.0.0.1:``port``; relay each to the unix socket ``path``."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)

    def serve():
        while True:
            client, _ = server.accept()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(path)
            except OSError:
                client.close()
                upstream.close()
                continue
            threading.Thread(target=relay, args=(client, upstream), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def others():
    """PIDs of this namespace other than init (1) and this process, zombies excluded."""
    me, out = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            out.append(int(name))
    return out


def kill_all():
    """SIGKILL every process of the namespace but init and this one, until none is left."""
    for _ in range(1000):
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        while True:  # reap our own children
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not others():
            return True
        time.sleep(0.01)
    return False


def main():
    spec = json.loads(sys.argv[1])
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    status = os.fdopen(spec["status_fd"], "w")
    if spec.get("stage"):
        shutil.copytree(spec["stage"], spec["workspace"], symlinks=True, dirs_exist_ok=True)
    if spec.get("proxy"):
        forward(spec["proxy"]["port"], spec["proxy"]["socket"])
    status.write(json.dumps({"ready": True}) + "\n")
    status.flush()
    if spec.get("start_fd") is not None:
        with os.fdopen(spec["start_fd"], "rb") as start:
            if start.read(1) != b"1":
                status.write(json.dumps({"error": "the harness did not start the CLI"}) + "\n")
                return 125
    result = {"returncode": None, "timed_out": False}
    try:
        child = subprocess.Popen(spec["argv"], cwd=spec["cwd"], stdin=subprocess.DEVNULL)
    except OSError as exc:
        result["error"] = f"{type(exc).__name__}: {exc.strerror or exc}"
    else:
        try:
            result["returncode"] = child.wait(timeout=spec.get("timeout"))
        except subprocess.TimeoutExpired:
            result["timed_out"] = True
    result["all_killed"] = kill_all()
    status.write(json.dumps(result) + "\n")
    status.flush()
    with os.fdopen(spec["release_fd"], "rb") as release:
        release.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
