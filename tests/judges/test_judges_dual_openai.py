"""The dual judge through the real openai backend (OpenAI SDK) against the loopback stub LLM server."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from pptarena.models import ModelHub
from pptarena.plugins.judges.dual.judge import DualJudge
from pptarena.types import ComponentContext, JudgeError
from tests.support.structural_dual_fixtures import (
    FakeRenderer,
    build_deck,
    derive,
    make_case,
    recolor,
    retitle,
    set_text,
)
from tests.support.stub_llm_server import TEST_API_KEY, Fail, Reply, StubLLMServer

pytest.importorskip("openai")

RED = (0xE0, 0x10, 0x10)


@pytest.fixture
def server():
    srv = StubLLMServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def judge_for(server, tmp_path):
    """``judge_for(**options)`` → (DualJudge using openai/<model> on the stub server, its context)."""
    from pptarena.plugins.backends.openai import OpenAIBackend, OpenAIOptions

    ctx0 = ComponentContext(cache_dir=tmp_path / "cache", model=lambda ref: None, name="openai")
    backend = OpenAIBackend(
        OpenAIOptions(
            api_key=SecretStr(TEST_API_KEY),
            base_url=server.openai_base_url,
            retry_base_delay=0.01,
            retry_max_delay=0.05,
        ),
        ctx0,
    )
    hub = ModelHub({"openai": backend})
    ctx = ComponentContext(cache_dir=tmp_path / "cache", model=hub.factory(), name="dual", label="dual-gpt")

    def make(**options):
        return DualJudge(DualJudge.Options(model="openai/judge-gpt", **options), ctx), ctx

    yield make
    backend.close()


@pytest.fixture
def decks(tmp_path):
    orig = build_deck(tmp_path / "orig.pptx")
    target = derive(orig, tmp_path / "target.pptx", recolor(1, "Box0", RED), retitle(2, "Annual review"))
    pred = derive(orig, tmp_path / "pred.pptx", recolor(1, "Box0", RED), set_text(3, "Body2", "lorem ipsum"))
    return orig, target, pred


def answer(request):
    """Responder: IF requests get 3, VQ requests 4 (told apart by the prompt text)."""
    text = "\n".join(request.texts())
    if "Score instruction following" in text:
        return Reply('{"score": 3, "reason": "half of the edits"}')
    return Reply('```json\n{"score": 4, "reason": "tidy slides"}\n```')


def test_requests_on_the_wire_carry_evidence_and_images(tmp_path, server, judge_for, decks):
    orig, target, pred = decks
    server.responder = answer
    judge, ctx = judge_for(chunk_size=2, temperature=0.1, max_tokens=300)
    task, prediction, ev = make_case(
        tmp_path,
        orig,
        target,
        pred,
        renderer=FakeRenderer(),
        model=ctx.model,
        instruction="Fill the box on slide 1 red and retitle slide 2.",
    )
    verdict = judge.judge(task, prediction, ev)
    assert len(server.requests) == 3  # one IF call and two VQ chunks
    if_req, vq1, vq2 = server.requests
    assert if_req.model == "judge-gpt" and if_req.api_key == TEST_API_KEY
    assert if_req.body["temperature"] == 0.1 and if_req.body["max_tokens"] == 300
    assert "You are an exacting judge of PowerPoint edits" in if_req.system()
    user = "\n".join(if_req.texts())
    assert "Fill the box on slide 1 red" in user and "Annual review" in user and "lorem ipsum" in user
    assert if_req.images() == []
    # each VQ call: the target's changed slides 1 and 2 (the task-stable part), then its prediction
    # slides, each followed by the target's version unless the stable part shows it
    assert [len(r.images()) for r in (vq1, vq2)] == [2 + 2, 2 + 2]
    assert all(media == "image/png" and data.startswith(b"\x89PNG") for media, data in vq1.images())
    renders = {img.number: img.path.read_bytes() for img in ev.renders("prediction")}
    target_renders = {img.number: img.path.read_bytes() for img in ev.renders("target")}
    assert vq1.images()[:2] == vq2.images()[:2] == [("image/png", target_renders[n]) for n in (1, 2)]
    assert vq1.images()[2][1] == renders[1] and vq2.images()[2][1] == renders[3]
    assert "PREDICTION slide 3:" in vq2.texts() and vq2.images()[3][1] == target_renders[3]
    # the stable part is its own user message, before the prediction's, on the wire too
    assert [m["role"] for m in vq1.messages()] == ["system", "user", "user"]
    assert vq1.messages()[1] == vq2.messages()[1]
    assert verdict.metrics["if_score"] == 3 and verdict.metrics["vq_score"] == 4
    assert verdict.score == pytest.approx(0.7)
    assert (
        verdict.metrics["judge_backend"] == "openai" and verdict.metrics["judge_model"] == "openai/judge-gpt"
    )
    # usage of the judge's calls is counted on the evidence's clients
    assert sum(c.usage.calls for c in ev.clients) == 3
    assert (tmp_path / "case" / "judges" / "dual-gpt" / "vq-02.json").exists()


def test_retry_over_the_wire_then_judge_error(tmp_path, server, judge_for, decks):
    orig, target, pred = decks
    server.enqueue(Reply("It looks fine to me."), Reply("4"))
    server.responder = answer
    judge, ctx = judge_for(chunk_size=3)
    task, prediction, ev = make_case(tmp_path, orig, target, pred, renderer=FakeRenderer(), model=ctx.model)
    verdict = judge.judge(task, prediction, ev)
    retry = server.requests[1]
    assert [m["role"] for m in retry.messages()] == ["system", "user", "user", "assistant", "user"]
    assert retry.messages()[3]["content"] == "It looks fine to me."
    assert verdict.metrics["if_score"] == 4 and len(server.requests) == 3

    server.reset()
    server.default = Reply("no score here")
    task, prediction, ev = make_case(
        tmp_path, orig, target, pred, renderer=FakeRenderer(), model=ctx.model, name="bad"
    )
    with pytest.raises(JudgeError, match="after one retry"):
        judge.judge(task, prediction, ev)
    assert len(server.requests) == 2
    data = json.loads((tmp_path / "bad" / "judges" / "dual-gpt" / "if.json").read_text())
    assert [a["answer"] for a in data["attempts"]] == ["no score here", "no score here"]


def test_unreachable_or_failing_model_is_an_infra_error_not_a_judge_error(tmp_path, server, judge_for, decks):
    from pptarena.types import InfraError

    orig, target, pred = decks
    server.default = Fail(401, "bad key {api_key}")
    judge, ctx = judge_for()
    task, prediction, ev = make_case(tmp_path, orig, target, pred, renderer=FakeRenderer(), model=ctx.model)
    with pytest.raises(InfraError) as info:
        judge.judge(task, prediction, ev)
    assert not isinstance(info.value, JudgeError) and TEST_API_KEY not in str(info.value)


def test_unchanged_deck_gets_no_if_call_over_the_wire(tmp_path, server, judge_for, decks):
    orig, target, _ = decks
    server.responder = answer
    judge, ctx = judge_for()
    task, prediction, ev = make_case(
        tmp_path, orig, target, derive(orig, tmp_path / "noop.pptx"), renderer=FakeRenderer(), model=ctx.model
    )
    verdict = judge.judge(task, prediction, ev)
    assert len(server.requests) == 1 and server.requests[0].images()  # only the VQ call
    assert verdict.metrics["if_score"] == 0 and verdict.score == pytest.approx(0.4)
