"""Issue 9, items 4, 5 and 12: what the end of a stream makes of a call still open.

- 4: ``""`` at a normal DONE is a call without arguments; cut (``close()`` without DONE, a
  length stop) it is incomplete, never a call; the message keeps the argument text as sent.
- 5: DONE finalizes what is still open, as ``close()`` does (an Anthropic tool_use cut by
  ``max_tokens`` without its ``content_block_stop`` keeps its raw text, never ``input: {}``).
- 12: a call that will never be runnable is never silent: ``CallIncomplete`` in the buffer
  and, once, in the driver's ``incomplete_calls``, with a ``retry_prompt`` naming it.

Streams are recorded goldens (``tests/golden``), some cut here on purpose (each test says
how), and one fixture written from OpenAI's documented chunk shape (``tests/hardening_done``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
from conftest import GOLDEN, Recorder, drive, read_stream, replay

import engine

HERE = Path(__file__).resolve().parent / "hardening_done"


def golden(fmt: str, name: str) -> list[dict]:
    return read_stream(GOLDEN / fmt / f"{name}.jsonl")


def incomplete_of(responses: list[engine.DriverResponse]) -> list[engine.CallIncomplete]:
    return [c for r in responses for c in (r.incomplete_calls or [])]


# -- 4: "" at DONE ----------------------------------------------------------------------------

EMPTY_ARGS = read_stream(HERE / "openai_chat_empty_args.jsonl")


def test_openai_chat_empty_arguments_at_finish_reason_are_a_call_without_arguments():
    buf = replay(EMPTY_ARGS, "openai_chat", close=False)
    assert buf.is_finished()
    assert [(c.name, c.arguments) for c in buf.calls()] == [("get_server_status", {})]
    message = buf.as_dict()
    assert message["tool_calls"][0]["function"]["arguments"] == ""  # as the wire sent it
    assert buf.strategy.extract(message) == buf.calls()
    assert buf.incomplete_calls() == []


def test_a_driver_runs_the_empty_argument_call_once():
    driver = Recorder("get_server_status")
    responses = drive(driver, EMPTY_ARGS)
    assert driver.ran == [("get_server_status", {})]
    assert sum(r.call_executed for r in responses) == 1
    assert incomplete_of(responses) == []


def test_empty_arguments_mid_stream_stay_forming():
    buf = replay(EMPTY_ARGS[:1], "openai_chat", close=False)
    assert buf.calls() == []
    assert buf.forming() == engine.Forming(True, "get_server_status")
    driver = Recorder("get_server_status")
    response = driver.process_llm_response(buf)
    assert response.call_pending and not driver.ran


@pytest.mark.parametrize(
    "fmt, name, call",
    [
        ("cohere_v2", "vercel_empty_tool_call", "currentTime"),
        ("anthropic_messages", "vercel_tool_no_args", "updateIssueList"),
        ("anthropic_messages", "llm_anthropic_tool_use", "pelican_name_generator"),
        ("gemini", "vercel_stream_fc_no_args", "read_theme"),
    ],
)
def test_recorded_calls_without_arguments_run(fmt, name, call):
    events = golden(fmt, name)
    buf = replay(events, fmt)
    assert (call, {}) in [(c.name, c.arguments) for c in buf.calls()]
    assert buf.strategy.extract(buf.as_dict()) == buf.calls()
    driver = Recorder(call)
    drive(driver, events)
    assert driver.ran.count((call, {})) == 1


def test_cohere_message_keeps_the_empty_argument_text_as_sent():
    """Cohere's tool-call-end used to write "{}" into the message for a call that streamed
    no argument fragment; one rule for every wire: the text as sent."""
    buf = replay(golden("cohere_v2", "vercel_empty_tool_call"), "cohere_v2")
    assert buf.as_dict()["tool_calls"][0]["function"]["arguments"] == ""
    # A call that did send "{}" keeps "{}".
    sent = replay(golden("cohere_v2", "hand_no_arg_call"), "cohere_v2")
    assert sent.as_dict()["tool_calls"][0]["function"]["arguments"] == "{}"


def test_empty_arguments_cut_by_a_length_stop_are_incomplete():
    """The Databricks-shaped stream, its finish reason changed to ``length``."""
    events = copy.deepcopy(EMPTY_ARGS)
    events[1]["choices"][0]["finish_reason"] = "length"
    buf = replay(events, "openai_chat", close=False)
    assert buf.is_finished() and buf.calls() == []
    assert buf.incomplete_calls() == [
        engine.CallIncomplete(0, "get_server_status", "call_ExBZYdRGfibAAViPsKECBjg1", "", "cut")
    ]
    driver = Recorder("get_server_status")
    responses = drive(driver, events)
    assert driver.ran == []
    assert [c.reason for c in incomplete_of(responses)] == ["cut"]


def test_empty_arguments_when_the_stream_is_closed_without_done_are_incomplete():
    """The Databricks-shaped stream cut after its first chunk: no finish_reason."""
    buf = replay(EMPTY_ARGS[:1], "openai_chat")
    assert not buf.is_finished() and buf.calls() == []
    assert [(c.name, c.raw, c.reason) for c in buf.incomplete_calls()] == [
        ("get_server_status", "", "cut")
    ]


def test_complete_arguments_stay_a_call_at_a_length_stop_and_at_close():
    """pydantic_ai_tool_call (recorded): its finish reason changed to ``length``; and the
    stream closed right after the last argument fragment, before any finish_reason."""
    events = golden("openai_chat", "pydantic_ai_tool_call")
    done = next(
        i for i, e in enumerate(events) if e["choices"] and e["choices"][0]["finish_reason"]
    )
    cut = copy.deepcopy(events)
    cut[done]["choices"][0]["finish_reason"] = "length"
    expected = [(c.name, c.arguments) for c in replay(events, "openai_chat").calls()]
    assert (
        expected and [(c.name, c.arguments) for c in replay(cut, "openai_chat").calls()] == expected
    )
    closed = replay(events[:done], "openai_chat")
    assert [(c.name, c.arguments) for c in closed.calls()] == expected
    assert closed.incomplete_calls() == []


def test_anthropic_empty_tool_use_cut_before_its_stop_shows_no_arguments_object():
    """vercel_tool_no_args (recorded), cut after its tool_use block's start (no
    content_block_stop, no message_stop): never a call, and the message shows the raw text
    ("") rather than ``input: {}``, which extract() would run as a call without arguments."""
    events = golden("anthropic_messages", "vercel_tool_no_args")
    start = next(
        i for i, e in enumerate(events) if e.get("content_block", {}).get("type") == "tool_use"
    )
    buf = replay(events[: start + 1], "anthropic_messages")
    assert buf.calls() == []
    message = buf.as_dict()
    assert message["content"][-1]["input"] == ""
    assert buf.strategy.extract(message) == []
    assert [c.reason for c in buf.incomplete_calls()] == ["cut"]


# -- 5: DONE finalizes what is still open ---------------------------------------------------


def anthropic_cut_by_max_tokens() -> list[dict]:
    """vercel_tool_use (recorded), cut the way Anthropic cuts at max_tokens inside a tool_use:
    its input stops after the first fragment (the closing "}" never comes), there is no
    content_block_stop, message_delta says ``max_tokens``, message_stop follows."""
    events = golden("anthropic_messages", "vercel_tool_use")
    out = [e for e in events if e.get("delta", {}).get("partial_json") != "}"]
    out = [e for e in out if e["type"] != "content_block_stop"]
    for e in out:
        if e["type"] == "message_delta":
            e["delta"]["stop_reason"] = "max_tokens"
    return out


def test_anthropic_max_tokens_without_content_block_stop_keeps_the_raw_text():
    events = anthropic_cut_by_max_tokens()
    buf = replay(events, "anthropic_messages", close=False)  # DONE only: no close()
    assert buf.is_finished()
    message = buf.as_dict()
    raw = '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]'
    assert message["content"][0]["input"] == raw
    assert buf.strategy.extract(message) == [] and buf.calls() == []
    assert buf.incomplete_calls() == [
        engine.CallIncomplete(0, "json", "toolu_01KFbKqPYSuAKujiL6mTfzYA", raw, "cut")
    ]
    buf.close()  # close() after DONE changes nothing and reports nothing twice
    assert buf.as_dict() == message and len(buf.incomplete_calls()) == 1


def test_a_driver_handed_the_cut_message_runs_nothing():
    buf = replay(anthropic_cut_by_max_tokens(), "anthropic_messages", close=False)
    driver = Recorder("json")
    response = driver.process_llm_response(buf.as_dict())
    assert driver.ran == [] and not response.call_executed


def test_anthropic_done_with_a_normal_stop_closes_an_open_empty_tool_use_as_a_call():
    """llm_anthropic_tool_use (recorded) without its content_block_stop: message_stop with
    ``tool_use`` closes the block normally, its empty input a call without arguments."""
    events = [
        e
        for e in golden("anthropic_messages", "llm_anthropic_tool_use")
        if e["type"] != "content_block_stop"
    ]
    buf = replay(events, "anthropic_messages", close=False)
    assert [(c.name, c.arguments) for c in buf.calls()] == [("pelican_name_generator", {})]
    assert buf.as_dict()["content"][0]["input"] == {}


def test_responses_incomplete_by_max_output_tokens_cuts_the_open_call():
    """llm_tool_use (recorded), cut after half of its argument deltas and ended the way the
    Responses API ends a turn cut by max_output_tokens: ``response.incomplete`` with
    ``incomplete_details.reason: max_output_tokens``."""
    events = golden("openai_responses", "llm_tool_use")
    deltas = [
        i for i, e in enumerate(events) if e["type"] == "response.function_call_arguments.delta"
    ]
    kept = events[: deltas[len(deltas) // 2]]
    final = copy.deepcopy(events[-1])
    final["type"] = "response.incomplete"
    final["response"]["status"] = "incomplete"
    final["response"]["incomplete_details"] = {"reason": "max_output_tokens"}
    buf = replay([*kept, final], "openai_responses", close=False)
    assert buf.stop_reason == "max_output_tokens" and buf.is_finished()
    assert buf.calls() == []
    (incomplete,) = buf.incomplete_calls()
    assert (incomplete.slot, incomplete.name, incomplete.reason) == (0, "multiply", "cut")
    assert buf.as_dict()["output"][0]["arguments"] == incomplete.raw


def test_bedrock_cut_inside_tool_use_keeps_the_raw_text():
    """pydantic_ai_nova_tool_use (recorded), its one toolUse input fragment cut in half and
    the stream ended by ``messageStop`` with ``max_tokens`` (no contentBlockStop)."""
    events = golden("bedrock_converse", "pydantic_ai_nova_tool_use")
    out = []
    for e in events:
        if e.get("_event") == "contentBlockStop" and e["contentBlockIndex"] == 1:
            continue
        e = copy.deepcopy(e)
        if "toolUse" in e.get("delta", {}):
            e["delta"]["toolUse"]["input"] = '{"city":"Pa'
        if e.get("_event") == "messageStop":
            e["stopReason"] = "max_tokens"
        out.append(e)
    buf = replay(out, "bedrock_converse", close=False)
    assert buf.calls() == []
    assert buf.as_dict()["content"][1]["toolUse"]["input"] == '{"city":"Pa'
    assert [(c.slot, c.name, c.raw, c.reason) for c in buf.incomplete_calls()] == [
        (1, "get_temperature", '{"city":"Pa', "cut")
    ]


def test_invalid_arguments_are_incomplete_with_their_reason():
    """pydantic_ai_tool_call (recorded), a stray "x" before the closing brace of its last
    argument fragment: the text is not JSON. (A stray "x" after the brace is text after the
    call's first JSON value: skipped, the call runs; tests/test_one_fate.py.)"""
    events = copy.deepcopy(golden("openai_chat", "pydantic_ai_tool_call"))
    last = max(
        i
        for i, e in enumerate(events)
        if e["choices"] and e["choices"][0]["delta"].get("tool_calls")
    )
    function = events[last]["choices"][0]["delta"]["tool_calls"][0]["function"]
    assert function["arguments"].endswith("}")
    function["arguments"] = function["arguments"][:-1] + "x}"
    buf = replay(events, "openai_chat", close=False)
    assert buf.calls() == []
    (incomplete,) = buf.incomplete_calls()
    assert incomplete.reason == "invalid" and incomplete.raw.endswith('"x}')
    assert incomplete.cause == "not json"


# -- 12: never silent ---------------------------------------------------------------------------


def test_call_incomplete_is_a_frozen_event_with_to_dict():
    event = engine.CallIncomplete(("text", 0), "f", None, '{"a"', "cut")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.reason = "invalid"  # type: ignore[misc]
    assert event.to_dict() == {
        "type": "CallIncomplete",
        "slot": ["text", 0],
        "name": "f",
        "id": None,
        "raw": '{"a"',
        "reason": "cut",
        "cause": None,
    }
    json.dumps(event.to_dict())
    assert "CallIncomplete" in engine.__all__


def test_the_driver_reports_an_incomplete_call_once_in_the_round_it_ended():
    events = anthropic_cut_by_max_tokens()
    driver = Recorder("json")
    responses = drive(driver, events)
    stop = next(i for i, e in enumerate(events) if e["type"] == "message_stop")
    reported = [i for i, r in enumerate(responses) if r.incomplete_calls]
    assert reported == [stop]  # the DONE round; not again at close()
    (call,) = responses[stop].incomplete_calls
    assert (call.name, call.reason) == ("json", "cut")
    prompt = responses[stop].retry_prompt
    assert prompt is not None and "'json'" in prompt and "output token limit" in prompt
    assert driver.ran == []


def test_a_driver_does_not_report_another_drivers_incomplete_call():
    responses = drive(Recorder("other_tool"), anthropic_cut_by_max_tokens())
    assert incomplete_of(responses) == []
    assert all(r.retry_prompt is None for r in responses)


def test_an_orchestrator_reports_each_incomplete_call_once():
    orchestrator = engine.Orchestrator(drivers=[Recorder("json"), Recorder("other_tool")])
    responses = drive(orchestrator, anthropic_cut_by_max_tokens())
    assert [(c.name, c.reason) for c in incomplete_of(responses)] == [("json", "cut")]
    assert sum(r.retry_prompt is not None for r in responses) == 1


def test_an_incomplete_call_found_at_close_is_reported_in_the_close_round():
    """The Databricks-shaped stream cut after its first chunk (no finish_reason)."""
    driver = Recorder("get_server_status")
    responses = drive(driver, EMPTY_ARGS[:1])
    assert [bool(r.incomplete_calls) for r in responses] == [False, True]
    assert driver.ran == []


def test_the_retry_prompt_says_why_for_every_reason():
    codec = engine.BaseDriver().codec
    prompts = {r: codec.retry_call_incomplete("f", r) for r in ("cut", "invalid", "too deep")}
    assert all("'f'" in p for p in prompts.values())
    assert len(set(prompts.values())) == 3
    assert "(no name)" in codec.retry_call_incomplete(None, "cut")
