"""A red-team round against issue 23's jails (the CLI jail, its egress proxy and network, the code
sandbox, the rubric judge's model bridge, the uid fallback).

Each test performs an attack that worked on the code it was written against and checks what the
harness did on this machine (bytes in the run folder, folders copied out, memory of the harness's
process, connections a loopback service received, requests the model stub received):

- a CLI agent printing 200 MB to stdout (its transcript was a host file in the pair folder);
- a CLI agent leaving 30,000 empty folders, or 600,000 empty files in one folder, for the copy-out;
- an open-network CLI reaching a host service through this machine's own address;
- an allow-listed name whose DNS answer (the name's owner controls it) is this machine in a form
  the proxy's loopback check missed (``::ffff:127.0.0.1``, its own address), a link-local address
  (a cloud's metadata service), multicast or reserved; a name getaddrinfo refuses; tunnels left open
  past the pair;
- a sandboxed program printing 600 MB (captured in a host temp file) or writing a gigabyte into /dev;
- a rubric leaf flooding the model bridge with connections, or sending a 5 MB prompt and 500
  images past the leaf side's checks;
- a uid lock folder planted by another local user.

One test checks a hardening rather than an attack that worked: slirp4netns runs sandboxed.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.support.agents_fixtures import events
from tests.support.stub_llm_server import Reply
from tests.support.trust_fixtures import make_agent, needs_bwrap, run_cli

MB = 1024 * 1024


def _run_cli(tmp_path: Path, body: str, **options):
    return run_cli(tmp_path, body, **options)


# --------------------------------------------------------------------------- the CLI jail


@needs_bwrap
def test_a_cli_flooding_stdout_does_not_fill_the_run_folder(tmp_path):
    """The CLI's stdout went straight into ``cli.stdout.txt`` in the pair folder: 200 MB printed
    made a 200 MB file there (no quota, no cap), then the redactor read it all."""
    import sys

    from tests.support.agents_fixtures import make_task, scripted_workspace

    script = tmp_path / "cli.py"
    script.write_text(
        "import os, shutil, sys\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
        "chunk = b'y' * (1 << 20)\n"
        "for _ in range(200):\n"
        "    os.write(1, chunk)\n"
        "os.write(2, chunk * 50)\n"
        "print('AFTER-THE-FLOOD', flush=True)\n"
    )
    ws, _ = scripted_workspace(tmp_path, [])
    agent = make_agent(tmp_path, command=[sys.executable, str(script), "{input}", "{output}"])
    pred = agent.edit(make_task(tmp_path), ws)
    assert pred.path.is_file()  # the pair itself is unharmed
    for name in ("cli.stdout.txt", "cli.stderr.txt"):
        size = (ws.dir / name).stat().st_size
        assert size <= 33 * MB, (name, size)  # the default log_mb = 32, plus the truncation note
    stdout = (ws.dir / "cli.stdout.txt").read_bytes()
    assert b"truncated" in stdout[-200:] and b"AFTER-THE-FLOOD" not in stdout


@needs_bwrap
def test_a_cli_leaving_30000_empty_folders_does_not_fill_the_pair_folder(tmp_path):
    """Folders were not counted by the copy-out (only files were): 30,000 empty folders left in the
    workspace became 30,000 folders (inodes, directory blocks) in the pair folder."""
    body = """
    for i in range(30000):
        os.mkdir("d%05d" % i)
    os.makedirs("output/deep")
    for i in range(5000):
        os.mkdir("output/deep/e%05d" % i)
    """
    pred, _, ws = _run_cli(tmp_path, body)
    assert pred.path.is_file()  # the deck in output/ is still taken
    entries = sum(1 for _ in (ws.dir / "cli").rglob("*"))
    assert 5000 < entries <= 10_100, entries  # output/ (under its cap) is there, the rest is not
    jail = events(ws, "command_jail")[0]
    assert jail["skipped"].get("over the file count cap", 0) >= 1, jail


@needs_bwrap
def test_an_open_network_jail_does_not_reach_this_machine_by_its_own_address(tmp_path):
    """slirp4netns blocks the host's loopback, but a service of this machine listening on all
    addresses answered on the machine's own address (and a cloud's metadata service at
    169.254.169.254, the LAN, would have): the CLI connected to a host service that way."""
    from pptarena.plugins.agents.command.network import slirp_executable

    if slirp_executable() is None:
        pytest.skip("slirp4netns is not installed (scripts/setup.sh installs it)")
    own = _own_address() or pytest.skip("this machine has no non-loopback IPv4 address")
    service = _Service(socket.AF_INET)
    socket.create_connection((own, service.port), timeout=3).close()  # reachable from the host itself
    deadline = time.monotonic() + 3
    while service.accepted < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.accepted == 1
    service.accepted = 0
    body = f"""
    for host in ({own!r}, "169.254.169.254", "192.168.1.1"):
        try:
            socket.create_connection((host, {service.port}), timeout=3).close()
            report[host] = "connected"
        except OSError as exc:
            report[host] = exc.errno
    """
    _, report, _ = _run_cli(tmp_path, body, network="open")
    assert service.accepted == 0, report
    assert all(v == 113 for v in report.values()), report  # EHOSTUNREACH: fenced off, never tried


@needs_bwrap
def test_slirp4netns_parsing_the_jails_packets_runs_without_root_powers(tmp_path):
    """Hardening, not an attack that worked: slirp4netns (root, on the host) parses every packet the
    CLI sends, and ran with every capability and no syscall filter; a libslirp bug reached from the
    jail would have been root on the host. It must run in its own mount namespace, under seccomp,
    with no capability but CAP_NET_BIND_SERVICE."""
    from pptarena.plugins.agents.command.network import slirp_executable

    if slirp_executable() is None:
        pytest.skip("slirp4netns is not installed (scripts/setup.sh installs it)")
    seen: dict[str, object] = {}
    done = threading.Event()

    def watch() -> None:
        me = str(os.getpid())
        while not done.is_set():  # the last look counts (slirp sandboxes itself once started)
            for entry in Path("/proc").iterdir():
                try:
                    if b"slirp4netns" not in (entry / "cmdline").read_bytes():
                        continue
                    status = dict(
                        line.split(":\t", 1)
                        for line in (entry / "status").read_text().splitlines()
                        if ":\t" in line
                    )
                    if status.get("PPid", "").strip() != me:  # another run's
                        continue
                    look = {  # one whole look or none: an exiting slirp can fail half-way through
                        "cap_eff": int(status["CapEff"], 16),
                        "seccomp": status["Seccomp"].strip(),
                        "own_mounts": os.readlink(entry / "ns" / "mnt") != os.readlink("/proc/self/ns/mnt"),
                    }
                except (OSError, ValueError, KeyError):
                    continue
                seen.update(look)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        _run_cli(tmp_path, "import time\ntime.sleep(1)\n", network="open")
    finally:
        done.set()
        watcher.join()
    assert seen, "slirp4netns was not seen"
    assert seen["cap_eff"] == 1 << 10 and seen["seccomp"] == "2" and seen["own_mounts"], seen


@needs_bwrap
@pytest.mark.slow
def test_a_folder_of_600000_empty_files_is_not_listed_in_full_by_the_harness(tmp_path):
    """The copy-out listed (and sorted) each folder in full before counting: 600,000 empty files in
    one folder of the workspace grew the harness's process by ~150 MB (the tmpfs allows millions)."""
    base = _rss_mb()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    body = """
    os.mkdir("many")
    for i in range(600000):
        os.close(os.open("many/%07d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
    """
    try:
        pred, _, ws = _run_cli(tmp_path, body, timeout=120)
    finally:
        done.set()
        sampler.join()
    assert pred.path.is_file()
    assert events(ws, "command_jail")[0]["skipped"] == {"over the file count cap": 1}
    assert peak[0] - base < 80, (base, peak[0])


# --------------------------------------------------------------------------- the egress proxy


class _Service:
    """A TCP service of this machine (listening on every address) counting its connections."""

    def __init__(self, family: int = socket.AF_INET6):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET6:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        self.sock.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


def _own_address() -> str | None:
    """A non-loopback IPv4 address of this machine, or None."""
    try:
        out = subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True, timeout=5).stdout
        for link in json.loads(out or "[]"):
            for addr in link.get("addr_info", []):
                ip = ipaddress.ip_address(addr["local"])
                if not ip.is_loopback:
                    return str(ip)
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return None


@pytest.fixture
def rebinding_dns(monkeypatch):
    """The DNS of ``model.attacker.test`` (an allow-listed name whose owner is the attacker): it
    answers what the test sets in ``answer[0]``; every other name resolves as usual."""
    real = socket.getaddrinfo
    answer: list[str] = []

    def fake(host, port, *args, **kwargs):
        if str(host).rstrip(".").lower() == "model.attacker.test":
            ip = ipaddress.ip_address(answer[0])
            family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
            sockaddr = (answer[0], int(port), 0, 0) if ip.version == 6 else (answer[0], int(port))
            return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return answer


def _connect_through(proxy, target: str) -> str:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(20)
    client.connect(str(proxy.socket_path))
    client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    line = client.recv(200).decode(errors="replace").splitlines()[0]
    client.close()
    return line


@pytest.mark.parametrize("answer", ["::ffff:127.0.0.1", "::ffff:0.0.0.0", "own-address"])
def test_an_allowed_name_resolving_to_this_machine_is_refused(tmp_path, rebinding_dns, answer):
    from pptarena.plugins.agents.command.proxy import EgressProxy, parse_entry

    if answer == "own-address":
        answer = _own_address() or pytest.skip("this machine has no non-loopback IPv4 address")
    rebinding_dns.append(answer)
    service = _Service()
    # the attack works from this machine outside any proxy (so "refused" below means something)
    socket.create_connection((answer, service.port), timeout=3).close()
    deadline = time.monotonic() + 3
    while service.accepted < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.accepted == 1
    service.accepted = 0
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    with EgressProxy([parse_entry(f"model.attacker.test:{service.port}")], folder) as proxy:
        line = _connect_through(proxy, f"model.attacker.test:{service.port}")
    time.sleep(0.1)
    assert "403" in line, line
    assert service.accepted == 0
    assert proxy.log.refused == {f"model.attacker.test:{service.port}": 1}


@pytest.mark.parametrize("answer", ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254", "224.0.0.1"])
def test_an_allowed_name_resolving_to_a_link_local_or_multicast_address_is_refused(
    tmp_path, rebinding_dns, answer
):
    """169.254.169.254 is a cloud's metadata service (instance credentials): an allow-listed name
    pointed at it must not reach it."""
    from pptarena.plugins.agents.command.proxy import EgressProxy, parse_entry

    rebinding_dns.append(answer)
    proxy = EgressProxy([parse_entry("model.attacker.test:80")], tmp_path)
    assert proxy.resolve("model.attacker.test", 80) is None


def test_a_name_getaddrinfo_cannot_take_gets_a_403_not_a_crashed_handler(tmp_path):
    """Under a wildcard entry, ``evil\\x00.example.com`` matched the entry and made getaddrinfo raise
    ValueError, which the handler did not catch: no answer, a traceback on the harness's stderr."""
    from pptarena.plugins.agents.command.proxy import EgressProxy, parse_entry

    with EgressProxy([parse_entry("*.example.com:443")], tmp_path) as proxy:
        assert "403" in _connect_through(proxy, "evil\x00.example.com:443")
        assert "403" in _connect_through(proxy, "\u00e9" * 70 + ".example.com:443")  # IDNA refuses it


def test_tunnels_left_open_end_with_the_jails_proxy(tmp_path):
    """A CLI opened tunnels to an allowed host that keeps connections open; when the pair ended the
    proxy stopped accepting, but each tunnel's thread and upstream socket lived on for the idle
    timeout (600 s): 64 per pair, piling up in the worker process until it ran out of descriptors."""
    from pptarena.plugins.agents.command.proxy import EgressProxy, parse_entry

    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(8)
    port = upstream.getsockname()[1]
    with EgressProxy([parse_entry(f"127.0.0.1:{port}")], tmp_path) as proxy:
        clients = []
        for _ in range(3):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(proxy.socket_path))
            client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert b"200" in client.recv(200)
            clients.append(client)
        served = [upstream.accept()[0] for _ in clients]
    for conn in served:  # the host keeps its side open; the proxy must close its own
        conn.settimeout(3)
        assert conn.recv(10) == b"", "the tunnel outlived the proxy"
    for sock in [*clients, *served, upstream]:
        sock.close()


def test_addresses_the_user_names_are_still_reached(tmp_path):
    """What the fixes above must keep: a loopback model server named as such, and an address of
    this machine named as a literal, are reached."""
    from pptarena.plugins.agents.command.proxy import EgressProxy, parse_entry

    service = _Service()
    own = _own_address()
    entries = [parse_entry(f"127.0.0.1:{service.port}")] + (
        [parse_entry(f"{own}:{service.port}")] if own else []
    )
    with EgressProxy(entries, tmp_path) as proxy:
        assert "200" in _connect_through(proxy, f"127.0.0.1:{service.port}")
        if own:
            assert "200" in _connect_through(proxy, f"{own}:{service.port}")
    assert proxy.resolve("127.0.0.1", service.port) == ("127.0.0.1", service.port)


# --------------------------------------------------------------------------- the code sandbox


def test_a_program_flooding_stdout_writes_nothing_big_on_the_host(tmp_path, monkeypatch):
    """run_python captured stdout in a host temp file, bounded only by RLIMIT_FSIZE (512 MB per
    stream): outside the sandbox's tmpfs quota, on the host's disk. The program prints 600 MB; a
    watcher measures the capture files in the harness's temp folder while it runs."""
    from pptarena.trust.sandbox import SandboxLimits, run_python

    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))
    biggest = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for p in host_tmp.rglob("*"):
                try:
                    if p.is_file():
                        biggest[0] = max(biggest[0], p.stat().st_size)
                except OSError:
                    pass
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    source = (
        "import os\nchunk = b'z' * (1 << 20)\nfor _ in range(600):\n    os.write(1, chunk)\nprint('END')\n"
    )
    try:
        result = run_python(source, limits=SandboxLimits(timeout=60))
    finally:
        done.set()
        watcher.join()
    assert biggest[0] < 16 * MB, biggest[0]
    assert result.returncode == 0, result.error_text()  # the program was not killed for its output
    assert len(result.stdout) < 300_000 and "truncated" in result.stdout


# --------------------------------------------------------------------------- the judge's model bridge

FLOOD = """
def compute_score():
    import socket, time
    path = llm_call.__globals__["_proxy"].path
    socks = []
    for _ in range(16):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            break
        socks.append(s)
    chunk = b"a" * (1 << 20)
    sent = 0
    for _ in range(40):  # 40 MB on every connection, never a newline: the judge buffers the line
        for s in list(socks):
            try:
                s.sendall(chunk)
                sent += len(chunk)
            except OSError:
                socks.remove(s)
    time.sleep(1)
    return str(sent), 1
"""


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_a_leaf_flooding_the_model_bridge_does_not_grow_the_judge_process():
    """The bridge read a request line of up to 64 MB on every connection a leaf opened, with no
    cap on connections: 16 connections of 40 MB each held ~640 MB in the judge's (the harness's)
    process at once (1,000 connections would take 64 GB). The judge's memory is sampled while the
    leaf runs."""
    from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves

    no_decks = {"original_ppt_path": "/x/a.pptx", "modified_ppt_path": "/x/b.pptx", "ppt_diff": None}
    base = _rss_mb()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        records = run_function_leaves(
            [{"id": "flood", "code": FLOOD}], {**no_decks, "screenshots": {}}, ModelBridge(None), LeafRun()
        )
    finally:
        done.set()
        sampler.join()
    assert "error" not in records["flood"], records["flood"]
    assert peak[0] - base < 300, (base, peak[0])


BIG_PROMPT = """
def compute_score():
    import json, socket
    path = llm_call.__globals__["_proxy"].path
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    f = sock.makefile("rb")
    image = {"b64": "iVBORw0KGgo=", "media_type": "image/png"}
    answers = []
    for request in (
        {"kind": "llm", "prompt": "p" * 5_000_000},  # ~1.2 million tokens, billed as input
        {"kind": "vlm", "prompt": "look", "images": [image] * 500},
    ):
        sock.sendall(json.dumps(request).encode() + b"\\n")
        answers.append(json.loads(f.readline()))
    return json.dumps(answers), 1
"""


def test_a_leaf_cannot_send_the_model_a_prompt_or_image_set_over_the_caps(openai_backend, llm_server):
    """The leaf side refuses prompts over 1,000,000 characters and calls over 32 images, but a leaf
    talking to the bridge's socket directly skipped those checks: a 5 MB prompt (1.2 million input
    tokens, billed to the judge's key) and 500 images reached the provider."""
    from pptarena.models import ModelHub
    from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves

    llm_server.default = Reply("fine")
    client = ModelHub({"openai": openai_backend()}).factory()("openai/judge")
    no_decks = {"original_ppt_path": "/x/a.pptx", "modified_ppt_path": "/x/b.pptx", "ppt_diff": None}
    records = run_function_leaves(
        [{"id": "big", "code": BIG_PROMPT}], {**no_decks, "screenshots": {}}, ModelBridge(client), LeafRun()
    )
    answers = json.loads(records["big"]["reason"])
    assert [a["ok"] for a in answers] == [False, False], answers
    assert llm_server.requests == []  # nothing reached the provider


# --------------------------------------------------------------------------- the uid fallback


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid level exists only for root")
def test_a_uid_lock_folder_planted_by_someone_else_is_not_used(tmp_path, monkeypatch):
    """The uid level reserves a host uid with a lock file in ``<tmp>/pptarena-uids``, a fixed name
    in a world-writable folder. Another local user who made that folder first (any time before the
    first run after a reboot) filled it with links named like the lock files: root followed them,
    creating the link's target (here ``victim``; ``/etc/nologin`` would lock users out) and
    taking a "lock" the planter controls."""
    from pptarena.trust import limits

    monkeypatch.setenv("PPTARENA_CGROUPS", "off")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / "pptarena-uids"
    planted.mkdir(mode=0o777)
    victim = tmp_path / "victim"
    for uid in range(limits.UID_BASE, limits.UID_BASE + limits.UID_COUNT):
        (planted / f"{uid}.lock").symlink_to(victim)
    os.chown(planted, 65534, 65534)
    try:
        with limits.SandboxCgroup(max_processes=8) as group:
            level = group.level
    except OSError as exc:
        level = f"refused: {exc}"
    assert not victim.exists(), level
    assert level.startswith("refused") and "pptarena-uids" in level, level


@needs_bwrap
def test_a_program_cannot_fill_memory_through_dev(tmp_path):
    """Every sandbox's /dev was a writable tmpfs without a size (half the machine's RAM): a program
    wrote files there past its disk quota (``disk_mb``), 512 MB each (its file-size limit); in the
    ``uid`` level nothing else bounded them. /dev/null stays writable, /dev/shm is a small tmpfs
    (multiprocessing's semaphores work)."""
    from pptarena.trust.sandbox import SandboxLimits, run_python

    source = """
import os, multiprocessing
out = {"written": 0}
chunk = b"z" * (8 << 20)
try:
    for i in range(3):
        with open(f"/dev/fill{i}", "wb") as f:
            for _ in range(40):  # 320 MB per file, 960 MB in all, under disk_mb = 64
                f.write(chunk)
                f.flush()
                out["written"] += len(chunk)
except OSError as exc:
    out["error"] = exc.errno
try:
    with open("/dev/shm/big", "wb") as f:
        for _ in range(40):
            f.write(chunk)
            f.flush()
except OSError as exc:
    out["shm_error"] = exc.errno
os.unlink("/dev/shm/big")
with open("/dev/null", "wb") as f:
    f.write(b"fine")
lock = multiprocessing.Lock()
with lock:
    out["lock"] = True
sandbox_result(out)
"""
    result = run_python(source, limits=SandboxLimits(disk_mb=64, timeout=60))
    assert result.ok, result.error_text()
    out = result.result
    assert out["written"] < 64 * MB and out["error"] == 30, out  # EROFS at once
    assert out["shm_error"] == 28 and out["lock"] is True, out  # ENOSPC on a small /dev/shm
