"""Drivers: what runs, what is shown, what goes back into the history.

- Every golden stream of every wire, played through a driver whose tools are the names the
  stream calls (each echoing its arguments): a transcript (display text, each call run
  exactly once, the history) snapshotted.
- Behaviour: calls leaked into text in every codec family (bare, fenced, delimited), plain and
  inside native envelopes; reasoning never scanned; an unknown tool flows; a broken call is
  released whole; a failing tool is reported, never raised; two drivers fed one buffer each
  run their own calls, once; the same through an Orchestrator.
- The property: for any stream and any chunking, everything ``text()`` returned is the display
  text minus exactly the spans of the calls that ran.
"""

from __future__ import annotations

import json

import pytest
from conftest import GOLDEN, examples, golden_streams, read_stream, replay, stream_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import BaseDriver, DriverResponse, LLMStreamBuffer, Orchestrator, Tool

CODEC = BaseDriver().codec  # the built-in text codec


class Echo(BaseDriver):
    """Owns ``names``; each tool returns its arguments (``boom`` raises). Logs every run."""

    def __init__(self, *names: str, **options) -> None:
        super().__init__(**options)
        self.names = names
        self.ran: list[tuple[str, dict]] = []

    def list_tools(self) -> list[Tool]:
        return [
            Tool(name, f"Echo for {name}", {"type": "object", "properties": {"city": {}}})
            for name in self.names
        ]

    def execute_tool(self, tool_name: str, arguments: dict):
        self.ran.append((tool_name, arguments))
        if tool_name == "boom":
            raise RuntimeError("the fuse blew")
        return arguments


# -- stream builders -----------------------------------------------------------------------------


def chat_stream(pieces, *, reasoning=(), tool_calls=(), finish="stop") -> list[dict]:
    """An OpenAI Chat stream: reasoning deltas, content deltas, then tool-call deltas."""

    def chunk(delta, finish_reason=None):
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": r}) for r in reasoning]
    out += [chunk({"content": p}) for p in pieces]
    for index, (call_id, name, fragments) in enumerate(tool_calls):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": f}}]})
            for f in fragments
        ]
    if finish:
        out.append(chunk({}, finish))
    return out


def anthropic_stream(pieces, *, thinking=(), tool_use=None) -> list[dict]:
    """An Anthropic Messages stream: a thinking block, a text block, a tool_use block."""
    out = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
    ]
    blocks = []  # (content_block_start, delta type, delta field, the streamed values)
    if thinking:
        start = {"type": "thinking", "thinking": ""}
        blocks.append((start, "thinking_delta", "thinking", thinking))
    blocks.append(({"type": "text", "text": ""}, "text_delta", "text", pieces))
    if tool_use:
        call_id, name, fragments = tool_use
        start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        blocks.append((start, "input_json_delta", "partial_json", fragments))
    for index, (start, delta_type, field, values) in enumerate(blocks):
        out.append({"type": "content_block_start", "index": index, "content_block": start})
        out += [
            {"type": "content_block_delta", "index": index, "delta": {"type": delta_type, field: v}}
            for v in values
        ]
        out.append({"type": "content_block_stop", "index": index})
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 9},
        }
    )
    out.append({"type": "message_stop"})
    return out


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class Session:
    """The client loop: after every ``add`` (and after ``close``), every driver processes the
    buffer, then the client reads ``text()``."""

    def __init__(self, drivers, buf: LLMStreamBuffer | None = None) -> None:
        self.drivers = drivers
        self.buf = buf if buf is not None else drivers[0].new_stream_buffer()
        self.shown: list[str] = []
        self.responses: list[list[DriverResponse]] = []

    def round(self) -> list[DriverResponse]:
        responses = [self.process(d) for d in self.drivers]
        self.responses.append(responses)
        self.shown.append(self.buf.text())
        return responses

    def process(self, driver: BaseDriver) -> DriverResponse:
        return driver.process_llm_response(self.buf)

    def play(self, events) -> Session:
        for event in events:
            self.buf.add(event)
            self.round()
        self.buf.close()
        self.round()
        return self

    @property
    def text(self) -> str:
        return "".join(self.shown)

    def all(self, field: str) -> list:
        return [x for rs in self.responses for r in rs for x in (getattr(r, field) or [])]

    def any(self, flag: str) -> bool:
        return any(getattr(r, flag) for rs in self.responses for r in rs)


# -- golden streams: a transcript per stream ---------------------------------------------------

WIRES = [n for n in engine.list_formats() if getattr(engine.load_format(n), "is_wire", False)]
STREAMS = golden_streams(WIRES)


def _called_names(events) -> list[str]:
    buf = replay(events)
    calls = buf.strategy.extract(buf.as_dict()) if buf.strategy else []
    text_calls = CODEC.parse_calls(buf.get_content())
    return sorted({c.name for c in [*calls, *text_calls]})


def transcript(events, make_session=Session, make_driver=Echo) -> dict:
    """What a client loop over ``events`` sees (``make_session``: how its rounds run)."""
    driver = make_driver(*_called_names(events))
    session = make_session([driver])
    executed = []
    pending = 0
    for index, event in enumerate([*events, None]):
        if event is None:
            session.buf.close()
        else:
            session.buf.add(event)
        (response,) = session.round()
        pending += response.call_pending
        for record in response.executed_calls or []:
            executed.append(
                {
                    "round": index,
                    "name": record.name,
                    "arguments": record.arguments,
                    "id": record.tool_call_id,
                    "result": record.result,
                    "error": record.error,
                }
            )
    return {
        "format": session.buf.format,
        "tools": list(driver.names),
        "text": session.text,
        "executed": executed,
        "pending_rounds": pending,
        "history": session.all("messages"),
    }


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_golden_transcript(path, json_snapshot):
    events = read_stream(path)
    result = transcript(events)
    hint = f"run: pytest tests/test_drivers.py -k '{path.stem}' --snapshot-update (after review)"
    assert result == json_snapshot, hint


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_golden_calls_run_once_at_done_and_text_is_whole(path):
    events = read_stream(path)
    final = replay(events)
    result = transcript(events)
    # A stream that never sends its DONE runs its batch when the client closes the buffer.
    expected = final.strategy.extract(final.as_dict()) if final.strategy else []
    ran = [(e["name"], e["arguments"], e["id"]) for e in result["executed"]]
    assert ran == [(c.name, c.arguments, c.id) for c in expected]
    assert result["text"] == final.get_content()  # no golden stream writes a call into text
    if expected:
        assert {e["round"] for e in result["executed"]} == {_done_round(events)}


def _done_round(events) -> int:
    """The round of the wire's DONE; without one, the round of ``close()``."""
    buf = engine.LLMStreamBuffer()
    for index, event in enumerate(events):
        buf.add(event)
        if buf.is_finished():
            return index
    return len(events)


# -- calls leaked into text --------------------------------------------------------------------

CALL = '{"tool": "get_weather", "arguments": {"city": "Oslo"}}'
FAMILIES = {
    "bare": CALL,
    "fenced": f"```json\n{CALL}\n```",
    "delimited": f"<tool_call>{CALL}</tool_call>",
}


def _ending(family: str) -> str:
    """A turn that ends with the family's call: after prose, but a bare call must be the
    whole text (whitespace aside)."""
    return f"  {CALL}\n" if family == "bare" else f"Let me check. {FAMILIES[family]}\n"


@pytest.mark.parametrize("family", FAMILIES)
def test_leak_in_plain_text(family):
    text = _ending(family)
    driver = Echo("get_weather")
    r = driver.process_llm_response(text)
    assert r.call_executed and not r.call_failed and not r.call_pending
    assert driver.ran == [("get_weather", {"city": "Oslo"})]
    assert r.messages[0] == {"role": "assistant", "content": text}
    assert r.messages[1]["role"] == "user"
    assert "Oslo" in r.messages[1]["content"]


@pytest.mark.parametrize("size", [1, 3, 64])
@pytest.mark.parametrize("wire", ["chat", "anthropic"])
@pytest.mark.parametrize("family", FAMILIES)
def test_leak_in_a_stream(family, wire, size):
    text = _ending(family)
    build = chat_stream if wire == "chat" else anthropic_stream
    driver = Echo("get_weather")
    session = Session([driver]).play(build(split(text, size)))
    assert driver.ran == [("get_weather", {"city": "Oslo"})]
    assert session.text == ("  \n" if family == "bare" else "Let me check. \n")
    assert session.any("call_pending") and session.any("call_executed")
    assert "{" not in session.text
    ran_at = [i for i, (r,) in enumerate(session.responses) if r.executed_calls]
    assert ran_at == [len(session.responses) - 2]  # at the wire's DONE: the turn's end


@pytest.mark.parametrize("size", [1, 3, 64])
@pytest.mark.parametrize("wire", ["chat", "anthropic"])
@pytest.mark.parametrize("family", FAMILIES)
def test_text_calls_anywhere_run_as_they_stream(family, wire, size):
    """The opt-in of a client that prompted the codec: a delimited or fenced call runs as
    soon as it is complete, prose after it or not; bare JSON still only as the whole text."""
    text = f"Let me check. {FAMILIES[family]} Done."
    build = chat_stream if wire == "chat" else anthropic_stream
    driver = Echo("get_weather", text_calls="anywhere")
    session = Session([driver]).play(build(split(text, size)))
    if family == "bare":
        assert driver.ran == [] and session.text == text
        return
    assert driver.ran == [("get_weather", {"city": "Oslo"})]
    assert session.text == "Let me check.  Done."
    assert session.any("call_pending") and session.any("call_executed")
    ran_at = [i for i, (r,) in enumerate(session.responses) if r.executed_calls]
    assert ran_at[0] < len(session.responses) - 2  # before the DONE: as it streamed


def test_text_calls_takes_end_or_anywhere_only():
    assert Echo("x")._text_calls == "end" and Echo("x", text_calls="anywhere")
    with pytest.raises(ValueError, match="'end', 'anywhere'"):
        Echo("x", text_calls="everywhere")


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": f"On it. {FAMILIES['fenced']}"}],
            },
            id="anthropic-text-block",
        ),
        pytest.param(
            {"role": "assistant", "content": f"On it. {FAMILIES['delimited']}"}, id="openai-content"
        ),
        pytest.param(
            {
                "object": "response",
                "output": [
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": FAMILIES["bare"]}],
                    }
                ],
            },
            id="responses-output-text",
        ),
    ],
)
def test_leak_inside_a_native_envelope(message):
    driver = Echo("get_weather")
    r = driver.process_llm_response(message)
    assert driver.ran == [("get_weather", {"city": "Oslo"})]
    assert r.call_executed
    assert r.messages[-1]["role"] == "user"  # a leaked call never had a native id
    assert all(m.get("role") != "system" for m in r.messages)


def test_leak_is_ignored_without_a_backup():
    driver = Echo("get_weather")
    driver.set_native_backup_strategy(None)
    assert driver.get_native_backup_strategy() is None
    message = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": CALL}]}
    turn = {"role": "assistant", "content": message["content"]}  # as the wire takes it back
    assert driver.process_llm_response(message) == DriverResponse(messages=[turn])
    session = Session([driver]).play(chat_stream(split(CALL, 5)))
    assert session.text == CALL and driver.ran == []
    scanned = Echo("other").new_stream_buffer()  # another driver's buffer scans its text
    session = Session([driver], scanned).play(chat_stream(split(CALL, 5)))
    assert session.text == CALL and driver.ran == []
    assert driver.process_llm_response(CALL).call_executed  # plain text is the codec's own


def test_tool_calls_null_is_authoritative():
    driver = Echo("get_weather")
    message = {"role": "assistant", "content": CALL, "tool_calls": None}
    assert driver.process_llm_response(message) == DriverResponse(messages=[message])
    assert driver.ran == []


def test_native_message_runs_its_calls_not_its_text():
    message = {
        "role": "assistant",
        "content": CALL,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Bergen"}'},
            }
        ],
    }
    driver = Echo("get_weather")
    r = driver.process_llm_response(message)
    assert driver.ran == [("get_weather", {"city": "Bergen"})]
    assert r.executed_calls[0].tool_call_id == "call_1"
    assert r.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"city": "Bergen"}',
    }


# -- reasoning is never scanned ------------------------------------------------------------------


def test_call_inside_think_never_runs():
    text = f"<think>maybe {CALL}</think>The weather is fine."
    driver = Echo("get_weather")
    said = [{"role": "assistant", "content": text}]  # the turn, answering nothing
    assert driver.process_llm_response(text) == DriverResponse(messages=said)
    session = Session([driver]).play(chat_stream(split(text, 4)))
    assert driver.ran == [] and session.text == text
    assert not session.any("call_pending")


def test_call_in_a_reasoning_field_never_runs():
    driver = Echo("get_weather")
    session = Session([driver]).play(chat_stream(["It is fine."], reasoning=split(CALL, 7)))
    assert driver.ran == [] and session.text == "It is fine."
    message = {"role": "assistant", "content": "It is fine.", "reasoning_content": CALL}
    assert driver.process_llm_response(message) == DriverResponse(messages=[message])
    session = Session([driver]).play(anthropic_stream(["It is fine."], thinking=split(CALL, 7)))
    assert driver.ran == [] and session.text == "It is fine."


# -- what flows ----------------------------------------------------------------------------------


def test_unknown_tool_flows_as_text():
    text = 'Try {"tool": "teleport", "arguments": {"to": "Mars"}} now.'
    driver = Echo("get_weather")
    session = Session([driver]).play(chat_stream(split(text, 2)))
    assert session.text == text and driver.ran == []
    said = [{"role": "assistant", "content": text}]  # the turn, answering nothing
    assert not session.any("call_executed") and session.all("messages") == said
    assert driver.process_llm_response(text) == DriverResponse(messages=said)


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "get_weather", "arguments": {"city": "Oslo" oops} and the rest',
        'x ```json\n{"tool": "get_weather", "arguments": {}}\nnot a fence end',
        'x <tool_call>{"tool": "get_weather", "arguments": {}} no end delimiter',
    ],
    ids=["broken-json", "unclosed-fence", "unclosed-delimiter"],
)
def test_broken_held_call_is_released_with_all_its_text(text):
    driver = Echo("get_weather")
    session = Session([driver]).play(chat_stream(split(text, 3)))
    assert driver.ran == []
    assert session.text == text
    assert session.any("call_pending")  # it was held while it could be a call


def test_a_bare_brace_inside_prose_is_never_held():
    text = 'cut at the end {"tool": "get_weather", "arguments": {"city": "Os'
    driver = Echo("get_weather")
    session = Session([driver]).play(chat_stream(split(text, 3)))
    assert driver.ran == [] and session.text == text
    assert not session.any("call_pending") and not session.all("incomplete_calls")
    assert session.shown[1:3] == ["cut", " at"]  # each round shows its text as it comes


def test_stream_cut_without_done_flushes_what_was_held():
    text = 'Hold on {"tool": "get_weather", "arguments": {"ci'
    driver = Echo("get_weather")
    session = Session([driver]).play(chat_stream(split(text, 5), finish=None))
    assert session.text == text and driver.ran == []
    assert not session.responses[-1][0].call_pending  # after close() nothing is pending


def test_text_held_at_the_done_is_shown_and_text_after_it_is_not_taken():
    """The span held at the DONE ("<tool_" may start a call) is released whole; a chunk of
    text after the DONE is after the stream's end (issue 16, point 3): listed, not shown."""
    events = chat_stream(["Done. <tool_"])
    events.append({**events[-2], "choices": [{"index": 0, "delta": {"content": "call> x"}}]})
    driver = Echo("get_weather")
    session = Session([driver]).play(events)
    assert session.text == "Done. <tool_" and driver.ran == []
    assert [(s.index, s.reason) for s in session.buf.skipped()] == [
        (len(events) - 1, "after the stream's end")
    ]


# -- failures ------------------------------------------------------------------------------------


def test_failing_tool_is_reported_not_raised():
    driver = Echo("boom")
    text = '{"tool": "boom", "arguments": {"n": 1}}'
    r = driver.process_llm_response(text)
    assert r.call_failed and not r.call_executed
    (record,) = r.executed_calls
    assert record.error == "Tool 'boom' failed: the fuse blew"
    assert r.retry_prompt == CODEC.retry_execution_failed("boom", "the fuse blew")
    assert "the fuse blew" in r.messages[-1]["content"]


def test_failing_call_in_a_native_batch():
    driver = Echo("boom", "get_weather")
    events = chat_stream(
        [],
        tool_calls=[
            ("call_1", "boom", ['{"n"', ": 1}"]),
            ("call_2", "get_weather", ['{"city": "Oslo"}']),
        ],
        finish="tool_calls",
    )
    session = Session([driver]).play(events)
    (r,) = [r for rs in session.responses for r in rs if r.executed_calls]
    assert r.call_failed and r.call_executed
    assert [c.error for c in r.executed_calls] == ["Tool 'boom' failed: the fuse blew", None]
    assert r.retry_prompt and "boom" in r.retry_prompt
    tool_messages = [m for m in r.messages if m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2"]
    assert tool_messages[0]["content"] == "Tool 'boom' failed: the fuse blew"


# -- native calls: hold and release --------------------------------------------------------------


def test_native_batch_waits_for_done_and_runs_once():
    events = chat_stream(
        ["Checking."],
        tool_calls=[
            ("call_1", "get_weather", ['{"city": "Oslo"}']),
            ("call_2", "get_weather", ['{"city"', ': "Rome"}']),
        ],
        finish="tool_calls",
    )
    usage = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"total_tokens": 5},
    }
    driver = Echo("get_weather")
    session = Session([driver]).play([*events, usage])
    done = len(events) - 1
    ran_at = [i for i, (r,) in enumerate(session.responses) if r.executed_calls]
    assert ran_at == [done]  # not when the first call completed: a sibling was streaming
    assert all(r.call_pending for (r,) in session.responses[2:done])
    assert driver.ran == [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})]
    assert session.text == "Checking."


def test_native_batch_without_done_runs_once_at_close():
    """A stream that ends without its wire's DONE (no finish_reason, as some OpenAI-compatible
    servers send): the batch waits while input may still come, and runs once at close()."""
    events = chat_stream(
        ["Checking."],
        tool_calls=[
            ("call_1", "get_weather", ['{"city": "Oslo"}']),
            ("call_2", "get_weather", ['{"city"', ': "Rome"}']),
        ],
        finish=None,
    )
    driver, other = Echo("get_weather"), Echo("send_mail")
    session = Session([driver, other]).play(events)
    assert not session.buf.is_finished() and session.buf.closed
    ran_at = [i for i, (r, _) in enumerate(session.responses) if r.executed_calls]
    assert ran_at == [len(events)]  # the round of close(), not before
    assert session.responses[len(events) - 1][0].call_pending
    assert driver.ran == [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})]
    assert other.ran == [] and not any(r.executed_calls for _, r in session.responses)
    (batch,) = [r for r, _ in session.responses if r.executed_calls]
    assert [m.get("tool_call_id") for m in batch.messages] == [None, "call_1", "call_2"]
    assert not batch.call_pending and session.text == "Checking."
    session.buf.close()  # a second close is a new round: nothing runs twice
    assert driver.process_llm_response(session.buf) == DriverResponse()
    assert len(driver.ran) == 2


def test_one_driver_over_two_interleaved_streams():
    """A driver remembers the stream it processed last; alternating between two buffers
    (two conversations at once) only costs it the shortcuts, never a wrong answer."""
    leak = chat_stream(split(f"x <tool_call>{CALL}</tool_call>", 4))
    native = anthropic_stream(
        ["Hi."], tool_use=("toolu_1", "get_weather", ['{"city"', ': "Rome"}'])
    )
    alone = [Session([Echo("get_weather")]).play(events) for events in (leak, native)]
    driver = Echo("get_weather")
    sessions = [Session([driver]), Session([driver])]
    for step in range(max(len(leak), len(native)) + 1):
        for session, events in zip(sessions, (leak, native), strict=True):
            if step < len(events):
                session.buf.add(events[step])
                session.round()
            elif step == len(events):
                session.buf.close()
                session.round()
    for together, single in zip(sessions, alone, strict=True):
        assert together.text == single.text
        assert together.all("executed_calls") == single.all("executed_calls")
        pending = [r.call_pending for (r,) in together.responses]
        assert pending == [r.call_pending for (r,) in single.responses]
    assert sorted(args["city"] for _, args in driver.ran) == ["Oslo", "Rome"]


def test_buffer_closed_is_public_and_read_only():
    buf = LLMStreamBuffer()
    assert buf.closed is False
    buf.add(chat_stream(["Hi"])[0])
    buf.close()
    assert buf.closed is True
    with pytest.raises(AttributeError):
        buf.closed = False
    buf.reset()
    assert buf.closed is False


def test_native_call_of_another_driver_is_left_alone():
    events = anthropic_stream(["Hi."], tool_use=("toolu_1", "send_mail", ['{"to": "x"}']))
    driver = Echo("get_weather")
    session = Session([driver]).play(events)
    # the turn goes into the history once, without the call, which another driver answers
    turn = DriverResponse(
        messages=[{"role": "assistant", "content": [{"type": "text", "text": "Hi."}]}]
    )
    assert [r for (r,) in session.responses if r != DriverResponse()] == [turn]
    assert session.text == "Hi."


# -- fan-out: two drivers, one buffer ------------------------------------------------------------


TEXT_TURN = (
    f"A <tool_call>{CALL}</tool_call>\n<tool_call>"
    + '{"tool": "send_mail", "arguments": {"to": "ann"}}'
    + '</tool_call>\n```json\n{"tool": "teleport", "arguments": {}}\n```\n'
)
TELEPORT = '```json\n{"tool": "teleport", "arguments": {}}\n```\n'


def _text_events():
    """A turn that ends with three text calls: one each driver's, one of a tool nobody owns."""
    return chat_stream(split(TEXT_TURN, 4))


def _mixed_events():
    """A native batch under prose that quotes calls: in a turn with a native call its text is
    never read for calls."""
    text = f"A {CALL} B <tool_call>" + '{"tool": "send_mail", "arguments": {"to": "ann"}}'
    return chat_stream(
        split(text + "</tool_call> C", 4),
        tool_calls=[
            ("call_1", "send_mail", ['{"to": "bob"}']),
            ("call_2", "get_weather", ['{"city": "Rome"}']),
            ("call_3", "teleport", ["{}"]),
        ],
        finish="tool_calls",
    )


MIXED_TEXT = (
    f"A {CALL} B <tool_call>" + '{"tool": "send_mail", "arguments": {"to": "ann"}}</tool_call> C'
)


def test_two_drivers_fed_one_buffer():
    weather, mail = Echo("get_weather"), Echo("send_mail")
    session = Session([weather, mail]).play(_mixed_events())
    assert weather.ran == [("get_weather", {"city": "Rome"})]
    assert mail.ran == [("send_mail", {"to": "bob"})]
    assert session.text == MIXED_TEXT  # the quoted calls are shown, never run
    # each driver reports, and answers in its history, its own calls only
    for position, name in ((0, "get_weather"), (1, "send_mail")):
        mine = [r for rs in session.responses for r in rs[position].executed_calls or []]
        assert {r.name for r in mine} == {name}
        history = [m for rs in session.responses for m in rs[position].messages or []]
        answered = [m.get("tool_call_id") for m in history if m.get("role") == "tool"]
        assert answered == (["call_2"] if name == "get_weather" else ["call_1"])


def test_two_drivers_fed_one_text_turn():
    weather, mail = Echo("get_weather"), Echo("send_mail")
    session = Session([weather, mail]).play(_text_events())
    assert weather.ran == [("get_weather", {"city": "Oslo"})]
    assert mail.ran == [("send_mail", {"to": "ann"})]
    assert session.text == "A \n\n" + TELEPORT  # nobody's call is text
    done = len(session.responses) - 2  # the round of the wire's DONE: the turn's end
    assert [i for i, rs in enumerate(session.responses) if any(r.executed_calls for r in rs)] == [
        done
    ]


def test_orchestrator_over_two_drivers():
    weather, mail = Echo("get_weather"), Echo("send_mail")
    both = Orchestrator(drivers=[weather, mail])
    assert [t.name for t in both.list_tools()] == ["get_weather", "send_mail"]
    session = Session([both]).play(_mixed_events())
    assert weather.ran == [("get_weather", {"city": "Rome"})]
    assert mail.ran == [("send_mail", {"to": "bob"})]
    assert session.text == MIXED_TEXT
    native = [
        r
        for (r,) in session.responses
        if r.executed_calls and any(c.tool_call_id for c in r.executed_calls)
    ]
    (batch,) = native  # one history for the whole batch, both drivers' results
    assert [m["tool_call_id"] for m in batch.messages if m.get("role") == "tool"] == [
        "call_1",
        "call_2",
        "call_3",  # teleport, which nobody owns: answered with an error result
    ]
    (teleport,) = batch.rejected_calls
    assert teleport.tool_call_id == "call_3" and "get_weather, send_mail" in teleport.error
    # knowing every tool, it tells the model that teleport does not exist
    prompts = [r.retry_prompt for (r,) in session.responses if r.retry_prompt]
    assert prompts and all("teleport" in p for p in prompts)
    assert "get_weather, send_mail" in prompts[0]


def test_orchestrator_over_a_text_turn():
    weather, mail = Echo("get_weather"), Echo("send_mail")
    session = Session([Orchestrator(drivers=[weather, mail])]).play(_text_events())
    assert weather.ran == [("get_weather", {"city": "Oslo"})]
    assert mail.ran == [("send_mail", {"to": "ann"})]
    # teleport ended the turn too: a call, of a tool nobody owns, answered in the history
    assert session.text == "A \n\n\n"  # the whitespace between the calls flows
    prompts = [r.retry_prompt for (r,) in session.responses if r.retry_prompt]
    assert len(prompts) == 1 and "teleport" in prompts[0]  # told, once
    (results,) = [m for m in session.all("messages") if m["role"] == "user"]
    assert "teleport" in results["content"] and "get_weather, send_mail" in results["content"]


def test_orchestrator_never_tells_of_a_call_quoted_in_prose():
    text = f"See: <tool_call>{CALL.replace('get_weather', 'teleport')}</tool_call> - no."
    session = Session([Orchestrator(drivers=[Echo("get_weather")])]).play(
        chat_stream(split(text, 5))
    )
    assert session.text == text
    assert not any(r.retry_prompt for (r,) in session.responses)


def test_orchestrator_refuses_a_tool_owned_twice():
    with pytest.raises(ValueError, match="get_weather"):
        Orchestrator(drivers=[Echo("get_weather"), Echo("get_weather", "x")])


def test_a_single_driver_never_calls_a_tool_unknown():
    text = '{"tool": "teleport", "arguments": {}}'
    r = Echo("get_weather").process_llm_response(text)
    assert r == DriverResponse(messages=[{"role": "assistant", "content": text}])


# -- prompts -------------------------------------------------------------------------------------


def test_system_message_and_function_description():
    driver = Echo("get_weather", "send_mail")
    description = json.loads(driver.get_function_description())
    assert [t["name"] for t in description["tools"]] == ["get_weather", "send_mail"]
    assert description["tools"][0]["parameters"]["properties"]["city"] == {"type": "string"}
    system = driver.get_driver_system_message()
    assert driver.get_function_description() in system
    assert '"tool": "tool_name"' in system


def test_any_buffer_gets_the_codec():
    buf = LLMStreamBuffer()
    driver = Echo("get_weather")
    session = Session([driver], buf).play(chat_stream(split(f"x <tool_call>{CALL}</tool_call>", 6)))
    assert buf.codec is driver.get_native_backup_strategy().codec
    assert driver.ran == [("get_weather", {"city": "Oslo"})] and session.text == "x "


def test_bad_input_type():
    with pytest.raises(TypeError):
        Echo().process_llm_response(42)


# -- the property: text() is the display text minus exactly the calls that ran ------------------

OWNED = ("get_weather", "boom")
NAMES = st.sampled_from([*OWNED, "teleport"])
ARGS = st.dictionaries(
    st.sampled_from(["city", "n", "q"]),
    st.one_of(st.integers(-5, 5), st.text('ab {}"\\', max_size=4)),
    max_size=2,
)


@st.composite
def call_text(draw) -> str:
    call = {"tool": draw(NAMES), "arguments": draw(ARGS)}
    body = json.dumps(
        [call, {"tool": draw(NAMES)}] if draw(st.booleans()) and draw(st.booleans()) else call
    )
    if draw(st.booleans()):  # broken: cut or corrupted
        body = body[: draw(st.integers(1, len(body)))] + draw(st.sampled_from(["", " x}", "]"]))
    wrap = draw(st.sampled_from(["bare", "fenced", "delimited", "think", "python"]))
    return {
        "bare": body,
        "fenced": f"```json\n{body}\n```",
        "delimited": f"<tool_call>{body}</tool_call>",
        "think": f"<think>{body}</think>",
        "python": f"```python\n{body}\n```",
    }[wrap]


PROSE = st.text(alphabet='ab {}[]"`<>/_\n', max_size=12)
DISPLAY = st.lists(st.one_of(PROSE, call_text()), max_size=6).map("".join)


def _turn_calls(text: str, owned, rule: str = "end") -> tuple[list, list]:
    """The calls a driver owning ``owned`` runs in a whole turn ``text`` under ``rule``, and
    the would-be calls it reports (cut, invalid): the whole-text reading a stream of it must
    agree with, however split."""
    scanner = CODEC.scan_turn(text, rule)
    ran = [c for c in scanner.complete_calls() if c.name in owned]
    return ran, [c for c in scanner.incomplete_calls() if c.name in owned]


def _executed_spans(text: str, owned, rule: str = "end") -> list[tuple[int, int]]:
    """The spans never shown: the calls that ran and those reported incomplete."""
    ran, never = _turn_calls(text, owned, rule)
    return sorted({(c.start, c.end) for c in [*ran, *never]})


def _minus(text: str, spans) -> str:
    out, at = [], 0
    for start, end in spans:
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return "".join(out)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(display=DISPLAY, cuts=st.lists(st.integers(0, 400), max_size=30), data=st.data())
def test_text_is_the_display_minus_exactly_the_calls_that_ran(display, cuts, data):
    points = sorted({c % (len(display) + 1) for c in cuts} | {0, len(display)})
    pieces = [display[a:b] for a, b in zip(points, points[1:], strict=False)] or [""]
    build = data.draw(st.sampled_from([chat_stream, anthropic_stream]))
    fan_out = data.draw(st.booleans())
    rule = data.draw(st.sampled_from(["end", "anywhere"]))
    drivers = (
        [Echo("get_weather", text_calls=rule), Echo("boom", text_calls=rule)]
        if fan_out
        else [Echo(*OWNED, text_calls=rule)]
    )
    session = Session(drivers).play(build(pieces))
    assert session.text == _minus(display, _executed_spans(display, OWNED, rule))
    ran = sorted((name, json.dumps(args, sort_keys=True)) for d in drivers for name, args in d.ran)
    calls, never = _turn_calls(display, OWNED, rule)
    expected = sorted((c.name, json.dumps(c.arguments, sort_keys=True)) for c in calls)
    assert ran == expected  # each call ran exactly once, whatever the chunking
    reported = [(c.name, c.reason) for c in session.all("incomplete_calls")]
    assert reported == [(c.name, c.reason) for c in never]  # and each would-be call told once
    assert [(c.name, c.reason) for c in session.buf.incomplete_calls()] == reported


@pytest.mark.parametrize("events", [False, True])
def test_text_read_before_the_driver_first_sees_the_buffer_is_never_shown_again(events):
    """A client's own buffer gets the driver's codec at the driver's first round. Text that
    ``text()`` handed out before that round (a loop that reads it first, or that brings the
    driver in mid-stream) is shown already: the codec scans on from there, so that text is
    not shown (or told) a second time."""
    from conftest import Recorder

    chunks = read_stream(GOLDEN / "openai_chat" / "compat_mistral_vercel_text.jsonl")
    driver = Recorder("get_weather")
    buf = LLMStreamBuffer(events=events)
    shown = []
    for at, chunk in enumerate(chunks):
        buf.add(chunk)
        shown.append(buf.text())  # before the driver's round: the order the README warns of
        if at >= len(chunks) // 2:  # the driver comes in mid-stream
            driver.process_llm_response(buf)
    assert buf.codec is not None and shown[0] + shown[1] != ""
    buf.close()
    driver.process_llm_response(buf)
    shown.append(buf.text())
    assert "".join(shown) == buf.get_content() != ""
    if events:
        told = [e.text for e in buf.events() if isinstance(e, engine.TextDelta)]
        assert "".join(told) == buf.get_content()


def test_a_text_call_after_text_shown_before_the_codec_came_is_placed_in_all_the_text():
    """The codec that comes mid-stream scans on from what was shown; the calls it finds are
    still placed by their offsets into all the display text: the history's assistant text
    ends at the call's end, and the call's text is never shown."""
    from conftest import Recorder

    def chunk(text: str) -> dict:
        choice = {"index": 0, "delta": {"content": text}}
        return {"id": "c", "object": "chat.completion.chunk", "choices": [choice]}

    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    pieces = ["Hello. ", "Sure: ", call[:20], call[20:50], call[50:], "\n"]
    driver = Recorder("get_weather")
    buf = LLMStreamBuffer()
    buf.add(chunk(pieces[0]))
    shown = [buf.text()]  # shown before any driver sees the buffer
    responses = []
    for piece in pieces[1:]:
        buf.add(chunk(piece))
        responses.append(driver.process_llm_response(buf))
        shown.append(buf.text())
    buf.close()
    responses.append(driver.process_llm_response(buf))
    shown.append(buf.text())
    assert driver.ran == [("get_weather", {"city": "Paris"})]
    assert "".join(shown) == "Hello. Sure: \n"
    history = [m for r in responses for m in (r.messages or [])]
    assert history[0]["role"] == "assistant"
    assert history[0]["content"] == "Hello. Sure: " + call
