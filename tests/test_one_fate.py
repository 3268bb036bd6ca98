"""Issue 16, point 2: one fate per call, decided once.

A call is runnable (``CallReady``, ``calls()``, ``new_calls()``) or never runnable
(``CallIncomplete``, ``incomplete_calls()``), never both, never changed:

- its arguments are its FIRST complete JSON value: argument text after it (whitespace aside)
  is listed in ``skipped()`` and is not part of the message, ``extract`` or the history;
- a fragment for a call that can no longer become runnable (its item closed with its
  arguments open, or reported incomplete) is listed in ``skipped()`` and changes nothing;
- ``CallStarted`` comes first once the name is known, in the same chunk if need be;
- ``CallIncomplete.cause`` says why, finer than ``reason``.

The streams are the recorded goldens (``tests/golden``), each changed here as its test says
(an argument fragment injected, the stream cut, its stop reason changed).
"""

from __future__ import annotations

import copy

import pytest
from conftest import GOLDEN, drawn_cuts, golden_streams, read_stream, stream_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.cli.resplit import leaves, resplit

EXTRA = '{"b": 2}'  # a second JSON value after the call's arguments


def _fmt(path):
    return engine.load_format(path.parent.name)


def ready_at(fmt, events) -> int | None:
    """The index of the event after which the stream's first call is ready."""
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    for k, event in enumerate(events):
        buf.add(event)
        if buf.calls():
            return k
    return None


def args_leaf(fmt, event) -> tuple[dict, str] | None:
    """Where ``event`` carries the argument fragment that ends its call's JSON: the last
    streamed string with a ``}``."""
    found = [leaf for chain in fmt.streamed_fields() for leaf in leaves(event, chain, 1)]
    ending = [(c, key) for c, key in found if "}" in c[key]]
    return ending[-1] if ending else None


def _injectable(path):
    fmt = _fmt(path)
    events = read_stream(path)
    k = ready_at(fmt, events)
    if k is None or fmt.is_stream_complete(events[k]):
        return None
    if args_leaf(fmt, copy.deepcopy(events[k])) is None:
        return None
    return fmt, events, k


TEXT_ARG_STREAMS = [p for p in golden_streams() if _injectable(p) is not None]


def with_extra(fmt, events, k, extra=EXTRA) -> list:
    """The stream with one more event right after ``events[k]``: a copy of it whose
    argument fragment is ``extra`` (its other streamed strings emptied)."""
    twin = copy.deepcopy(events[k])
    container, key = args_leaf(fmt, twin)
    for chain in fmt.streamed_fields():
        for other, other_key in leaves(twin, chain, 1):
            other[other_key] = ""
    container[key] = extra
    return [*events[: k + 1], twin, *events[k + 1 :]]


def run(fmt, events, close=True):
    """A per-chunk client loop with events: the buffer, the events, the calls run."""
    buf = engine.LLMStreamBuffer(strategies=[fmt], events=True)
    evs, ran = [], []
    for event in events:
        buf.add(event)
        ran += buf.new_calls()
        evs += buf.events()
    if close:
        buf.close()
        ran += buf.new_calls()
        evs += buf.events()
    return buf, evs, ran


def fates(evs) -> list:
    return [
        (type(e).__name__, e.slot, getattr(e, "call", None) or e.reason)
        for e in evs
        if isinstance(e, engine.CallReady | engine.CallIncomplete)
    ]


def calls_of(buf) -> list:
    return [(c.name, c.arguments, c.id) for c in buf.calls()]


def test_the_text_argument_wires_are_all_covered():
    wires = {p.parent.name for p in TEXT_ARG_STREAMS}
    assert {
        "openai_chat",
        "openai_responses",
        "anthropic_messages",
        "bedrock_converse",
        "cohere_v2",
    } <= wires


@pytest.mark.parametrize("path", TEXT_ARG_STREAMS, ids=stream_id)
def test_text_after_the_first_json_value_is_skipped_and_the_call_stays_ready(path):
    fmt, events, k = _injectable(path)
    want, want_evs, want_ran = run(fmt, events)
    got, got_evs, got_ran = run(fmt, with_extra(fmt, events, k))
    assert fates(got_evs) == fates(want_evs)
    assert got_ran == want_ran
    assert calls_of(got) == calls_of(want)
    assert got.incomplete_calls() == want.incomplete_calls()
    # The message shows the first value only: the history built from it stays a valid
    # request (an object-argument wire's input stays an object).
    assert got.as_dict() == want.as_dict()
    assert fmt.extract(got.as_dict()) == got.calls()
    (extra,) = [s for s in got.skipped() if s not in want.skipped()]
    assert extra.index == k + 1 and '{"b": 2}' in extra.reason
    # The partial of the call never took the extra value either.
    deltas = [e for e in got_evs if isinstance(e, engine.ArgumentsDelta)]
    assert all("b" not in d.partial for d in deltas) or "b" in got.calls()[0].arguments


@pytest.mark.parametrize("path", TEXT_ARG_STREAMS, ids=stream_id)
def test_the_history_shows_the_first_value_only(path):
    """The tool-result history built from the message answers what CallReady said, and
    stays the request it was (an object-argument wire's input an object)."""
    fmt, events, k = _injectable(path)
    want = run(fmt, events)[0]
    got = run(fmt, with_extra(fmt, events, k))[0]
    records = [
        engine.ToolCallRecord(c.name, c.arguments, "ok", None, c.id) for c in got.calls()
    ]
    assert fmt.result_messages(got.as_dict(), records) == fmt.result_messages(
        want.as_dict(), records
    )


@pytest.mark.parametrize("path", TEXT_ARG_STREAMS, ids=stream_id)
def test_the_rest_of_the_fragment_that_closes_the_value_is_skipped(path):
    """The value's end and more text in one fragment: the fragment is cut at the value."""
    fmt, events, k = _injectable(path)
    twin = copy.deepcopy(events)
    container, key = args_leaf(fmt, twin[k])
    container[key] += EXTRA
    want = run(fmt, events)[0]
    got, evs, ran = run(fmt, twin)
    assert calls_of(got) == calls_of(want)
    assert sorted(map(repr, ran)) == sorted(map(repr, got.calls()))
    assert got.as_dict() == want.as_dict()
    assert not [e for e in evs if isinstance(e, engine.CallIncomplete)] or (
        got.incomplete_calls() == want.incomplete_calls()
    )
    (extra,) = [s for s in got.skipped() if s not in want.skipped()]
    assert extra.index == k and '{"b": 2}' in extra.reason


@pytest.mark.parametrize("path", TEXT_ARG_STREAMS[:12], ids=stream_id)
def test_whitespace_after_the_value_is_taken_silently(path):
    fmt, events, k = _injectable(path)
    want = run(fmt, events)[0]
    got = run(fmt, with_extra(fmt, events, k, " \n"))[0]
    assert calls_of(got) == calls_of(want) and got.skipped() == want.skipped()
    assert got.incomplete_calls() == []


def _cut_before_ready(path):
    """The stream up to (not including) the event that completes its first call, when the
    call is open there."""
    found = _injectable(path)
    if found is None:
        return None
    fmt, events, k = found
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    for event in events[:k]:
        buf.add(event)
    if not buf.forming():
        return None
    return fmt, events, k


CUTTABLE = [p for p in TEXT_ARG_STREAMS if _cut_before_ready(p) is not None]


@pytest.mark.parametrize("path", CUTTABLE, ids=stream_id)
def test_a_fragment_for_a_call_reported_incomplete_changes_nothing(path):
    """Cut inside the first call and closed: the call is incomplete. Its completing
    fragment, handed over after close(), never makes it runnable (a ChunkError refusing
    input after close() is fine too: it changes nothing either)."""
    fmt, events, k = _cut_before_ready(path)
    buf, evs, ran = run(fmt, events[:k])
    (cut,) = [c for c in buf.incomplete_calls() if c.reason == "cut"][:1]
    message, skipped = buf.as_dict(), buf.skipped()
    try:
        buf.add(events[k])
    except engine.ChunkError:
        pass
    else:
        assert len(buf.skipped()) > len(skipped)
    assert buf.new_calls() == [] and buf.calls() == []
    assert not [e for e in buf.events() if isinstance(e, engine.CallReady)]
    assert buf.incomplete_calls()[0] == cut
    assert buf.as_dict() == message


def _closed_inside(path):
    """The stream cut inside its first call, then the event that closes the call's item
    (the first later event after which nothing is forming, the stream not finished)."""
    found = _cut_before_ready(path)
    if found is None:
        return None
    fmt, events, k = found
    for j in range(k + 1, len(events)):
        buf = engine.LLMStreamBuffer(strategies=[fmt])
        for event in [*events[:k], events[j]]:
            buf.add(event)
        if not buf.forming() and not buf.is_finished() and not buf.calls():
            return fmt, events, k, j
    return None


ITEM_CLOSED = [p for p in CUTTABLE if _closed_inside(p) is not None]


def test_item_closing_wires_are_covered():
    """(A Responses item closes with its whole final item, arguments included: adopted.)"""
    wires = {p.parent.name for p in ITEM_CLOSED}
    assert {"anthropic_messages", "bedrock_converse", "cohere_v2"} <= wires


@pytest.mark.parametrize("path", ITEM_CLOSED, ids=stream_id)
def test_a_fragment_after_the_call_s_item_closed_open_changes_nothing(path):
    """The call's item closed with its arguments open (never runnable from then on); the
    completing fragment comes after: listed in skipped(), never a call; at the DONE the
    call is incomplete ("cut"), the DONE having come after the call's own end."""
    fmt, events, k, j = _closed_inside(path)
    done = [e for e in events[j + 1 :] if fmt.is_stream_complete(e)][-1:]
    stream = [*events[:k], events[j], events[k], *done]
    buf, evs, ran = run(fmt, stream)
    assert ran == [] and buf.calls() == []
    assert [type(e).__name__ for e in evs if isinstance(e, engine.CallReady)] == []
    (extra,) = [s for s in buf.skipped() if s.index == k + 1]
    assert "incomplete" in extra.reason or "closed" in extra.reason
    (cut,) = buf.incomplete_calls()[:1]
    assert cut.reason == "cut"
    if done and fmt.is_stream_complete(done[0]) and buf.stop_reason not in fmt.spec.length_stops:
        assert cut.cause == "done inside call"


# -- CallStarted first ------------------------------------------------------------------------


def _first_call_chunk(events) -> int | None:
    """The chunk in which the stream's first call is known by name (None: its name comes
    later than its first chunk)."""
    fmt = engine.load_format("openai_chat")
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    for i, event in enumerate(events):
        buf.add(event)
        if buf.forming() or buf.calls():
            return i if buf.forming().tool_name or buf.calls() else None
    return None


OPENAI_CALLS = [
    p
    for p in CUTTABLE
    if p.parent.name == "openai_chat" and _first_call_chunk(read_stream(p)) is not None
]


@pytest.mark.parametrize("path", OPENAI_CALLS, ids=stream_id)
def test_a_named_call_cut_in_its_first_chunk_starts_before_it_is_incomplete(path):
    """The chunk that opens the call carries the length stop too."""
    events = read_stream(path)
    i = _first_call_chunk(events)
    cut = copy.deepcopy(events[: i + 1])
    cut[i]["choices"][0]["finish_reason"] = "length"
    buf, evs, _ = run(engine.load_format("openai_chat"), cut)
    kinds = [type(e).__name__ for e in evs if hasattr(e, "slot")]
    (incomplete,) = [e for e in evs if isinstance(e, engine.CallIncomplete)][:1]
    assert incomplete.name
    started = [e for e in evs if isinstance(e, engine.CallStarted)]
    assert started and started[0].slot == incomplete.slot
    assert kinds.index("CallStarted") < kinds.index("CallIncomplete")
    assert incomplete.cause == "length limit"


def test_a_gemini_call_cut_in_its_first_chunk_starts_before_it_is_incomplete():
    """vercel_stream_fc_partial_args: its first call part (partialArgs, willContinue) with
    the finish chunk's MAX_TOKENS in the same chunk."""
    events = read_stream(GOLDEN / "gemini" / "vercel_stream_fc_partial_args.jsonl")
    fmt = engine.load_format("gemini")
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    i = next(i for i, event in enumerate(events) if buf.add(event) or buf.forming())
    cut = copy.deepcopy(events[: i + 1])
    cut[i]["candidates"][0]["finishReason"] = "MAX_TOKENS"
    buf, evs, _ = run(fmt, cut)
    kinds = [(type(e).__name__, e.slot) for e in evs if hasattr(e, "slot")]
    incomplete = [e for e in evs if isinstance(e, engine.CallIncomplete)]
    assert incomplete and incomplete[0].name
    assert kinds.index(("CallStarted", incomplete[0].slot)) < kinds.index(
        ("CallIncomplete", incomplete[0].slot)
    )
    assert incomplete[0].cause == "length limit"


@pytest.mark.parametrize("path", golden_streams(), ids=stream_id)
def test_every_named_incomplete_call_has_started(path):
    fmt = _fmt(path)
    events = read_stream(path)
    for end in sorted({len(events) // 3, len(events) // 2, len(events)}):
        buf, evs, _ = run(fmt, events[:end])
        started = {e.slot for e in evs if isinstance(e, engine.CallStarted)}
        for e in evs:
            if isinstance(e, engine.CallIncomplete) and e.name:
                assert e.slot in started, (end, e)


# -- the property: one fate, whatever the split -----------------------------------------------


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("path", TEXT_ARG_STREAMS, ids=stream_id)
def test_every_call_has_one_fate_however_split_and_whatever_follows_it(path, data):
    """A re-split of the stream, text after its first call's arguments or not: every call
    that started ends exactly once, ready or incomplete, the same in the events,
    ``new_calls()``, ``calls()`` and ``incomplete_calls()``."""
    fmt, events, k = _injectable(path)
    if data.draw(st.booleans(), label="text after the first call's arguments"):
        events = with_extra(fmt, events, k)
    split = resplit(events, fmt.streamed_fields(), drawn_cuts(data))
    buf, evs, ran = run(fmt, split)
    ends: dict = {}
    for e in evs:
        if isinstance(e, engine.CallReady | engine.CallIncomplete):
            assert e.slot not in ends, f"a second fate at {e.slot!r}: {ends[e.slot]}, {e}"
            ends[e.slot] = e
    ready = [e.call for e in evs if isinstance(e, engine.CallReady)]
    assert ran == ready
    assert sorted(map(repr, ready)) == sorted(map(repr, buf.calls()))
    assert [e for e in evs if isinstance(e, engine.CallIncomplete)] == buf.incomplete_calls()
    started = {e.slot for e in evs if isinstance(e, engine.CallStarted)}
    assert started <= set(ends)
