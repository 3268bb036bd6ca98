"""A text call's arguments nested deep are refused as the native path refuses them.

The native path refuses arguments nested past ``MAX_DEPTH`` (engine/model/jsonscan.py) as
"too deep", and arguments nested past what the JSON parser reads likewise. A text call's
arguments (an object, or OpenAI's leak shape: the arguments as JSON text) are held to the
same bound: a call nested too deep is a "too deep" incomplete call, never a call that runs
and never a RecursionError out of the engine. Checked on every wire's recorded text turn,
streamed through a driver's buffer, as a whole message, as a ``str``, and whole through the
codec; the native verdict is taken from a recorded OpenAI Chat call stream.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from conftest import drive, read_stream
from test_incomplete_cause import TEXT_WIRE_CALLS, with_arguments
from test_one_fate import run
from text_turns import WIRES, split, text_message, text_turn

import engine
from engine import BaseDriver, Tool
from engine.model.jsonscan import MAX_DEPTH


def nested(depth: int) -> str:
    """An arguments object nesting ``depth`` deep, the object itself counted."""
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


ARGUMENTS = {
    "at the bound": nested(MAX_DEPTH),
    "past the bound": nested(MAX_DEPTH + 1),
    "past the parser": nested(100_000),
}


def text_call(arguments: str, as_text: bool) -> str:
    """A call of ``f`` with these arguments, as an object or as JSON text (the leak shape)."""
    value = json.dumps(arguments) if as_text else arguments
    return '<tool_call>{"tool": "f", "arguments": ' + value + "}</tool_call>"


def cut(depth: int) -> str:
    """Arguments cut short once they nest ``depth`` deep."""
    return '{"a": ' + "[" * (depth - 1)


@cache
def native(arguments: str) -> str | None:
    """The native path's verdict: None when the call runs, else its incomplete reason. The
    same for every wire (it is OpenAI Chat's), so taken once per arguments: it costs more than
    the wire's own turns (a 100,000-deep call through the native scanner)."""
    path = next(p for p in TEXT_WIRE_CALLS if p.parent.name == "openai_chat")
    fmt = engine.load_format("openai_chat")
    events, replaced = with_arguments(fmt, read_stream(path), arguments)
    assert replaced
    buf = run(fmt, events)[0]
    if buf.calls():
        return None
    (never,) = buf.incomplete_calls()
    return never.reason


class F(BaseDriver):
    """Owns ``f``; logs what runs."""

    def __init__(self, wire: str) -> None:
        super().__init__(strategies=[engine.load_format(wire)])  # whole messages are ambiguous
        self.ran: list[dict] = []

    def list_tools(self) -> list[Tool]:
        return [Tool("f", "f", {"type": "object"})]

    def execute_tool(self, tool_name: str, arguments: dict) -> str:
        self.ran.append(arguments)
        return "done"


def turn(wire: str, given: list[dict] | dict | str) -> tuple[int, list[tuple[str, str | None]]]:
    """How many calls ran and the incomplete calls' (reason, cause), over a turn given as a
    stream (a driver's round after each chunk and after ``close()``), a message or a str."""
    driver = F(wire)
    if isinstance(given, list):
        responses = drive(driver, given)
        ran = sum(verdicts(r)[0] for r in responses)
        never = [v for r in responses for v in verdicts(r)[1]]
    else:
        ran, never = verdicts(driver.process_llm_response(given))
    assert len(driver.ran) == ran
    return ran, never


def verdicts(response: engine.DriverResponse) -> tuple[int, list[tuple[str, str | None]]]:
    return len(response.executed_calls or []), [
        (c.reason, c.cause) for c in response.incomplete_calls or []
    ]


@pytest.mark.parametrize("as_text", [False, True], ids=["object", "json text"])
@pytest.mark.parametrize("depth", ARGUMENTS)
@pytest.mark.parametrize("wire", WIRES)
def test_a_deep_text_call_is_refused_as_the_native_one(wire, depth, as_text):
    arguments = ARGUMENTS[depth]
    reason = native(arguments)
    assert reason == (None if depth == "at the bound" else "too deep")
    expected = (1, []) if reason is None else (0, [("too deep", "too deep")])
    text = text_call(arguments, as_text)
    for given in (text_turn(wire, split(text, 4096)), text_message(wire, text), text):
        assert turn(wire, given) == expected


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1, 100_000])
@pytest.mark.parametrize("wire", WIRES)
def test_a_deep_text_call_cut_short_is_refused_as_the_native_one(wire, depth):
    """Cut inside arguments already nested past the bound: "too deep", as natively, not "cut"."""
    reason = native(cut(depth))
    assert reason == ("cut" if depth == MAX_DEPTH else "too deep")
    text = '<tool_call>{"tool": "f", "arguments": ' + cut(depth)
    stream = turn(wire, text_turn(wire, split(text, 4096)))
    assert stream[0] == 0 and [r for r, _ in stream[1]] == [reason]
    assert stream[1] == [(reason, "too deep" if reason == "too deep" else "done inside call")]
    assert turn(wire, text) == (0, [(reason, "too deep" if reason == "too deep" else None)])


@pytest.mark.parametrize("as_text", [False, True], ids=["object", "json text"])
@pytest.mark.parametrize("depth", ARGUMENTS)
def test_the_codec_finds_no_call_nested_too_deep(depth, as_text):
    codec = engine.load_format("mcs_text")
    found = codec.extract(text_call(ARGUMENTS[depth], as_text))
    assert len(found) == (1 if depth == "at the bound" else 0)
