"""Reply parsing, the bounded drafting loop and environment errors of the authoring tools."""

from __future__ import annotations

import pytest

from pptarena.authoring.llm import (
    AuthorError,
    ReplyParseError,
    draft_with_retries,
    extract_json,
    open_author_env,
)
from pptarena.models import Message


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure.\n```json\n{"a": "x } y"}\n```\nBye', {"a": "x } y"}),
        ("```\n[1, 2]\n```", [1, 2]),
        ('The answer is {"a": {"b": "}"}} as requested.', {"a": {"b": "}"}}),
        ('```python\nx = 1\n```\n```json\n{"ok": true}\n```', {"ok": True}),
    ],
)
def test_extract_json(reply, expected):
    assert extract_json(reply) == expected


@pytest.mark.parametrize(
    "reply, message",
    [
        ("", "the reply is empty"),
        ("no json here", "no valid JSON found"),
        ('```json\n{"a": 1,}\n```', "no valid JSON found"),
        ("x" * 400_001, "limit 400000"),
    ],
)
def test_extract_json_errors(reply, message):
    with pytest.raises(ReplyParseError, match=message):
        extract_json(reply)


class _Client:
    """A stand-in ModelClient answering from a list (the loop only calls .complete)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.seen = []

    def complete(self, messages, **params):
        self.seen.append((list(messages), params))

        class _C:
            text = self.replies.pop(0)

        return _C()


def test_draft_loop_feeds_problems_back_and_stops_at_the_bound():
    client = _Client(["bad", "worse", "never asked"])
    result = draft_with_retries(
        client,
        [Message.user("go")],
        lambda r: (r, [f"{r} is wrong"]),
        what="thing",
        attempts=2,
        params={"max_tokens": 5},
    )
    assert not result.ok and len(result.attempts) == 2 and result.problems == ["worse is wrong"]
    history, params = client.seen[1]
    assert [m.role for m in history] == ["user", "assistant", "user"] and params == {"max_tokens": 5}
    assert "bad is wrong" in history[-1].content and "complete corrected thing" in history[-1].content
    assert "attempt 2: 1 problem(s)" in result.report()
    ok = draft_with_retries(_Client(["fine"]), [Message.user("go")], lambda r: (r, []), what="thing")
    assert ok.ok and ok.value == "fine"


def test_environment_errors_name_the_problem(tmp_path):
    with pytest.raises(AuthorError, match="does not exist"):
        open_author_env(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[backends.scripted]\nresponse = []\n", encoding="utf-8")
    with pytest.raises(AuthorError, match="backends.scripted"):
        open_author_env(bad)
    env = open_author_env(None, renders=False)
    try:
        assert env.renderer() is None
        with pytest.raises(AuthorError, match="cannot use model 'nosuch/x'"):
            env.model("nosuch/x")
    finally:
        env.close()
