"""What ``buf.add`` takes, and that nothing but the engine's errors leaves it (issue 16, point
12, and ``add()`` after ``close()`` from point 3).

- a whole SSE event block in one string (``"event: X\\ndata: {...}\\n\\n"``, several ``data:``
  lines, CRLF) is read as its event, on every recorded stream of every wire; two events in
  one string are a ``ChunkError`` pointing to ``engine.sse_chunks``;
- an SDK object whose ``model_dump()`` / ``to_dict()`` raises is a ``ChunkError`` naming its
  position, and changes nothing;
- a value nested 100,000 deep where the engine reads a name, a slot or a recognised field
  never raises a ``RecursionError``, and no error message renders it whole;
- a buffer holding only the ``mcs_text`` strategy takes plain text chunks;
- ``add()`` after ``close()`` is a ``ChunkError`` that changes nothing; ``reset()`` reopens.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import first_plain_stream, golden_streams, outcome, read_stream, replay, stream_id

import engine

STREAMS = golden_streams()
WIRES = [n for n in engine.list_formats() if engine.load_format(n).is_wire]


def _first_of_each_wire() -> list:
    return [first_plain_stream(name) for name in WIRES]


def _as_block(event: dict, variant: int) -> str:
    """One decoded golden event as the SSE block a server sends: its ``event:`` line where the
    name travels outside the payload, then its data; ``variant`` picks LF, CRLF, or the JSON
    spread over several ``data:`` lines (joined with LF by the SSE rules, JSON whitespace)."""
    name = event.get("_event") if "type" not in event else None
    payload = {k: v for k, v in event.items() if k != "_event"} if name else event
    head = [f"event: {name}"] if name else []
    if variant == 2:
        data = [f"data: {line}" for line in json.dumps(payload, indent=1).splitlines()]
        return "\n".join(head + data) + "\n\n"
    end = "\r\n" if variant == 1 else "\n"
    return end.join([*head, f"data: {json.dumps(payload, ensure_ascii=False)}"]) + end + end


def _skipped(buf: engine.LLMStreamBuffer) -> list:
    return [s.to_dict() for s in buf.skipped()]


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_a_whole_sse_event_block_in_one_string_is_read_as_its_event(path):
    events = read_stream(path)
    expected = replay(copy.deepcopy(events))
    for variant in (0, 1, 2):
        buf = engine.LLMStreamBuffer()
        for event in events:
            buf.add(_as_block(event, variant))
        buf.close()
        assert outcome(buf) == outcome(expected), variant
        assert _skipped(buf) == _skipped(expected)


def test_a_block_names_its_event_as_a_separate_event_line_does():
    """Groq's ``event: error`` block: the payload has no ``type``, so the name travels as
    ``_event``, as it does when the ``event:`` line comes as its own chunk."""
    first = read_stream(golden_streams(["openai_chat"])[0])[0]
    error = '{"error":{"message":"Service Unavailable","type":"internal_server_error"}}'
    as_lines = engine.LLMStreamBuffer()
    for chunk in (first, "event: error", f"data: {error}"):
        as_lines.add(chunk)
    as_block = engine.LLMStreamBuffer()
    for chunk in (first, f"event: error\r\ndata: {error}\r\n\r\n"):
        as_block.add(chunk)
    assert as_block.error == as_lines.error == json.loads(error)["error"]
    assert as_block.is_finished()
    assert outcome(as_block) == outcome(as_lines)


def test_a_block_of_the_end_marker_ends_the_stream():
    buf = engine.LLMStreamBuffer()
    buf.add(read_stream(golden_streams(["openai_chat"])[0])[0])
    buf.add("data: [DONE]\n\n")
    assert buf.is_finished()


def test_a_block_without_data_names_the_next_data_line():
    """Bedrock frames name their events outside the payload: a block holding a comment and
    the ``event:`` line, then the ``data:`` line alone, is the named event."""
    path = golden_streams(["bedrock_converse"])
    events = read_stream(next(p for p in path if p.name == "hand_parallel_tool_use_frames.jsonl"))
    buf = engine.LLMStreamBuffer()
    for event in events:
        name = event["_event"]
        payload = {k: v for k, v in event.items() if k != "_event"}
        buf.add(f": keep-alive\r\nevent: {name}\r\n")
        buf.add(f"data: {json.dumps(payload)}")
    buf.close()
    assert outcome(buf) == outcome(replay(events))


def test_json_text_over_several_lines_stays_json_text():
    first = read_stream(golden_streams(["openai_chat"])[0])[0]
    buf = engine.LLMStreamBuffer()
    buf.add(json.dumps(first, indent=2))
    buf.add("data: " + json.dumps(first, indent=2))  # one data: field, the JSON spread after
    assert buf.format == "openai_chat"
    assert not buf.skipped()


@pytest.mark.parametrize("path", _first_of_each_wire(), ids=stream_id)
def test_two_events_in_one_string_are_a_chunk_error_that_names_sse_chunks(path):
    events = read_stream(path)
    buf = engine.LLMStreamBuffer(events=True)
    buf.add(events[0])
    buf.events()
    before = (outcome(buf), _skipped(buf))
    with pytest.raises(engine.ChunkError) as raised:
        buf.add(_as_block(events[1], 0) + _as_block(events[2], 1))
    assert raised.value.index == 1
    assert "2 SSE events" in str(raised.value) and "engine.sse_chunks" in str(raised.value)
    assert (outcome(buf), _skipped(buf)) == before
    assert buf.events() == []


class _DumpRaises:
    """An SDK object whose own ``model_dump()`` raises (a pydantic model in a broken state)."""

    def model_dump(self, **kwargs: Any) -> dict:
        raise RuntimeError("the SDK's own bug")


class _ToDictRaises:
    def to_dict(self) -> dict:
        raise KeyError("missing")


@pytest.mark.parametrize("path", _first_of_each_wire(), ids=stream_id)
@pytest.mark.parametrize("obj", [_DumpRaises(), _ToDictRaises()], ids=["model_dump", "to_dict"])
def test_an_sdk_object_whose_dump_raises_is_a_chunk_error_naming_its_position(path, obj):
    events = read_stream(path)
    buf = engine.LLMStreamBuffer(events=True)
    for event in events[:2]:
        buf.add(event)
    buf.events()
    before = (outcome(buf), _skipped(buf))
    with pytest.raises(engine.ChunkError) as raised:
        buf.add(obj)
    assert raised.value.index == 2
    method = "model_dump()" if isinstance(obj, _DumpRaises) else "to_dict()"
    assert method in str(raised.value) and type(obj).__name__ in str(raised.value)
    assert (outcome(buf), _skipped(buf)) == before
    assert buf.events() == []
    for event in events[2:]:  # still usable: the stream goes on as recorded
        buf.add(event)
    buf.close()
    assert outcome(buf) == outcome(replay(events))


def _deep(depth: int) -> dict:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP = _deep(100_000)

# Where each wire reads a name or a SLOT: a value 100,000 deep there (no key can hold it).
DEEP_AT = {
    "openai_chat": lambda: {
        "id": "c", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"tool_calls": [{"index": DEEP}]}}],
    },
    "openai_responses": lambda: {
        "type": "response.output_text.delta", "output_index": DEEP, "content_index": 0,
        "delta": "x",
    },
    "anthropic_messages": lambda: {"type": "content_block_delta", "index": DEEP,
                                   "delta": {"type": "text_delta", "text": "x"}},
    "bedrock_converse": lambda: {"contentBlockDelta": {"contentBlockIndex": DEEP,
                                                       "delta": {"text": "x"}}},
    "gemini": lambda: {"candidates": [{"index": 0, "content": {"parts": [{"text": DEEP}]}}]},
    "cohere_v2": lambda: {"type": "content-delta", "index": DEEP,
                          "delta": {"message": {"content": {"text": "x"}}}},
    "ollama": lambda: {"model": "m", "created_at": "t",
                       "message": {"role": "assistant", "content": DEEP}},
}


@pytest.mark.parametrize("name", WIRES)
def test_a_value_nested_100000_deep_never_escapes_add_and_is_never_rendered_whole(name):
    events = read_stream(first_plain_stream(name))
    buf = engine.LLMStreamBuffer(events=True)
    buf.add(events[0])
    before = (outcome(buf), _skipped(buf))
    try:
        buf.add(DEEP_AT[name]())
    except engine.ChunkError as exc:
        assert exc.index == 1
        # Said of the value itself (shown cut, never rendered whole), not of a repr that ran
        # out of stack on the way.
        assert "RecursionError" not in str(exc)
        assert "{'a': {'a': {'a':" in str(exc) or "nested deeper than" in str(exc)
        assert len(str(exc)) < 1000
        assert (outcome(buf), _skipped(buf)) == before
    buf.events()
    for reason in (s.reason for s in buf.skipped()):
        assert len(reason) < 1000
    assert all(len(key) < 1000 for key in buf.unknown_events)


@pytest.mark.parametrize("field", ["type", "_event", "object", "candidates"])
def test_a_name_nested_100000_deep_before_the_wire_is_known_never_escapes(field):
    """The recognisers read these fields of a first chunk: a prefix test once rendered the
    whole value as text to compare a few characters (a RecursionError out of ``add``)."""
    buf = engine.LLMStreamBuffer()
    buf.add({field: DEEP})
    with pytest.raises(engine.UnknownFormatError):
        buf.close()


@pytest.mark.parametrize("name", ["anthropic_messages", "openai_responses", "cohere_v2"])
def test_an_event_name_nested_100000_deep_is_counted_under_a_short_name(name):
    events = read_stream(first_plain_stream(name))
    buf = engine.LLMStreamBuffer()
    buf.add(events[0])
    buf.add({"type": DEEP})
    assert sum(buf.unknown_events.values()) == 1
    assert all(len(key) < 100 for key in buf.unknown_events)


def test_a_text_codec_buffer_takes_plain_text_chunks():
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("mcs_text")], events=True)
    for chunk in ["Hello ", b"wor", "ld", "  \n", '{"not": "json']:
        buf.add(chunk)
    text = 'Hello world  \n{"not": "json'
    assert buf.format == "mcs_text"
    assert buf.get_content() == text and buf.text() == text
    assert "".join(e.text for e in buf.events() if isinstance(e, engine.TextDelta)) == text
    buf.close()
    assert buf.as_dict() == {"content": text}
    assert engine.load_format("mcs_text").content_text(buf.as_dict()) == text


def test_a_text_codec_buffer_finds_the_calls_written_into_the_text():
    """Its message is a whole text message: the codec's ``extract`` finds the call there, and
    a driver's buffer on the codec alone runs it."""
    call = '{"tool": "get_weather", "arguments": {"city": "Paris"}}'
    codec = engine.load_format("mcs_text")
    buf = engine.LLMStreamBuffer(strategies=[codec])
    for piece in (call[:10], call[10:30], call[30:]):
        buf.add(piece)
    buf.close()
    (found,) = codec.extract(buf.as_dict())
    assert (found.name, found.arguments) == ("get_weather", {"city": "Paris"})


def _closed_at_end(path) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer(events=True)
    for event in read_stream(path):
        buf.add(event)
    buf.close()
    return buf


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_add_after_close_is_a_chunk_error_that_changes_nothing(path):
    events = read_stream(path)
    buf = _closed_at_end(path)
    buf.events(), buf.new_calls(), buf.text()  # the cursors, taken to the end
    before = (outcome(buf), _skipped(buf), buf.calls(), buf.incomplete_calls())
    for late in (events[-1], events[0], "data: [DONE]", _as_block(events[0], 0)):
        with pytest.raises(engine.ChunkError) as raised:
            buf.add(late)
        assert raised.value.index == len(events)  # the position the chunk would have had
        assert "closed" in str(raised.value) and "reset()" in str(raised.value)
    after = (outcome(buf), _skipped(buf), buf.calls(), buf.incomplete_calls())
    assert after == before
    assert buf.new_calls() == [] and buf.events() == [] and buf.text() == ""


@pytest.mark.parametrize("path", _first_of_each_wire(), ids=stream_id)
def test_reset_reopens_a_closed_buffer(path):
    events = read_stream(path)
    buf = _closed_at_end(path)
    buf.reset()
    for event in events:
        buf.add(event)
    buf.close()
    assert outcome(buf) == outcome(replay(events))


def test_add_after_close_on_a_text_codec_buffer_is_a_chunk_error():
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("mcs_text")])
    buf.add("Hello")
    buf.close()
    with pytest.raises(engine.ChunkError, match="closed"):
        buf.add(" again")
    assert buf.get_content() == "Hello"


class _Weather(engine.BaseDriver):
    def list_tools(self) -> list[engine.Tool]:
        schema = {"type": "object", "properties": {"city": {"type": "string"}}}
        return [engine.Tool(name="get_weather", parameters=schema)]

    def execute_tool(self, tool_name: str, arguments: dict) -> dict:
        return {"temperature": 20}


def test_a_driver_on_a_text_codec_buffer_runs_the_call_that_ends_the_turn_and_answers_it():
    """The history of a plain text turn is the text codec's: the assistant's text, then the
    results (a message ``{content: text}`` is no wire's request shape)."""
    driver = _Weather()
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("mcs_text")], events=True)
    text = 'Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    shown, messages, ran = "", [], []
    for piece in (text[:6], text[6:30], text[30:]):
        buf.add(piece)
        response = driver.process_llm_response(buf)
        shown += buf.text()
        messages += response.messages or []
        ran += response.executed_calls or []
    buf.close()
    response = driver.process_llm_response(buf)
    shown += buf.text()
    messages += response.messages or []
    ran += response.executed_calls or []
    assert shown == "Sure. "
    assert [(r.name, r.arguments) for r in ran] == [("get_weather", {"city": "Paris"})]
    expected = engine.load_format("mcs_text").result_messages(text, ran)
    assert messages == expected and messages[0] == {"role": "assistant", "content": text}
    kinds = [type(e).__name__ for e in buf.events()]
    assert kinds == ["TextDelta", "CallStarted", "ArgumentsDelta", "CallReady", "Finished"]


def test_a_driver_on_a_text_codec_buffer_keeps_a_text_only_turn_in_the_history():
    driver = _Weather()
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("mcs_text")])
    messages: list = []
    for piece in ("Hello ", "there"):
        buf.add(piece)
        messages += driver.process_llm_response(buf).messages or []
    buf.close()
    messages += driver.process_llm_response(buf).messages or []
    assert messages == [{"role": "assistant", "content": "Hello there"}]


@pytest.mark.parametrize(
    "text",
    [
        'data: {"a":,}',
        'data: {"a": 1\ndata: ,,}',
        'event: x\r\ndata: {"a" 1}\r\n\r\n',
        'data: {"a": [1,]}\r\n',
    ],
)
def test_sse_text_in_a_chunk_is_read_by_the_body_s_decoder(text):
    """One SSE decoder (issue 17): an SSE line or block handed to ``add`` says of its JSON
    what ``engine.sse_chunks`` says of the same lines in a body (the column, in the same
    words), without the body's line number, which a chunk has none of."""
    with pytest.raises(engine.TransportError) as in_body:
        list(engine.sse_chunks([text.strip() + "\n\n"]))
    buf = engine.LLMStreamBuffer()
    with pytest.raises(engine.ChunkError) as in_chunk:
        buf.add(text)
    assert in_chunk.value.reason == in_body.value.reason
