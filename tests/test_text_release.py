"""A driver's round holds only what could still start a call (issue 9, item 16).

While a text call may be forming, the client's ``text()`` after the round still hands out
everything before the call's possible start (a ``{``, a backtick run before its language, a
``<tool`` prefix): only that suffix waits. Checked on a recorded Anthropic answer whose prose
names a tool in backticks, and as a property over any split of a stream: after every round,
what was shown is a prefix of the display text minus the spans of the calls that ran, and what
is not shown yet is nothing or a suffix that a fresh scanner, fed it alone, would hold whole.
"""

from __future__ import annotations

import copy
import re

from conftest import GOLDEN, examples, read_stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_drivers import (
    CALL,
    CODEC,
    DISPLAY,
    OWNED,
    Echo,
    Session,
    _executed_spans,
    _minus,
    anthropic_stream,
    call_text,
    chat_stream,
)

# vercel/ai's anthropic-tool-search-deferred-bm25 fixture, its second message (provenance in
# tests/golden/README.md): "... Let me use the `executeEditorOperation` tool to insert ...",
# the backtick arriving at the end of the delta " the `".
RECORDED = GOLDEN / "anthropic_messages" / "vercel_tool_search_deferred.part2.jsonl"
TOOL = "executeEditorOperation"


def _text_of(event: dict) -> str:
    delta = event.get("delta") or {}
    return delta.get("text", "") if delta.get("type") == "text_delta" else ""


def _expected_so_far(display: str, upto: int, spans) -> str:
    """The display text up to ``upto`` minus the spans of calls that ran and had closed by
    then (a call still open there is held, not yet removed)."""
    return _minus(display[:upto], [s for s in spans if s[1] <= upto])


def _assert_only_a_possible_start_is_held(session: Session, spans) -> None:
    """After the round just played: nothing shown twice or out of order, and what is not
    shown yet is empty or a suffix held whole by a fresh scanner (it can still be a call)."""
    display = session.buf.get_content()
    final = _minus(display, spans) if session.buf.closed else None
    # A text call runs at the turn's end (the drivers' default): none ran before the DONE.
    ended = session.buf.is_finished() or session.buf.closed
    so_far = _expected_so_far(display, len(display), spans if ended else [])
    shown = session.text
    assert so_far.startswith(shown), (shown, so_far)
    rest = so_far[len(shown) :]
    if final is not None:
        assert rest == "" and shown == final
    elif rest:
        # Read as the drivers' rule reads it (after what was shown): a call forming, or calls
        # that wait for the turn's end (and what may follow them: whitespace, further calls).
        lead = not re.sub(r"<think>.*?</think>", "", shown, flags=re.S).strip()
        scanner = CODEC.new_scanner(len(shown), rule="end", lead=lead)
        scanner.feed(rest)
        assert scanner.releasable() == "" and (scanner.forming()[0] or scanner.waiting_calls()), (
            f"held more than a possible call start: {rest!r}"
        )


def _play_checked(events, drivers, spans) -> Session:
    session = Session(drivers)
    for event in events:
        session.buf.add(event)
        session.round()
        _assert_only_a_possible_start_is_held(session, spans)
    session.buf.close()
    session.round()
    _assert_only_a_possible_start_is_held(session, spans)
    return session


def test_prose_before_a_backtick_flows_in_its_round_on_a_recorded_stream():
    events = read_stream(RECORDED)
    session = _play_checked(events, [Echo(TOOL)], spans=[])
    rounds = [
        (_text_of(e), s, rs[0].call_pending)
        for e, s, rs in zip(events, session.shown, session.responses, strict=False)
    ]
    at = next(i for i, (delta, _, _) in enumerate(rounds) if delta.endswith("`"))
    assert rounds[at] == (" the `", " the ", True)  # held: the backtick only
    assert rounds[at + 1][1] == "`executeEditorOperation` tool"  # then released
    assert not rounds[at + 1][2]
    assert session.text == session.buf.get_content()  # no text call in it: all shown, once


def _with_text(events: list[dict], pieces: list[str]) -> list[dict]:
    """The recorded stream with its text block's deltas replaced by ``pieces``."""
    out: list[dict] = []
    template = None
    for event in events:
        if _text_of(event):
            if template is None:
                template = event
                for piece in pieces:
                    fresh = copy.deepcopy(template)
                    fresh["delta"]["text"] = piece
                    out.append(fresh)
            continue
        out.append(event)
    return out


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cuts=st.lists(st.integers(0, 1000), max_size=40))
def test_any_split_of_the_recorded_text_with_a_call_in_it(data, cuts):
    events = read_stream(RECORDED)
    recorded = "".join(_text_of(e) for e in events)
    at = data.draw(st.integers(0, len(recorded)))
    call = data.draw(st.one_of(st.just(""), st.just(CALL), call_text()))
    display = recorded[:at] + call + recorded[at:]
    points = sorted({c % (len(display) + 1) for c in cuts} | {0, len(display)})
    pieces = [display[a:b] for a, b in zip(points, points[1:], strict=False)] or [""]
    owned = (*OWNED, "get_weather", TOOL)
    driver = Echo(*owned)
    # The recorded turn ends with a native call: its text is never read for calls (the
    # fall-through is for turns without one), so all of it is shown, in order, once.
    session = _play_checked(_with_text(events, pieces), [driver], [])
    assert session.text == display
    assert {name for name, _ in driver.ran} == {TOOL}  # the native call only


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(display=DISPLAY, cuts=st.lists(st.integers(0, 400), max_size=30), data=st.data())
def test_any_split_holds_only_a_possible_call_start(display, cuts, data):
    points = sorted({c % (len(display) + 1) for c in cuts} | {0, len(display)})
    pieces = [display[a:b] for a, b in zip(points, points[1:], strict=False)] or [""]
    build = data.draw(st.sampled_from([chat_stream, anthropic_stream]))
    fan_out = data.draw(st.booleans())
    drivers = [Echo("get_weather"), Echo("boom")] if fan_out else [Echo(*OWNED)]
    spans = _executed_spans(display, OWNED)
    session = _play_checked(build(pieces), drivers, spans)
    assert session.text == _minus(display, spans)


def test_each_kind_of_possible_start_holds_only_itself():
    """One chunk of prose ending in each thing that could open a call: the prose is shown in
    that round, the opener is held, and the round is pending."""
    for opener in ("`", "``", "```", "```js", "```json\n", "<", "<tool_c"):
        driver = Echo("get_weather")
        session = Session([driver])
        for event in chat_stream(["It is sunny. Next: " + opener, " ok"], finish=None)[:2]:
            session.buf.add(event)
            session.round()
        assert session.shown[-1] == "It is sunny. Next: ", opener
        assert session.responses[-1][0].call_pending, opener
    for opener in ("{", '{"to', "["):  # bare JSON after prose: never a call, never held
        session = Session([Echo("get_weather")])
        for event in chat_stream(["It is sunny. Next: " + opener, " ok"], finish=None)[:2]:
            session.buf.add(event)
            session.round()
        assert session.shown[-1] == "It is sunny. Next: " + opener, opener
        assert not session.responses[-1][0].call_pending, opener


def test_a_call_inside_a_broken_call_of_another_tool_runs_however_split():
    """Hypothesis found it: a delimited call of another's tool that breaks (its end delimiter
    inside a JSON string) is read again from the fence inside it, where this driver's call
    begins. Released while it formed, that fence was shown and its call could not run; held
    while any call forms, every split gives the whole text's answer."""
    display = (
        '<tool_call>{"tool": "teleport", "</tool_call>"```json\n'
        '{"tool": "get_weather", "arguments": {}}\n```'
    )
    spans = _executed_spans(display, OWNED)
    for cut in range(1, len(display)):
        driver = Echo(*OWNED)
        session = _play_checked(chat_stream([display[:cut], display[cut:]]), [driver], spans)
        assert driver.ran == [("get_weather", {})], cut
        assert session.text == _minus(display, spans), cut
