"""The host side of a CLI jail's network: an HTTP proxy on a unix socket that only reaches allowed hosts.

With ``network = "allowlist"`` the jail has a network namespace of its own with nothing but its
loopback: no route out, no host loopback, no abstract unix socket of the host (X displays). Its one
way out is this proxy, whose unix socket is bound into the jail (the jail's launcher relays
``127.0.0.1:<port>`` to it, and ``HTTP(S)_PROXY`` point there). The proxy serves ``CONNECT host:port``
(HTTPS: an opaque tunnel) and absolute-form plain HTTP requests (``GET http://host:port/path``),
each only when ``host:port`` is on the allow-list; anything else gets ``403`` and is recorded.

The proxy resolves names itself and connects to the address it checked. A name that resolves to
this machine (loopback in any spelling, ``::ffff:127.0.0.1`` included, the unspecified address, an
address of one of its interfaces), a link-local address (a cloud's metadata service), a multicast or
a reserved one is refused unless the allow-list entry itself is a loopback literal
(``127.0.0.1:8000``, ``localhost:8000``, ``[::1]:8000``) or that IP literal: that is how a test's
loopback model stub, or a model server on this machine, is reached, and only at the port named.
Private (LAN) addresses a name resolves to are reached.
"""

from __future__ import annotations

import ipaddress
import os
import selectors
import socket
import socketserver
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024  # bytes of request line + headers
CONNECT_TIMEOUT = 15.0
IDLE_TIMEOUT = 600.0  # a streamed model reply may pause; nothing waits longer
MAX_CONNECTIONS = 64
DEFAULT_PORTS = (443, 80)
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


@dataclass(frozen=True)
class AllowEntry:
    """One allowed destination: an exact host or ``*.domain`` (any subdomain), and its ports."""

    host: str
    ports: tuple[int, ...]

    def matches(self, host: str, port: int) -> bool:
        """True when ``host:port`` is this entry's destination."""
        host = host.lower().rstrip(".")
        if port not in self.ports:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    @property
    def loopback(self) -> bool:
        """True when the entry names this machine itself (a loopback literal or ``localhost``)."""
        return is_loopback_literal(self.host)


def is_loopback_literal(host: str) -> bool:
    """True for ``localhost`` and loopback IP literals."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _internal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True for an address a public name must not lead to: this machine (loopback, unspecified, an
    address of its own interfaces), link-local, multicast or reserved; IPv4 addresses embedded in
    IPv6 (``::ffff:a.b.c.d``, 6to4) are judged as the IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is not None:
            ip = inner
    if ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip.is_multicast or ip.is_reserved:
        return True
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((str(ip), 0))  # binding works only to an address of this machine
        except OSError:
            return False
    return True


def parse_entry(text: str) -> AllowEntry:
    """``host``, ``host:port``, ``*.domain[:port]``, ``[v6]:port`` or a URL (its host and port).

    Without a port, 443 and 80 are allowed.

    :raises ValueError: an empty or malformed entry.
    """
    raw = text.strip()
    if "://" in raw:
        parts = urlsplit(raw)
        if not parts.hostname:
            raise ValueError(f"allow_hosts entry {text!r} has no host")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return AllowEntry(parts.hostname.lower(), (port,))
    if raw.startswith("["):
        host, _, rest = raw[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif raw.count(":") == 1:
        host, _, port_text = raw.partition(":")
    else:
        host, port_text = raw, ""
    host = host.lower().rstrip(".")
    if not host or any(c.isspace() or c in "/@?#" for c in host) or "*" in host.lstrip("*."):
        raise ValueError(f"allow_hosts entry {text!r} is not a host name, host:port or URL")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"allow_hosts entry {text!r} has a bad port")
        return AllowEntry(host, (int(port_text),))
    return AllowEntry(host, DEFAULT_PORTS)


@dataclass
class EgressLog:
    """What the proxy let through and what it refused (``host:port`` → count)."""

    allowed: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, target: str, ok: bool) -> None:
        """Count one decision."""
        with self.lock:
            book = self.allowed if ok else self.refused
            if target in book or len(book) < 100:
                book[target] = book.get(target, 0) + 1


def _split_target(target: str, default_port: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = target.rpartition(":") if ":" in target else (target, "", "")
    if port and not port.isdigit():
        raise ValueError(target)
    return host.lower().rstrip("."), int(port) if port else default_port


class _Handler(socketserver.BaseRequestHandler):
    server: EgressProxy._Server

    def handle(self) -> None:
        proxy = self.server.proxy
        if not proxy.slots.acquire(blocking=False):
            self._reply(503, "too many connections through the proxy")
            return
        proxy.track(self.request)
        try:
            self._serve(proxy)
        except OSError:
            pass
        finally:
            proxy.untrack(self.request)
            proxy.slots.release()

    def _reply(self, code: int, text: str) -> None:
        body = f"pptarena egress proxy: {text}\n".encode()
        reason = {403: "Forbidden", 400: "Bad Request", 502: "Bad Gateway", 503: "Service Unavailable"}[code]
        head = f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        try:
            self.request.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        except OSError:
            pass

    def _serve(self, proxy: EgressProxy) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return
            data += chunk
            if len(data) > HEAD_LIMIT:
                self._reply(400, "request head too large")
                return
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ")
            if method.upper() == "CONNECT":
                host, port = _split_target(target, 443)
            else:
                url = urlsplit(target)
                if url.scheme != "http" or not url.hostname:
                    raise ValueError(target)
                host, port = url.hostname.lower(), url.port or 80
        except ValueError:
            self._reply(400, "expected CONNECT host:port or an absolute http:// URL")
            return
        label = f"{host}:{port}"
        address = proxy.resolve(host, port)
        proxy.log.note(label, address is not None)
        if address is None:
            self._reply(403, f"{label} is not on this agent's allow-list (allow_hosts)")
            return
        try:
            upstream = socket.create_connection(address[:2], timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            self._reply(502, f"cannot reach {label}: {exc.strerror or exc}")
            return
        if not proxy.track(upstream):  # the proxy was closed while connecting
            upstream.close()
            return
        with upstream:
            if method.upper() == "CONNECT":
                sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                path = url.path or "/"
                if url.query:
                    path += "?" + url.query
                kept = [
                    line
                    for line in lines[1:]
                    if not line.lower().startswith(("proxy-", "connection:", "keep-alive:"))
                ]
                out = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
                upstream.sendall(out.encode("latin-1") + b"\r\n\r\n" + rest)
            try:
                _pump(sock, upstream)
            finally:
                proxy.untrack(upstream)


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Relay both ways until both sides are done or nothing moves for IDLE_TIMEOUT seconds."""
    a.setblocking(False)
    b.setblocking(False)
    peer = {a: b, b: a}
    open_ = {a, b}
    with selectors.DefaultSelector() as sel:
        for s in open_:
            sel.register(s, selectors.EVENT_READ)
        while open_:
            events = sel.select(IDLE_TIMEOUT)
            if not events:
                return
            for key, _ in events:
                src: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = src.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    dst = peer[src]
                    dst.setblocking(True)
                    dst.settimeout(IDLE_TIMEOUT)
                    try:
                        dst.sendall(data)
                    except OSError:
                        return
                    dst.setblocking(False)
                else:
                    sel.unregister(src)
                    open_.discard(src)
                    try:
                        peer[src].shutdown(socket.SHUT_WR)
                    except OSError:
                        pass


class EgressProxy:
    """The allow-list proxy of one CLI jail, serving on a unix socket in a private folder.

    Use as a context manager: ``with EgressProxy(entries, folder) as proxy: ... proxy.socket_path``.
    """

    class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True
        proxy: EgressProxy

    def __init__(self, entries: list[AllowEntry], folder: Path):
        self.entries = list(entries)
        self.socket_path = folder / "proxy.sock"
        self.log = EgressLog()
        self.slots = threading.Semaphore(MAX_CONNECTIONS)
        self._server: EgressProxy._Server | None = None
        self._thread: threading.Thread | None = None
        self._live: set[socket.socket] = set()  # sockets of tunnels and requests in progress
        self._live_lock = threading.Lock()
        self._closed = False

    def track(self, sock: socket.socket) -> bool:
        """Note a socket to shut down when the proxy closes; False once it is closed."""
        with self._live_lock:
            if self._closed:
                return False
            self._live.add(sock)
            return True

    def untrack(self, sock: socket.socket) -> None:
        """Forget a socket its handler is done with."""
        with self._live_lock:
            self._live.discard(sock)

    def resolve(self, host: str, port: int) -> tuple[str, int] | None:
        """The address to connect to for ``host:port``, or None when the allow-list refuses it.

        A name's addresses come from its DNS, which whoever owns the name controls: an address of
        this machine (loopback in any form, e.g. ``::ffff:127.0.0.1``, unspecified, or one of its
        own interfaces' addresses), a link-local one (``169.254.169.254``: a cloud's metadata
        service) or a multicast or reserved one is refused, unless the allow-list names that
        address itself (an IP literal) or names this machine (``localhost``, a loopback literal).
        """
        entries = [e for e in self.entries if e.matches(host, port)]
        if not entries:
            return None
        named = any(e.loopback or _is_ip(e.host) for e in entries)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, ValueError):  # ValueError: a NUL or a label IDNA refuses (under a wildcard)
            return None
        for family, _, _, _, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            ip = ipaddress.ip_address(sockaddr[0].split("%")[0])
            if not named and _internal(ip):
                continue  # a name resolving to this machine or its link: refused
            return sockaddr[0], port
        return None

    def __enter__(self) -> EgressProxy:
        server = EgressProxy._Server(str(self.socket_path), _Handler)
        server.proxy = self
        os.chmod(self.socket_path, 0o666)  # a jail may run under another uid
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="cli-egress-proxy", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._live_lock:  # tunnels end with the jail, never idle on for IDLE_TIMEOUT
            self._closed = True
            live, self._live = list(self._live), set()
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
