"""The scripted backend: ordered responses, rules, recording, cross-process state."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from pydantic import ValidationError

from pptarena.models import ImagePart, Message, ModelClient, ModelError, TransientModelError
from pptarena.plugins.backends.scripted import ScriptedOptions, read_record

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def ask(client, text, *images):
    return client.complete([Message.system("sys"), Message.user(text, *images)]).text


def test_responses_are_served_in_order_then_exhaustion_is_an_error(scripted_backend):
    client = ModelClient(scripted_backend(responses=["one", "two"]), "scripted", "m")
    assert [ask(client, "a"), ask(client, "b")] == ["one", "two"]
    with pytest.raises(ModelError, match="responses exhausted"):
        ask(client, "c")


@pytest.mark.parametrize(
    ("mode", "expected"), [("cycle", ["a", "b", "a", "b"]), ("repeat_last", ["a", "b", "b", "b"])]
)
def test_exhaustion_modes(scripted_backend, mode, expected):
    client = ModelClient(scripted_backend(responses=["a", "b"], on_exhausted=mode), "scripted", "m")
    assert [ask(client, "q") for _ in range(4)] == expected


def test_usage_is_deterministic_word_and_image_counts(scripted_backend):
    client = ModelClient(
        scripted_backend(responses=["three word reply", {"reply": "x", "input_tokens": 7}]), "s", "m"
    )
    first = client.complete([Message.system("be brief"), Message.user("two words", ImagePart(PNG))])
    assert (first.usage.input_tokens, first.usage.output_tokens) == (2 + 2 + 85, 3)
    second = client.complete([Message.user("anything")])
    assert second.usage.input_tokens == 7
    assert client.usage.calls == 2 and client.usage.input_tokens == 96


def test_requests_are_recorded_with_images(scripted_backend, tmp_path):
    record = tmp_path / "rec" / "requests.jsonl"
    backend = scripted_backend(responses=["ok"], record=record)
    ModelClient(backend, "scripted", "vision").complete([Message.user("look", ImagePart(PNG))], temperature=0)
    (req,) = backend.requests
    assert req.model == "vision" and req.last_user_text == "look" and req.params == {"temperature": 0}
    assert req.images[0].data == PNG and req.reply == "ok"
    (line,) = read_record(record)
    assert line["reply"] == "ok" and line["model"] == "vision"
    image = line["messages"][0]["content"][1]
    assert image["image"] == "image/png" and image["bytes"] == len(PNG) and len(image["sha256"]) == 64


def test_rules_match_last_user_text_and_list_replies_step(scripted_backend):
    backend = scripted_backend(
        rules=[
            {"match": r"(?i)route", "reply": "code"},
            {"match": r"write code", "reply": ["attempt 1", "attempt 2"]},
            {"match": r"verify", "reply": "done", "model": "^judge"},
        ],
        responses=["fallback"],
    )
    client = ModelClient(backend, "scripted", "m")
    assert ask(client, "ROUTE this edit") == "code"
    assert ask(client, "please write code") == "attempt 1"
    assert ask(client, "please write code") == "attempt 2"
    assert ask(client, "verify it") == "fallback"  # rule limited to judge models
    assert ModelClient(backend, "scripted", "judge-1").complete([Message.user("verify it")]).text == "done"
    assert [r.source for r in backend.requests] == ["rule 0", "rule 1", "rule 1", "responses", "rule 2"]


def test_no_matching_rule_names_the_text(scripted_backend):
    client = ModelClient(scripted_backend(rules=[{"match": "^x$", "reply": "y"}]), "scripted", "m")
    with pytest.raises(ModelError, match="no rule matches.*'hello'"):
        ask(client, "hello")


def test_bad_regex_is_a_config_error():
    with pytest.raises(ValidationError, match="bad regex"):
        ScriptedOptions(rules=[{"match": "(", "reply": "x"}])


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_rules_file(scripted_backend, tmp_path, suffix):
    path = tmp_path / f"script{suffix}"
    if suffix == ".toml":
        path.write_text(
            textwrap.dedent(
                """
                responses = ["from file"]
                [[rules]]
                match = "summar"
                reply = "a summary"
                """
            )
        )
    else:
        path.write_text(json.dumps([{"match": "summar", "reply": "a summary"}]))
    backend = scripted_backend(rules_file=path, on_exhausted="repeat_last")
    client = ModelClient(backend, "scripted", "m")
    assert ask(client, "summarize") == "a summary"
    if suffix == ".toml":
        assert ask(client, "other") == "from file"


def test_broken_rules_file_names_the_file(scripted_backend, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[[rules]]\nmatch = '('\nreply = 'x'\n")
    with pytest.raises(ValueError, match=r"bad\.toml: rules\[0\.match\]: bad regex"):
        scripted_backend(rules_file=path)
    path.write_text("not = [toml")
    with pytest.raises(ValueError, match=r"bad\.toml: not valid"):
        scripted_backend(rules_file=path)


def test_error_items_are_retried_through_the_client(scripted_backend):
    backend = scripted_backend(
        responses=[{"error": "transient"}, {"error": "timeout"}, "finally"], max_retries=2
    )
    client = ModelClient(backend, "scripted", "m")
    assert ask(client, "go") == "finally"
    assert client.usage.retries == 2 and len(backend.requests) == 3


def test_fatal_error_items_are_not_retried(scripted_backend):
    backend = scripted_backend(responses=[{"error": "fatal", "message": "quota"}, "never"], max_retries=3)
    with pytest.raises(ModelError, match="quota") as info:
        ask(ModelClient(backend, "scripted", "m"), "go")
    assert not isinstance(info.value, TransientModelError) and len(backend.requests) == 1


@pytest.mark.slow
def test_slow_item_hits_the_client_deadline(scripted_backend):
    backend = scripted_backend(responses=[{"reply": "slow", "delay": 3}], timeout=0.2, max_retries=0)
    with pytest.raises(TransientModelError, match="did not return within"):
        ask(ModelClient(backend, "scripted", "m"), "go")


def test_turn_order_follows_assistant_messages(scripted_backend):
    backend = scripted_backend(responses=["step 0", "step 1", "step 2"], order="turn")
    client = ModelClient(backend, "scripted", "m")
    convo = [Message.user("start")]
    assert client.complete(convo).text == "step 0"
    assert client.complete(convo).text == "step 0"  # same turn, same answer, in any process
    convo += [Message.assistant("step 0"), Message.user("error: fix it")]
    assert client.complete(convo).text == "step 1"


def test_state_file_shares_the_order_across_processes(tmp_path):
    state = tmp_path / "state.json"
    cache_dir = str(tmp_path)
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from pptarena.models import Message, ModelClient
        from pptarena.types import ComponentContext
        from pptarena.plugins.backends.scripted import ScriptedBackend, ScriptedOptions
        opts = ScriptedOptions(responses=["r0", "r1", "r2", "r3"], state_file=Path({str(state)!r}))
        backend = ScriptedBackend(opts, ComponentContext(cache_dir=Path({cache_dir!r}), model=lambda r: None))
        client = ModelClient(backend, "scripted", "m")
        print(client.complete([Message.user("x")]).text, client.complete([Message.user("x")]).text)
        """
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert outputs == [["r0", "r1"], ["r2", "r3"]]


def test_model_context_resolves_refs(scripted_backend, model_context):
    ctx = model_context(scripted=scripted_backend(responses=["hi"]))
    client = ctx.model("scripted/any-model")
    assert client.ref == "scripted/any-model" and client.complete([Message.user("x")]).text == "hi"


def test_registered_through_the_hook():
    from pptarena.plugins.backends import anthropic, openai, scripted

    names: dict[str, object] = {}
    for module in (scripted, openai, anthropic):
        module.register_backends(lambda name, cls: names.__setitem__(name, cls))
    assert set(names) == {"scripted", "openai", "anthropic"}
    assert all(issubclass(cls.Options, ScriptedOptions.__mro__[1]) for cls in names.values())
