"""Reading scores out of judge answers, and the prompt-trimming helpers of the dual judge."""

from __future__ import annotations

import json

import pytest

from pptarena.plugins.judges.dual.prompts import bounded, compact_slides, summary_block
from pptarena.plugins.judges.dual.verdict_parse import ScoreParseError, parse_score


@pytest.mark.parametrize(
    ("text", "score", "reason", "form"),
    [
        ('{"score": 4, "reason": "good"}', 4, "good", "json"),
        ('  {"Score": 0, "Reason": "ignored"}\n', 0, "ignored", "json"),
        (
            '{"instruction_following_score": 5, "instruction_following_reason": "all done"}',
            5,
            "all done",
            "json",
        ),
        ('{"visual_quality_score": "3", "visual_quality_reason": "crowded"}', 3, "crowded", "json"),
        ('{"score": 4.6, "rationale": "close"}', 5, "close", "json"),
        ('{"score": 2.5}', 3, "", "json"),
        ('Here you go:\n```json\n{"score": 2, "reason": "overflow"}\n```\nThanks', 2, "overflow", "fenced"),
        ('```\n{"rating": 1}\n```', 1, "", "fenced"),
        (
            'My verdict is {"score": 3, "reason": "a {brace} in text"} overall.',
            3,
            "a {brace} in text",
            "embedded",
        ),
        ("4", 4, "", "bare"),
        ("Score: 5/5", 5, "", "bare"),
        ("**Score: 2**\nText overflows on slide 3.", 2, "Text overflows on slide 3.", "bare"),
        ("The title is wrong.\n1", 1, "The title is wrong.", "bare"),
    ],
)
def test_accepted_forms(text, score, reason, form):
    parsed = parse_score(text)
    assert (parsed.score, parsed.reason, parsed.form) == (score, reason, form)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("It is pretty good overall.", "no JSON object"),
        ('{"score": 7}', "outside 0-5"),
        ('{"score": -1}', "outside 0-5"),
        ('{"score": true}', "not a number"),
        ('{"score": "high"}', "not a number"),
        ('{"reason": "no score key"}', "no score key"),
        ("```json\n{not json}\n```", "not JSON"),
        (
            "I give it 4 out of 5 because the layout is clean",
            "no JSON object",
        ),  # a number inside prose is not taken
    ],
)
def test_rejected_answers_say_why(text, problem):
    with pytest.raises(ScoreParseError, match=problem):
        parse_score(text)


@pytest.mark.slow
def test_long_answers_and_reasons_are_bounded():
    reason = "x" * 50_000
    parsed = parse_score(json.dumps({"score": 3, "reason": reason}))
    assert parsed.score == 3 and len(parsed.reason) == 4000
    with pytest.raises(ScoreParseError):
        parse_score("{" * 300_000)


def test_bounded_keeps_head_and_tail():
    text = "".join(f"line {i}\n" for i in range(5000))
    out = bounded(text, 1000)
    assert len(out) <= 1000 + 60 and out.startswith("line 0\n") and out.rstrip().endswith("line 4999")
    assert "characters omitted" in out
    assert bounded("short", 1000) == "short"


def test_compact_slides_keep_text_formatting_and_boxes_in_points():
    summary = {
        "slide_size": {"cx": 9144000, "cy": 6858000},
        "slides": [
            {"number": 1, "title": "A", "layout": "Title Only", "shapes": []},
            {
                "number": 2,
                "title": "B",
                "layout": "Title Only",
                "background": {"type": "solid", "color": {"rgb": "FF0000"}},
                "shapes": [
                    {
                        "name": "Box",
                        "kind": "autoshape",
                        "x": 914400,
                        "y": 0,
                        "cx": 1270000,
                        "cy": 12700,
                        "fill": {"type": "solid", "color": {"rgb": "00FF00", "theme": "accent1"}},
                        "paragraphs": [
                            {
                                "text": "Hello",
                                "runs": [
                                    {"text": "Hello", "bold": True, "size": 18.0, "color": {"rgb": "000000"}}
                                ],
                            }
                        ],
                    }
                ],
            },
        ],
    }
    [slide] = compact_slides(summary, [2, 9])
    assert slide["slide"] == 2 and slide["background"] == {"type": "solid", "color": "FF0000"}
    [shape] = slide["shapes"]
    assert (shape["x_pt"], shape["cx_pt"], shape["cy_pt"]) == (72.0, 100.0, 1.0)
    assert shape["fill"] == {"type": "solid", "color": "00FF00"}
    assert shape["paragraphs"][0]["runs"] == [
        {"text": "Hello", "size": 18.0, "bold": True, "color": "000000"}
    ]
    block = summary_block("TARGET", summary, [2], 10_000)
    assert block.startswith("### TARGET deck: 2 slides, 720.0x540.0 pt; showing slides [2]")


@pytest.mark.parametrize("text", ["[" * 100_000, "```json\n" + "[" * 100_000 + "\n```", '{"a":' * 100_000])
def test_absurdly_nested_json_is_a_parse_error(text):
    """Deep nesting makes json raise RecursionError; it must surface as an unreadable answer."""
    with pytest.raises(ScoreParseError):
        parse_score(text)
