"""Which hosts a CLI jail may reach, and the user-space network of ``network = "open"``.

- ``"none"``: the jail's own network namespace, loopback only.
- ``"allowlist"`` (default): the same, plus the egress proxy of :mod:`.proxy` reaching only the
  hosts of :func:`allow_entries` (the ``allow_hosts`` option and the hosts of URL values in ``env``,
  e.g. ``ANTHROPIC_BASE_URL``). The CLI finds it through ``HTTP(S)_PROXY``.
- ``"open"``: `slirp4netns <https://github.com/rootless-containers/slirp4netns>`_ attached to the
  jail's namespace with ``--disable-host-loopback``: any internet host, but not this machine's
  loopback services nor its abstract unix sockets (X displays); DNS through slirp's 10.0.2.3.
  :func:`fence` then adds ``unreachable`` routes in the jail's namespace (the CLI, without
  capabilities, cannot remove them) for every address of this machine's interfaces (services
  listening on all addresses), link-local addresses (a cloud's metadata service, 169.254.169.254)
  and the private, shared and reserved ranges (the machine's LAN).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from .proxy import AllowEntry, parse_entry

PROXY_PORT = 3128  # on the jail's own loopback
#: slirp4netns runs as root on the host and parses every packet the jail sends: it runs in a mount
#: namespace of its own with every capability dropped but CAP_NET_BIND_SERVICE, under seccomp.
HARDENING = ("--enable-sandbox", "--enable-seccomp")
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


class Slirp:
    """A running slirp4netns; it also ends by itself when this process dies (``--exit-fd``)."""

    def __init__(self, proc: subprocess.Popen[bytes], exit_w: int):
        self.proc = proc
        self.exit_w = exit_w

    def stop(self) -> None:
        """End slirp4netns."""
        with contextlib.suppress(OSError):
            os.close(self.exit_w)
        self.proc.kill()
        self.proc.wait()


def attach_slirp(pid: int, timeout: float = 20.0) -> Slirp:
    """Attach slirp4netns to the network namespace of ``pid``; return once its interface is up.

    :raises RuntimeError: slirp4netns is missing, exits, or is not ready within ``timeout``.
    """
    exe = slirp_executable()
    if exe is None:
        raise RuntimeError('network = "open" needs slirp4netns (Debian/Ubuntu package slirp4netns)')
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()  # the write end stays here (close-on-exec): our death closes it
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                [exe, "--configure", "--mtu=65520", "--disable-host-loopback", *HARDENING]
                + [f"--ready-fd={ready_w}", f"--exit-fd={exit_r}"]
                + [
                    "--netns-type=path",
                    f"/proc/{pid}/ns/net",
                    "tap0",
                ],  # (a PID would join its userns: EPERM)
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                pass_fds=(ready_w, exit_r),
                start_new_session=True,
            )
        except OSError:
            os.close(exit_w)
            raise
        finally:
            os.close(ready_w)
            os.close(exit_r)
        slirp = Slirp(proc, exit_w)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if select.select([ready_r], [], [], 0.1)[0]:
                    if os.read(ready_r, 1) == b"1":
                        return slirp
                    break
                if proc.poll() is not None:
                    break
        finally:
            os.close(ready_r)
        slirp.stop()
        err.seek(0)
        text = err.read()[-300:].decode(errors="replace").strip()
        raise RuntimeError(f"slirp4netns did not come up: {text}")


#: Ranges a jail with ``network = "open"`` never reaches (slirp's own 10.0.2.0/24 stays: its route
#: is more specific): private, shared (CGNAT), link-local, benchmarking, multicast and reserved.
FENCED = (
    "10.0.0.0/8",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "fc00::/7",
    "fe80::/10",
)


def local_addresses() -> list[str]:
    """The addresses of this machine's interfaces (loopback excluded), from ``ip -j addr``.

    :raises RuntimeError: ``ip`` (iproute2) is missing or fails.
    """
    exe = shutil.which("ip")
    if exe is None:
        raise RuntimeError('network = "open" needs the ip program (Debian/Ubuntu package iproute2)')
    try:
        out = subprocess.run([exe, "-j", "addr"], capture_output=True, text=True, timeout=10, check=True)
        links = json.loads(out.stdout or "[]")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise RuntimeError(f"cannot list this machine's addresses: {exc}") from None
    found = []
    for link in links:
        for info in link.get("addr_info", []):
            try:
                ip = ipaddress.ip_address(str(info.get("local", "")).split("%")[0])
            except ValueError:
                continue
            if not ip.is_loopback:
                found.append(str(ip))
    return found


def fence(pid: int) -> list[str]:
    """Make this machine's addresses and the ranges of :data:`FENCED` unreachable from the network
    namespace of ``pid`` (a jail with slirp4netns attached); returns the prefixes fenced off.

    :raises RuntimeError: ``ip`` or ``nsenter`` is missing, or a route cannot be added.
    """
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise RuntimeError('network = "open" needs nsenter (Debian/Ubuntu package util-linux)')
    prefixes = list(FENCED)
    for address in local_addresses():
        prefix = f"{address}/{32 if ':' not in address else 128}"
        if prefix not in prefixes:
            prefixes.append(prefix)
    batch = "".join(f"route add unreachable {p}\n" for p in prefixes)
    run = subprocess.run(
        [nsenter, f"--net=/proc/{pid}/ns/net", shutil.which("ip") or "ip", "-batch", "-"],
        input=batch,
        capture_output=True,
        text=True,
        timeout=20,
    )
    if run.returncode != 0:
        raise RuntimeError(f"cannot fence the jail's network: {run.stderr.strip()[-300:]}")
    return prefixes
