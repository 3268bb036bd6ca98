"""A whole message's arguments read as its stream reads them (issue 16, one fate per call).

On a string wire, a JSON text counts once its first JSON value is an object, whether or not
white space comes first: the stream takes ``{"a": 1}`` from ``{"a": 1} x``, and so must
``extract`` on the message that stream assembled.
"""

from __future__ import annotations

import pytest

import engine
from engine.compile.strategy import parse_arguments


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.mark.parametrize("arguments", ['{"a": 1} x', ' {"a": 1} x', '{"a": 1}{"b": 2}'])
def test_a_whole_message_takes_the_first_value_as_its_stream_does(arguments):
    fmt = engine.load_format("openai_chat")
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f"}}
    buf.add(_chunk({"role": "assistant", "tool_calls": [call]}))
    buf.add(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}))
    buf.add(_chunk({}, "tool_calls"))
    buf.close()
    streamed = [(c.name, c.arguments) for c in buf.calls()]
    assert streamed == [("f", {"a": 1})]
    message = buf.as_dict()
    assert [(c.name, c.arguments) for c in fmt.extract(message)] == streamed
    assert fmt.incomplete_calls(message) == []
    assert parse_arguments(arguments) == {"a": 1}


def test_an_object_wire_still_refuses_a_string_and_text_that_never_parses():
    assert parse_arguments('{"a": 1} x', "object") is None
    assert parse_arguments("[1]") is None and parse_arguments("nope") is None
    assert parse_arguments("") == {} and parse_arguments("", "object") is None


def test_typed_text_parts_without_a_where_read_from_the_message_as_the_stream_shows_them():
    """``text.parts`` with a ``field`` and no ``where``: every part's text is display text,
    in the stream (the fold) and read off the whole message alike; a part that is not an
    object is no text (and no error)."""
    data = engine.load_format("openai_chat").descriptor
    text = {**data["text"], "parts": {"field": "text"}}
    strategy = engine.ExtractionStrategy({**data, "text": text})
    buf = engine.LLMStreamBuffer([strategy])
    for content in ([{"type": "text", "text": "Hi "}], [{"type": "note", "text": "there"}]):
        delta = {"index": 0, "delta": {"content": content}}
        buf.add({"object": "chat.completion.chunk", "choices": [delta]})
    assert buf.text() == "Hi there"
    message = buf.as_dict()
    assert strategy.content_text(message) == "Hi there"
    message["content"].append("stray")
    assert strategy.content_text(message) == "Hi there"
