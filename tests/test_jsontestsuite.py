"""Completeness agrees with ``json.loads`` on every JSONTestSuite parsing case (issue 9, item 3).

Each file (``tests/jsontestsuite``, provenance in its README) is streamed as a call's argument
text on ``openai_chat`` (``tool_calls[].function.arguments`` fragments) and must give a call
exactly when the standard parser reads an object as the text's first JSON value (issue 16:
a call's arguments are its first complete JSON value; text after it is skipped, and the
message keeps the text up to it and the whitespace right after it), with that object, else
no call, with the reason the incremental scanner gives: "too deep" where the parser runs out
of recursion or the object nests deeper than the engine's bound, "invalid" otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import engine
from engine.model.jsonscan import INVALID, MAX_DEPTH, nests_deeper

SUITE = Path(__file__).resolve().parent / "jsontestsuite"
CASES = sorted(SUITE.glob("*.json"))
BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _stream(text: str, size: int) -> engine.LLMStreamBuffer:
    buf = engine.LLMStreamBuffer()
    fn = {"name": "f", "arguments": ""}
    buf.add(
        _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": fn}]})
    )
    for i in range(0, len(text), size):
        buf.add(
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[i : i + size]}}]})
        )
    buf.add(_chunk({}, "tool_calls"))
    return buf


def _expected(text: str) -> tuple[dict | None, str | None, str]:
    """What the standard parser says of the text's first JSON value: (the object, None) for
    a call, else (None, its reason); and the text the message keeps (all of it, but for a
    call followed by more than whitespace: up to the first other character after it).

    One exception, the issue's rule for ``""``: no argument text at all, closed by the wire's
    normal DONE, is a call without arguments (servers send ``""`` for tools without
    parameters), although ``json.loads("")`` fails."""
    if text == "":
        return {}, None, text
    lead = len(text) - len(text.lstrip(" \t\r\n"))
    if not text[lead:].startswith("{"):
        return None, "invalid", text  # decided at its first character (even depth)
    try:
        value, end = json.JSONDecoder().raw_decode(text, lead)
    except RecursionError:
        return None, "too deep", text
    except ValueError:
        return None, "invalid", text
    assert isinstance(value, dict)  # (it starts with "{")
    if nests_deeper(value, MAX_DEPTH):
        return None, "too deep", text
    after = re.compile(r"[^ \t\r\n]").search(text, end)
    return value, None, text if after is None else text[: after.start()]


def _check(text: str, size: int) -> None:
    value, reason, kept = _expected(text)
    buf = _stream(text, size)
    calls = buf.calls()
    if value is None:
        assert calls == [], f"json.loads rejects this, yet it is a call ({size}-char fragments)"
        (track,) = buf._asm.tracks
        if reason == "too deep" or track.args.state == INVALID:
            # (Text that never closes its object stays open: the end of the stream cuts it.)
            assert track.args.state == INVALID
            assert track.args.reason == reason
    else:
        assert [(c.name, c.arguments) for c in calls] == [("f", value)]
    buf.close()
    assert buf.as_dict()["tool_calls"][0]["function"]["arguments"] == kept
    assert bool(buf.skipped()) is (kept != text)  # what is not kept is listed
    assert buf.calls() == calls


def test_the_suite_is_here():
    assert len(CASES) == 293
    assert (SUITE / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.parametrize("size", [1, 7])
@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_a_call_exactly_when_json_loads_gives_an_object(path, size):
    _check(path.read_bytes().decode("utf-8"), size)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_as_a_member_value_too(path):
    """Wrapped in an object, every case exercises the scanner inside a value (the deep cases
    become objects nested too deep)."""
    _check('{"v": ' + path.read_bytes().decode("utf-8") + "}", 7)
