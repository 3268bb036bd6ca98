"""Issue 9, item 4 for Gemini 3 streamed arguments (``partialArgs`` with ``willContinue``).

A call whose arguments still stream over parts when the stream is cut (``close()`` without the
wire's DONE, or a DONE whose ``finishReason`` is a length cut, ``MAX_TOKENS``) is incomplete
(reason ``"cut"``), never a call: its pieces so far are only a prefix of its arguments. The
message keeps those pieces and the ``willContinue: true`` the wire sent last, so that
``extract(as_dict())`` (a driver handed the message) does not take them for a call either.
After a normal DONE (``STOP``) an open call finishes as before: its pieces are its arguments.

Streams are the recorded Vertex AI goldens ``gemini/vercel_vertex_stream_fc_nested.jsonl`` and
``gemini/vercel_stream_fc_partial_args.jsonl`` (provenance in tests/golden/README.md), cut here
on purpose: truncated after a chunk inside a call, and / or with the last chunk's
``finishReason`` rewritten (each test says which).
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import GOLDEN, Recorder, drive, read_stream

import engine

NESTED = read_stream(GOLDEN / "gemini" / "vercel_vertex_stream_fc_nested.jsonl")
TWO_CALLS = read_stream(GOLDEN / "gemini" / "vercel_stream_fc_partial_args.jsonl")

# NESTED truncated after its 20th chunk: inside cookRecipe's arguments, after the pieces of
# ingredients[0..3] (the call's own end, the empty `functionCall: {}` part, never comes).
NESTED_CUT = NESTED[:20]
NESTED_PARTIAL = {
    "recipe": {
        "ingredients": [
            {"amount": "16 oz", "name": "Lasagna noodles"},
            {"amount": "1 lb", "name": "Ground beef"},
            {"amount": "15 oz", "name": "Ricotta cheese"},
            {"amount": "3 cups", "name": "Mozzarella cheese"},
        ]
    }
}
# TWO_CALLS truncated after its 6th chunk: the first getWeather closed by its `{}` part, the
# second one's "San Francisco" still continuing (its piece and its part both willContinue).
TWO_CALLS_CUT = TWO_CALLS[:6]


def last_chunk(events: list[dict], finish: str, keep_end_part: bool) -> dict:
    """The recorded last chunk with ``finishReason`` rewritten to ``finish``; without its
    ``functionCall: {}`` part (the end of the call) unless ``keep_end_part``."""
    chunk = copy.deepcopy(events[-1])
    candidate = chunk["candidates"][0]
    candidate["finishReason"] = finish
    if not keep_end_part:
        candidate["content"]["parts"] = [
            p for p in candidate["content"]["parts"] if p.get("functionCall") != {}
        ]
    return chunk


def feed(chunks: list[dict], close: bool = True, **kw) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("gemini")], **kw)
    for chunk in chunks:
        buf.add(chunk)
    if close:
        buf.close()
    return buf


def call_part(buf: engine.LLMStreamBuffer, position: int) -> dict:
    return buf.as_dict()["parts"][position]["functionCall"]


def cut_nested(how: str) -> tuple[list[dict], bool]:
    """NESTED cut inside its call: ``close`` (truncated, then close() without DONE) or
    ``max_tokens`` (truncated, then the last chunk as a MAX_TOKENS DONE without the call's
    end part, and no close())."""
    if how == "close":
        return NESTED_CUT, True
    return [*NESTED_CUT, last_chunk(NESTED, "MAX_TOKENS", keep_end_part=False)], False


@pytest.mark.parametrize("how", ["close", "max_tokens"])
def test_a_nested_call_cut_while_its_arguments_stream_is_incomplete_never_a_call(how):
    events, close = cut_nested(how)
    buf = feed(events, close=close)
    assert buf.is_finished() is (how == "max_tokens")
    assert buf.calls() == []
    (incomplete,) = buf.incomplete_calls()
    assert (incomplete.slot, incomplete.name, incomplete.id, incomplete.reason) == (
        0,
        "cookRecipe",
        None,
        "cut",
    )
    assert json.loads(incomplete.raw) == NESTED_PARTIAL  # what arrived, nothing lost
    # the message keeps the pieces and the flag the wire sent last
    assert call_part(buf, 0) == {"name": "cookRecipe", "args": NESTED_PARTIAL, "willContinue": True}
    assert buf.strategy.extract(buf.as_dict()) == []
    if not close:
        message = buf.as_dict()
        buf.close()  # close() after the DONE changes nothing and reports nothing twice
        assert buf.as_dict() == message and len(buf.incomplete_calls()) == 1


def test_two_calls_cut_inside_the_second_keep_the_first():
    buf = feed(TWO_CALLS_CUT)
    assert [(c.name, c.arguments) for c in buf.calls()] == [("getWeather", {"location": "Boston"})]
    assert [(c.slot, c.name, c.raw, c.reason) for c in buf.incomplete_calls()] == [
        (1, "getWeather", '{"location": "San Francisco"}', "cut")
    ]
    assert call_part(buf, 0) == {"name": "getWeather", "args": {"location": "Boston"}}
    assert call_part(buf, 1) == {
        "name": "getWeather",
        "args": {"location": "San Francisco"},
        "willContinue": True,
    }
    assert buf.strategy.extract(buf.as_dict()) == buf.calls()


def test_two_calls_at_max_tokens_before_the_second_ends():
    """TWO_CALLS whole, its last chunk's finishReason rewritten to MAX_TOKENS and its
    ``functionCall: {}`` part (the second call's end) left out."""
    events = [*TWO_CALLS[:-1], last_chunk(TWO_CALLS, "MAX_TOKENS", keep_end_part=False)]
    buf = feed(events, close=False)
    assert buf.is_finished() and buf.stop_reason == "MAX_TOKENS"
    assert [c.arguments for c in buf.calls()] == [{"location": "Boston"}]
    assert [(c.slot, c.reason) for c in buf.incomplete_calls()] == [(1, "cut")]
    assert call_part(buf, 1)["willContinue"] is True


@pytest.mark.parametrize("events", [NESTED, TWO_CALLS], ids=["nested", "two_calls"])
def test_a_call_ended_by_its_own_end_part_stays_a_call_at_max_tokens(events):
    """The recorded last chunk, finishReason rewritten to MAX_TOKENS but its ``functionCall:
    {}`` part kept: that part ends the call before the chunk's DONE is seen (the call's own
    stop), so its arguments are complete and it stays a call, as complete arguments do at a
    length stop on every wire."""
    recorded = feed(events)
    buf = feed([*events[:-1], last_chunk(events, "MAX_TOKENS", keep_end_part=True)])
    assert buf.calls() == recorded.calls() and buf.calls()
    assert buf.incomplete_calls() == []
    assert buf.as_dict() == recorded.as_dict()


def test_after_a_normal_done_an_open_call_finishes_as_before():
    """NESTED_CUT, then the last chunk with its recorded STOP but without the call's end part:
    a DONE that is not a length cut closes the open call normally, its pieces its arguments."""
    buf = feed([*NESTED_CUT, last_chunk(NESTED, "STOP", keep_end_part=False)], close=False)
    assert [(c.name, c.arguments) for c in buf.calls()] == [("cookRecipe", NESTED_PARTIAL)]
    assert buf.incomplete_calls() == []
    assert call_part(buf, 0) == {"name": "cookRecipe", "args": NESTED_PARTIAL}
    buf.close()
    assert len(buf.calls()) == 1 and buf.incomplete_calls() == []


# -- drivers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["close", "max_tokens"])
def test_a_driver_reports_the_cut_call_once_and_runs_nothing(how):
    events, _ = cut_nested(how)
    driver = Recorder("cookRecipe")
    responses = drive(driver, events)
    reported = [i for i, r in enumerate(responses) if r.incomplete_calls]
    # the round of the DONE chunk (the last one), or the round after close()
    assert reported == [len(events) - 1 if how == "max_tokens" else len(events)]
    response = responses[reported[0]]
    (call,) = response.incomplete_calls
    assert (call.name, call.reason) == ("cookRecipe", "cut")
    assert response.retry_prompt is not None
    assert "'cookRecipe'" in response.retry_prompt
    assert "did not run" in response.retry_prompt  # and why, by its cause
    assert driver.ran == [] and not any(r.call_executed for r in responses)


def test_a_driver_runs_the_complete_call_and_reports_the_cut_one():
    driver = Recorder("getWeather")
    responses = drive(driver, TWO_CALLS_CUT)
    assert driver.ran == [("getWeather", {"location": "Boston"})]
    assert [(c.slot, c.reason) for r in responses for c in r.incomplete_calls or []] == [(1, "cut")]


def test_a_driver_handed_the_cut_message_runs_nothing():
    buf = feed(NESTED_CUT)
    driver = Recorder("cookRecipe")
    response = driver.process_llm_response(buf.as_dict())
    assert driver.ran == [] and not response.call_executed
