"""Messages: images dropped from older turns without losing the rest of a part."""

from __future__ import annotations

from pptarena.models import ImagePart, Message, ToolCall, ToolResult

PNG = ImagePart(b"\x89PNG\r\n\x1a\nfake", "image/png")


def test_without_images_keeps_text_calls_and_results_and_the_prefix_mark():
    result = ToolResult("c1", ("rendered 2 slides", PNG, PNG), is_error=False, native={"k": 1})
    m = Message("user", ("look:", PNG, result), cache_prefix=True)
    assert m.has_images()
    out = m.without_images("(gone)")
    assert not out.has_images()
    assert out.role == "user" and out.cache_prefix is True
    text, note, kept = out.parts()
    assert (text, note) == ("look:", "(gone)")
    assert kept.call_id == "c1" and kept.native == {"k": 1} and not kept.is_error
    assert kept.content == ("rendered 2 slides", "(gone)", "(gone)")


def test_a_message_without_images_is_unchanged_in_content():
    call = ToolCall("c2", "deck_summary", {})
    m = Message.assistant("let me see", call)
    assert not m.has_images()
    assert m.without_images("(gone)").parts() == m.parts()
    assert not Message.user("plain").has_images()


def test_prune_images_keeps_the_last_turns_with_images_and_notes_the_rest():
    from pptarena.models.messages import prune_images

    turns = [
        Message.system("s"),
        Message.user("first", PNG),
        Message.assistant("ok"),
        Message.user("no image"),
        Message.user(ToolResult("c", ("two", PNG))),
        Message.user("third", PNG),
    ]
    out = prune_images(turns, 2, "(older)")
    assert [m.has_images() for m in out] == [False, False, False, False, True, True]
    assert out[1].parts() == ("first", "(older)")
    assert out[3] is turns[3] and out[5] is turns[5]
    assert not any(m.has_images() for m in prune_images(turns, 0, "(older)"))
    assert prune_images(turns, 10, "(older)") == turns
