"""Helpers of the trust tests (tests/security/test_trust_*.py): runs of `arena` with hostile parts, and scans.

Each test plays an attacker: a model-written program, a rubric leaf, a CLI agent, a deck or a
plugin, and checks the real outcome on this machine: files of the run folder, requests the
loopback model stub received, processes left in /proc.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pptarena.trust import isolation
from tests.support.agents_fixtures import make_task, scripted_workspace
from tests.support.config import demo_dataset, run_toml, use

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"  # the stub's TEST_API_KEY
OTHER_SECRET = "tok-unrelated-service-9f8e7d6c5b4a"  # a secret of the environment no config names

needs_bwrap = pytest.mark.skipif(
    isolation.base_flags() is None,
    reason="bubblewrap is missing or user namespaces do not work here (fallback isolation)",
)


def code_agent_config(base_url: str, *, retries: int = 1) -> str:
    """A run of the code agent (programs from the stub) and noop on one demo task, judged structurally."""
    hostile = use(
        "code",
        label="hostile",
        model="local/stub",
        retries=retries,
        max_images=0,
        render_check=False,
        code_timeout=30,
    )
    return run_toml(
        run={"task_timeout": 120},
        dataset=demo_dataset("qbr-fix-typos"),
        agents=[hostile, "noop"],
        judges=["structural"],
        backends={"local": use("openai", base_url=base_url, api_key={"env": "STUB_KEY"})},
    )


def arena(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the `arena` CLI in a subprocess (the stub key and an unrelated secret in its environment)."""
    full = {**os.environ, "STUB_KEY": SECRET, "UNRELATED_SERVICE_TOKEN": OTHER_SECRET, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pptarena.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=timeout,
    )


def rows(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Result rows by agent label."""
    return {r["agent"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}


def files_holding(root: Path, needles: list[str]) -> list[str]:
    """Files under ``root`` (any kind, read as bytes) holding any of ``needles``."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            hits += [f"{path}: {n[:12]}..." for n in needles if n.encode() in data]
    return hits


def requests_holding(requests: list[Any], needles: list[str]) -> list[str]:
    """Stub requests whose body holds any of ``needles``."""
    return [r.path for r in requests for n in needles if n in json.dumps(r.body)]


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                status = (entry / "status").read_text()
                if "State:\tZ" not in status:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_gone(marker: str, seconds: float = 5.0) -> list[int]:
    """Processes holding ``marker`` still alive after up to ``seconds`` (an empty list is the goal)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        left = processes_with(marker)
        if not left:
            return []
        time.sleep(0.2)
    return processes_with(marker)


def program_reply(program: str) -> str:
    """A model reply holding ``program`` as a fenced Python block."""
    return "```python\n" + program.strip() + "\n```"


def make_agent(tmp_path: Path, **options):
    """The ``command`` agent labelled ``cli`` with ``options``, built through the registry."""
    from pptarena.run.configuration.registry import get_registry
    from pptarena.types import ComponentContext

    ctx = ComponentContext(cache_dir=tmp_path, model=None, name="command", label="cli")  # type: ignore[arg-type]
    return get_registry().create("agents", "command", options, ctx)


def run_cli(tmp_path: Path, body: str, **options):
    """Run ``body`` (Python; ``report`` is a dict printed as JSON at the end, the input deck is
    copied to the output first) as the CLI agent; return (prediction, report, workspace)."""
    script = tmp_path / "cli.py"
    script.write_text(
        "import json, os, shutil, socket, sys\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
        "report = {}\n" + textwrap.dedent(body) + "\nprint('REPORT' + json.dumps(report))\n"
    )
    ws, _ = scripted_workspace(tmp_path, [])
    agent = make_agent(tmp_path, command=[sys.executable, str(script), "{input}", "{output}"], **options)
    pred = agent.edit(make_task(tmp_path), ws)
    stdout = (ws.dir / "cli.stdout.txt").read_text()
    assert "REPORT" in stdout, (ws.dir / "cli.stderr.txt").read_text()[-2000:]
    return pred, json.loads(stdout.split("REPORT", 1)[1]), ws


def cli_program(path: Path, interpreter: str, body: str = "") -> Path:
    """An executable CLI agent at ``path``: a ``#!interpreter`` line, then Python (standard library only)
    that copies the input deck (argument 1) to the output (argument 2), runs ``body`` (which fills the
    dict ``report``) and prints the report the way :func:`run_cli`'s programs do."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{interpreter}\n"
        "import json, os, shutil, sys\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
        "report = {'executable': sys.executable, 'prefix': sys.prefix, 'base_prefix': sys.base_prefix}\n"
        + textwrap.dedent(body)
        + "\nprint('REPORT' + json.dumps(report))\n"
    )
    path.chmod(0o755)
    return path


def run_program(tmp_path: Path, argv: list[str], **options):
    """Run the ``command`` agent on ``argv`` (``{input}`` and ``{output}`` filled in) in a pair folder of
    its own under ``tmp_path``, with the harness cache at ``tmp_path/harness-cache`` (so programs
    elsewhere in ``tmp_path`` are not harness data); return (prediction, report, workspace). The
    agent's errors propagate."""
    import tempfile

    pair = Path(tempfile.mkdtemp(prefix="pair-", dir=tmp_path))
    ws, _ = scripted_workspace(pair, [])
    agent = make_agent(tmp_path / "harness-cache", command=argv, **options)
    pred = agent.edit(make_task(pair), ws)
    stdout = (ws.dir / "cli.stdout.txt").read_text()
    assert "REPORT" in stdout, (ws.dir / "cli.stderr.txt").read_text()[-2000:]
    return pred, json.loads(stdout.split("REPORT", 1)[1]), ws
