"""Judge prompts put their task-stable part first, marked ``cache_prefix`` (issue 32, item 4).

Two different predictions of the same demo task go through the dual judge and the rubric judge's
``llm`` leaves on the scripted backend (which keeps every request); the messages up to and including
the one marked ``cache_prefix`` must be identical, text and image bytes, and everything that depends
on the prediction must come after it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pptarena.models import ImagePart, Message, ModelHub
from pptarena.plugins.backends.scripted import count_tokens
from pptarena.plugins.judges.dual.judge import DualJudge
from pptarena.types import ComponentContext
from tests.support.structural_dual_fixtures import FakeRenderer, derive, make_case

TASK_ID = "qbr-fix-typos"  # the target fixes "Quartely" and "performence" on slide 2 of a 6-slide deck
IF_RULE = "Score instruction following"
VQ_RULE = "Score the visual quality"


@pytest.fixture(scope="module")
def demo_task(tmp_path_factory):
    """The demo task ``qbr-fix-typos`` (the demo set generated into a temporary cache)."""
    from pptarena.plugins.datasets.demo.dataset import ensure_demo_set
    from pptarena.plugins.datasets.folder import load_folder_tasks

    root = ensure_demo_set(tmp_path_factory.mktemp("demo-cache"))
    [task] = load_folder_tasks(root, [TASK_ID])
    return task


def fix(*pairs: tuple[str, str]):
    """Edit: replace words in the runs of slide 2's body."""

    def fn(prs) -> None:
        for paragraph in prs.slides[1].placeholders[1].text_frame.paragraphs:
            for run in paragraph.runs:
                for wrong, right in pairs:
                    run.text = run.text.replace(wrong, right)

    return fn


def add_note_box(prs) -> None:
    """Edit: an unrequested text box on slide 4 (collateral damage)."""
    from pptx.util import Inches

    box = prs.slides[3].shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    box.name = "Stray note"
    box.text_frame.text = "lorem ipsum stray note"


@pytest.fixture(scope="module")
def predictions(demo_task, tmp_path_factory):
    """Two different predictions: one typo fixed (partial), both fixed plus a stray box on slide 4."""
    folder = tmp_path_factory.mktemp("predictions")
    partial = derive(demo_task.original, folder / "partial.pptx", fix(("Quartely", "Quarterly")))
    damaged = derive(
        demo_task.original,
        folder / "damaged.pptx",
        fix(("Quartely", "Quarterly"), ("performence", "performance")),
        add_note_box,
    )
    return {"partial": partial, "damaged": damaged}


def scripted_backend(cache_dir: Path, **options):
    """A real ScriptedBackend (it keeps every request in ``backend.requests``)."""
    from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions

    ctx = ComponentContext(cache_dir=cache_dir, model=lambda ref: None, name="scripted")
    return ScriptedBackend(ScriptedOptions(**options), ctx)


def wire(message: Message) -> tuple:
    """A message as comparable data: role, and each part's text or image media type and SHA-256."""
    parts = tuple(
        (p.media_type, hashlib.sha256(p.data).hexdigest()) if isinstance(p, ImagePart) else p
        for p in message.parts()
    )
    return (message.role, parts)


def split(request) -> tuple[list[Message], list[Message]]:
    """``(prefix, rest)``: the messages up to and including the one marked ``cache_prefix``, the others."""
    marked = [i for i, m in enumerate(request.messages) if m.cache_prefix]
    assert len(marked) == 1, f"expected one cache_prefix mark, got {marked}"
    return request.messages[: marked[0] + 1], request.messages[marked[0] + 1 :]


def texts(messages: list[Message]) -> str:
    """Every text part of ``messages``, joined."""
    return "\n".join(p for m in messages for p in m.parts() if isinstance(p, str))


def images(messages: list[Message]) -> list[bytes]:
    """Every image's bytes in ``messages``, in order."""
    return [p.data for m in messages for p in m.parts() if isinstance(p, ImagePart)]


# --------------------------------------------------------------------------- dual judge


@pytest.fixture(scope="module")
def dual_run(demo_task, predictions, tmp_path_factory):
    """Both predictions judged by one dual judge on one scripted backend, as two agents would be."""
    folder = tmp_path_factory.mktemp("dual")
    backend = scripted_backend(
        folder / "cache",
        rules=[
            {"match": IF_RULE, "reply": ['{"score": 3, "reason": "one typo left"}', "4"]},
            {"match": VQ_RULE, "reply": '```json\n{"score": 4, "reason": "tidy"}\n```'},
        ],
    )
    hub = ModelHub({"scripted": backend})
    ctx = ComponentContext(cache_dir=folder / "cache", model=hub.factory(), name="dual", label="dual")
    judge = DualJudge(DualJudge.Options(model="scripted/judge", chunk_size=1), ctx)
    verdicts, evidence, requests = {}, {}, {}
    for name, deck in predictions.items():
        task, prediction, ev = make_case(
            folder,
            demo_task.original,
            demo_task.target,
            deck,
            renderer=FakeRenderer(),
            model=ctx.model,
            instruction=demo_task.instruction,
            style_target=demo_task.style_target,
            name=name,
        )
        before = len(backend.requests)
        verdicts[name] = judge.judge(task, prediction, ev)
        evidence[name], requests[name] = ev, backend.requests[before:]
    return verdicts, evidence, requests


def calls(requests, rule: str) -> list:
    """The requests whose last user message holds ``rule``."""
    return [r for r in requests if rule in r.last_user_text]


def test_dual_if_prefix_is_identical_across_predictions(dual_run, demo_task):
    verdicts, _, requests = dual_run
    [if_a] = calls(requests["partial"], IF_RULE)
    [if_b] = calls(requests["damaged"], IF_RULE)
    prefix_a, rest_a = split(if_a)
    prefix_b, rest_b = split(if_b)
    assert [m.role for m in prefix_a] == ["system", "user"] and [m.role for m in rest_a] == ["user"]
    assert [wire(m) for m in prefix_a] == [wire(m) for m in prefix_b]  # byte-identical
    assert [wire(m) for m in rest_a] != [wire(m) for m in rest_b]

    stable = texts(prefix_a[1:])  # what the prefix holds: the task's part
    assert demo_task.instruction in stable and demo_task.style_target in stable
    assert "## Edits the TARGET (human reference) makes to the original" in stable
    assert "performence" in stable and "performance" in stable  # the target's edit
    assert "### ORIGINAL deck: 6 slides" in stable and "### TARGET deck: 6 slides" in stable
    # ... and nothing of the prediction: its edits, remaining differences and slides come after
    for name, rest in (("partial", rest_a), ("damaged", rest_b)):
        after = texts(rest)
        assert after.startswith("## Edits the PREDICTION (agent) makes to the original")
        assert "## Differences remaining from PREDICTION to TARGET" in after
        assert "### PREDICTION deck: 6 slides" in after and after.endswith('"reason": "..."}.')
        assert name in after  # the prediction's file name is in its diff's header
    for marker in ("PREDICTION deck", "Edits the PREDICTION", "partial.pptx", "damaged.pptx", "lorem ipsum"):
        assert marker not in stable
    assert "lorem ipsum stray note" in texts(rest_b)  # the stray box is described after the mark
    # the slide only the damaged prediction touches (4) is shown for original and target after the mark
    assert "showing slides [4] (slides not shown above)" in texts(rest_b)
    assert "(slides not shown above)" not in texts(rest_a)

    # verdicts still parse
    assert verdicts["partial"].metrics["if_score"] == 3 and verdicts["partial"].metrics["if_rule"] == "model"
    assert verdicts["damaged"].metrics["if_score"] == 4
    assert verdicts["partial"].details["judge"]["prompt_version"] == "2"


def test_dual_vq_prefix_is_identical_across_predictions_and_chunks(dual_run):
    verdicts, evidence, requests = dual_run
    vq = {name: calls(reqs, VQ_RULE) for name, reqs in requests.items()}
    assert len(vq["partial"]) == 1 and len(vq["damaged"]) == 2  # slide 2; slides 2 and 4 (chunk_size 1)
    prefixes = [split(r)[0] for reqs in vq.values() for r in reqs]
    assert len({tuple(wire(m) for m in p) for p in prefixes}) == 1  # one prefix for every VQ call

    prefix = prefixes[0]
    target_renders = {img.number: img.path.read_bytes() for img in evidence["partial"].renders("target")}
    # the prefix: the instruction and the one target slide that changed visibly (2), labelled
    assert texts(prefix[1:]).startswith("The agent was asked: Fix the spelling mistakes")
    assert "TARGET slide 2 (reference):" in prefix[1].parts() and images(prefix) == [target_renders[2]]
    assert "PREDICTION slide " not in texts(prefix[1:])  # no prediction slide label before the mark

    for name, reqs in vq.items():
        pred_renders = {img.number: img.path.read_bytes() for img in evidence[name].renders("prediction")}
        target_here = {img.number: img.path.read_bytes() for img in evidence[name].renders("target")}
        assert target_here == target_renders  # each pair renders the target itself, to the same bytes
        for request in reqs:
            _, rest = split(request)
            slide = int(request.last_user_text.split("PREDICTION slides ")[1].split(" ")[0])
            parts = rest[0].parts()
            # every prediction image sits after the mark, right after its label
            shown = [
                parts[i + 1].data
                for i, p in enumerate(parts)
                if isinstance(p, str) and p.startswith("PREDICTION slide ")
            ]
            assert shown == [pred_renders[slide]]
    # slide 2's target version is referred to, not repeated; slide 4's (not in the prefix) follows it
    [damaged_2, damaged_4] = vq["damaged"]
    assert (
        "PREDICTION slide 2 (its TARGET version is TARGET slide 2, shown above):" in damaged_2.last_user_text
    )
    assert images(split(damaged_4)[1]) == [
        {i.number: i.path.read_bytes() for i in evidence["damaged"].renders("prediction")}[4],
        target_renders[4],
    ]
    assert verdicts["damaged"].metrics["vq_score"] == 4 and verdicts["damaged"].metrics["vq_chunks"] == 2


def test_dual_usage_counts_the_whole_request_with_the_prefix_in_it(dual_run):
    """The scripted backend's usage (words + 85 per image) of each call covers prefix and rest; the
    prefix's share is the same tokens for every prediction."""
    import json

    _, evidence, requests = dual_run
    shares = {}
    for name, reqs in requests.items():
        [request] = calls(reqs, IF_RULE)
        head, _ = split(request)
        recorded = json.loads((evidence[name].task_dir / "judges" / "dual" / "if.json").read_text())
        assert recorded["attempts"][0]["usage"]["input_tokens"] == count_tokens(request.messages)
        shares[name] = (count_tokens(head), count_tokens(request.messages))
    assert shares["partial"][0] == shares["damaged"][0]
    assert all(0 < head < total for head, total in shares.values())


# --------------------------------------------------------------------------- rubric judge's llm leaves


def llm_rubric(system_prompt: str) -> dict:
    """A one-leaf rubric whose leaf is an ``llm`` scorer."""
    return {
        "root": {
            "name": TASK_ID,
            "description": "typos fixed",
            "is_critical": True,
            "metadata": {},
            "children": [
                {
                    "name": "model check",
                    "description": "the model grades the edit",
                    "is_critical": True,
                    "metadata": {},
                    "scorer": {
                        "type": "llm",
                        "system_prompt": system_prompt,
                        "user_prompt": "Grade {modified_ppt_path} (original: {original_ppt_path}).",
                    },
                }
            ],
        }
    }


@pytest.mark.parametrize(
    ("system_prompt", "marked"),
    [
        ('You grade PowerPoint edits. Reply with ```json {{"score": <0-1>, "reason": "..."}}```.', True),
        ("You grade the deck {modified_ppt_path}.", False),  # depends on the prediction: no mark
    ],
)
def test_rubric_llm_leaf_marks_a_static_system_prompt(
    demo_task, predictions, tmp_path, system_prompt, marked
):
    from pptarena.evidence import Evidence
    from pptarena.plugins.judges.rubric.judge import RubricJudge
    from pptarena.types import Prediction, Task

    backend = scripted_backend(
        tmp_path / "cache", rules=[{"match": "Grade", "reply": '{"score": 0.5, "reason": "half"}'}]
    )
    hub = ModelHub({"scripted": backend})
    ctx = ComponentContext(cache_dir=tmp_path / "cache", model=hub.factory(), name="rubric", label="rubric")
    judge = RubricJudge(RubricJudge.Options(model="scripted/m", explain="deterministic"), ctx)
    task = Task(
        id=TASK_ID,
        instruction=demo_task.instruction,
        original=demo_task.original,
        target=demo_task.target,
        rubric=llm_rubric(system_prompt),
    )
    for name, deck in predictions.items():
        prediction = Prediction(path=deck)
        (tmp_path / name).mkdir()
        verdict = judge.judge(
            task, prediction, Evidence(task, prediction, tmp_path / name, renderer=None, model=ctx.model)
        )
        assert verdict.score == pytest.approx(0.5)  # the reply still parses
    first, second = backend.requests
    assert [m.cache_prefix for m in first.messages] == [marked, False]
    if marked:
        prefix_a, rest_a = split(first)
        prefix_b, rest_b = split(second)
        assert [wire(m) for m in prefix_a] == [wire(m) for m in prefix_b]
        assert "partial.pptx" in texts(rest_a) and "damaged.pptx" in texts(rest_b)
        assert '{"score": <0-1>' in texts(prefix_a)  # the rubric's text, formatted as ai-rubric does
    else:
        assert first.messages[0].content != second.messages[0].content
