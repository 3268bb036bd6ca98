"""Issue 16, points 2 and 7: ``CallIncomplete.cause``, the finer cause beside ``reason``.

Each cause on the recorded goldens of every wire where it can happen: a length stop inside a
call, the input ended without the wire's DONE, the DONE (or the call's own end) inside it, a
provider's error event inside it, arguments that are not JSON, not an object, too deep. A
whole message (``fmt.incomplete_calls``) gives the same cause where the message alone can say
it (not JSON, not an object, too deep), None for text that stops short.
"""

from __future__ import annotations

import copy
import json
from functools import cache

import pytest
from conftest import GOLDEN, golden_streams, read_stream, stream_id
from test_one_fate import CUTTABLE, ITEM_CLOSED, _closed_inside, _cut_before_ready, run

import engine
from engine.cli.resplit import leaves


def golden(fmt: str, name: str) -> list:
    return read_stream(GOLDEN / fmt / f"{name}.jsonl")


def causes(buf) -> list:
    return [(c.reason, c.cause) for c in buf.incomplete_calls()]


def test_the_causes_are_the_documented_ones():
    assert engine.CallIncomplete.__doc__ is not None
    from engine.events import INCOMPLETE_CAUSES

    for cause in INCOMPLETE_CAUSES:
        assert f'``"{cause}"``' in engine.CallIncomplete.__doc__


# -- cut: what ended the stream inside the call -----------------------------------------------

LENGTH_CUT = [
    ("openai_chat", "hand_length_cut_in_string"),
    ("anthropic_messages", "hand_max_tokens_cut_in_string"),
    ("bedrock_converse", "hand_max_tokens_cut_in_string"),
    ("openai_responses", "hand_incomplete_cut_in_string"),
]


@pytest.mark.parametrize("fmt, name", LENGTH_CUT)
def test_a_length_stop_inside_the_call_is_the_length_limit(fmt, name):
    buf = run(engine.load_format(fmt), golden(fmt, name))[0]
    assert causes(buf) == [("cut", "length limit")]
    # A whole message cannot tell what cut its text short.
    assert [(c.reason, c.cause) for c in buf.strategy.incomplete_calls(buf.as_dict())] == [
        ("cut", None)
    ]


NORMAL_STOP = {
    "openai_chat": ("length", "stop"),
    "anthropic_messages": ("max_tokens", "end_turn"),
    "bedrock_converse": ("max_tokens", "end_turn"),
}


@pytest.mark.parametrize("fmt, name", LENGTH_CUT[:3])
def test_a_normal_stop_inside_the_call_is_the_done_inside_it(fmt, name):
    """The same recorded streams, their length stop reason made a normal one."""
    length, normal = NORMAL_STOP[fmt]
    events = [_replaced(e, length, normal) for e in golden(fmt, name)]
    buf = run(engine.load_format(fmt), events)[0]
    assert buf.stop_reason == normal
    assert causes(buf) == [("cut", "done inside call")]


def _replaced(value, old, new):
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return new if value == old else value


@pytest.mark.parametrize("path", CUTTABLE, ids=stream_id)
def test_input_ending_without_done_inside_the_call_is_the_connection(path):
    fmt, events, k = _cut_before_ready(path)
    buf = run(fmt, events[:k])[0]
    assert ("cut", "connection ended") in causes(buf)
    assert all(cause == "connection ended" for reason, cause in causes(buf) if reason == "cut")


@pytest.mark.parametrize("path", ITEM_CLOSED, ids=stream_id)
def test_a_call_whose_own_end_came_inside_it_ended_there_not_at_the_connection(path):
    """Its item closed with the arguments open, then the input ended without DONE."""
    fmt, events, k, j = _closed_inside(path)
    buf = run(fmt, [*events[:k], events[j]])[0]
    assert causes(buf)[0] == ("cut", "done inside call")


def _error_event(fmt_name: str):
    """The first event of a golden of this wire that sets ``buf.error`` (a new dict each
    time: the tests hand it to their buffers)."""
    found = _error_event_json(fmt_name)
    return None if found is None else json.loads(found)


@cache
def _error_event_json(fmt_name: str) -> str | None:
    """Found once per wire: every cuttable stream of the wire asks, at collection too."""
    fmt = engine.load_format(fmt_name)
    for path in golden_streams([fmt_name]):
        buf = engine.LLMStreamBuffer(strategies=[fmt])
        for event in read_stream(path):
            text = json.dumps(event)
            buf.add(event)
            if buf.error is not None:
                return text
    return None


ERROR_CUT = [p for p in CUTTABLE if _error_event(p.parent.name) is not None]


def test_the_error_wires_are_covered():
    wires = {p.parent.name for p in ERROR_CUT}
    assert {"openai_chat", "openai_responses", "anthropic_messages", "bedrock_converse"} <= wires


@pytest.mark.parametrize("path", ERROR_CUT, ids=stream_id)
def test_a_provider_error_inside_the_call_is_the_provider_error(path):
    fmt, events, k = _cut_before_ready(path)
    buf = run(fmt, [*events[:k], _error_event(path.parent.name)])[0]
    assert buf.error is not None
    assert causes(buf)[0] == ("cut", "provider error")


# -- invalid, too deep: the arguments themselves ----------------------------------------------


def _first_call_fragments(fmt, events):
    """Where the stream's first call's argument text is sent: (event index, leaf path) of
    each streamed string that grew it, found by replaying the stream."""
    chains = fmt.streamed_fields()
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    out, seen = [], 0
    for i, event in enumerate(events):
        buf.add(event)
        tracks = buf._asm.tracks if buf._asm is not None else []
        if not tracks:
            continue
        text = tracks[0].args.text
        if len(text) > seen:
            grown = text[seen:]
            hits = [
                (chain, n)
                for chain in chains
                for n, (c, key) in enumerate(leaves(event, chain, 1))
                if c[key] == grown
            ]
            if hits:
                out.append((i, hits[0]))
            seen = len(text)
    return out


def with_arguments(fmt, events, text):
    """The stream with its first call's argument text replaced by ``text``: its first
    fragment is ``text``, its other fragments empty, and a restatement of the whole text
    (a Responses ``...arguments.done``, its ``output_item.done``) is ``text`` too."""
    events = copy.deepcopy(events)
    fragments = _first_call_fragments(fmt, events)
    whole = ""
    for n, (i, (chain, at)) in enumerate(fragments):
        container, key = list(leaves(events[i], chain, 1))[at]
        whole += container[key]
        container[key] = text if n == 0 else ""
    if len(whole) >= 2:
        events = [_replaced(e, whole, text) for e in events]
    return events, bool(fragments)


TEXT_WIRE_CALLS = [
    p
    for p in golden_streams(
        ["openai_chat", "openai_responses", "anthropic_messages", "bedrock_converse", "cohere_v2"]
    )
    if with_arguments(engine.load_format(p.parent.name), read_stream(p), "{}")[1]
    and run(engine.load_format(p.parent.name), read_stream(p))[0].calls()
]

DEEP = '{"a": ' + "[" * 600 + "]" * 600 + "}"
BAD = [
    pytest.param('{"a": tru}', "invalid", "not json", id="bad-literal"),
    pytest.param("{'a': 1}", "invalid", "not json", id="single-quotes"),
    pytest.param("[1, 2]", "invalid", "not an object", id="array"),
    pytest.param('"{\\"a\\": 1}"', "invalid", "not an object", id="string"),
    pytest.param("42", "invalid", "not an object", id="number"),
    pytest.param(DEEP, "too deep", "too deep", id="deep"),
]


def test_the_text_argument_wires_are_covered():
    wires = {p.parent.name for p in TEXT_WIRE_CALLS}
    assert wires == {
        "openai_chat",
        "openai_responses",
        "anthropic_messages",
        "bedrock_converse",
        "cohere_v2",
    }


@pytest.mark.parametrize("text, reason, cause", BAD)
@pytest.mark.parametrize("path", TEXT_WIRE_CALLS[::3], ids=stream_id)
def test_arguments_that_never_parse_say_why(path, text, reason, cause):
    fmt = engine.load_format(path.parent.name)
    events, _ = with_arguments(fmt, read_stream(path), text)
    buf = run(fmt, events)[0]
    first = buf.incomplete_calls()[0]
    assert (first.reason, first.cause) == (reason, cause)
    assert first.raw.startswith(text[:20])
    # The whole message says the same.
    whole = buf.strategy.incomplete_calls(buf.as_dict())
    assert [(c.slot, c.reason, c.cause) for c in whole] == [
        (c.slot, c.reason, c.cause) for c in buf.incomplete_calls()
    ]


WHOLE_VALUE = [
    ("gemini", "pydantic_ai_function_call", ("candidates", 0, "content", "parts"), "functionCall",
     "args"),
    ("ollama", "hand_tool_call_whole", ("message", "tool_calls"), "function", "arguments"),
]


@pytest.mark.parametrize("fmt_name, name, parts, call, args", WHOLE_VALUE)
@pytest.mark.parametrize(
    "value, reason, cause",
    [
        ([1, 2], "invalid", "not an object"),
        ("[1]", "invalid", "not an object"),  # a string is read as JSON text
        ("x", "invalid", "not json"),
    ],
)
def test_whole_arguments_that_are_no_object_say_why(fmt_name, name, parts, call, args, value,
                                                   reason, cause):
    events = copy.deepcopy(golden(fmt_name, name))
    for event in events:
        node = event
        for step in parts:
            node = node[step] if isinstance(node, list) or step in node else None
            if node is None:
                break
        for part in node or []:
            if call in part:
                part[call][args] = value
                break
        else:
            continue
        break
    buf = run(engine.load_format(fmt_name), events)[0]
    first = buf.incomplete_calls()[0]
    assert (first.reason, first.cause) == (reason, cause)
    whole = buf.strategy.incomplete_calls(buf.as_dict())
    assert (whole[0].reason, whole[0].cause) == (reason, cause)
