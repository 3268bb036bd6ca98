"""Events (API.md, "Events"), over every golden stream of every wire: a new format's goldens
are covered without code.

- fed whole, re-split at chosen points or one character a fragment: the same starts, ready
  calls (with their arguments), incomplete calls and finish;
- without a codec the TextDeltas joined are get_content(); on a driver's buffer they are what
  text() hands out;
- each started call: one CallStarted first, then exactly one CallReady or CallIncomplete;
  new_calls() over the loop gives the CallReady calls; Finished once, ProviderError before it;
- ReasoningDeltas joined are the message's reasoning (fmt.reasoning_text, and the independent
  readers of test_reasoning), never display text; every wire streams some;
- consume() and aconsume() give the events of the loop; to_dict() goes through json.dumps;
- partial: after every fragment, API.md's reading of the argument text so far.
"""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from conftest import drawn_cuts, examples, golden_streams, read_stream, stream_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_partial import _dumped, _object_text, canon, oracle
from test_reasoning import READERS, _reasoning_of

import engine
from engine.cli.resplit import every_character, resplit

STREAMS = golden_streams()
CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}  # what every openai_chat chunk has
TERMINAL = (engine.CallReady, engine.CallIncomplete)


def _buffer(path, events=True):
    return engine.LLMStreamBuffer(strategies=[engine.load_format(path.parent.name)], events=events)


def loop(path, chunks):
    """The per-chunk client loop: add, new_calls, events; close; the last ones."""
    buf = _buffer(path)
    evs, ran = [], []
    for chunk in chunks:
        buf.add(chunk)
        ran += buf.new_calls()
        evs += buf.events()
    buf.close()
    ran += buf.new_calls()
    evs += buf.events()
    return buf, evs, ran


def summary(evs):
    """What must not depend on how the stream was split (partial values may)."""
    return {
        "starts": [(e.slot, e.name, e.id) for e in evs if isinstance(e, engine.CallStarted)],
        "ready": [
            (e.slot, e.call.name, e.call.arguments, e.call.id)
            for e in evs
            if isinstance(e, engine.CallReady)
        ],
        "incomplete": [
            (e.slot, e.name, e.id, e.reason) for e in evs if isinstance(e, engine.CallIncomplete)
        ],
        "finished": [
            (type(e).__name__, getattr(e, "stop_reason", None), getattr(e, "error", None))
            for e in evs
            if isinstance(e, engine.Finished | engine.ProviderError)
        ],
        "reasoning": _reasoning(evs),
    }


def _reasoning(evs) -> str:
    return "".join(e.text for e in evs if isinstance(e, engine.ReasoningDelta))


def _fields(path):
    return engine.load_format(path.parent.name).streamed_fields()


def _done(path):
    return engine.load_format(path.parent.name).done_fields()


def same_events(path, whole, split):
    """The summary of ``split`` is that of ``whole`` (the re-split keeps each DONE on the
    last piece of its event, as a provider sends it)."""
    expected = summary(loop(path, copy.deepcopy(whole))[1])
    assert summary(loop(path, split)[1]) == expected


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_rules_of_the_table_hold(path):
    buf, evs, ran = loop(path, read_stream(path))
    assert "".join(e.text for e in evs if isinstance(e, engine.TextDelta)) == buf.get_content()
    by_slot: dict = {}
    for e in evs:
        slot = getattr(e, "slot", None)
        if isinstance(e, engine.CallStarted):
            assert slot not in by_slot, f"a second start at {slot!r}"
            by_slot[slot] = [e]
        elif isinstance(e, engine.ArgumentsDelta | engine.CallReady):
            assert slot in by_slot and not isinstance(by_slot[slot][-1], TERMINAL), (
                f"{type(e).__name__} at {slot!r} before its start or after its end"
            )
            by_slot[slot].append(e)
        elif isinstance(e, engine.CallIncomplete):
            # a call whose name never came ends without having started
            assert slot not in by_slot or not isinstance(by_slot[slot][-1], TERMINAL)
            by_slot.setdefault(slot, []).append(e)
    for slot, seq in by_slot.items():
        assert sum(isinstance(e, TERMINAL) for e in seq) == 1, f"slot {slot!r}: {seq}"
    ready = [e.call for e in evs if isinstance(e, engine.CallReady)]
    assert ran == ready
    assert sorted(map(repr, ready)) == sorted(map(repr, buf.calls()))
    incomplete = [e for e in evs if isinstance(e, engine.CallIncomplete)]
    assert incomplete == buf.incomplete_calls()
    finished = [e for e in evs if isinstance(e, engine.Finished)]
    # Once, with the final usage; a stream without its DONE finishes at close(), with no
    # stop reason (issue 16, point 10).
    assert len(finished) == 1
    assert finished[0].stop_reason == (buf.stop_reason if buf.is_finished() else None)
    assert finished[0].usage == buf.usage
    errors = [i for i, e in enumerate(evs) if isinstance(e, engine.ProviderError)]
    if errors:
        assert errors == [evs.index(finished[0]) - 1] and evs[errors[0]].error == buf.error
    for e in evs:  # the last partial of a ready call is its arguments
        if isinstance(e, engine.CallReady) and isinstance(e.call.arguments, dict):
            deltas = [d for d in evs if isinstance(d, engine.ArgumentsDelta) and d.slot == e.slot]
            if deltas and e.call.arguments:
                assert canon(deltas[-1].partial) == canon(e.call.arguments)
    assert not buf.forming()
    assert buf.events() == [] and buf.new_calls() == []


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_reasoning_deltas_are_the_message_s_reasoning_and_never_display_text(path):
    """Chunk by chunk: no ReasoningDelta is empty or also a TextDelta of its chunk. Over the
    stream: joined, the message's reasoning as the descriptor reads it and as test_reasoning's
    own reader of the provider's message shape does; the TextDeltas are the display text,
    which does not hold the reasoning."""
    wire = path.parent.name
    buf = _buffer(path)
    reasoning: list[str] = []
    text: list[str] = []

    def take(evs):
        pieces = [e.text for e in evs if isinstance(e, engine.ReasoningDelta)]
        shown = [e.text for e in evs if isinstance(e, engine.TextDelta)]
        assert all(pieces) and not set(pieces) & set(shown), (pieces, shown)
        reasoning.extend(pieces)
        text.extend(shown)

    for chunk in read_stream(path):
        buf.add(chunk)
        take(buf.events())
    buf.close()
    take(buf.events())
    message = buf.as_dict()
    joined = "".join(reasoning)
    assert joined == engine.load_format(wire).reasoning_text(message)
    assert joined == _reasoning_of(wire)(message)
    assert "".join(text) == buf.get_content()
    if len(joined) >= 20:  # long enough that display text holding it is no coincidence
        assert joined not in "".join(text)


@pytest.mark.parametrize("wire", sorted(READERS))
def test_every_wire_streams_reasoning_deltas_on_a_golden_with_reasoning(wire):
    """The equalities above would hold with no ReasoningDelta at all: on each wire, they are
    non-empty exactly on the goldens whose message has reasoning, and some golden has it."""
    has = []
    for path in golden_streams([wire]):
        buf = _buffer(path)
        streamed = _reasoning(buf.consume(read_stream(path)))
        assert bool(streamed) == bool(READERS[wire](buf.as_dict())), path.name
        has.append(bool(streamed))
    assert any(has) and not all(has), wire


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_one_character_fragments_give_the_same_events(path):
    events = read_stream(path)
    split = resplit(copy.deepcopy(events), _fields(path), every_character, _done(path))
    same_events(path, events, copy.deepcopy(split))
    buf, evs, _ = loop(path, split)
    assert "".join(e.text for e in evs if isinstance(e, engine.TextDelta)) == buf.get_content()


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_resplit_streams_give_the_same_events(path, data):
    events = read_stream(path)

    split = resplit(copy.deepcopy(events), _fields(path), drawn_cuts(data), _done(path))
    same_events(path, events, split)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_consume_and_aconsume_give_the_loop_s_events(path):
    chunks = read_stream(path)
    _, expected, _ = loop(path, copy.deepcopy(chunks))
    plain = engine.LLMStreamBuffer(strategies=[engine.load_format(path.parent.name)])
    consumed = list(plain.consume(copy.deepcopy(chunks)))  # consume() turns events on itself
    assert summary(consumed) == summary(expected) and len(consumed) == len(expected)
    assert plain.closed

    async def source():
        for chunk in copy.deepcopy(chunks):
            await asyncio.sleep(0)
            yield chunk

    async def collect():
        return [ev async for ev in _buffer(path).aconsume(source())]

    assert summary(asyncio.run(collect())) == summary(expected)
    for ev in consumed:
        data = ev.to_dict()
        assert data["type"] == type(ev).__name__
        assert json.loads(json.dumps(data)) == data


class Echo(engine.BaseDriver):
    def __init__(self, names, **options):
        super().__init__(**options)
        self.names = names
        self.ran = []

    def list_tools(self):
        schema = {"type": "object"}
        return [engine.Tool(name=n, description=n, parameters=schema) for n in self.names]

    def execute_tool(self, tool_name, arguments):
        self.ran.append((tool_name, arguments))
        return {"echo": arguments}


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_on_a_driver_s_buffer_text_deltas_are_what_text_hands_out(path):
    chunks = read_stream(path)
    names = sorted({c.name for c in loop(path, copy.deepcopy(chunks))[0].calls()})
    driver = Echo(names)
    driver._strategies = [engine.load_format(path.parent.name)]
    buf = driver.new_stream_buffer(events=True)
    shown, evs, ran = [], [], []
    for chunk in chunks:
        buf.add(chunk)
        driver.process_llm_response(buf)
        evs += buf.events()
        shown.append(buf.text())
        ran += buf.new_calls()
    buf.close()
    driver.process_llm_response(buf)
    evs += buf.events()
    shown.append(buf.text())
    ran += buf.new_calls()
    assert "".join(e.text for e in evs if isinstance(e, engine.TextDelta)) == "".join(shown)
    assert ran == [e.call for e in evs if isinstance(e, engine.CallReady)]
    started = [e.slot for e in evs if isinstance(e, engine.CallStarted)]
    ended = [e.slot for e in evs if isinstance(e, TERMINAL)]
    assert len(started) == len(set(started)) and set(started) <= set(ended)
    assert len(ended) == len(set(ended))


def _text_chunks(text: str, size: int = 5, finish: str | None = "stop") -> list[dict]:
    chunks = [
        {**CHUNK, "choices": [{"index": 0, "delta": {"content": text[i : i + size]}}]}
        for i in range(0, len(text), size)
    ]
    if finish:
        chunks.append({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return chunks


def _rounds(driver, buf, chunks) -> list[list]:
    """The client loop; the events of each round (the last: the one after close())."""
    rounds = []
    for chunk in [*chunks, None]:
        if chunk is None:
            buf.close()
        else:
            buf.add(chunk)
        driver.process_llm_response(buf)
        rounds.append(buf.events())
        buf.text()
    return rounds


@pytest.mark.parametrize("text_calls", ["end", "anywhere"])
def test_text_calls_on_a_driver_s_buffer_start_and_are_ready_at_text_slots(text_calls):
    driver = Echo(["get_weather"], text_calls=text_calls)
    buf = driver.new_stream_buffer(events=True)
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    rounds = _rounds(driver, buf, _text_chunks(f"Let me look. {call}\n"))
    evs = [e for r in rounds for e in r]
    kinds = [type(e).__name__ for e in evs if not isinstance(e, engine.TextDelta)]
    assert kinds == ["CallStarted", "ArgumentsDelta", "CallReady", "Finished"]
    started, delta, ready, _ = [e for e in evs if not isinstance(e, engine.TextDelta)]
    assert started.slot == delta.slot == ready.slot == ("text", 0)
    assert started.name == "get_weather" and delta.partial == {"city": "Paris"}
    assert ready.call.arguments == {"city": "Paris"} and driver.ran == [
        ("get_weather", {"city": "Paris"})
    ]
    at = next(i for i, r in enumerate(rounds) if any(isinstance(e, engine.CallReady) for e in r))
    done = len(rounds) - 2  # the round of the wire's DONE
    assert (at == done) == (text_calls == "end")  # by default only at the turn's end
    shown = "".join(e.text for e in evs if isinstance(e, engine.TextDelta))
    assert shown == "Let me look. \n"


@pytest.mark.parametrize("own_buffer", [False, True])
def test_a_call_quoted_in_prose_tells_only_text(own_buffer):
    driver = Echo(["get_weather"])
    buf = (
        driver.new_stream_buffer(events=True) if own_buffer else engine.LLMStreamBuffer(events=True)
    )
    quoted = 'It said <tool_call>{"name": "get_weather", "arguments": {}}</tool_call> - no.'
    rounds = _rounds(driver, buf, _text_chunks(quoted, 3))
    evs = [e for r in rounds for e in r]
    assert [type(e).__name__ for e in evs if not isinstance(e, engine.TextDelta)] == ["Finished"]
    assert "".join(e.text for e in evs if isinstance(e, engine.TextDelta)) == quoted
    assert driver.ran == [] and buf.new_calls() == [] and buf.incomplete_calls() == []


def test_a_cut_text_call_is_incomplete_at_close():
    driver = Echo(["get_weather"])
    buf = driver.new_stream_buffer(events=True)
    cut = 'Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Pa'
    buf.add({**CHUNK, "choices": [{"index": 0, "delta": {"content": cut}}]})
    first = driver.process_llm_response(buf)
    assert first.call_pending
    assert [type(e).__name__ for e in buf.events()] == ["TextDelta"]  # nothing while it streams
    assert buf.text() == "Hi "
    buf.close()
    last = driver.process_llm_response(buf)
    evs = buf.events()
    # a stream without its DONE finishes at close(), after its calls are decided
    names = ["CallStarted", "ArgumentsDelta", "CallIncomplete", "Finished"]
    assert [type(e).__name__ for e in evs] == names
    started, delta, incomplete, _ = evs
    assert started.slot == delta.slot == incomplete.slot == ("text", 0)
    assert delta.partial == {"city": "Pa"}
    assert (incomplete.name, incomplete.reason) == ("get_weather", "cut")
    assert incomplete.raw == cut[len("Hi <tool_call>") :]
    assert buf.incomplete_calls() == [incomplete] and last.incomplete_calls == [incomplete]
    assert last.retry_prompt == driver.codec.retry_call_incomplete(incomplete)  # with its cause
    assert incomplete.cause == "connection ended"  # closed before any DONE
    assert buf.text() == "" and driver.ran == []  # the model's call, told to it, not shown


def test_events_on_a_buffer_without_them_say_how_to_turn_them_on():
    buf = engine.LLMStreamBuffer()
    buf.add({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}})
    with pytest.raises(ValueError, match=r"events=True"):
        buf.events()
    assert buf._rec is None and buf._asm.events is None  # keeps nothing for them


def test_a_source_that_raises_propagates_and_leaves_the_buffer_open():
    path = next(p for p in STREAMS if p.parent.name == "openai_chat")
    chunks = read_stream(path)

    def source():
        yield from chunks[:2]
        raise RuntimeError("connection reset")

    buf = _buffer(path, events=False)
    with pytest.raises(RuntimeError, match="connection reset"):
        for _ in buf.consume(source()):
            pass
    assert not buf.closed
    for chunk in chunks[2:]:
        buf.add(chunk)
    buf.close()
    assert [e.call for e in buf.events() if isinstance(e, engine.CallReady)] in ([], buf.calls())


def test_events_turned_on_mid_stream_tell_each_later_call_as_itself():
    """consume() after some add()s: a call tracked before events were on tells nothing, and
    the calls tracked after are ready at their own slots, with their own calls."""

    def call(i, name, args):
        tool = {"index": i, "id": f"c{i}", "type": "function"}
        tool["function"] = {"name": name, "arguments": args}
        return {**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [tool]}}]}

    done = {**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("openai_chat")])
    buf.add(call(0, "a", '{"x": 1}'))
    evs = list(buf.consume([call(1, "b", '{"y": 2}'), done]))
    assert [(e.slot, e.name) for e in evs if isinstance(e, engine.CallStarted)] == [(1, "b")]
    ready = [(e.slot, e.call.name) for e in evs if isinstance(e, engine.CallReady)]
    assert ready == [(1, "b")]


def test_a_chunk_that_raises_records_no_events_and_partial_stays_one_dict():
    gemini = engine.load_format("gemini")

    def chunk(parts):
        return {"candidates": [{"index": 0, "content": {"role": "model", "parts": parts}}]}

    buf = engine.LLMStreamBuffer(strategies=[gemini], events=True)
    buf.add(chunk([{"functionCall": {"name": "f", "willContinue": True}}]))
    buf.add(
        chunk(
            [
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.a", "stringValue": "x", "willContinue": True}
                        ],
                        "willContinue": True,
                    }
                }
            ]
        )
    )
    evs = buf.events()
    assert [type(e).__name__ for e in evs] == ["CallStarted", "ArgumentsDelta", "ArgumentsDelta"]
    partial = evs[-1].partial
    assert partial == {"a": "x"}
    bad = chunk(
        [
            {
                "functionCall": {
                    "partialArgs": [
                        {"jsonPath": "$.b", "stringValue": "y"},
                        {"jsonPath": "$.a[0]", "numberValue": 1},
                    ],
                    "willContinue": True,
                }
            }
        ]
    )
    with pytest.raises(engine.ChunkError):
        buf.add(bad)
    assert buf.events() == [] and partial == {"a": "x"}
    buf.add(chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "y"}]}}]))
    evs = buf.events()
    deltas = [e for e in evs if isinstance(e, engine.ArgumentsDelta)]
    assert deltas and deltas[-1].partial is partial and partial == {"a": "xy"}
    assert [e.call.arguments for e in evs if isinstance(e, engine.CallReady)] == [{"a": "xy"}]


def test_a_raising_event_on_an_argument_stream_is_undone_for_events_too():
    """A failure after an argument fragment was applied: the fragment is not recorded, and
    the call's partial does not take it."""
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("openai_chat")], events=True)
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    buf.add({**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    buf.add(_args_chunk('{"a": "b'))
    evs = buf.events()
    partial = evs[-1].partial
    assert partial == {"a": "b"}
    broken = _args_chunk("cd")
    broken["choices"][0]["delta"]["tool_calls"].append("not an object")
    try:
        buf.add(broken)
    except engine.ChunkError:
        assert buf.events() == [] and partial == {"a": "b"}
    buf.add(_args_chunk('e"}'))
    evs = buf.events()
    assert partial in ({"a": "be"}, {"a": "bcde"})
    assert [e.call.arguments for e in evs if isinstance(e, engine.CallReady)] == [partial]


def _args_chunk(text):
    return {
        **CHUNK,
        "choices": [
            {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}}
        ],
    }


def test_forming_is_false_after_close_and_once_nothing_is_open():
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("openai_chat")])
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    buf.add({**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assert buf.forming() == engine.Forming(True, "f")
    buf.add(_args_chunk('{"a": 1}'))
    assert not buf.forming()  # ready: no call is forming
    buf.add({**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [{**call, "index": 1}]}}]})
    assert buf.forming() == engine.Forming(True, "f")
    buf.close()
    assert not buf.forming()
    assert buf.strategy.forming(buf.as_dict())  # the whole message keeps its meaning


def test_new_calls_gives_each_call_once_in_completion_order():
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("openai_chat")])
    for index in (0, 1):
        call = {
            "index": index,
            "id": f"c{index}",
            "type": "function",
            "function": {"name": f"f{index}", "arguments": ""},
        }
        buf.add({**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    buf.add(
        {
            **CHUNK,
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]},
                }
            ],
        }
    )
    assert [c.name for c in buf.new_calls()] == ["f1"]
    buf.add(
        {
            **CHUNK,
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
                }
            ],
        }
    )
    buf.add({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert [c.name for c in buf.new_calls()] == ["f0"]
    assert buf.new_calls() == [] and [c.name for c in buf.calls()] == ["f0", "f1"]


# -- partial: API.md's reading after every fragment ------------------------------------------

_SETTINGS = settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(text=_object_text | _dumped, data=st.data())
def test_partial_after_every_fragment_is_the_reading_of_the_text_so_far(text, data):
    """A call's argument text streamed through a buffer in fragments cut anywhere (also at
    every position): after each fragment, ``partial`` is the oracle's reading of the prefix."""
    every = data.draw(st.booleans())
    if every:
        points = list(range(1, len(text)))
    else:
        points = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8))))
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("openai_chat")], events=True)
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    buf.add({**CHUNK, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    buf.events()
    seen = 0
    partial = None
    for piece in pieces:
        if not piece:
            continue
        buf.add(_args_chunk(piece))
        seen += len(piece)
        deltas = [e for e in buf.events() if isinstance(e, engine.ArgumentsDelta)]
        if not deltas:  # only whitespace after the object: the call is ready, nothing grows
            assert not text[seen - len(piece) : seen].strip() and canon(partial) == canon(
                json.loads(text)
            )
            continue
        assert [d.text for d in deltas] == [piece]
        partial = deltas[-1].partial if partial is None else partial
        assert deltas[-1].partial is partial  # one dict per call
        assert canon(partial) == canon(oracle(text[:seen]))
    assert canon(partial) == canon(json.loads(text))


@pytest.mark.parametrize(
    ("first", "then"),
    [("$.a", "$['a']"), ("$['a']", "$.a"), ("$.o.b", '$["o"]["b"]'), ("$.l[0]", "$['l'][0]")],
)
def test_partial_agrees_with_the_arguments_whatever_the_spelling_of_a_path(first, then):
    """One JSON path written two ways is one leaf: the pieces the wire continues there are
    joined in the events' ``partial`` as in the call's arguments (Gemini's ``partialArgs``),
    while they stream and once the call is whole."""
    gemini = engine.load_format("gemini")

    def chunk(parts, **more):
        return {"candidates": [{"index": 0, "content": {"role": "model", "parts": parts}, **more}]}

    def piece(path, text, more):
        return {"jsonPath": path, "stringValue": text, "willContinue": more}

    buf = engine.LLMStreamBuffer(strategies=[gemini], events=True)
    buf.add(chunk([{"functionCall": {"name": "f", "willContinue": True}}]))
    seen = []
    for path, text, more in [(first, "Hel", True), (then, "lo", False)]:
        pieces = [piece(path, text, more)]
        buf.add(chunk([{"functionCall": {"partialArgs": pieces, "willContinue": True}}]))
        deltas = [e for e in buf.events() if isinstance(e, engine.ArgumentsDelta)]
        seen.append(copy.deepcopy(deltas[-1].partial))
    buf.add(chunk([{"functionCall": {}}], finishReason="STOP"))
    (ready,) = [e.call.arguments for e in buf.events() if isinstance(e, engine.CallReady)]
    assert "Hello" in json.dumps(ready)
    assert seen[-1] == ready
