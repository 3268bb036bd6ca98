"""Hardening of stream input (issue 9, items 1-3): raw SSE end markers, deep nesting, and
completeness that agrees with ``json.loads`` on what is JSON whitespace.

Recorded streams come from ``tests/golden`` (provenance in its README); the deep values are
built here, since no provider sends them (they are what a broken or hostile server could).
"""

from __future__ import annotations

import json
import sys

import pytest
from conftest import golden_streams, outcome, read_stream, stream_id

import engine
from engine.model.fragments import copy_json, ingest, materialize
from engine.model.jsonscan import (
    INVALID,
    MAX_DEPTH,
    ArgsStream,
    TooDeepError,
    dumps_any_depth,
    nests_deeper,
)

DEEP = 100_000

OPENAI_GOLDENS = golden_streams(["openai_chat"])
ANTHROPIC_GOLDENS = [
    p for p in golden_streams(["anthropic_messages"]) if p.stem.startswith(("llm_", "vercel_"))
]


def _feed(chunks, fmt: str | None = None) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format(fmt)] if fmt else None)
    for chunk in chunks:
        buf.add(chunk)
    return buf


def _observed(buf: engine.LLMStreamBuffer) -> dict:
    """What a user sees of a buffer, as plain data (a snapshot to compare before and after)."""
    return {
        "message": buf.as_dict(),
        "text": buf.get_content(),
        "calls": list(buf.calls()),
        "finished": buf.is_finished(),
    }


def _sse_lines(events: list[dict], named: bool) -> list[str]:
    """A recorded stream as the SSE lines a client without an SDK reads."""
    lines: list[str] = []
    for event in events:
        if named:
            lines.append(f"event: {event['type']}")
        lines.append("data: " + json.dumps(event))
        lines.append("")
    return lines


# -- 1. raw SSE [DONE] -------------------------------------------------------------------------

DONE_FORMS = ["data: [DONE]", b"data: [DONE]", "data:[DONE]", "[DONE]", b"[DONE]", "data: [DONE]\n"]


@pytest.mark.parametrize("path", OPENAI_GOLDENS, ids=stream_id)
def test_openai_chat_as_raw_sse_lines_equals_dict_fed(path):
    events = read_stream(path)
    by_dict = _feed(events)
    by_dict.close()
    for as_bytes in (False, True):
        lines = [*_sse_lines(events, named=False), "data: [DONE]", ""]
        raw = _feed([line.encode() if as_bytes else line for line in lines])
        assert raw.is_finished(), "data: [DONE] is openai_chat's DONE"
        raw.close()
        assert outcome(raw) == {**outcome(by_dict), "finished": True}


@pytest.mark.parametrize("done", DONE_FORMS, ids=repr)
def test_every_form_of_done_ends_an_openai_chat_stream(done):
    events = read_stream(OPENAI_GOLDENS[0].parent / "oai_py_text.jsonl")
    cut = [e for e in events if not e["choices"] or e["choices"][0].get("finish_reason") is None]
    buf = _feed(cut)
    assert not buf.is_finished()
    before = _observed(buf)
    buf.add(done)
    assert buf.is_finished()
    assert {**_observed(buf), "finished": False} == before


@pytest.mark.parametrize("path", ANTHROPIC_GOLDENS, ids=stream_id)
def test_anthropic_as_named_sse_then_done_equals_dict_fed(path):
    """Proxies and the AI SDK end every SSE stream with ``data: [DONE]``, whatever the wire."""
    events = read_stream(path)
    by_dict = _feed(events)
    by_dict.close()
    raw = _feed([*_sse_lines(events, named=True), "data: [DONE]", b"[DONE]"])
    raw.close()
    assert raw.format == "anthropic_messages"
    assert outcome(raw) == outcome(by_dict)


@pytest.mark.parametrize("done", DONE_FORMS, ids=repr)
def test_done_on_another_wire_ends_its_stream(done):
    events = [e for e in read_stream(ANTHROPIC_GOLDENS[0]) if e["type"] != "message_stop"]
    buf = _feed(events, "anthropic_messages")  # only this wire: [DONE] is still an end
    assert not buf.is_finished()
    before = _observed(buf)
    buf.add(done)
    assert buf.is_finished()
    assert {**_observed(buf), "finished": False} == before


@pytest.mark.parametrize("done", DONE_FORMS, ids=repr)
def test_done_before_any_wire_is_remembered(done):
    events = read_stream(OPENAI_GOLDENS[0].parent / "oai_py_text.jsonl")
    buf = engine.LLMStreamBuffer()
    buf.add(done)
    assert buf.format is None and buf.is_finished()
    cut = [e for e in events if not e["choices"] or e["choices"][0].get("finish_reason") is None]
    for event in cut:
        buf.add(event)
    assert buf.format == "openai_chat" and buf.is_finished()


@pytest.mark.parametrize("text", ["data: [END]", "[END]", b"hello", "data: DONE!"])
def test_an_unknown_marker_is_a_chunk_error_that_changes_nothing(text):
    buf = _feed(read_stream(OPENAI_GOLDENS[0].parent / "oai_py_text.jsonl")[:3])
    before = _observed(buf)
    with pytest.raises(engine.ChunkError) as err:
        buf.add(text)
    assert err.value.index == 3
    assert "not an end marker" in err.value.reason
    assert _observed(buf) == before


# -- 2. deep nesting: chunks ---------------------------------------------------------------------


def _deep_text(depth: int, obj: bool) -> str:
    if obj:
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "]" * depth


def _deep_value(depth: int, obj: bool):
    root = cur = {} if obj else []
    for _ in range(depth - 1):
        nxt = {} if obj else []
        if obj:
            cur["a"] = nxt
        else:
            cur.append(nxt)
        cur = nxt
    return root


def _depth(value) -> int:
    depth = 0
    while nests_deeper(value, depth):
        depth = depth * 2 or 1
    low, high = depth // 2, depth
    while low < high:
        mid = (low + high) // 2
        low, high = (mid + 1, high) if nests_deeper(value, mid) else (low, mid)
    return low


def test_a_value_too_deep_for_the_encoder_is_written_as_json_dumps_writes_it():
    """Past the encoder's recursion, keys that are not strings are still written as JSON
    writes them: ``true``, ``false``, ``null``, ``NaN``, not Python's ``True``..."""
    inner = {True: 1, False: 2, None: 3, 1.5: 4, 7: 5, float("nan"): 6, "s": [1, "é"]}
    depth = sys.getrecursionlimit() + 10
    deep: list = [inner]
    for _ in range(depth):
        deep = [deep]
    with pytest.raises(RecursionError):
        json.dumps(deep)
    expected = "[" * (depth + 1) + json.dumps(inner, ensure_ascii=False) + "]" * (depth + 1)
    assert dumps_any_depth(deep) == expected


def _text_chunk_forms(body: str) -> list:
    return [body, body.encode(), "data: " + body, b"data: " + body.encode()]


@pytest.mark.parametrize("obj", [False, True], ids=["arrays", "objects"])
def test_a_chunk_nested_100000_deep_is_a_chunk_error_and_changes_nothing(obj):
    events = read_stream(OPENAI_GOLDENS[0].parent / "oai_py_parallel_tools_a.jsonl")
    buf = _feed(events[:5])
    before = _observed(buf)
    inner = _deep_text(DEEP, obj)
    bodies = [inner, '{"object": "chat.completion.chunk", "choices": [' + inner + "]}"]
    for body in bodies:
        for form in _text_chunk_forms(body):
            with pytest.raises(engine.ChunkError) as err:
                buf.add(form)
            assert f"chunk {err.value.index}:" in str(err.value)
            assert "nested deeper" in err.value.reason
            assert _observed(buf) == before
    for event in events[5:]:  # the stream goes on as if the bad chunks were never sent
        buf.add(event)
    buf.close()
    assert outcome(buf) == outcome(_close(_feed(events)))


def _close(buf: engine.LLMStreamBuffer) -> engine.LLMStreamBuffer:
    buf.close()
    return buf


@pytest.mark.parametrize("obj", [False, True], ids=["arrays", "objects"])
def test_a_dict_chunk_nested_100000_deep_is_a_chunk_error_that_changes_nothing(obj):
    """A dict needs no parser, but JSON text that deep decodes to nothing (the decoder stops
    at the stack's limit), and a message holding it could never be sent back: the chunk is
    refused as that text would be, found where the value is copied in (no check before every
    chunk, which would cost every stream), and the stream goes on."""
    events = read_stream(OPENAI_GOLDENS[0].parent / "oai_py_text.jsonl")
    buf = _feed(events[:3])
    before = (buf.as_dict(), buf.get_content(), buf.skipped())
    deep = _deep_value(DEEP, obj)
    chunk = {**events[3], "choices": [{**events[3]["choices"][0]}]}
    chunk["choices"][0]["delta"] = {**chunk["choices"][0]["delta"], "x_deep": deep}
    with pytest.raises(engine.ChunkError, match="nested deeper than") as raised:
        buf.add(chunk)
    assert raised.value.index == 3 and len(str(raised.value)) < 300
    assert (buf.as_dict(), buf.get_content(), buf.skipped()) == before
    for event in events[3:]:
        buf.add(event)
    buf.close()
    assert buf.as_dict() == _close(_feed(events)).as_dict()


# -- 2. deep nesting: arguments ------------------------------------------------------------------


class _Echo(engine.BaseDriver):
    def __init__(self, names):
        super().__init__()
        self.names = names
        self.ran: list = []

    def list_tools(self):
        return [
            engine.Tool(name=n, description="echo", parameters={"type": "object"})
            for n in self.names
        ]

    def execute_tool(self, tool_name, arguments):
        self.ran.append((tool_name, arguments))
        return {"ok": True}


def _openai_call_chunks(name: str, fragments) -> list[dict]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta, finish=None):
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    tc = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    out = [chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [tc]})]
    for piece in fragments:
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls"))
    return out


def _anthropic_call_events(name: str, fragments) -> list[dict]:
    # The shapes of https://docs.anthropic.com/en/docs/build-with-claude/streaming
    msg = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "m",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    out = [
        {"type": "message_start", "message": msg},
        {"type": "content_block_start", "index": 0, "content_block": block},
    ]
    for piece in fragments:
        delta = {"type": "input_json_delta", "partial_json": piece}
        out.append({"type": "content_block_delta", "index": 0, "delta": delta})
    out += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return out


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _only_args(buf: engine.LLMStreamBuffer) -> ArgsStream:
    (track,) = buf._asm.tracks  # the agreed ``reason`` slot is read off the call's stream
    return track.args


def _assert_never_a_call_and_nothing_raises(buf, driver) -> None:
    assert buf.calls() == []
    buf.as_dict()
    buf.forming()
    response = driver.process_llm_response(buf)
    assert not response.call_executed and driver.ran == []
    buf.close()
    driver.process_llm_response(buf)
    assert buf.calls() == [] and driver.ran == []
    buf.as_dict()
    assert _only_args(buf).state == INVALID and _only_args(buf).reason == "too deep"


@pytest.mark.parametrize("obj", [False, True], ids=["arrays", "objects"])
@pytest.mark.parametrize("wire", ["openai_chat", "anthropic_messages"])
def test_arguments_nested_100000_deep_stream_as_never_a_call(wire, obj):
    args = '{"q": ' + _deep_text(DEEP, obj) + "}"
    build = _openai_call_chunks if wire == "openai_chat" else _anthropic_call_events
    driver = _Echo(["deep"])
    buf = driver.new_stream_buffer()
    for chunk in build("deep", _pieces(args, 997)):
        buf.add(chunk)
        driver.process_llm_response(buf)
        buf.forming()
        buf.calls()
    _assert_never_a_call_and_nothing_raises(buf, driver)
    shown = buf.as_dict()
    raw = shown["tool_calls"][0]["function"]["arguments"] if wire == "openai_chat" else None
    if raw is not None:
        assert raw == args  # the message keeps the text as sent


@pytest.mark.parametrize("obj", [False, True], ids=["arrays", "objects"])
def test_whole_arguments_nested_100000_deep_are_a_chunk_error(obj):
    """OpenAI-compatible servers that send ``arguments`` as an object (recorded:
    ``hand_compat_args_object``) and Anthropic's start event ``input``, nested deeper than
    JSON text decodes to: the chunk is refused (what it carried never entered the message),
    and nothing runs. (Arguments deeper than MAX_DEPTH but decodable are "too deep" calls:
    test_the_depth_bound_is_exact.)"""
    deep = {"q": _deep_value(DEEP, obj)}
    compat = _openai_call_chunks("deep", [])
    compat[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = deep
    events = _anthropic_call_events("deep", [])
    events[1]["content_block"]["input"] = deep
    for chunks in (compat, events):
        driver = _Echo(["deep"])
        buf = driver.new_stream_buffer()
        for index, chunk in enumerate(chunks):
            if index == 1:
                with pytest.raises(engine.ChunkError, match="nested deeper than"):
                    buf.add(chunk)
            else:
                buf.add(chunk)
            driver.process_llm_response(buf)
        buf.close()
        driver.process_llm_response(buf)
        assert buf.calls() == [] and driver.ran == []
        json.dumps(buf.as_dict())  # what the message holds can be sent back


@pytest.mark.parametrize("depth, is_call", [(MAX_DEPTH, True), (MAX_DEPTH + 1, False)])
def test_the_depth_bound_is_exact(depth, is_call):
    args = '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)
    buf = _feed(_openai_call_chunks("f", _pieces(args, 7)))
    assert bool(buf.calls()) is is_call
    if is_call:
        assert buf.calls()[0].arguments == json.loads(args)
    else:
        assert _only_args(buf).reason == "too deep"


def test_materialize_and_copy_take_any_depth_and_ingest_refuses_it():
    deep = _deep_value(DEEP, True)
    assert _depth(copy_json(deep)) == DEEP
    assert _depth(materialize({"m": [deep]})) == DEEP + 2
    assert sys.getrecursionlimit() < DEEP  # so the copies above did not recurse per level
    with pytest.raises(TooDeepError):
        ingest(deep)  # what enters the message from a chunk: refused, never a RecursionError


# -- 3. JSON whitespace is space, tab, LF and CR -------------------------------------------------

NOT_JSON_SPACE = ["\x1f", "\x1c", "\x0b", "\x0c", "\x85", "\xa0", "\u2028", "\u2029", "\u3000"]


@pytest.mark.parametrize("space", NOT_JSON_SPACE, ids=repr)
@pytest.mark.parametrize("body", ["{}", '{"a": [1, {"b": "}"}]}'])
def test_only_json_whitespace_may_follow_or_precede_the_arguments(space, body):
    """Before the arguments, a character that is not JSON whitespace makes them not JSON;
    after them, it is text after the call's first JSON value (issue 16, one fate per call):
    the call runs with that value, and the text is listed in skipped(), never taken."""
    for text in (space + body,):
        for size in (1, 2, 7, len(text)):
            buf = _feed(_openai_call_chunks("f", _pieces(text, size)))
            with pytest.raises(ValueError):
                json.loads(text)
            assert buf.calls() == [], (text, size)
            assert _only_args(buf).reason == "invalid"
    for text in (body + space, body + space + "\r", body + " " + space):
        for size in (1, 2, 7, len(text)):
            buf = _feed(_openai_call_chunks("f", _pieces(text, size)))
            with pytest.raises(ValueError):
                json.loads(text)
            assert [c.arguments for c in buf.calls()] == [json.loads(body)], (text, size)
            assert buf.as_dict()["tool_calls"][0]["function"]["arguments"].strip() == body
            assert any(space in s.reason or repr(space)[1:-1] in s.reason for s in buf.skipped())


@pytest.mark.parametrize("space", [" ", "\t", "\n", "\r", " \r\n\t "], ids=repr)
def test_json_whitespace_around_the_arguments_is_still_a_call(space):
    text = space + '{"a": 1}' + space
    for size in (1, 3, len(text)):
        buf = _feed(_openai_call_chunks("f", _pieces(text, size)))
        assert [c.arguments for c in buf.calls()] == [{"a": 1}]
        assert _only_args(buf).reason is None


def test_reason_is_cleared_when_the_arguments_are_restated():
    stream = ArgsStream("string")
    stream.feed("[1]")
    assert stream.state == INVALID and stream.reason == "invalid"
    stream.replace('{"a": 1}')
    assert stream.reason is None and stream.value == {"a": 1}
