"""Invariants over every built-in format and every golden stream.

- Re-splitting any stream's string fragments at arbitrary points gives the same result
  (the property whose absence caused a family of bugs across vLLM's parsers), also when the
  stream arrives as raw SSE lines, as text or as bytes.
- Every wire is recognised from its first chunk, and no two built-in descriptors claim the
  same chunk.
- The engine names no wire: a format is data, never a branch.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import re
from pathlib import Path

import pytest
from conftest import ROOT, drawn_cuts, golden_streams, outcome, read_stream, replay, stream_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reasoning import streamed_reasoning

import engine
from engine.cli import project
from engine.cli.resplit import every_character, resplit
from engine.cli.resplit import leaves as _leaves

STREAMS = golden_streams()
WIRES = [engine.load_format(n) for n in engine.list_formats() if engine.load_format(n).is_wire]


def _resplit_findings(path: Path, how: str, cuts) -> list:
    """The re-split check ``mcs-formats test`` makes of a project's streams: the stream
    re-split gives what it gives as recorded, or a finding at the chunk where they differ."""
    stream = project.read_stream(path)
    wire = engine.load_format(path.parent.name)
    return project.check_resplit(wire, stream, _recorded(path), [(how, cuts)])


@functools.cache
def _recorded(path: Path) -> dict:
    """What the stream gives as recorded (``project.replay``), replayed once a golden, not
    once each drawn example: the draw changes only the split."""
    return project.replay(engine.load_format(path.parent.name), project.read_stream(path))


@functools.cache
def _whole(path: Path) -> tuple[str, dict]:
    """The recorded stream's reasoning fragments and outcome, replayed once a golden, not
    once each drawn example (the test only compares with them)."""
    whole = replay(read_stream(path), path.parent.name)
    return streamed_reasoning(whole), outcome(whole)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_one_character_fragments_give_the_same_result(path):
    assert _resplit_findings(path, "one character a piece", every_character) == []


# -- raw SSE: what a client reading the HTTP body line by line, without an SDK, hands to add() ---

# Framing lines that carry no payload: a keep-alive comment, a blank line (the end of an SSE
# event), an id: and a retry: field. Each is one add(), as each data: line is.
FRAMING = (": keep-alive", "", "id: 7", "retry: 3000", ":")
# openai_chat's DONE travels as an SSE line; proxies and SDKs end every other wire's SSE
# stream with it too, where it is the end of the stream (issue 9, item 1).
DONE_LINE = "data: [DONE]"


def sse_event(event: dict, space: str = " ") -> list[str]:
    """One decoded event as its SSE lines: ``event: NAME`` where the wire names the event
    outside the payload (the recording's ``_event``; and the payload's own ``type``, which
    Anthropic, Responses and Cohere also send as the SSE event name), then ``data: {json}``."""
    if "_event" in event and "type" not in event:
        name = event["_event"]
        event = {k: v for k, v in event.items() if k != "_event"}
    else:
        name = event.get("type") if isinstance(event.get("type"), str) else None
    lines = [] if name is None else [f"event:{space}{name}"]
    return [*lines, f"data:{space}{json.dumps(event, ensure_ascii=False)}"]


def _in_turn():
    """Every framing variant in turn: the i-th choice of ``n`` options is ``i % n``."""
    count = iter(range(10**9))
    return lambda kind, n: next(count) % n


def sse_stream(events: list[dict], pick=None, done: str | None = None) -> list[str]:
    """A stream as raw SSE lines; ``pick(kind, n)`` chooses the framing (a hypothesis draw,
    else every variant in turn); ``done`` the wire's own DONE line, last."""
    pick = pick or _in_turn()
    lines: list[str] = []
    for event in events:
        if pick("framing before", 3) == 0:
            lines.append(FRAMING[pick("framing line", len(FRAMING))])
        lines.extend(sse_event(event, " " if pick("space after data:", 2) else ""))
        if pick("blank line after", 2):
            lines.append("")
    return lines if done is None else [*lines, done, ""]


def as_wire(lines: list[str], kind: str, pick=None) -> list:
    """The lines as ``str`` or UTF-8 ``bytes``, each with a line ending (none, LF or CRLF):
    one line is one chunk, so bytes are never cut inside a character."""
    pick = pick or _in_turn()
    out = [line + ("", "\n", "\r\n")[pick("line ending", 3)] for line in lines]
    return [line.encode("utf-8") for line in out] if kind == "bytes" else out


@pytest.mark.parametrize("kind", ["str", "bytes"])
@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_raw_sse_lines_give_the_same_result_as_decoded_events(path, kind):
    events = read_stream(path)
    fmt = path.parent.name
    expected = outcome(replay(copy.deepcopy(events), fmt))
    lines = sse_stream(copy.deepcopy(events))
    assert len(lines) > len(events)  # framing lines are there, and each is a chunk
    assert outcome(replay(as_wire(lines, kind), fmt)) == expected


def _finished(paths: list[Path]) -> list[Path]:
    """The streams their provider finished: only those end with the wire's DONE line (a
    stream cut short has none)."""
    return [p for p in paths if replay(read_stream(p), p.parent.name).is_finished()]


@pytest.mark.parametrize("kind", ["str", "bytes"])
@pytest.mark.parametrize("path", _finished(STREAMS), ids=stream_id)
def test_raw_sse_ending_with_the_wires_done_line_gives_the_same_result(path, kind):
    events = read_stream(path)
    fmt = path.parent.name
    expected = outcome(replay(copy.deepcopy(events), fmt))
    lines = sse_stream(copy.deepcopy(events), done=DONE_LINE)
    assert outcome(replay(as_wire(lines, kind), fmt)) == expected


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_resplitting_fragments_never_changes_the_result(path, data):
    """A drawn re-split passes the check ``mcs-formats test`` makes (the same result, or a
    finding at the chunk where it differs), streams the same reasoning fragments
    (tests/test_reasoning.py), and framed as SSE at random, as str or bytes, the wire
    resolved among all built-ins, gives the same result. One drawn split checks all three:
    drawing the cuts of a long stream is what this costs."""
    drawn: list[list[int]] = []

    def cuts(n: int) -> list[int]:
        drawn.append(drawn_cuts(data)(n))
        return drawn[-1]

    assert _resplit_findings(path, "drawn re-split", cuts) == [], "the project's check"

    events = read_stream(path)
    fmt = path.parent.name
    wire = engine.load_format(fmt)
    fields, done = wire.streamed_fields(), wire.done_fields()
    again = iter(drawn)  # the same split again: resplit asks for cuts fragment by fragment
    split = resplit(copy.deepcopy(events), fields, lambda n: next(again), done)
    reasoning, whole = _whole(path)
    decoded = replay(copy.deepcopy(split), fmt)
    assert streamed_reasoning(decoded) == reasoning, "reasoning fragments"

    # One drawn seed for the framing of every line (a draw per line would exceed what
    # hypothesis lets one example draw on long streams); a failure prints the seed.
    framing = random.Random(data.draw(st.integers(0, 2**32 - 1), label="framing seed"))

    def pick(kind: str, n: int) -> int:
        return framing.randrange(n)

    lines = sse_stream(split, pick)
    kind = data.draw(st.sampled_from(["str", "bytes"]), label="str or bytes")
    assert outcome(replay(as_wire(lines, kind, pick))) == whole, "raw SSE lines"


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_no_two_descriptors_claim_the_same_chunk(path):
    """Nor the same error chunk (``recognize.error``, asked of a chunk no wire claims: a
    stream may be one provider error, and then that names its wire). The check is the one
    ``mcs-formats test`` makes of a project's format beside the built-ins."""
    assert project.check_claims(project.read_stream(path), path.parent.name, WIRES) == []


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_every_wire_is_recognised_from_its_first_recognisable_chunk(path):
    buf = engine.LLMStreamBuffer()
    for event in read_stream(path):
        buf.add(event)
        if buf.format is not None:
            break
    assert buf.format == path.parent.name


def test_every_declared_streamed_field_occurs_in_some_fixture():
    """A declared path that matches nothing in any fixture is a typo or an untested rule."""
    missing = []
    for wire in WIRES:
        events = [e for p in golden_streams([wire.name]) for e in read_stream(p)]
        for chain in wire.streamed_fields():
            if not any(True for e in events for _ in _leaves(_unwrap(e), chain)) and not any(
                True for e in events for _ in _leaves_any(_unwrap(e), chain)
            ):
                missing.append((wire.name, ".".join(chain)))
    assert not missing


def _unwrap(event: dict) -> dict:
    if len(event) == 1:
        ((_, value),) = event.items()
        if isinstance(value, dict):
            return value
    return event


def _leaves_any(event, chain):
    """Like _leaves but also counts one-character strings (presence, not splittability)."""
    if not chain:
        return
    head, rest = chain[0], chain[1:]
    if head == "*":
        for entry in event if isinstance(event, list) else [event]:
            yield from _leaves_any(entry, rest)
    elif isinstance(event, dict) and head in event:
        if not rest:
            yield event
        else:
            yield from _leaves_any(event[head], rest)


WIRE_NAMES = ["openai", "anthropic", "bedrock", "gemini", "cohere", "ollama", "mistral",
              "deepseek", "groq", "responses", "converse"]


def test_engine_names_no_wire():
    pattern = re.compile(r"[\"'](?:" + "|".join(WIRE_NAMES) + r")[a-z_]*[\"']", re.IGNORECASE)
    offenders = []
    for source in sorted((ROOT / "engine").rglob("*.py")):
        for number, line in enumerate(source.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "engine/ names a wire:\n" + "\n".join(offenders)


def test_a_toy_wire_from_its_descriptor_alone_passes_its_goldens():
    """The language is open to users: a wire no provider has, from its folder alone."""
    folder = Path(__file__).parent / "toy"
    fmt = engine.load_format(folder / "toy_wire.yaml")
    for stream in sorted(folder.glob("*.jsonl")):
        buf = engine.LLMStreamBuffer(strategies=[fmt])
        for event in read_stream(stream):
            buf.add(event)
        buf.close()
        expect = __import__("json").loads(stream.with_suffix(".expect.json").read_text())
        got = outcome(buf)
        assert got["message"] == expect["message"]
        assert got["text"] == expect["text"]
        assert got["calls"] == expect["calls"]
        assert got["stop_reason"] == expect["stop_reason"]
        assert buf.is_finished()


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_a_call_once_returned_is_never_rebuilt(path):
    """``calls()`` grows in place: a call it has returned stays the same object as later chunks
    arrive (rebuilding the list on every chunk made a stream of whole calls quadratic). The
    check is the one ``mcs-formats test`` makes of a project's streams."""
    assert project.check_never_rebuilt(project.read_stream(path), None) == []
