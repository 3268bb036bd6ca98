"""Issue 18, point 1: a call sent whole on a fragments wire is ready when it arrives.

On the AI SDK's UI message stream a call either streams (``tool-input-start`` / ``-delta``)
or arrives whole (``tool-input-available`` with ``input``): the event that opens the part with
its input also closes it, so the call is runnable at that event, not at the stream's DONE,
and a stream cut after it loses nothing. A restatement that contradicts arguments already
reported ready is listed in ``skipped()`` and changes nothing. The toys of
``tests/golden/aisdk_open_or_continue/`` (a ``calls.where`` judged after the event) and
``tests/golden/aisdk_where_after_event/`` carry it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import read_stream

import engine

GOLDEN = Path(__file__).parent / "golden"
OPEN_OR_CONTINUE = GOLDEN / "aisdk_open_or_continue"
WHOLE_EVENT = {
    "type": "tool-input-available",
    "toolCallId": "call-1",
    "toolName": "get_weather",
    "input": {"city": "Paris"},
}


def _buffer(folder: Path) -> engine.LLMStreamBuffer:
    fmt = engine.load_format(folder / f"{folder.name}.yaml")
    return engine.LLMStreamBuffer(strategies=[fmt], events=True)


def _before_done(events: list[dict]) -> list[dict]:
    return [ev for ev in events if ev["type"] not in ("finish", "finish-step")]


@pytest.mark.parametrize(
    ("folder", "stream"),
    [
        (OPEN_OR_CONTINUE, "whole.jsonl"),
        (OPEN_OR_CONTINUE, "restated_after_start.jsonl"),
        (OPEN_OR_CONTINUE, "streamed.jsonl"),
        (GOLDEN / "aisdk_where_after_event", "client_and_provider_call.jsonl"),
    ],
)
def test_a_call_is_ready_at_the_event_that_completes_it_and_survives_a_cut(folder, stream):
    events = _before_done(read_stream(folder / stream))
    buf = _buffer(folder)
    ready_at = None
    for i, ev in enumerate(events):
        buf.add(ev)
        if buf.calls() and ready_at is None:
            ready_at = i
    last_input = max(i for i, ev in enumerate(events) if "input" in ev or "inputTextDelta" in ev)
    assert ready_at is not None and ready_at <= last_input
    ready = buf.calls()
    buf.close()  # cut before the stream's DONE: nothing ready is taken back or lost
    assert buf.calls() == ready
    assert buf.incomplete_calls() == []
    parts = [p for p in buf.as_dict()["parts"] if p["toolName"] == ready[0].name]
    assert parts[0]["input"] == ready[0].arguments


def test_a_whole_call_is_runnable_by_a_driver_on_a_cut_stream():
    class Weather(engine.BaseDriver):
        def list_tools(self):
            return [engine.Tool(name="get_weather", description="", parameters={"type": "object"})]

        def execute_tool(self, tool_name, arguments):
            return {"ok": arguments}

    buf = _buffer(OPEN_OR_CONTINUE)
    for ev in _before_done(read_stream(OPEN_OR_CONTINUE / "whole.jsonl")):
        buf.add(ev)
    buf.close()
    response = Weather().process_llm_response(buf)
    assert [r.arguments for r in response.executed_calls] == [{"city": "Paris"}]
    assert response.retry_prompt is None


def test_a_contradicting_restatement_after_a_whole_call_is_listed_and_changes_nothing():
    buf = _buffer(OPEN_OR_CONTINUE)
    buf.add({"type": "start", "messageId": "m"})
    buf.add(WHOLE_EVENT)
    assert [c.arguments for c in buf.new_calls()] == [{"city": "Paris"}]
    buf.add({**WHOLE_EVENT, "input": {"city": "Oslo"}})
    buf.add({"type": "tool-input-delta", "toolCallId": "call-1", "inputTextDelta": "{}"})
    buf.add({"type": "finish"})
    assert [c.arguments for c in buf.calls()] == [{"city": "Paris"}]
    assert buf.new_calls() == []
    assert buf.as_dict()["parts"][0]["input"] == {"city": "Paris"}
    assert len(buf.skipped()) == 2
    ready = [ev for ev in buf.events() if isinstance(ev, engine.CallReady)]
    assert len(ready) == 1
