"""A chunk that raises changes nothing, and what a buffer keeps is its message (issue 17,
"Memory and the cost of a rejected chunk"); ``reset()`` forgets the stream's transport state.

- ``reset()`` clears a pending SSE ``event:`` name and the chunk count: the first chunk after
  a reset is chunk 0, and an ``event:`` line before the reset names no data line after it;
- a chunk that raises once all its rules wrote is undone by the undo journal
  (engine.model.journal), on a recorded stream of every wire: no event told, every
  ``partial`` held as it was, the scanners as they were, the stream going on as if it was
  never sent; also for a client that refills one dict for every chunk;
- a rejected chunk costs what it wrote (its rules run once), the buffer keeps no chunk, and
  a finished buffer keeps at most 4x the JSON of its message.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import sys
from typing import Any

import pytest
from conftest import (
    ROOT,
    first_plain_stream,
    format_of,
    golden_streams,
    outcome,
    read_stream,
    replay,
    stream_id,
    toy_streams,
)

import engine

STREAMS = golden_streams()
WIRES = [n for n in engine.list_formats() if engine.load_format(n).is_wire]

BEDROCK = "bedrock_converse"
START = {"_event": "messageStart", "role": "assistant"}
USAGE = 'data: {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}'


def _bedrock() -> engine.LLMStreamBuffer:
    return engine.LLMStreamBuffer(strategies=[engine.load_format(BEDROCK)])


def test_reset_forgets_a_pending_sse_event_name():
    fresh = _bedrock()
    fresh.add(dict(START))
    fresh.add(USAGE)  # unnamed: not the metadata event, counted as unknown
    buf = _bedrock()
    buf.add(dict(START))
    buf.add("event: metadata")  # names the next data line of the stream that is dropped
    buf.reset()
    buf.add(dict(START))
    buf.add(USAGE)
    assert (buf.usage, buf.unknown_events, buf.as_dict()) == (
        fresh.usage,
        fresh.unknown_events,
        fresh.as_dict(),
    )


def test_reset_forgets_an_end_marker_that_came_before_the_wire():
    buf = engine.LLMStreamBuffer()
    buf.add("data: [DONE]")  # the wire it ends is not known yet: remembered
    assert buf.is_finished()
    buf.reset()  # the stream it ended is forgotten with it
    assert not buf.is_finished()
    assert buf.changes()[1] is False
    buf.add({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]})
    assert (buf.format, buf.is_finished()) == ("openai_chat", False)


@pytest.mark.parametrize("chunks", [0, 1, 5])
def test_the_first_chunk_after_reset_is_chunk_0(chunks):
    buf = _bedrock()
    for _ in range(chunks):
        buf.add(dict(START))
    buf.reset()
    with pytest.raises(engine.ChunkError) as raised:
        buf.add("data: {not json")
    assert raised.value.index == 0


# -- a chunk that raises after its rules wrote ------------------------------------------------


def _poisoned(wire: str) -> engine.ExtractionStrategy:
    """``wire`` with rules that, once ``program.armed``, raise after all of a chunk's rules
    wrote: tools/bench_memory.py's rejecting rules, which count the events they apply. One
    compile a wire (a compile checks its descriptor's schema: ~0.17 s, most of what this
    module cost), disarmed whatever an earlier test left; a strategy holds no stream's state,
    so the clean buffer and the rejecting one may share it (the clean one is never armed)."""
    strategy = _rejecting(wire)
    strategy.program.armed = False
    return strategy


@functools.cache
def _rejecting(wire: str) -> engine.ExtractionStrategy:
    return _bench_memory().rejecting(wire)


def _told(events: list) -> list:
    """Events as plain data at the time they are read (``partial`` keeps growing after)."""
    return [(type(e).__name__, repr(e)) for e in events]


def _partials(events: list, held: dict) -> None:
    for e in events:
        if isinstance(e, engine.ArgumentsDelta):
            held[id(e.partial)] = (e.partial, copy.deepcopy(e.partial))


@pytest.mark.parametrize(
    "path", [p for p in STREAMS if len(read_stream(p)) >= 3][::2] + toy_streams(), ids=stream_id
)
def test_a_rejected_chunk_tells_no_event_and_leaves_partial_and_the_scanners_as_they_were(path):
    """Before every chunk of a recorded stream, the same chunk poisoned: it raises after its
    rules wrote, tells no event, and every ``partial`` a client holds keeps its value; then
    the stream goes on as if it was never sent (the scanners of text and ``partial`` too:
    the events and the outcome are those of the clean stream)."""
    events = read_stream(path)
    wire = format_of(path)
    strategy = _poisoned(wire)
    clean = engine.LLMStreamBuffer(strategies=[strategy], events=True)
    expected = []
    for ev in copy.deepcopy(events):
        clean.add(ev)
        expected.append(_told(clean.events()))
    clean.close()
    expected.append(_told(clean.events()))
    buf = engine.LLMStreamBuffer(strategies=[strategy], events=True)
    held: dict = {}
    told = []
    for at, ev in enumerate(copy.deepcopy(events)):
        if at and buf.format is not None and not buf.is_finished():
            before = outcome(buf)
            strategy.program.armed = True
            with pytest.raises(engine.ChunkError, match="Rejected"):
                buf.add(copy.deepcopy(ev))
            assert buf.events() == []
            assert all(partial == kept for partial, kept in held.values())
            assert outcome(buf) == before
        buf.add(ev)
        new = buf.events()
        _partials(new, held)
        told.append(_told(new))
    buf.close()
    told.append(_told(buf.events()))
    assert told == expected
    assert outcome(buf) == outcome(clean)


def _refilled(buf: engine.LLMStreamBuffer, chunk: dict, event: dict) -> None:
    chunk.clear()
    chunk.update(copy.deepcopy(event))
    buf.add(chunk)


@pytest.mark.parametrize("path", [first_plain_stream(w) for w in WIRES], ids=stream_id)
def test_a_client_that_refills_one_dict_for_every_chunk_gets_the_message_after_a_rollback(path):
    """The client hands ``add`` the same dict object every time, refilled: a rejected chunk
    (half-way) changes nothing, and what the earlier chunks brought is not read again from
    the dict (which holds the last chunk by then)."""
    events = read_stream(path)
    wire = path.parent.name
    expected = outcome(replay(copy.deepcopy(events), wire))
    strategy = _poisoned(wire)
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    chunk: dict = {}
    half = max(1, len(events) // 2)
    for at, event in enumerate(events):
        if at == half:
            strategy.program.armed = True
            with pytest.raises(engine.ChunkError, match="Rejected"):
                _refilled(buf, chunk, event)
        _refilled(buf, chunk, event)
    buf.close()
    assert outcome(buf) == expected


def _text_chunks(n: int) -> list[dict]:
    def chunk(delta: dict) -> dict:
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}

    return [chunk({"role": "assistant"})] + [chunk({"content": f"w{i} "}) for i in range(n)]


@pytest.mark.parametrize("accepted", [10, 200])
def test_a_rejected_chunk_applies_only_itself(accepted):
    """Undoing a chunk costs what it wrote: its rules run once, whatever came before (the
    replay log this replaced ran every accepted chunk again)."""
    strategy = _poisoned("openai_chat")
    buf = engine.LLMStreamBuffer(strategies=[strategy], events=True)
    chunks = _text_chunks(accepted)
    for chunk in chunks:
        buf.add(chunk)
    buf.events()
    program = strategy.program
    applied = program.applied
    program.armed = True
    with pytest.raises(engine.ChunkError, match="Rejected"):
        buf.add(dict(chunks[-1]))
    assert program.applied - applied == 1
    assert buf.get_content() == "".join(f"w{i} " for i in range(accepted))


@pytest.mark.parametrize("path", [first_plain_stream(w) for w in WIRES], ids=stream_id)
def test_the_buffer_keeps_none_of_the_chunks_it_took(path):
    """What a buffer keeps is its message: no chunk handed to ``add`` stays referenced once
    the stream is in (the replay log kept every one)."""
    events = read_stream(path)
    counts = [sys.getrefcount(event) for event in events]
    buf = _fed(events)
    assert buf.format is not None
    assert [sys.getrefcount(event) for event in events] == counts


def _fed(events: list[dict]) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer(events=True)
    for event in events:
        buf.add(event)
        buf.events()
    buf.close()
    buf.events()
    return buf


def _argument_chunks(n: int) -> list[dict]:
    """Two calls whose arguments stream in ~8-byte fragments, about ``n`` chunks."""

    def chunk(delta: dict, finish: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"object": "chat.completion.chunk", "choices": [choice]}

    out = [chunk({"role": "assistant"})]
    for slot in (0, 1):
        call = {"index": slot, "id": f"c{slot}", "type": "function"}
        call["function"] = {"name": f"f{slot}", "arguments": ""}
        out.append(chunk({"tool_calls": [call]}))
    body = json.dumps({"q": "x" * (n * 4)})
    for at in range(0, len(body), 8):
        for slot in (0, 1):
            fragment = {"index": slot, "function": {"arguments": body[at : at + 8]}}
            out.append(chunk({"tool_calls": [fragment]}))
    return [*out, chunk({}, "tool_calls")]


@functools.cache
def _bench_memory() -> Any:
    """tools/bench_memory.py, whose measure of what a finished buffer keeps the test uses."""
    path = ROOT / "tools" / "bench_memory.py"
    spec = importlib.util.spec_from_file_location("bench_memory", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("events", [False, True], ids=["plain", "events"])
@pytest.mark.parametrize("make", [_text_chunks, _argument_chunks], ids=["text", "arguments"])
def test_a_finished_buffer_keeps_at_most_four_times_its_message(make, events):
    """Memory O(message): what a buffer still holds once a stream of 3,000 small fragments
    is in and closed (its events read as they came) is at most 4x the JSON of its message
    (the replay log kept every chunk: 10x to 20x)."""
    lines = [json.dumps(chunk) for chunk in make(3000)]
    kept, message = _bench_memory().kept("openai_chat", lines, events)
    assert kept <= 4 * message, (kept, message)
