"""Reading JSON out of model replies, the one parser agents, judges and authoring share."""

from __future__ import annotations

import pytest

from pptarena.replyjson import ReplyParseError, embedded_json, extract_json, first_json_object


def test_whole_fenced_and_embedded():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure:\n```json\n{"a": 2}\n```\nbye') == {"a": 2}
    assert extract_json('The answer is {"a": 3, "s": "}{"} as requested') == {"a": 3, "s": "}{"}
    assert extract_json('list: [1, 2] then {"x": 0}') == [1, 2]


def test_errors_name_the_problem():
    with pytest.raises(ReplyParseError, match="empty"):
        extract_json("   ")
    with pytest.raises(ReplyParseError, match="no valid JSON"):
        extract_json("```json\n{broken\n```")


def test_embedded_values_in_order_without_nested_duplicates():
    text = 'a {"x": {"y": 1}} b [1] c {bad} d {"z": 2}'
    assert embedded_json(text) == [{"x": {"y": 1}}, [1], {"z": 2}]
    assert embedded_json(text, openers="{", limit=1) == [{"x": {"y": 1}}]


def test_first_object_prefers_fences():
    assert first_json_object('{"outside": 1}\n```\n{"inside": 2}\n```') == {"inside": 2}
    assert first_json_object("no json here [1, 2]") is None
