"""End to end through the real CLI, the real openai SDK and real LibreOffice renders.

``arena run`` runs the PPTPilot ``hybrid`` agent (router → code branch → one verify round) and
``noop`` on a demo task, judged by ``dual`` (IF/VQ with rendered slides), ``structural`` and
``rubric``, with every model call going over HTTP to a loopback server speaking the OpenAI wire
format — the path a local vLLM / Ollama server takes (examples/local-openai-compatible.toml).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.support.agents_fixtures import FIX_QBR_TYPOS
from tests.support.config import demo_dataset, use, write_run_config
from tests.support.stub_llm_server import TEST_API_KEY, RecordedRequest, Reply, StubLLMServer

pytestmark = [
    pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed"),
    pytest.mark.slow,
]


def answer(request: RecordedRequest) -> Reply:
    """Plays every model of the run, by the system prompt it receives."""
    system = request.system() or ""
    if "route PowerPoint editing requests" in system:
        return Reply('{"route": "code", "reason": "a text fix on one slide"}')
    if "writing a Python program" in system:
        return Reply(FIX_QBR_TYPOS)
    if "judge of PowerPoint edits" in system:
        return Reply('```json\n{"score": 5, "reason": "both typos fixed, nothing else changed"}\n```')
    if "judge of slide design" in system:
        return Reply('{"score": 4, "reason": "clean slide"}')
    if request.images():  # the verifier looks at the renders
        return Reply('{"done": true, "feedback": ""}')
    return Reply("ok")


def test_hybrid_agent_and_model_judges_over_http(tmp_path):
    with StubLLMServer() as server:
        server.responder = answer
        cfg = write_run_config(
            tmp_path / "local.toml",
            run={"task_timeout": 300},
            dataset=demo_dataset("qbr-fix-typos"),
            agents=[
                use(
                    "hybrid", label="pilot", model="local/stub-vlm", router_model="local/stub-router", loops=1
                ),
                "noop",
            ],
            judges=[use("dual", model="local/stub-judge"), "structural", "rubric"],
            backends={
                "local": use("openai", base_url=server.openai_base_url, api_key={"env": "STUB_KEY"}),
            },
        )
        env = {**os.environ, "STUB_KEY": TEST_API_KEY}
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "pptarena.cli",
                "run",
                "--config",
                str(cfg),
                "--out",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        requests = list(server.requests)

    rows = {
        r["agent"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    }
    pilot, noop = rows["pilot"], rows["noop"]
    assert pilot["status"] == "scored", pilot["error"]
    assert pilot["scores"]["structural"]["score"] == 1.0
    assert pilot["scores"]["rubric"]["score"] == 1.0
    assert (
        pilot["scores"]["dual"]["metrics"]["if_score"] == 5
        and pilot["scores"]["dual"]["metrics"]["vq_score"] == 4
    )
    # router + code + verifier; the judge's VQ call (IF needs no call: the prediction matches the target)
    assert pilot["usage"]["calls"] >= 3 and pilot["usage"]["judge_calls"] >= 1
    assert noop["scores"]["structural"]["score"] == 0.0 and noop["scores"]["rubric"]["score"] == 0.0
    assert noop["scores"]["dual"]["metrics"]["if_score"] == 0  # unchanged deck: no IF credit, by rule

    systems = [r.system() or "" for r in requests]
    assert any("route PowerPoint editing requests" in s for s in systems)
    vq = [r for r in requests if "judge of slide design" in (r.system() or "")]
    assert vq and all(r.images() and r.images()[0][0] == "image/png" for r in vq)
    assert all(r.api_key == TEST_API_KEY for r in requests)
    assert {r.model for r in requests} >= {"stub-router", "stub-vlm", "stub-judge"}

    # the key is never written anywhere in the run folder
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".txt", ".html", ".log"):
            assert TEST_API_KEY not in path.read_text(errors="replace"), path
    assert (tmp_path / "run" / "report.html").is_file()
