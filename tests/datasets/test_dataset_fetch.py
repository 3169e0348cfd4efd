"""`arena dataset fetch` against a loopback HTTP server, as a user runs it.

The server plays GitHub (OSWorld's task files), a plain file host (an older snapshot's download
links) and the Hugging Face hub (current OSWorld's file cache, through huggingface_hub with the
task file's own endpoint). A download cut off half-way is resumed with a Range request on the next
run; a hub file whose bytes do not match the hub's SHA-256 is refused and removed; an unreachable
server is one line; the licence is printed before anything is fetched; the progress bar is drawn
only on a terminal.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pptarena.fetch import Fetcher, FetchError

BIN = Path(sys.executable).parent
DOMAIN = "libreoffice_impress"
TASK_A = "aaaaaaaa-0000-4000-8000-000000000001"
TASK_B = "bbbbbbbb-0000-4000-8000-000000000002"
REPO = "xlangai/ubuntu_osworld_file_cache"


class Site:
    """What the loopback server serves, and what it was asked."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.cut: dict[str, int] = {}  # path -> bytes sent before the connection drops (once)
        self.hub_sha: dict[str, str] = {}  # path -> the SHA-256 the hub claims
        self.requests: list[tuple[str, str, str | None]] = []


def serve(site: Site) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _head(self, send_body: bool) -> None:
            path = self.path.split("?")[0]
            self.site_record(path)
            body = site.files.get(path)
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                start = int(rng[6:].split("-")[0])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            if "/resolve/" in path:
                self.send_header("X-Repo-Commit", "c" * 40)
                self.send_header("ETag", f'"{site.hub_sha.get(path) or hashlib.sha256(body).hexdigest()}"')
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            if not send_body:
                return
            if path in site.cut:
                self.wfile.write(body[start : site.cut.pop(path)])
                self.wfile.flush()
                self.connection.shutdown(2)  # drop the connection mid-file
                return
            self.wfile.write(body[start:])

        def site_record(self, path: str) -> None:
            site.requests.append((self.command, path, self.headers.get("Range")))

        def do_HEAD(self):  # noqa: N802
            self._head(False)

        def do_GET(self):  # noqa: N802
            self._head(True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def site():
    s = Site()
    server = serve(s)
    s.base = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield s
    server.shutdown()


def osworld_source(site: Site) -> str:
    """OSWorld's evaluation_examples on the server: task A's files on a plain host, task B's on the hub."""
    deck_a = os.urandom(300_000)  # large enough to be cut half-way
    gold_b = b"PK\x03\x04" + os.urandom(5000)
    site.files["/files/a/1_1.pptx"] = deck_a
    site.files[f"/datasets/{REPO}/resolve/main/{DOMAIN}/{TASK_B}/2_1_Gold.pptx"] = gold_b
    site.files[f"/datasets/{REPO}/resolve/main/{DOMAIN}/{TASK_B}/2_1.pptx"] = deck_a[:1000]
    tasks = {
        TASK_A: {
            "config": [
                {
                    "type": "download",
                    "parameters": {
                        "files": [
                            {"url": f"{site.base}/files/a/1_1.pptx", "path": "/home/user/Desktop/1_1.pptx"}
                        ]
                    },
                }
            ],
            "evaluator": {"func": "check_slide_orientation_Portrait"},
        },
        TASK_B: {
            "config": [
                {
                    "type": "download",
                    "parameters": {
                        "files": [
                            {
                                "url": f"{site.base}/datasets/{REPO}/resolve/main/{DOMAIN}/{TASK_B}/2_1.pptx",
                                "path": "/home/user/Desktop/2_1.pptx",
                            }
                        ]
                    },
                }
            ],
            "evaluator": {
                "func": "compare_pptx_files",
                "expected": {
                    "type": "cloud_file",
                    "dest": "2_1_Gold.pptx",
                    "path": f"{site.base}/datasets/{REPO}/resolve/main/{DOMAIN}/{TASK_B}/2_1_Gold.pptx",
                },
            },
        },
    }
    site.files["/ee/test_all.json"] = json.dumps({DOMAIN: [TASK_A, TASK_B]}).encode()
    for task_id, body in tasks.items():
        name = body["config"][0]["parameters"]["files"][0]["path"]
        body["config"].append({"type": "open", "parameters": {"path": name}})
        body["evaluator"]["result"] = {"type": "vm_file", "path": name, "dest": Path(name).name}
        task = {"id": task_id, "instruction": "Make it better.", **body}
        site.files[f"/ee/examples/{DOMAIN}/{task_id}.json"] = json.dumps(task).encode()
    return f"{site.base}/ee"


def arena_fetch(args: list[str], tty: bool = False) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["HF_HUB_DISABLE_TELEMETRY"] = "1"
    cmd = [str(BIN / "arena"), "dataset", "fetch", *args]
    if not tty:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        return done.returncode, done.stdout, done.stderr
    main, secondary = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=secondary, env=env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.wait(60)
    os.close(main)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_an_interrupted_download_resumes_with_range(site, tmp_path):
    source = osworld_source(site)
    site.cut["/files/a/1_1.pptx"] = 120_000
    code, _, err = arena_fetch(["osworld", "--dir", str(tmp_path), "--task", "aaaa*", "--source", source])
    assert code == 1 and "interrupted after 120000 of 300000 bytes" in err
    assert "run the same command again" in err
    assert err.index("Licence: Apache-2.0") < err.index("interrupted")
    part = tmp_path / "files" / DOMAIN / TASK_A / "1_1.pptx.part"
    assert part.stat().st_size == 120_000 and not part.with_name("1_1.pptx").exists()
    code, out, err = arena_fetch(["osworld", "--dir", str(tmp_path), "--task", "aaaa*", "--source", source])
    assert code == 0, err
    deck = tmp_path / "files" / DOMAIN / TASK_A / "1_1.pptx"
    assert deck.read_bytes() == site.files["/files/a/1_1.pptx"] and not part.exists()
    assert ("GET", "/files/a/1_1.pptx", "bytes=120000-") in site.requests  # resumed, not restarted
    assert "1 resumed" in err
    assert f'files_dir = "{tmp_path / "files" / DOMAIN}"' in out and 'ids = ["aaaa*"]' in out
    assert not (tmp_path / "files" / DOMAIN / TASK_B).exists()  # --task: only the selected task's files


@pytest.mark.slow
def test_hub_files_come_through_huggingface_hub_and_a_corrupt_one_is_refused(site, tmp_path):
    source = osworld_source(site)
    gold = f"/datasets/{REPO}/resolve/main/{DOMAIN}/{TASK_B}/2_1_Gold.pptx"
    site.hub_sha[gold] = "0" * 64  # the hub claims another file than the one it serves
    code, _, err = arena_fetch(["osworld", "--dir", str(tmp_path), "--task", "bbbb*", "--source", source])
    assert code == 1 and "does not match the hub's SHA-256" in err
    target = tmp_path / "files" / DOMAIN / TASK_B / "2_1_Gold.pptx"
    assert not target.exists()  # removed, never left for the loader to read
    site.hub_sha.clear()
    code, _, err = arena_fetch(["osworld", "--dir", str(tmp_path), "--task", "bbbb*", "--source", source])
    assert code == 0, err
    assert target.read_bytes() == site.files[gold]
    assert any(m == "HEAD" and p == gold for m, p, _ in site.requests)  # huggingface_hub's metadata call


@pytest.mark.slow
def test_the_fetched_task_loads(site, tmp_path):
    source = osworld_source(site)
    code, out, err = arena_fetch(["osworld", "--dir", str(tmp_path), "--source", source])
    assert code == 0, err
    from pptarena.plugins.datasets.osworld.load import load_osworld

    loaded = load_osworld(tmp_path / "evaluation_examples", tmp_path / "files" / DOMAIN, blank_deck=None)
    by_id = {t.id: t for t in loaded.tasks}
    assert by_id[TASK_B].target.name == "2_1_Gold.pptx" and by_id[TASK_A].original.name == "1_1.pptx"
    again = arena_fetch(["osworld", "--dir", str(tmp_path), "--source", source])
    assert again[0] == 0 and "fetched 0 file(s)" in again[2] and "already present" in again[2]


def test_offline_is_one_line_after_the_licence(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code, out, err = arena_fetch(
        ["osworld", "--dir", str(tmp_path), "--source", f"http://127.0.0.1:{port}/ee"]
    )
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "cannot download" in errors[0] and "offline?" in errors[0]
    assert "Traceback" not in err and err.index("Licence:") < err.index("Error:")


@pytest.mark.slow
def test_progress_bar_only_on_a_terminal(site, tmp_path):
    source = osworld_source(site)
    code, _, piped = arena_fetch(
        ["osworld", "--dir", str(tmp_path / "a"), "--task", "aaaa*", "--source", source]
    )
    assert code == 0 and "━" not in piped and "\x1b[" not in piped
    code, _, shown = arena_fetch(
        ["osworld", "--dir", str(tmp_path / "b"), "--task", "aaaa*", "--source", source], tty=True
    )
    assert code == 0 and "━" in shown and "1_1.pptx" in shown


def test_a_plain_file_with_a_known_checksum_is_checked(site, tmp_path):
    site.files["/x.bin"] = b"right bytes"
    fetcher = Fetcher(tmp_path, progress=False)
    with pytest.raises(FetchError, match="does not match the source's"):
        fetcher.url(f"{site.base}/x.bin", "x.bin", sha256=hashlib.sha256(b"other bytes").hexdigest())
    assert not (tmp_path / "x.bin").exists() and not (tmp_path / "x.bin.part").exists()
    good = fetcher.url(f"{site.base}/x.bin", "x.bin", sha256=hashlib.sha256(b"right bytes").hexdigest())
    assert good.read_bytes() == b"right bytes"
    with pytest.raises(FetchError, match="outside"):
        fetcher.url(f"{site.base}/x.bin", "../escape.bin")


def _zip(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    import io
    import stat
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


@pytest.mark.slow
def test_pptc_archive_is_extracted_and_a_path_escape_refused(site, tmp_path):
    session = b'{"Turn": 0, "User instruction": "Add a title"}\n'
    site.files["/pptc-good.zip"] = _zip({"PPTC-main/PPT_test_input/short/session_1.json": session})
    site.files["/pptc-evil.zip"] = _zip({"PPTC-main/../../outside.txt": b"gotcha"})
    code, _, err = arena_fetch(
        ["pptc", "--dir", str(tmp_path / "evil"), "--source", f"{site.base}/pptc-evil.zip"]
    )
    assert code == 1 and "outside" in err and not (tmp_path / "outside.txt").exists()
    site.files["/pptc-link.zip"] = _zip({}, {"PPTC-main/PPT_test_input": "/etc"})
    code, _, err = arena_fetch(
        ["pptc", "--dir", str(tmp_path / "link"), "--source", f"{site.base}/pptc-link.zip"]
    )
    assert (
        code == 1
        and "refusing the link" in err
        and not (tmp_path / "link" / "PPTC" / "PPT_test_input").exists()
    )
    code, out, err = arena_fetch(
        ["pptc", "--dir", str(tmp_path / "good"), "--source", f"{site.base}/pptc-good.zip"]
    )
    assert code == 0, err
    assert (
        tmp_path / "good" / "PPTC" / "PPT_test_input" / "short" / "session_1.json"
    ).read_bytes() == session
    assert "Licence: MIT" in err and "main.py --prepare" in out
