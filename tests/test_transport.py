"""Streaming raw HTTP: an SSE or AWS event stream body, in pieces cut anywhere, to chunks.

Every golden stream (``tests/golden/<wire>/*.jsonl``, the toy wires' too: discovered, a new
fixture needs no code here) is encoded as the SSE body a server would send (``event:`` lines
where the recorded ``_event`` travels outside the payload, comments, ``id:``, a BOM, the line
ending LF, CRLF or CR) and cut at random byte or character offsets, cuts inside a CRLF and
inside a multi-byte UTF-8 character among them; fed through ``engine.sse_chunks`` it must give
exactly the outcome of feeding the recorded chunks. The Bedrock goldens go the same way as
the binary AWS event stream the fake provider sends (``engine.eventstream_chunks``). Then the
WHATWG rules one by one, the end of a body cut short, the errors and their places, and the
async twins. Bounded: a fixed-seed hypothesis profile with a few examples a stream
(``TRANSPORT_EXAMPLES=50`` explores more, still deterministic).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import struct
import zlib
from pathlib import Path

import pytest
from conftest import (
    compiled,
    format_of,
    golden_streams,
    outcome,
    read_stream,
    replay,
    stream_id,
    toy_streams,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.compile.serve import read_recording, typed_event
from engine.transport import eventstream
from engine.transport.captures import parse_bytes, parse_capture
from engine.transport.sse import SSEDecoder

STREAMS = golden_streams() + toy_streams()
BEDROCK = golden_streams(["bedrock_converse"])
LINE_ENDS = ("\n", "\r\n", "\r")

PROFILE = settings(
    max_examples=int(os.environ.get("TRANSPORT_EXAMPLES", "3")),
    deadline=None,  # a loaded 2-core runner; each example replays a stream twice at most
    derandomize=True,  # a fixed seed: the same examples on every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- encoding a golden as a body, and cutting it --------------------------------------------


def sse_body(path: Path, end: str, extras: bool) -> str:
    """The golden at ``path`` as an SSE body: the recorded ``_event`` as an ``event:`` line
    where the payload has no ``type`` (the decoder gives it back as ``_event``); with
    ``extras``, a BOM, comments and ``id:`` lines, which carry nothing."""
    out = ["\ufeff: a body of " + path.name, ""] if extras else []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if isinstance(obj, dict) and "_event" in obj and "type" not in obj:
            rest = {k: v for k, v in obj.items() if k != "_event"}
            out.append(f"event: {obj['_event']}")
            line = json.dumps(rest, ensure_ascii=False)
        if extras:
            out.append(f"id: {number}")
        out.append(f"data: {line}")
        if extras and number % 4 == 0:
            out.append(": keep-alive")
        out.append("")
    return end.join(out) + end


def eventstream_body(path: Path) -> bytes:
    """The golden at ``path`` as the binary body the fake provider sends for Bedrock."""
    out = b""
    for event in read_recording(path):
        name, payload = typed_event(event)
        encode = eventstream.exception_message if name.endswith("Exception") else None
        out += (encode or eventstream.event_message)(name, payload)
    return out


def awkward_cuts(body: bytes | str) -> list[int]:
    """Offsets that cut inside a CRLF, or inside a multi-byte UTF-8 character."""
    crlf = b"\r\n" if isinstance(body, bytes) else "\r\n"
    cuts = []
    at = body.find(crlf)
    while at != -1 and len(cuts) < 50:
        cuts.append(at + 1)
        at = body.find(crlf, at + 2)
    if isinstance(body, bytes):
        cuts += [i for i, byte in enumerate(body) if 0x80 <= byte < 0xC0][:50]
    return cuts


def cut(body, offsets: list[int]) -> list:
    """``body`` cut at ``offsets`` (sorted, deduplicated; empty pieces kept: a transport may
    hand one)."""
    bounds = [0, *sorted(set(offsets)), len(body)]
    return [body[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@st.composite
def pieces_of(draw, body):
    n = len(body)
    offsets = draw(st.lists(st.integers(0, n), max_size=40))
    awkward = awkward_cuts(body)
    if awkward:
        offsets += draw(st.lists(st.sampled_from(awkward), max_size=10))
    if draw(st.booleans()):  # long runs of tiny pieces too
        start = draw(st.integers(0, n))
        offsets += range(start, min(n, start + 200))
    return cut(body, offsets)


@functools.cache
def expected(path: Path) -> str:
    return json.dumps(outcome(replay(read_stream(path), format_of(path))), sort_keys=True)


@functools.cache
def expected_frames(path: Path) -> str:
    """The outcome of the chunks the whole-capture reader decodes from the golden's AWS body:
    a golden recorded as boto3 yields events (``{"messageStart": {...}}``) comes back with its
    type as ``_event``, which the wire takes too, but an error payload then carries it."""
    values = [event.value for event in parse_bytes(eventstream_body(path), "body")]
    got = json.dumps(outcome(replay(values, format_of(path))), sort_keys=True)
    if path.stem.endswith("_frames"):  # recorded as decoded frames: the very same chunks
        assert got == expected(path)
    return got


def outcome_of(chunks, path: Path) -> str:
    buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
    for _ in buf.consume(chunks):
        pass
    return json.dumps(outcome(buf), sort_keys=True)


# -- every golden, cut anywhere ----------------------------------------------------------------


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
@PROFILE
@given(data=st.data())
def test_a_golden_as_an_sse_body_cut_anywhere_gives_its_outcome(path, data):
    end = data.draw(st.sampled_from(LINE_ENDS), label="line end")
    text = sse_body(path, end, extras=data.draw(st.booleans(), label="extras"))
    body = text if data.draw(st.booleans(), label="as text") else text.encode("utf-8")
    pieces = data.draw(pieces_of(body), label="pieces")
    assert outcome_of(engine.sse_chunks(pieces), path) == expected(path)


@pytest.mark.parametrize("path", STREAMS[::10], ids=stream_id)
def test_the_chunks_are_what_the_capture_reader_hands_the_buffer(path):
    """One decoder: the live chunks equal the whole-file reader's values for the same bytes,
    and the recorded chunks themselves."""
    body = sse_body(path, "\r\n", extras=True).encode("utf-8")
    live = list(engine.sse_chunks(cut(body, list(range(0, len(body), 7)))))
    assert live == [event.value for event in parse_bytes(body, "body")]
    assert live == read_stream(path)


@pytest.mark.parametrize("path", BEDROCK, ids=stream_id)
@PROFILE
@given(data=st.data())
def test_a_bedrock_golden_as_an_aws_event_stream_cut_anywhere_gives_its_outcome(path, data):
    body = eventstream_body(path)
    pieces = data.draw(pieces_of(body), label="pieces")
    chunks = list(engine.eventstream_chunks(pieces))
    assert chunks == [event.value for event in parse_bytes(body, "body")]  # one decoder
    assert outcome_of(chunks, path) == expected_frames(path)


def test_every_byte_its_own_piece():
    path = next(p for p in STREAMS if p.name == "hand_parallel_interleaved.jsonl")
    body = sse_body(path, "\r\n", extras=True).encode("utf-8")
    assert outcome_of(engine.sse_chunks(cut(body, list(range(len(body))))), path) == expected(path)
    frames = BEDROCK[0]
    binary = eventstream_body(frames)
    pieces = cut(binary, list(range(len(binary))))
    assert outcome_of(engine.eventstream_chunks(pieces), frames) == expected_frames(frames)


# -- the WHATWG rules ------------------------------------------------------------------------


def chunks(*pieces) -> list:
    return list(engine.sse_chunks(pieces))


def test_line_ends_cr_crlf_lf_and_a_crlf_cut_between_pieces():
    for end in LINE_ENDS:
        body = f'data: {{"n": 1}}{end}{end}data: {{"n": 2}}{end}{end}'
        assert chunks(body) == [{"n": 1}, {"n": 2}], repr(end)
    # CR ends one piece, LF starts the next: one line end, not a blank line between
    assert chunks("data: [1,\r", "\ndata: 2]\r\n\r\n") == [[1, 2]]
    assert chunks("event: a\r", "\n", 'data: {"n": 1}\r', "\n\r", "\n") == [{"_event": "a", "n": 1}]
    # a CR alone, then a CR at the start of the next piece: two line ends, the blank line
    assert chunks('data: {"n": 1}\r', "\r") == [{"n": 1}]


def test_a_bom_at_the_start_only_and_utf8_cut_in_a_character():
    body = '\ufeffdata: {"t": "h\u00e9 \U0001f600"}\n\n'.encode()
    assert chunks(*cut(body, list(range(len(body))))) == [{"t": "h\u00e9 \U0001f600"}]
    # a second BOM is not the stream's start: part of the field name, an unknown field
    sse = engine.sse_chunks(["\ufeff\ufeffdata: {}\n\n"])
    assert list(sse) == [] and sse.ignored_fields == {"\ufeffdata": 1}


def test_comments_multi_line_data_event_names_and_events_without_data():
    body = (
        ": a comment\n"
        'data: {"a":\ndata: [1,\ndata:  2]}\n\n'  # joined with LF: one JSON text
        "event: ping\n\n"  # no data: not dispatched, and its name goes with it
        'data: {"n": 1}\n\n'
        'event: delta\ndata: {"x": 1}\n\n'
        'event: typed\ndata: {"type": "t"}\n\n'  # a payload with its own type keeps it
        "data\n\n"  # a field without a colon: empty data, handed on as the line
        "data: [DONE]\n\n"
    )
    assert chunks(body) == [
        {"a": [1, 2]},
        {"n": 1},
        {"_event": "delta", "x": 1},
        {"type": "t"},
        "data: ",
        "data: [DONE]",
    ]


def test_id_retry_and_ignored_fields_are_kept_not_dropped():
    sse = engine.sse_chunks(["id: 7\nretry: 3000\nfoo: bar\nretry: soon\nid: a\0b\ndata: {}\n\n"])
    assert list(sse) == [{}]
    assert (sse.last_event_id, sse.retry) == ("7", 3000)
    assert sse.ignored_fields == {"foo": 1, "retry": 1, "id": 1}


def test_a_long_line_in_many_pieces_is_joined_once():
    text = "x" * 200_000
    body = f'data: {{"t": "{text}"}}\n\n'.encode()
    assert chunks(*cut(body, list(range(0, len(body), 3)))) == [{"t": text}]


def test_done_and_a_full_openai_body_drive_the_buffer():
    body = (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"content":"Hi"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'
    )
    buf = engine.LLMStreamBuffer()
    events = list(buf.consume(engine.sse_chunks(cut(body, [5, 40, 41, 90]))))
    assert [type(e).__name__ for e in events] == ["TextDelta", "Finished"]
    assert buf.format == "openai_chat" and buf.is_finished()


# -- the end of a body, and errors -----------------------------------------------------------


@pytest.mark.parametrize(
    ("pieces", "match"),
    [
        ([b'data: {"n": 1}\n\ndata: {"n"'], r"^line 3: the stream ended inside a line: 10 bytes"),
        ([b'data: {"n": 1}\n\ndata: {"n": 2}\n'], r"^line 3: the stream ended inside an event: 1"),
        ([b'data: {"n": 1}\n\n\xc3'], r"^byte 16: the stream ended inside a UTF-8 character"),
        ([b'data: {"n": 1}\n\n', b"data: \xff\n\n"], r"^byte 22: not UTF-8 text"),
        ([b'data: {"n": 1}\n\ndata: {"n": 2,,}\n\n'], r"^line 3: not JSON: .*\(column 15\)"),
    ],
)
def test_a_body_cut_short_or_broken_is_an_error_after_the_chunks_before_it(pieces, match):
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("ollama")])
    got = []
    with pytest.raises(engine.TransportError, match=match) as caught:
        for chunk in engine.sse_chunks(pieces):
            got.append(chunk)
            buf.add(chunk)
    assert got == [{"n": 1}]  # nothing already decoded is lost
    assert isinstance(caught.value, ValueError)


def test_an_unknown_field_in_a_capture_is_still_an_error():
    with pytest.raises(engine.TransportError, match=r"^line 1: expected an SSE line"):
        SSEDecoder(strict_fields=True).feed("HTTP/1.1 200 OK\n")
    events = parse_capture('data: {"n": 1}', "f")  # a file: the last event without its blank
    assert [e.value for e in events] == [{"n": 1}]


def test_eventstream_errors_name_the_byte_where_the_message_starts():
    path = next(p for p in BEDROCK if len(read_stream(p)) > 1)  # a stream of two messages
    body = eventstream_body(path)
    second = struct.unpack_from(">I", body)[0]
    broken = bytearray(body)
    broken[second + 20] ^= 0xFF  # a byte of the second message's headers
    got = []
    with pytest.raises(engine.TransportError, match=f"^byte {second}: the message CRC"):
        got.extend(engine.eventstream_chunks([bytes(broken)]))
    assert len(got) == 1  # the first message, from the same piece, was handed on
    prelude = bytearray(body)
    prelude[second + 9] ^= 0xFF
    with pytest.raises(engine.TransportError, match=f"^byte {second}: the prelude CRC"):
        list(engine.eventstream_chunks(cut(bytes(prelude), [second + 12])))
    with pytest.raises(engine.TransportError, match=rf"^byte {second}: a message of \d+ bytes"):
        list(engine.eventstream_chunks([body[: second + 30]]))
    with pytest.raises(engine.TransportError, match=f"^byte {second}: a message cut short"):
        list(engine.eventstream_chunks([body[: second + 5]]))


def test_an_eventstream_header_value_cut_short_is_an_error_not_a_shorter_value():
    """Both CRCs hold (a faulty encoder, not a damaged body), but the header states more bytes
    of value than the headers hold: refused at the message's byte, never taken cut."""
    name = b":event-type"
    headers = bytes([len(name)]) + name + struct.pack(">BH", 7, 50) + b"messageStart"
    payload = b"{}"
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    message = body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(engine.TransportError, match="^byte 0: header ':event-type': 50 bytes"):
        list(engine.eventstream_chunks([message]))


def test_chunks_are_read_once():
    sse = engine.sse_chunks([b"data: {}\n\n"])
    assert list(sse) == [{}]
    with pytest.raises(RuntimeError, match="already iterated"):
        list(sse)


# -- the async twins -------------------------------------------------------------------------


async def _pieces(pieces):
    for piece in pieces:
        await asyncio.sleep(0)
        yield piece


async def _aoutcome(chunks, path: Path) -> str:
    buf = engine.LLMStreamBuffer(strategies=[compiled(format_of(path))])
    async for _ in buf.aconsume(chunks):
        pass
    return json.dumps(outcome(buf), sort_keys=True)


def test_the_async_twins_give_the_same_outcome():
    path = next(p for p in STREAMS if p.name == "llm_anthropic_tool_use.jsonl")
    body = sse_body(path, "\r\n", extras=True).encode("utf-8")
    pieces = cut(body, list(range(0, len(body), 5)))
    got = asyncio.run(_aoutcome(engine.asse_chunks(_pieces(pieces)), path))
    assert got == expected(path)
    frames = BEDROCK[-1]
    binary = eventstream_body(frames)
    pieces = cut(binary, list(range(0, len(binary), 11)))
    got = asyncio.run(_aoutcome(engine.aeventstream_chunks(_pieces(pieces)), frames))
    assert got == expected_frames(frames)


def test_the_async_twin_raises_at_a_cut_end_after_the_chunks_before_it():
    async def run() -> list:
        got = []
        with pytest.raises(engine.TransportError, match="ended inside a line"):
            async for chunk in engine.asse_chunks(_pieces([b'data: {"n": 1}\n\ndata: {'])):
                got.append(chunk)
        return got

    assert asyncio.run(run()) == [{"n": 1}]
