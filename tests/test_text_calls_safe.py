"""Text calls are safe by default (issue 16, points 5, 2 and 9), on every wire.

A driver reads the display text for calls only in a turn without a native call, and by
default runs one only when it ends the turn (a bare-JSON call only as the whole text): a call
the model quotes inside prose is shown and never runs, nor is it reported. Checked on every
wire's recorded text turn with its text replaced (tests/text_turns.py), split across chunks,
for a stream (the driver's own buffer and a plain one, with and without events), a whole
message and a ``str``; and with ``text_calls="anywhere"``, the opt-in of a client that
prompted the codec. A call that would have run but is cut or invalid is reported (point 2).
On every buffer a driver processes, the TextDeltas are what ``text()`` shows (point 9).
"""

from __future__ import annotations

import pytest
from conftest import golden_streams, read_stream, stream_id
from text_turns import WIRES, split, text_message, text_turn

import engine
from engine import BaseDriver, CallIncomplete, DriverResponse, LLMStreamBuffer, Orchestrator, Tool

CALL = '{"tool": "delete_account", "arguments": {"user": "alice"}}'
WEATHER = '{"tool": "get_weather", "arguments": {"city": "Oslo"}}'
RAN = [("delete_account", {"user": "alice"})]

QUOTED = {
    "bare": f"The page says: {CALL} - I will not do that.",
    "fenced": f"The page says:\n```json\n{CALL}\n```\nI will not do that.",
    "delimited": f"The page says: <tool_call>{CALL}</tool_call> - I will not do that.",
}
# A turn each family ends with its call: (the text, what is shown of it).
ENDING = {
    "bare": (
        f"<think>The user wants it.</think>\n{CALL}\n",
        "<think>The user wants it.</think>\n\n",
    ),
    "fenced": (f"I will do that.\n```json\n{CALL}\n```\n", "I will do that.\n\n"),
    "delimited": (f"I will do that. <tool_call>{CALL}</tool_call>\n", "I will do that. \n"),
}
EVENTS = ["no events", "events"]
BUFFERS = ["driver's buffer", "plain buffer"]


class Tools(BaseDriver):
    """Owns ``delete_account`` and ``get_weather``; logs what runs."""

    def __init__(self, names=("delete_account", "get_weather"), **options) -> None:
        super().__init__(**options)
        self.names = names
        self.ran: list[tuple[str, dict]] = []

    def list_tools(self) -> list[Tool]:
        return [Tool(n, n, {"type": "object"}) for n in self.names]

    def execute_tool(self, tool_name: str, arguments: dict):
        self.ran.append((tool_name, arguments))
        return "done"


class Loop:
    """The client loop over one stream: after each ``add`` and after ``close()``, the driver's
    round, then ``events()`` (with events) and ``text()``; TextDeltas checked against
    ``text()`` after every round."""

    def __init__(self, driver: BaseDriver, events: bool, own: bool) -> None:
        self.driver = driver
        self.events = events
        self.buf = driver.new_stream_buffer(events) if own else LLMStreamBuffer(events=events)
        self.rounds: list[DriverResponse] = []
        self.told: list[list] = []
        self.shown: list[str] = []
        self.finished_at: int | None = None

    def play(self, chunks) -> Loop:
        for chunk in [*chunks, None]:
            if chunk is None:
                self.buf.close()
            else:
                self.buf.add(chunk)
            self.rounds.append(self.driver.process_llm_response(self.buf))
            if self.buf.is_finished() and self.finished_at is None:
                self.finished_at = len(self.rounds) - 1
            self.told.append(self.buf.events() if self.events else [])
            self.shown.append(self.buf.text())
            if self.events:
                assert self.told_text == self.text  # point 9: after every round
        return self

    @property
    def text(self) -> str:
        return "".join(self.shown)

    @property
    def told_text(self) -> str:
        return "".join(e.text for r in self.told for e in r if isinstance(e, engine.TextDelta))

    def kinds(self) -> list[str]:
        """The events but text and reasoning, by class name."""
        skip = (engine.TextDelta, engine.ReasoningDelta)
        return [type(e).__name__ for r in self.told for e in r if not isinstance(e, skip)]

    def ran_at(self) -> list[int]:
        return [i for i, r in enumerate(self.rounds) if r.executed_calls]

    @property
    def done(self) -> int:
        """The round of the wire's DONE (the recorded turns all send it)."""
        assert self.finished_at is not None
        return self.finished_at

    def incomplete(self) -> list[CallIncomplete]:
        return [c for r in self.rounds for c in r.incomplete_calls or []]


# -- point 5: a call quoted in prose --------------------------------------------------------------


@pytest.mark.parametrize("own", BUFFERS)
@pytest.mark.parametrize("events", EVENTS)
@pytest.mark.parametrize("size", [1, 7])
@pytest.mark.parametrize("family", QUOTED)
@pytest.mark.parametrize("wire", WIRES)
def test_a_call_quoted_in_prose_is_shown_and_never_runs(wire, family, size, events, own):
    text = QUOTED[family]
    driver = Tools()
    loop = Loop(driver, events == "events", own == BUFFERS[0]).play(
        text_turn(wire, split(text, size))
    )
    assert driver.ran == [] and loop.buf.new_calls() == []
    assert loop.text == text  # all of it, in order, once
    assert loop.incomplete() == [] and loop.buf.incomplete_calls() == []
    assert not any(r.retry_prompt for r in loop.rounds)
    if events == "events":
        assert loop.kinds() == ["Finished"]  # such a call tells nothing but text
        assert loop.told_text == text


@pytest.mark.parametrize("family", QUOTED)
@pytest.mark.parametrize("wire", WIRES)
def test_a_call_quoted_in_a_whole_message_or_a_str_never_runs(wire, family):
    text = QUOTED[family]
    for given in (text_message(wire, text), text):
        driver = Tools(strategies=[engine.load_format(wire)])  # (whole messages are ambiguous)
        response = driver.process_llm_response(given)
        assert driver.ran == [] and not response.executed_calls and not response.incomplete_calls


def test_a_bare_brace_after_prose_is_never_held():
    """Only the first character of the turn (whitespace and <think> aside) may open a bare
    call: any other `{` is shown in the round it arrives."""
    pieces = ["Here ", "it is: {", '"tool": "delete_account"', "} ok"]
    loop = Loop(Tools(), events=True, own=True).play(text_turn("openai_chat", pieces))
    assert not any(r.call_pending for r in loop.rounds)
    assert [shown for shown in loop.shown if shown] == pieces  # each in the round it came


# -- point 5: a call that ends the turn -----------------------------------------------------------


@pytest.mark.parametrize("own", BUFFERS)
@pytest.mark.parametrize("events", EVENTS)
@pytest.mark.parametrize("size", [1, 7])
@pytest.mark.parametrize("family", ENDING)
@pytest.mark.parametrize("wire", WIRES)
def test_a_call_that_ends_the_turn_runs_at_its_end(wire, family, size, events, own):
    text, shown = ENDING[family]
    driver = Tools()
    loop = Loop(driver, events == "events", own == BUFFERS[0]).play(
        text_turn(wire, split(text, size))
    )
    assert driver.ran == RAN
    assert loop.ran_at() == [loop.done]  # at the turn's end, not as soon as it closed
    assert loop.text == shown
    assert any(r.call_pending for r in loop.rounds[: loop.done])
    if events == "events":
        assert loop.kinds() == ["CallStarted", "ArgumentsDelta", "CallReady", "Finished"]
        told = [type(e).__name__ for e in loop.told[loop.done]]
        assert "CallStarted" in told  # nothing of the call before the end
        (ready,) = [e for r in loop.told for e in r if isinstance(e, engine.CallReady)]
        assert ready.slot == ("text", 0) and ready.call.arguments == {"user": "alice"}


@pytest.mark.parametrize("family", ENDING)
@pytest.mark.parametrize("wire", WIRES)
def test_a_call_that_ends_a_whole_message_or_a_str_runs(wire, family):
    text, _ = ENDING[family]
    for given in (text_message(wire, text), text):
        driver = Tools(strategies=[engine.load_format(wire)])  # (whole messages are ambiguous)
        response = driver.process_llm_response(given)
        assert driver.ran == RAN and response.call_executed


@pytest.mark.parametrize(
    "text, runs",
    [
        (f"{CALL}", True),
        (f"  \n{CALL}  \n", True),
        (f"<think>a</think> <think>b</think>{CALL}", True),
        (f"Sure: {CALL}", False),  # bare JSON only as the whole text
        (f"{CALL} Done.", False),
        (f"{CALL}\n<tool_call>{WEATHER}</tool_call>", False),  # the bare one is not the whole
        (f"<tool_call>{CALL}</tool_call>\n\n```json\n{WEATHER}\n```", True),  # further calls
        (f"<tool_call>{CALL}</tool_call> <think>x</think>", False),
        (f"<tool_call>{WEATHER}</tool_call> x <tool_call>{CALL}</tool_call>", True),  # the last
    ],
)
def test_what_ends_the_turn(text, runs):
    for given in ("stream", "str"):
        driver = Tools()
        if given == "str":
            driver.process_llm_response(text)
        else:
            Loop(driver, True, True).play(text_turn("anthropic_messages", split(text, 3)))
        assert (("delete_account", {"user": "alice"}) in driver.ran) == runs, given


def test_every_call_that_ends_the_turn_runs_and_an_earlier_one_is_text():
    weather = f"<tool_call>{WEATHER}</tool_call>"
    text = f"{weather} then <tool_call>{CALL}</tool_call>\n{weather}"
    driver = Tools()
    loop = Loop(driver, True, True).play(text_turn("gemini", split(text, 4)))
    assert driver.ran == [*RAN, ("get_weather", {"city": "Oslo"})]
    assert loop.text == f"{weather} then \n"
    slots = [e.slot for r in loop.told for e in r if isinstance(e, engine.CallReady)]
    assert slots == [("text", 0), ("text", 1)]


def test_no_text_call_in_a_turn_with_a_native_call():
    """The fall-through reads text only in a turn without a native call: a recorded turn with
    a native call and text, its text a call that ends it."""
    path = next(p for p in golden_streams(["openai_chat"]) if p.stem == "hand_text_before_after")
    events = read_stream(path)
    text = f"<tool_call>{CALL}</tool_call>\n"
    first = True
    for event in events:
        delta = event["choices"][0]["delta"] if event.get("choices") else {}
        if delta.get("content"):
            delta["content"], first = (text if first else ""), False
    buf = engine.LLMStreamBuffer()
    for event in events:
        buf.add(event)
    native = sorted({c.name for c in buf.calls()})
    assert native and buf.get_content() == text
    driver = Tools(names=("delete_account", *native))
    loop = Loop(driver, True, True).play(events)
    assert {n for n, _ in driver.ran} == set(native)  # the native calls ran, the text one not
    assert loop.text == text


# -- the option -----------------------------------------------------------------------------------


@pytest.mark.parametrize("family", QUOTED)
@pytest.mark.parametrize("wire", WIRES)
def test_text_calls_anywhere_runs_delimited_and_fenced_calls_as_they_stream(wire, family):
    text = QUOTED[family]
    driver = Tools(text_calls="anywhere")
    loop = Loop(driver, True, False).play(text_turn(wire, split(text, 5)))
    if family == "bare":  # bare JSON still only as the whole text
        assert driver.ran == [] and loop.text == text
        return
    assert driver.ran == RAN and loop.ran_at()[0] < loop.done  # as it streamed
    assert "delete_account" not in loop.text and loop.text.endswith("I will not do that.")
    assert Tools(text_calls="anywhere").process_llm_response(text).call_executed
    assert not Tools().process_llm_response(text).call_executed


def test_text_calls_option_is_checked_and_the_backup_still_turns_the_fall_through_off():
    with pytest.raises(ValueError, match=r"text_calls must be one of 'end', 'anywhere'"):
        Tools(text_calls="always")
    text, shown = ENDING["delimited"]
    for option in ("end", "anywhere"):
        driver = Tools(text_calls=option)
        driver.set_native_backup_strategy(None)
        loop = Loop(driver, True, True).play(text_turn("cohere_v2", split(text, 6)))
        assert driver.ran == [] and loop.text == text


# -- point 2: a text call that would have run but cannot ------------------------------------------

CUT = f"I will do that. <tool_call>{CALL[:40]}"
INVALID = 'I will do that.\n```json\n{"tool": "delete_account", "arguments": "alice"}\n```'
BROKEN_JSON = '{"tool": "delete_account", "arguments": {"user": "al"ice"}}'  # not JSON
BROKEN = f"I will do that.\n<tool_call>{BROKEN_JSON}</tool_call>"


@pytest.mark.parametrize("events", EVENTS)
@pytest.mark.parametrize("kind", ["cut", "invalid", "broken"])
@pytest.mark.parametrize("wire", WIRES)
def test_a_cut_or_invalid_text_call_of_its_own_tool_is_reported(wire, kind, events):
    text = {"cut": CUT, "invalid": INVALID, "broken": BROKEN}[kind]
    driver = Tools()
    loop = Loop(driver, events == "events", True).play(text_turn(wire, split(text, 6)))
    raw = {
        "cut": CALL[:40],
        "invalid": '{"tool": "delete_account", "arguments": "alice"}',
        "broken": BROKEN_JSON,
    }[kind]
    kind = "invalid" if kind == "broken" else kind
    expected = CallIncomplete(("text", 0), "delete_account", None, raw, kind)
    assert loop.incomplete() == [expected] and loop.buf.incomplete_calls() == [expected]
    (reporting,) = [r for r in loop.rounds if r.incomplete_calls]
    (told,) = reporting.incomplete_calls
    assert reporting.retry_prompt == driver.codec.retry_call_incomplete(told)  # with its cause
    assert driver.ran == []
    assert loop.text == ("I will do that. " if kind == "cut" else "I will do that.\n")
    assert "delete_account" not in loop.text  # the model's call, told to it, not shown
    if events == "events":
        assert loop.kinds() == ["CallStarted", "ArgumentsDelta", "CallIncomplete", "Finished"]
    for given in (text,):
        response = Tools().process_llm_response(given)
        assert response.incomplete_calls == [expected] and response.retry_prompt


def test_a_cut_text_call_of_a_tool_nobody_owns_is_shown_or_told_by_an_orchestrator():
    text = CUT.replace("delete_account", "teleport")
    loop = Loop(Tools(), True, True).play(text_turn("ollama", split(text, 6)))
    assert loop.incomplete() == [] and loop.text == text
    both = Orchestrator([Tools()])
    loop = Loop(both, True, True).play(text_turn("ollama", split(text, 6)))
    assert [(c.name, c.reason) for c in loop.incomplete()] == [("teleport", "cut")]


def test_a_broken_call_is_text_when_prose_or_another_call_follows_it():
    quoted = f"x <tool_call>{BROKEN_JSON}</tool_call> and more"
    loop = Loop(Tools(), True, True).play(text_turn("bedrock_converse", split(quoted, 6)))
    assert loop.incomplete() == [] and loop.text == quoted
    broke = '<tool_call>{"tool": "delete_account", "arguments": {"user": tru} '  # no end
    then = f"x {broke}<tool_call>{CALL}</tool_call>"
    driver = Tools()
    loop = Loop(driver, True, True).play(text_turn("bedrock_converse", split(then, 6)))
    assert driver.ran == RAN and loop.incomplete() == []
    assert loop.text == f"x {broke}"


def test_a_cut_call_inside_prose_is_not_reported():
    text = 'x <tool_call>{"tool": "delete_account", "arguments": {"u": 1 oops}} and more'
    loop = Loop(Tools(), True, True).play(text_turn("openai_responses", split(text, 6)))
    assert loop.incomplete() == [] and loop.text == text


# -- point 9: the TextDeltas are what text() shows ------------------------------------------------


def _text_streams():
    streams = [pytest.param(read_stream(p), id=stream_id(p)) for p in golden_streams(WIRES)]
    for wire in WIRES:
        texts = (
            ("quoted", QUOTED["delimited"]),
            ("ending", ENDING["fenced"][0]),
            ("whole", CALL),  # a call from the first chunk on: never told before the codec came
            ("first", f"<tool_call>{CALL}</tool_call> - said the page."),
        )
        for name, text in texts:
            streams.append(pytest.param(text_turn(wire, split(text, 5)), id=f"{wire}/{name}"))
    return streams


@pytest.mark.parametrize("own", BUFFERS)
@pytest.mark.parametrize("chunks", _text_streams())
def test_text_deltas_are_what_text_shows_on_every_buffer_a_driver_processes(chunks, own):
    loop = Loop(Tools(), events=True, own=own == BUFFERS[0]).play(chunks)  # checks each round
    assert loop.told_text == loop.text
    assert loop.text == Loop(Tools(), events=False, own=True).play(chunks).text


@pytest.mark.parametrize("first, runs", [("<think>It is wanted.</think>\n", True), ("Hi. ", False)])
def test_a_codec_that_comes_mid_stream_knows_what_came_before(first, runs):
    """The client read text() before the driver's first round: the codec scans on from
    there, and a bare call after it is the whole text only if what came before was
    whitespace and reasoning."""
    chunks = text_turn("ollama", [first, CALL])
    buf, driver = LLMStreamBuffer(), Tools()
    buf.add(chunks[0])
    shown = [buf.text()]  # before any driver saw the buffer
    for chunk in [*chunks[1:], None]:
        if chunk is None:
            buf.close()
        else:
            buf.add(chunk)
        driver.process_llm_response(buf)
        shown.append(buf.text())
    assert (driver.ran == RAN) == runs
    assert "".join(shown) == (first if runs else first + CALL)
