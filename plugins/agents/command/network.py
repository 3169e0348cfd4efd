"""Which hosts a CLI jail may reach, and the user-space network of ``network = "open"``.

- ``"none"``: the jail's own network namespace, loopback only.
- ``"allowlist"`` (default): the same, plus the egress proxy of :mod:`.proxy` reaching only the
  hosts of :func:`allow_entries` (the ``allow_hosts`` option and the hosts of URL values in ``env``,
  e.g. ``ANTHROPIC_BASE_URL``). The CLI finds it through ``HTTP(S)_PROXY``.
- ``"open"``: `slirp4netns <https://github.com/rootless-containers/slirp4netns>`_ attached to the
  jail's namespace with ``--disable-host-loopback``: any internet host, but not this machine's
  loopback services nor its abstract unix sockets (X displays); DNS through slirp's 10.0.2.3.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from .proxy import AllowEntry, parse_entry

PROXY_PORT = 3128  # on the jail's own loopback
SLIRP_RESOLV = "nameserver 10.0.2.3\n"


def url_hosts(values: Iterable[str]) -> list[AllowEntry]:
    """Allow-list entries for the values that are http(s) URLs (a model endpoint's base URL)."""
    out = []
    for value in values:
        text = value.strip()
        if text.lower().startswith(("http://", "https://")):
            try:
                if urlsplit(text).hostname:
                    out.append(parse_entry(text))
            except ValueError:
                continue
    return out


def allow_entries(allow_hosts: Iterable[str], env_values: Iterable[str]) -> list[AllowEntry]:
    """The allow-list: ``allow_hosts`` plus the hosts of URL values the agent's ``env`` sets."""
    entries = [parse_entry(h) for h in allow_hosts]
    for entry in url_hosts(env_values):
        if entry not in entries:
            entries.append(entry)
    return entries


def proxy_environment() -> dict[str, str]:
    """The variables that send a CLI's HTTP(S) traffic to the in-jail end of the proxy."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    env = {}
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = ""
    return env


def slirp_executable() -> str | None:
    """The ``slirp4netns`` program, when installed."""
    return shutil.which("slirp4netns")


def attach_slirp(pid: int, timeout: float = 20.0) -> subprocess.Popen[bytes]:
    """Attach slirp4netns to the network namespace of ``pid``; return once its interface is up.

    :raises RuntimeError: slirp4netns is missing, exits, or is not ready within ``timeout``.
    """
    exe = slirp_executable()
    if exe is None:
        raise RuntimeError('network = "open" needs slirp4netns (Debian/Ubuntu package slirp4netns)')
    ready_r, ready_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [exe, "--configure", "--mtu=65520", "--disable-host-loopback", f"--ready-fd={ready_w}"]
            + ["--netns-type=path", f"/proc/{pid}/ns/net", "tap0"],  # (a PID would join its userns: EPERM)
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(ready_w,),
            start_new_session=True,
        )
        os.close(ready_w)
        ready_w = -1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([ready_r], [], [], 0.1)[0]:
                if os.read(ready_r, 1) == b"1":
                    return proc
                break
            if proc.poll() is not None:
                break
        proc.kill()
        _, err = proc.communicate(timeout=5)
        raise RuntimeError(f"slirp4netns did not come up: {err.decode(errors='replace')[-300:].strip()}")
    finally:
        os.close(ready_r)
        if ready_w >= 0:
            os.close(ready_w)
