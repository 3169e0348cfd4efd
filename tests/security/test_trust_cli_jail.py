"""Attacks on the `command` agent's jail (issue 23 items 6, 7 and 10), each performed for real.

A CLI agent (a Python script run by the real `command` agent under real bubblewrap) tries to reach
an X display's abstract socket and loopback services of the host, to leave the allow-list, to read a
judge's key from its environment, to fill the run folder with a gigabyte, to plant links and FIFOs
for the harness, and to spawn 1,500 processes. Each test fails on the code before issue 23 (the
jail shared the host's network namespace, inherited the environment, wrote to a host folder and
had no process limit).

Issue 31 item 6 ("programs from anywhere"): CLIs installed in a virtualenv of another interpreter
(pyenv, conda, uv), an npm global, a program under /tmp or a `#!/usr/bin/env` script start in the
jail, which shows what the program resolves to and nothing beside it; a program in the harness's
data is refused with the path to add to `read_only_paths`. Each test failed on the code before it
(the jail bound the named program's folder and the folder its link points into, nothing else).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from pptarena.types import ComponentUnavailable
from tests.support.agents_fixtures import events
from tests.support.config import command_agent, demo_dataset
from tests.support.stub_llm_server import StubLLMServer
from tests.support.trust_fixtures import (
    arena,
    cli_program,
    needs_bwrap,
    processes_with,
    rows,
    run_cli,
    run_program,
    wait_gone,
)

pytestmark = needs_bwrap

MB = 1024 * 1024


class Listener:
    """A host socket (TCP on loopback, or an abstract unix socket) counting the connections it gets."""

    def __init__(self, family: int, address: object):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)  # type: ignore[arg-type]
        self.sock.listen(8)
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                conn.sendall(b"host secret service\n")
            except OSError:  # the prober already hung up
                pass
            conn.close()

    def close(self) -> None:
        self.sock.close()


def free_display() -> int:
    """A display number with no X socket on this machine."""
    for n in range(731, 999):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}"):
            probe = socket.socket(socket.AF_UNIX)
            try:
                probe.bind(f"\0/tmp/.X11-unix/X{n}")
            except OSError:
                continue
            finally:
                probe.close()
            return n
    pytest.skip("no free display number")


PROBES = """
import urllib.request
def attempt(name, fn):
    try:
        report[name] = fn()
    except Exception as exc:
        report[name] = "refused: " + type(exc).__name__ + " " + str(exc)[:120]
def unix_abstract():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    s.connect(ABSTRACT)
    return "connected: " + s.recv(100).decode()
def tcp(host, port):
    s = socket.create_connection((host, port), timeout=3)
    return "connected: " + s.recv(100).decode()
def via_proxy(target):
    proxy = os.environ.get("HTTPS_PROXY", "http://127.0.0.1:3128").rsplit(":", 1)
    s = socket.create_connection((proxy[0].split("//")[1], int(proxy[1])), timeout=5)
    s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    return s.recv(200).decode(errors="replace").splitlines()[0]
def model_api():
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer local"},
    )
    return json.loads(urllib.request.urlopen(request, timeout=10).read())["choices"][0]["message"]["content"]
attempt("x_display", unix_abstract)
attempt("host_loopback", lambda: tcp("127.0.0.1", PORT))
attempt("slirp_host", lambda: tcp("10.0.2.2", PORT))
report["interfaces"] = sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:])
report["proxy_env"] = os.environ.get("HTTPS_PROXY")
"""


@pytest.fixture
def host_services():
    """An X display's abstract socket and a loopback TCP service of the host, neither allow-listed."""
    display = free_display()
    x_socket = Listener(socket.AF_UNIX, f"\0/tmp/.X11-unix/X{display}")
    service = Listener(socket.AF_INET, ("127.0.0.1", 0))
    port = service.sock.getsockname()[1]
    # the attack works from this machine outside any jail (so "refused" below means something)
    probe = socket.socket(socket.AF_UNIX)
    probe.connect(f"\0/tmp/.X11-unix/X{display}")
    probe.close()
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    assert wait_for(lambda: x_socket.accepted == 1 and service.accepted == 1)
    x_socket.accepted = service.accepted = 0
    yield display, x_socket, port, service
    x_socket.close()
    service.close()


def wait_for(check, seconds: float = 3.0) -> bool:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_allowlist_jail_reaches_the_model_stub_and_nothing_else(tmp_path, host_services):
    display, x_socket, port, service = host_services
    body = (
        f"ABSTRACT = '\\0/tmp/.X11-unix/X{display}'\nPORT = {port}\n"
        + PROBES
        + f"attempt('proxy_to_host_service', lambda: via_proxy('127.0.0.1:{port}'))\n"
        + "attempt('proxy_to_other_host', lambda: via_proxy('example.com:443'))\n"
        + "attempt('model_api', model_api)\n"
    )
    with StubLLMServer() as stub:
        _, report, ws = run_cli(tmp_path, body, env={"OPENAI_BASE_URL": stub.openai_base_url})
        assert len(stub.requests) == 1 and report["model_api"] == "ok", report  # allow-listed: reached
    assert report["x_display"].startswith("refused"), report
    assert report["host_loopback"].startswith("refused") and report["slirp_host"].startswith("refused")
    assert "403" in report["proxy_to_host_service"] and "403" in report["proxy_to_other_host"], report
    assert report["interfaces"] == ["lo"] and report["proxy_env"] == "http://127.0.0.1:3128"
    assert x_socket.accepted == 0 and service.accepted == 0
    (jail,) = events(ws, "command_jail")
    assert set(jail["egress_refused"]) == {f"127.0.0.1:{port}", "example.com:443"}
    assert list(jail["egress_allowed"]) == [stub.openai_base_url.split("//")[1].split("/")[0]]


@pytest.mark.parametrize("network", ["none", "open"])
def test_no_network_and_open_network_never_reach_this_machine(tmp_path, host_services, network):
    if network == "open":
        from pptarena.plugins.agents.command.network import slirp_executable

        if slirp_executable() is None:
            pytest.skip("slirp4netns is not installed (scripts/setup.sh installs it)")
    display, x_socket, port, service = host_services
    body = f"ABSTRACT = '\\0/tmp/.X11-unix/X{display}'\nPORT = {port}\n" + PROBES
    _, report, _ = run_cli(tmp_path, body, network=network)
    assert report["x_display"].startswith("refused"), report
    assert report["host_loopback"].startswith("refused") and report["slirp_host"].startswith("refused")
    assert report["proxy_env"] is None
    assert report["interfaces"] == (["lo", "tap0"] if network == "open" else ["lo"])
    assert x_socket.accepted == 0 and service.accepted == 0


def test_a_judge_only_key_never_reaches_the_cli(tmp_path, run_config):
    """ANTHROPIC_API_KEY is in the harness's environment (a judge's key); the CLI dumps its whole
    environment reversed (so the redactor cannot recognise it) into its workspace."""
    judge_key = "sk-ant-judge-only-5f4e3d2c1b0a9988"
    cli = tmp_path / "cli.py"
    cli.write_text(
        "import os, shutil, sys\n"
        "dump = '\\n'.join(f'{k}={v}' for k, v in os.environ.items())\n"
        "open('env.txt', 'w').write(dump[::-1])\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
    )
    run_config(
        "c.toml",
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[command_agent(sys.executable, cli, "{input}", "{output}")],
        judges=["structural"],
    )
    out = arena(["run", "--config", "c.toml", "--out", "run"], tmp_path, env={"ANTHROPIC_API_KEY": judge_key})
    assert out.returncode == 0, out.stderr[-2000:]
    assert rows(tmp_path / "run")["cli"]["status"] == "scored"
    dump = (tmp_path / "run" / "tasks" / "cli" / "qbr-fix-typos" / "cli" / "env.txt").read_text()[::-1]
    assert "PATH=" in dump  # the dump is there, copied out of the jail
    for name, value in (("ANTHROPIC_API_KEY", judge_key), ("STUB_KEY", "sk-test"), ("UNRELATED", "tok-")):
        assert name not in dump and value not in dump
    hits = [
        p for p in (tmp_path / "run").rglob("*") if p.is_file() and judge_key[::-1].encode() in p.read_bytes()
    ]
    assert hits == []


def test_a_gigabyte_in_the_workspace_stops_at_its_cap_and_stays_out_of_the_run_folder(tmp_path):
    body = """
    import errno
    written, chunk = 0, b"x" * (8 * 1024 * 1024)
    try:
        with open("big.bin", "wb") as f:
            while written < 1100 * 1024 * 1024:
                f.write(chunk)
                written += len(chunk)
                f.flush()
    except OSError as exc:
        report["errno"] = exc.errno
    report["written"] = written
    report["free_after"] = os.statvfs(".").f_bavail
    """
    pred, report, ws = run_cli(tmp_path, body)  # the default workspace_mb = 1024
    assert report.get("errno") == 28, report  # ENOSPC
    assert 900 * MB <= report["written"] <= 1024 * MB and report["free_after"] == 0
    size = sum(p.stat().st_size for p in ws.dir.rglob("*") if p.is_file())
    assert size < 20 * MB, size  # the run folder stays small: the deck and the logs
    assert not (ws.dir / "cli" / "big.bin").exists()
    assert events(ws, "command_jail")[0]["skipped"] == {"over the size cap": 1}
    assert pred.path.is_file()


def test_links_and_fifos_the_cli_leaves_are_not_copied_out(tmp_path):
    """The item-1 attack from the CLI side: a link named like the redactor's temp file, aimed at a
    host file, and a FIFO; the pair folder gets neither (nothing the harness does later can follow them)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    body = f"""
    os.symlink({str(victim)!r}, ".notes.redact")
    os.symlink("/proc/self/environ", "environ.txt")
    os.mkfifo("pipe.txt")
    os.mkdir("sub")
    os.symlink("/", "sub/root")
    open("sub/notes.txt", "w").write("kept")
    """
    _, _, ws = run_cli(tmp_path, body)
    cli = ws.dir / "cli"
    kinds = {
        p.relative_to(cli).as_posix(): p.is_symlink() or not (p.is_file() or p.is_dir())
        for p in cli.rglob("*")
    }
    assert not any(kinds.values()), kinds
    assert (cli / "sub" / "notes.txt").read_text() == "kept" and victim.read_text() == "host file"
    assert events(ws, "command_jail")[0]["skipped"] == {"link": 3, "not a regular file": 1}


def test_1500_processes_stop_at_the_process_cap(tmp_path):
    marker = f"pptarena-forks-{tmp_path.name}"
    body = f"""
    import time
    started = 0
    for _ in range(1500):
        try:
            pid = os.fork()
        except OSError as exc:
            report["errno"] = exc.errno
            break
        if pid == 0:
            os.execv("/bin/sleep", ["/bin/sleep", "300", {marker!r}])
        started += 1
    report["started"] = started
    """
    _, report, ws = run_cli(tmp_path, body)  # the default max_processes = 512
    jail = events(ws, "command_jail")
    if jail and jail[0]["limits"].startswith("rlimits"):
        pytest.skip(f"no cgroup and not root here: {jail[0]['limits']}")
    assert report.get("errno") == 11 and report["started"] < 512, report  # EAGAIN at the cap
    assert jail[0]["limits"].startswith(("cgroup", "uid")), jail
    assert wait_gone(marker) == [] and processes_with(marker) == []


def test_memory_of_the_whole_jail_is_capped(tmp_path):
    """Three forks of 150 MB each under memory_mb = 256: not all three hold their memory."""
    body = """
    import time
    children = []
    for i in range(3):
        pid = os.fork()
        if pid == 0:
            block = bytearray(150 * 1024 * 1024)
            for at in range(0, len(block), 4096):
                block[at] = 1
            time.sleep(2)
            os._exit(0)
        children.append(pid)
    report["exits"] = [os.waitpid(pid, 0)[1] for pid in children]
    """
    _, report, ws = run_cli(tmp_path, body, memory_mb=256)
    limits = events(ws, "command_jail")[0]["limits"]
    if not limits.startswith("cgroup"):
        pytest.skip(f"no memory cgroup here: {limits}")
    assert report["exits"].count(0) < 3, report  # at least one was killed (SIGKILL by the OOM killer)
    assert "OOM kills 0" not in limits


def test_a_workspace_swapped_for_a_link_does_not_make_the_harness_copy_host_files(tmp_path):
    """The workspace sits at its host path inside the jail, here below the jail's writable /tmp: the
    CLI moves the folders above it away and puts a link to a host folder (holding a secret) where the
    workspace was. The copy-out takes the workspace itself (the launcher's working directory), never
    a path the CLI could re-point."""
    secret_dir = tmp_path / "host-secrets"
    secret_dir.mkdir()
    (secret_dir / "answer.txt").write_text("HOST-ANSWER-KEY-1234")
    body = f"""
    ws = os.getcwd()
    parent = os.path.dirname(ws)
    os.rename(parent, parent + ".moved")
    os.makedirs(parent)
    os.symlink({str(secret_dir)!r}, ws)
    report["swapped"] = os.path.islink(ws)
    """
    _, report, ws = run_cli(tmp_path, body)
    assert report["swapped"] is True  # the attack itself worked inside the jail
    copied = sorted(p.relative_to(ws.dir / "cli").as_posix() for p in (ws.dir / "cli").rglob("*"))
    assert "answer.txt" not in copied and "output/demo-001.pptx" in copied, copied


@pytest.mark.skipif(
    not (shutil.which("Xvfb") and shutil.which("xdpyinfo")), reason="Xvfb and xdpyinfo (x11-utils) needed"
)
def test_a_real_x_display_of_the_host_is_out_of_reach(tmp_path):
    """Another display on this machine (a GUI pair's, the reference round trip's): the CLI asks
    xdpyinfo for it, which tries the abstract socket, the socket file and TCP."""
    import subprocess
    import time

    display = free_display()
    xvfb = subprocess.Popen(
        ["Xvfb", f":{display}", "-nolisten", "tcp", "-screen", "0", "320x240x24"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        probe = ["xdpyinfo", "-display", f":{display}"]
        end = time.monotonic() + 20
        while subprocess.run(probe, capture_output=True).returncode != 0:  # reachable from the host
            assert time.monotonic() < end and xvfb.poll() is None, "Xvfb did not start"
            time.sleep(0.1)
        body = f"""
        import subprocess
        run = subprocess.run({probe!r}, capture_output=True, text=True)
        report["returncode"] = run.returncode
        report["output"] = (run.stdout + run.stderr)[-300:]
        """
        _, report, _ = run_cli(tmp_path, body)
    finally:
        xvfb.kill()
        xvfb.wait()
    assert report["returncode"] != 0 and "unable to open display" in report["output"], report


# --------------------------------------------------------------------------- programs from anywhere


def first_python3_on_path() -> str:
    """The first ``python3`` on PATH without this test interpreter's folder (what scripts/setup.sh would
    find; pyenv's shim on a pyenv machine)."""
    own = os.path.realpath(Path(sys.executable).parent)
    path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and os.path.realpath(d) != own
    )
    found = shutil.which("python3", path=path)
    if found is None:
        pytest.skip("no python3 on PATH")
    return found


def make_venv(python3: str, folder: Path) -> Path:
    """A virtualenv made by ``python3`` at ``folder`` (no pip: nothing is downloaded)."""
    subprocess.run([python3, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300)
    return folder


def host_python(python: Path | str, expression: str) -> str:
    """``expression`` (of module sys) evaluated by ``python`` on the host."""
    code = f"import sys; print({expression})"
    run = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return run.stdout.strip()


@pytest.mark.parametrize("layout", ["shebang", "argv0"])
def test_a_cli_of_a_virtualenv_made_by_the_first_python3_on_path_starts(tmp_path, layout):
    """The venv's bin/python links to an interpreter outside every folder the jail showed (pyenv's,
    conda's, uv's), and the venv needs its pyvenv.cfg and that interpreter's standard library. The
    CLI is a program whose #! is the venv's python (a console script), or the venv's python is the
    command with the script as its argument."""
    venv = make_venv(first_python3_on_path(), tmp_path / "venv")
    python = venv / "bin" / "python"
    if layout == "shebang":
        argv = [str(cli_program(tmp_path / "tools" / "agent-cli", str(python))), "{input}", "{output}"]
    else:
        script = cli_program(tmp_path / "tools" / "agent.py", "/bin/false")  # its #! is not used
        argv = [str(python), str(script), "{input}", "{output}"]
    pred, report, _ = run_program(tmp_path, argv)
    assert pred.path.is_file() and pred.metadata["returncode"] == 0
    assert report["prefix"] == str(venv), report  # its pyvenv.cfg was read: the venv is in force
    assert report["base_prefix"] == host_python(python, "sys.base_prefix"), report


def test_a_cli_of_a_virtualenv_of_another_installation_starts(tmp_path):
    """As above with a virtualenv of an installation the harness does not run on (another pyenv
    version beside the harness's): its prefix, with the standard library, is shown too."""
    base = Path(sys.base_prefix).resolve()
    others = sorted(p for p in base.parent.glob("*/bin/python3") if p.resolve().parent.parent != base)
    if not others:
        pytest.skip(f"no other Python installation beside {base}")
    venv = make_venv(str(others[-1]), tmp_path / "venv")
    program = cli_program(tmp_path / "tools" / "agent-cli", str(venv / "bin" / "python"))
    pred, report, _ = run_program(tmp_path, [str(program), "{input}", "{output}"])
    assert pred.path.is_file() and report["prefix"] == str(venv), report
    assert report["base_prefix"] == host_python(venv / "bin" / "python", "sys.base_prefix") != str(base)


@pytest.mark.parametrize("where", ["a folder of /tmp", "/tmp itself"])
def test_a_program_under_tmp_starts_and_the_jails_own_tmp_stays_writable(tmp_path, where):
    """The jail's /tmp is a tmpfs of its own: the program is shown over it, the rest of the host's /tmp
    is not, and the CLI can still write to /tmp."""
    folder = Path(tempfile.mkdtemp(dir="/tmp")) if where == "a folder of /tmp" else Path("/tmp")
    handle, host_file = tempfile.mkstemp(dir="/tmp", prefix="pptarena-host-secret-")
    os.close(handle)
    program = folder / f"pptarena-test-agent-{os.getpid()}-{tmp_path.name}"
    body = f"""
    with open("/tmp/scratch.txt", "w") as f:
        f.write("written in the jail")
    report["scratch"] = open("/tmp/scratch.txt").read()
    report["host_file_seen"] = os.path.exists({host_file!r})
    """
    try:
        cli_program(program, sys.executable, body)
        pred, report, _ = run_program(tmp_path, [str(program), "{input}", "{output}"])
    finally:
        program.unlink(missing_ok=True)
        os.unlink(host_file)
        if folder != Path("/tmp"):
            shutil.rmtree(folder, ignore_errors=True)
    assert pred.path.is_file() and report["scratch"] == "written in the jail", report
    assert report["host_file_seen"] is False and not Path("/tmp/scratch.txt").exists()


def test_an_env_python3_script_runs_the_interpreter_its_path_links_to(tmp_path):
    """``#!/usr/bin/env python3`` looked up on the CLI's PATH, whose first folder holds a link to the
    interpreter (a toolchain's bin folder): the jail runs that one, not the system's python3."""
    real = host_python(first_python3_on_path(), "sys.executable")
    interpreters = tmp_path / "interpreters"
    interpreters.mkdir()
    (interpreters / "python3").symlink_to(real)
    program = cli_program(tmp_path / "tools" / "agent", "/usr/bin/env python3")
    path = f"{interpreters}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
    _, report, _ = run_program(tmp_path, [str(program), "{input}", "{output}"], env={"PATH": path})
    assert report["executable"] == str(interpreters / "python3"), report
    assert report["base_prefix"] == host_python(real, "sys.base_prefix")


def test_an_interpreter_in_the_harness_cache_is_refused_with_the_path_to_add(tmp_path):
    """The program's #! names a virtualenv inside the harness cache (harness data: it is never shown
    on its own); the error names the exact path for read_only_paths, and naming it there works."""
    runtime = make_venv(first_python3_on_path(), tmp_path / "harness-cache" / "runtime")
    argv = [str(cli_program(tmp_path / "tools" / "agent", f"{runtime}/bin/python")), "{input}", "{output}"]
    with pytest.raises(ComponentUnavailable) as info:
        run_program(tmp_path, argv)
    message = str(info.value)
    assert f"add {runtime} to read_only_paths" in message and "harness cache" in message, message
    _, report, _ = run_program(tmp_path, argv, read_only_paths=[str(runtime)])
    assert report["prefix"] == str(runtime)


SIBLING_PROBE = """
here = os.path.dirname(os.path.realpath(__file__))
try:
    report["sibling"] = open(os.path.join(here, "target.pptx"), "rb").read().decode()
except OSError as exc:
    report["sibling"] = "refused: " + type(exc).__name__
report["listing"] = sorted(os.listdir(here))
"""


@pytest.mark.parametrize("secret", ["a folder", "a dataset's task folder"])
def test_a_program_linked_into_a_secret_folder_shows_only_itself(tmp_path, secret):
    """The attack: the configured program is a link into a folder holding an answer deck. Only the
    program file is shown (the CLI reading its sibling finds nothing); inside a dataset's task folder
    (task.toml) it is not shown at all, and the error says so."""
    folder = tmp_path / "datasets" / "bench" / "task-7"
    folder.mkdir(parents=True)
    (folder / "target.pptx").write_text("ANSWER DECK")
    if secret == "a dataset's task folder":
        (folder / "task.toml").write_text('instruction = "x"\noriginal = "target.pptx"\n')
    link = tmp_path / "bin" / "agent"
    link.parent.mkdir()
    link.symlink_to(cli_program(folder / "agent.py", sys.executable, SIBLING_PROBE))
    argv = [str(link), "{input}", "{output}"]
    if secret == "a folder":
        _, report, _ = run_program(tmp_path, argv)
        assert report["sibling"] == "refused: FileNotFoundError" and report["listing"] == ["agent.py"], report
        return
    with pytest.raises(ComponentUnavailable, match="task folder") as info:
        run_program(tmp_path, argv)
    assert str(folder) in str(info.value)


def test_an_npm_global_starts_from_its_package_and_sees_no_other_package(tmp_path):
    """An npm global: <prefix>/bin/agent-cli links to bin/cli.js of its package under
    lib/node_modules, which requires a module of its own package; another package stays hidden."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    modules = tmp_path / "npm-global" / "lib" / "node_modules"
    package = modules / "@acme" / "agent-cli"
    (package / "bin").mkdir(parents=True)
    (package / "lib").mkdir()
    (package / "package.json").write_text('{"name": "@acme/agent-cli", "bin": {"agent-cli": "bin/cli.js"}}')
    (package / "lib" / "copy.js").write_text("module.exports = (a, b) => require('fs').copyFileSync(a, b);\n")
    cli = package / "bin" / "cli.js"
    cli.write_text(
        "#!/usr/bin/env node\n"
        "const fs = require('fs'), path = require('path');\n"
        "require('../lib/copy.js')(process.argv[2], process.argv[3]);\n"
        "let other;\n"
        "try { other = fs.readFileSync(path.join(__dirname, '../../../other/secret.txt'), 'utf8'); }\n"
        "catch (e) { other = 'refused: ' + e.code; }\n"
        "console.log('REPORT' + JSON.stringify({other}));\n"
    )
    cli.chmod(0o755)
    (modules / "other").mkdir()
    (modules / "other" / "secret.txt").write_text("another package's file")
    command = tmp_path / "npm-global" / "bin" / "agent-cli"
    command.parent.mkdir()
    command.symlink_to("../lib/node_modules/@acme/agent-cli/bin/cli.js")
    argv = [str(command), "{input}", "{output}"]
    pred, report, _ = run_program(tmp_path, argv)
    assert pred.path.is_file() and report["other"] == "refused: ENOENT", report
