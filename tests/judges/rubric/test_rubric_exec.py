"""Leaf execution in the sandbox: PPT-Eval's exec semantics, isolation, limits, shims and the model bridge."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path

import pytest

from pptarena.plugins.judges.rubric.execute import LeafRun, ModelBridge, run_function_leaves
from tests.support.rubric_fixtures import scripted_hub

BASE_INPUTS = {
    "original_ppt_path": "/nonexistent/a.pptx",
    "modified_ppt_path": "/nonexistent/b.pptx",
    "ppt_diff": None,
    "screenshots": {},
}


def code(body: str) -> str:
    return "def compute_score():\n" + textwrap.indent(textwrap.dedent(body), "    ")


def run(leaves: dict[str, str], bridge: ModelBridge | None = None, inputs: dict | None = None, **kw):
    items = [{"id": k, "code": v} for k, v in leaves.items()]
    return run_function_leaves(items, inputs or BASE_INPUTS, bridge or ModelBridge(None), LeafRun(**kw))


def test_exec_semantics_match_ai_rubric():
    records = run(
        {
            "name": code("return __name__, 1"),  # __name__ is not set: the builtins module's value shows
            "main_inert": code("return 'ok', 1")
            + "\nif __name__ == '__main__':\n    raise SystemExit('ran')\n",
            "helper_invisible": "def helper():\n    return 1\n" + code("return 'x', helper()"),
            "bool_score": code("return 'true counts as 1', True"),
            "paths": code("return original_ppt_path + '|' + modified_ppt_path, 0.25"),
            "names": code("return ','.join(sorted(k for k in globals() if not k.startswith('__'))), 1"),
        }
    )
    assert records["name"]["reason"] == "builtins" and records["name"]["score"] == 1.0
    assert records["main_inert"]["score"] == 1.0
    assert (
        "NameError" in records["helper_invisible"]["error"]
        and "helper" in records["helper_invisible"]["error"]
    )
    assert records["bool_score"]["score"] == 1.0
    assert (
        records["paths"]["reason"] == "/nonexistent/a.pptx|/nonexistent/b.pptx"
        and records["paths"]["score"] == 0.25
    )
    assert records["names"]["reason"].split(",") == sorted(
        [
            "llm_call",
            "modified_ppt_path",
            "modified_ppt_screenshots",
            "original_ppt_path",
            "original_ppt_screenshots",
            "ppt_diff",
            "vlm_call",
        ]
    )


@pytest.mark.slow
def test_bad_results_fail_only_their_leaf_with_a_traceback():
    records = run(
        {
            "raises": code("x = {}\nreturn 'r', x['missing']"),
            "range": code("return 'too much', 1.5"),
            "reason_type": code("return 1.0, 'swapped'"),
            "not_a_pair": code("return 0.5"),
            "no_function": "x = 1\n",
            "good": code("return 'fine', 0.5"),
        }
    )
    assert (
        records["good"] == {**records["good"], "score": 0.5, "reason": "fine"}
        and "error" not in records["good"]
    )
    raises = records["raises"]
    assert raises["score"] == 0.0 and raises["error_type"] == "KeyError"
    assert "x['missing']" in raises["traceback"]  # the leaf's own source line is shown
    assert raises["reason"].startswith("Function scoring failed:")
    assert "outside [0, 1]" in records["range"]["error"]
    assert "reason must be a string" in records["reason_type"]["error"]
    assert "must return (reason, score)" in records["not_a_pair"]["error"]
    assert "does not define compute_score" in records["no_function"]["error"]


@pytest.mark.slow
def test_time_budget_crashes_and_exit_are_per_leaf():
    records = run(
        {
            "spins": code("while True:\n    pass"),
            "swallows": code(
                "try:\n    while True:\n        pass\nexcept Exception:\n    return 'caught', 1.0"
            ),
            "exits": code("import sys\nsys.exit(3)"),
            "dies": code("import os\nos._exit(9)"),
            "after": code("print('still running')\nreturn 'after', 1.0"),
        },
        leaf_timeout=1.0,
    )
    assert records["spins"]["error_type"] == "timeout"
    assert records["swallows"]["error_type"] == "timeout"  # `except Exception` cannot hide the budget
    assert records["exits"]["error_type"] == "SystemExit"
    assert records["dies"]["error_type"] == "sandbox" and "exit status 9" in records["dies"]["error"]
    assert records["after"]["score"] == 1.0 and records["after"]["stdout"] == "still running\n"


def test_memory_limit_kills_one_leaf_and_the_rest_run():
    records = run(
        {"hog": code("x = bytearray(3 * 1024**3)\nreturn 'no', 1"), "next": code("return 'yes', 1")},
        memory_mb=512,
    )
    assert records["hog"]["score"] == 0.0 and records["hog"]["error_type"] in ("MemoryError", "sandbox")
    assert records["next"]["score"] == 1.0


def test_shims_are_importable_and_leaves_cannot_share_state():
    records = run(
        {
            "shim": code(
                """
                from ppteval.verify.ppt.verifier import ScreenshotsUnavailableError, vlm_call as v
                from rubric.utils.llm_tools import llm_call as l
                from dotenv import load_dotenv
                load_dotenv()
                assert issubclass(ScreenshotsUnavailableError, RuntimeError)
                return v.__name__ + ',' + l.__name__, 1
                """
            ),
            "raises_unavailable": code(
                "from ppteval.verify.ppt.verifier import ScreenshotsUnavailableError\n"
                "raise ScreenshotsUnavailableError('slide 3')"
            ),
            "mutates": code(
                "original_ppt_screenshots.append(1)\nglobal ppt_diff\nppt_diff = 'changed'\nreturn 'm', 1"
            ),
            "sees_fresh": code("return repr((original_ppt_screenshots, ppt_diff)), 1"),
            "no_network": code(
                "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
                "except OSError as e:\n    return 'blocked', 1\nreturn 'open', 0"
            ),
        }
    )
    assert records["shim"]["reason"] == "vlm_call,llm_call"
    assert records["raises_unavailable"]["screenshots_unavailable"] is True
    assert records["sees_fresh"]["reason"] == "([], None)"
    assert records["no_network"]["reason"] == "blocked"


def test_model_calls_reach_the_scripted_backend_with_prompt_params_and_images(tmp_path: Path):
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG fake image bytes")
    backend, factory = scripted_hub(tmp_path, responses=["YES", "a text answer"])
    bridge = ModelBridge(factory("scripted/vision-model"), "scripted/vision-model")
    data_url = "data:image/png;base64," + base64.b64encode(b"inline").decode()
    records = run(
        {
            "vlm": code(
                f"return vlm_call(prompt='Is the title red?', images=[{str(image)!r}, {data_url!r}], "
                "temperature=0.1, max_tokens=5), 1"
            ),
            "llm": code(
                "from rubric.utils.llm_tools import llm_call as call\n"
                "return call('Summarise', temperature=0.0, max_tokens=20), 1"
            ),
        },
        bridge=bridge,
        # a leaf sees the screenshots it is given (and nothing else of the host under bubblewrap)
        inputs={**BASE_INPUTS, "screenshots": {"modified": [{"slide_number": 1, "image_path": str(image)}]}},
    )
    assert records["vlm"]["reason"] == "YES" and records["llm"]["reason"] == "a text answer"
    first, second = backend.requests
    assert first.model == "vision-model" and first.last_user_text == "Is the title red?"
    assert [img.data for img in first.images] == [image.read_bytes(), b"inline"]
    assert [img.media_type for img in first.images] == ["image/png", "image/png"]
    assert first.params == {"temperature": 0.1, "max_tokens": 5}
    assert second.last_user_text == "Summarise" and second.images == [] and second.params["max_tokens"] == 20
    assert [(c.leaf, c.kind) for c in bridge.calls] == [("vlm", "vlm"), ("llm", "llm")]
    assert bridge.calls[0].images[0]["source"] == str(image) and bridge.calls[0].images[0]["bytes"] == len(
        image.read_bytes()
    )


@pytest.mark.slow
def test_without_a_model_calls_fail_clearly_and_backend_failures_are_marked_infra(tmp_path: Path):
    records = run({"asks": code("return vlm_call('q', []), 1")})
    assert "no model is configured" in records["asks"]["error"]
    backend, factory = scripted_hub(tmp_path, responses=[{"error": "fatal", "message": "backend down"}])
    bridge = ModelBridge(factory("scripted/m"))
    records = run(
        {
            "fallback": code(
                "try:\n    return llm_call('q'), 1\nexcept Exception as e:\n    return str(e), 0.5"
            )
        },
        bridge=bridge,
    )
    assert records["fallback"]["score"] == 0.5 and "LLM API call failed" in records["fallback"]["reason"]
    assert bridge.calls[0].infra is True and "backend down" in bridge.calls[0].error


@pytest.mark.slow
def test_leaf_budget_pauses_while_the_model_answers_and_calls_are_capped(tmp_path: Path):
    backend, factory = scripted_hub(
        tmp_path, responses=[{"reply": "slow YES", "delay": 1.5}, "quick"], on_exhausted="repeat_last"
    )
    bridge = ModelBridge(factory("scripted/m"))
    records = run(
        {
            "slow_model": code("return llm_call('q'), 1"),
            "chatty": code("answers = [llm_call(str(i)) for i in range(25)]\nreturn 'never', 1"),
        },
        bridge=bridge,
        leaf_timeout=1.0,
        model_wait=10.0,
    )
    assert records["slow_model"]["reason"] == "slow YES" and "error" not in records["slow_model"]
    assert "more than 20 model calls" in records["chatty"]["error"]
    assert len(backend.requests) == 21
