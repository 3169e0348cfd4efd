"""Real runs and real servers for the ``arena view`` / ``arena label`` tests.

:func:`small_run` runs the real runner on a ``folder`` dataset of generated one-slide decks (agents
oracle and noop, the structural judge; a second). Its first task is hostile: the instruction and
the target deck's title hold ``<script>`` (so the oracle's prediction, its edits and the judge's
details do too), and one verdict's explanation (a model's reply) is replaced by a script.
:func:`serve` starts ``arena view`` as a process on a free loopback port.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from pptarena.run.configuration.config import load_config
from pptarena.run.configuration.registry import get_registry, reset_registry
from pptarena.run.runner import Runner
from tests.support.config import use, write_run_config

ARENA = [sys.executable, "-m", "pptarena.cli"]
XSS_INSTRUCTION = "Replace the title with <script>window.__pwned_i=1</script>"
XSS_DECK = "<script>window.__pwned_d=1</script>"
XSS_REPLY = "<script>window.__pwned_m=1</script><img src=x onerror=window.__pwned_m=1>"
MARKERS = ("__pwned_i", "__pwned_d", "__pwned_m")


def _deck(path: Path, title: str) -> None:
    from pptx import Presentation

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = title
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(str(path))


def make_dataset(root: Path, count: int = 3) -> None:
    """``count`` retitling tasks in the ``folder`` layout (task-0 hostile, see the module doc)."""
    for i in range(count):
        folder = root / f"task-{i}"
        instruction = XSS_INSTRUCTION if i == 0 else f"Retitle slide 1 to New {i}"
        _deck(folder / "original.pptx", f"Old {i}")
        _deck(folder / "target.pptx", XSS_DECK if i == 0 else f"New {i}")
        (folder / "task.toml").write_text(
            f'instruction = {json.dumps(instruction)}\noriginal = "original.pptx"\ntarget = "target.pptx"\n'
        )


def small_run(tmp: Path, count: int = 3) -> Path:
    """A finished real run in ``tmp/run`` (see the module doc)."""
    make_dataset(tmp / "data", count)
    config = write_run_config(
        tmp / "run.toml", dataset=use("folder", root="data"), agents=["oracle", "noop"], judges=["structural"]
    )
    reset_registry()
    run_dir = tmp / "run"
    Runner(load_config(config, get_registry()), get_registry(), run_dir, jobs=1, quiet=True).run()
    verdicts = run_dir / "tasks" / "oracle" / "task-0" / "verdicts.json"
    data = json.loads(verdicts.read_text())
    data["verdicts"]["structural"]["explanation"] = XSS_REPLY
    verdicts.write_text(json.dumps(data))
    return run_dir


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(
    paths: list[Path], *extra: str, host: str = "127.0.0.1", port: int | None = None, render: bool = False
):
    """Start ``arena view`` (a process); returns ``(process, base url, admin token or None)``."""
    port = port or free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*ARENA, "view", *map(str, paths), "--host", host, "--port", str(port), *extra]
        + ([] if render else ["--no-render"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    token = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"arena view exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        raise RuntimeError("arena view did not start within 60 s")
    return proc, base, token


def login(base: str, token: str) -> tuple[httpx.Client, str, int, str]:
    """An annotator's client after following their link: (client, campaign id, item, CSRF token)."""
    client = httpx.Client(base_url=base, timeout=30)
    r = client.get("/login", params={"token": token}, follow_redirects=False)
    assert r.status_code == 303, r.text
    page = client.get(r.headers["location"]).text
    campaign = re.search(r'data-campaign="([^"]+)"', page)
    item = re.search(r'data-item="(\d+)"', page)
    csrf = re.search(r'data-csrf="([^"]+)"', page)
    assert campaign and item and csrf, page[:2000]
    return client, campaign.group(1), int(item.group(1)), csrf.group(1)


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started by :func:`serve`."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


TOKEN_LINE = re.compile(r"^\s+(\S+): http://\S+/login\?token=(\S+)$", re.M)


def label_new(*args: str) -> tuple[dict[str, str], str]:
    """Run ``arena label new`` as a process; returns (annotator -> token, output)."""
    out = subprocess.run([*ARENA, "label", "new", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    return dict(TOKEN_LINE.findall(out.stdout)), out.stdout
