"""Fuzzing every golden stream: nothing crashes, nothing half-applied, nothing additive raises.

Every golden stream (``tests/golden/<format>/*.jsonl``, discovered: a new fixture or format
needs no code here) is fed with random mutations, and every public question is asked after
every chunk, on a plain buffer and on a driver's buffer with its round. The invariants
(issue 9, "Acceptance"):

- only ``ChunkError``, ``UnknownFormatError`` or ``DescriptorError`` ever escapes a public
  call (``add``, ``close``, ``calls``, ``forming``, ``as_dict``, ``get_content``, ``text``,
  ``is_finished``, ``stop_reason`` / ``usage`` / ``error``, ``process_llm_response``);
- a chunk that raises names its own index and leaves everything observable (``as_dict()``,
  ``get_content()``, ``calls()``, and the rest of :func:`_observe`) exactly as before it;
- display text already handed out stays a prefix of ``get_content()``;
- additive mutations (an unknown field, an unknown event type, SSE framing) never raise;
  unknown events are skipped and counted in ``unknown_events``.

Bounded in time: a fixed-seed profile (``derandomize``), a deadline per example and a modest
number of examples, so CI is deterministic and fast. ``FUZZ_EXAMPLES=2000`` explores more
locally (still deterministic for a given number).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN, golden_streams, read_stream, replay, stream_id
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import engine
from engine.language.registry import wire_strategies

ALLOWED = (engine.ChunkError, engine.UnknownFormatError, engine.DescriptorError)

STREAMS = golden_streams()

settings.register_profile(
    "fuzz-ci",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=timedelta(seconds=10),  # generous: a loaded 2-core CI runner; most take ~50 ms
    derandomize=True,  # a fixed seed: the same examples on every run
    database=None,  # nothing remembered between runs: CI is deterministic
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
FUZZ = settings.get_profile("fuzz-ci")


# -- observing a buffer -----------------------------------------------------------------------


def _ask(question: Callable[[], Any]) -> Any:
    """Ask one public question: its answer, or the name of an allowed error it raised. Any
    other exception escapes, and fails the test."""
    try:
        return question()
    except ALLOWED as exc:
        return f"<{type(exc).__name__}>"


def _plain(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _observe(buf: engine.LLMStreamBuffer) -> dict:
    """Everything observable, as plain data (a chunk that raises must change none of it)."""
    return {
        "format": buf.format,
        "message": _ask(lambda: _plain(buf.as_dict())),
        "content": _ask(buf.get_content),
        "calls": _ask(lambda: [(c.name, _plain(c.arguments), c.id) for c in buf.calls()]),
        "forming": _ask(lambda: tuple(buf.forming().__dict__.values())),
        "finished": _ask(buf.is_finished),
        "stop_reason": _ask(lambda: _plain(buf.stop_reason)),
        "usage": _ask(lambda: _plain(buf.usage)),
        "error": _ask(lambda: _plain(buf.error)),
        "unknown": _ask(lambda: dict(buf.unknown_events)),
    }


class _EchoDriver(engine.BaseDriver):
    """A driver owning the tools a stream calls; a tool echoes its arguments."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self._names = names

    def list_tools(self) -> list[engine.Tool]:
        return [engine.Tool(name=n) for n in self._names]

    def execute_tool(self, tool_name: str, arguments: dict) -> Any:
        return {"echo": arguments}


_CALL_NAMES: dict[Path, list[str]] = {}


def _call_names(path: Path) -> list[str]:
    """The names the unmutated stream calls (the driver owns them), and one of its own."""
    if path not in _CALL_NAMES:
        buf = replay(read_stream(path))
        _CALL_NAMES[path] = sorted({c.name for c in buf.calls()} | {"fuzz_tool"})
    return _CALL_NAMES[path]


def run_checked(feed: list[Any], driver: engine.BaseDriver | None = None) -> dict:
    """Feed every chunk, ask every question after each, check the invariants; the outcome."""
    buf = driver.new_stream_buffer() if driver is not None else engine.LLMStreamBuffer()
    handed = ""  # what text() handed out, on a buffer without a codec
    content = ""
    for index, chunk in enumerate(feed):
        before = _observe(buf)
        try:
            buf.add(chunk)
        except engine.ChunkError as exc:
            assert exc.index == index, f"chunk {index} raised naming chunk {exc.index}: {exc}"
            after = _observe(buf)
            changed = {k for k in before if before[k] != after[k]}
            assert not changed, f"chunk {index} raised ({exc}) and changed {sorted(changed)}"
        except ALLOWED:
            pass
        handed, content = _round(buf, driver, handed, content)
    _ask(buf.close)
    handed, content = _round(buf, driver, handed, content)
    return _observe(buf)


def _round(buf, driver, handed: str, content: str) -> tuple[str, str]:
    """One client round: the driver's look, the display text, every question."""
    if driver is not None:
        _ask(lambda: driver.process_llm_response(buf))
    new = _ask(buf.text)
    _observe(buf)
    now = _ask(buf.get_content)
    if isinstance(now, str):
        assert now.startswith(content), "display text already seen left get_content()"
        content = now
        if buf.codec is None and isinstance(new, str):
            handed += new
            assert now.startswith(handed), "text() handed out what get_content() does not hold"
    return handed, content


# -- mutations ---------------------------------------------------------------------------------

PALETTE = [0, -1, 7, 2**64, 1.5, True, False, "", "x", "{", "\\", [], [1], ["x"], {}, {"a": 1}]


def _children(node: Any) -> Any:
    if isinstance(node, dict):
        return node.items()
    return enumerate(node) if isinstance(node, list) else ()


def _positions(node: Any, path: tuple = ()) -> list[tuple]:
    """Every path to a value inside an event (dict keys and list indexes), root excluded."""
    out = []
    items = _children(node)
    for key, value in items:
        out.append((*path, key))
        out.extend(_positions(value, (*path, key)))
    return out


def _dicts(node: Any, path: tuple = ()) -> list[tuple]:
    out = [path] if isinstance(node, dict) else []
    items = _children(node)
    for key, value in items:
        out.extend(_dicts(value, (*path, key)))
    return out


def _at(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


def _pick(data: st.DataObject, seq: list, label: str) -> Any:
    return seq[data.draw(st.integers(0, len(seq) - 1), label=label)]


def _chunk_index(data: st.DataObject, feed: list) -> int | None:
    dicts = [i for i, c in enumerate(feed) if isinstance(c, dict)]
    return _pick(data, dicts, "chunk") if dicts else None


def _value_place(data: st.DataObject, feed: list) -> tuple[Any, Any] | None:
    """Somewhere inside one chunk: the container of a value and its key (or index)."""
    i = _chunk_index(data, feed)
    if i is None:
        return None
    positions = _positions(feed[i])
    if not positions:
        return None
    path = _pick(data, positions, "path")
    return _at(feed[i], path[:-1]), path[-1]


def mutate_value(data: st.DataObject, feed: list, kind: str) -> None:
    """Delete a key, null a value or change its type, somewhere inside one chunk."""
    place = _value_place(data, feed)
    if place is None:
        return
    parent, key = place
    if kind == "delete":
        del parent[key]
    elif kind == "null":
        parent[key] = None
    else:
        current = parent[key]
        others = [v for v in PALETTE if type(v) is not type(current)]
        parent[key] = copy.deepcopy(_pick(data, others, "value"))


def add_unknown_field(data: st.DataObject, feed: list) -> None:
    """A field no descriptor names, in any object of one chunk (not beside the one key of a
    wrapped event such as Bedrock's ``{"contentBlockDelta": {...}}``: that changes its shape)."""
    i = _chunk_index(data, feed)
    if i is None:
        return
    places = [p for p in _dicts(feed[i]) if p or len(feed[i]) != 1]
    if not places:
        return
    place = _at(feed[i], _pick(data, places, "place"))
    place["fuzz_unknown_field"] = copy.deepcopy(_pick(data, PALETTE, "value"))


UNKNOWN_EVENT = "fuzz.unknown_event"


def unknown_event(fmt: str, sample: dict) -> dict | None:
    """An event of a type the wire does not have, shaped as the wire names its events; None
    for wires that name no event type (delta-merge and whole-part wires)."""
    disc = engine.load_format(fmt).descriptor["events"].get("discriminator")
    if disc is None:
        return None
    field = disc["field"] if isinstance(disc, dict) else disc
    wrapped = isinstance(disc, dict) and disc.get("or_wrapped") and field not in sample
    if wrapped:
        return {UNKNOWN_EVENT: {"n": 1}}
    return {field: UNKNOWN_EVENT, "n": 1}


def reorder(data: st.DataObject, feed: list, kind: str) -> None:
    if not feed:
        return
    i = data.draw(st.integers(0, len(feed) - 1), label="at")
    if kind == "duplicate":
        feed.insert(i, copy.deepcopy(feed[i]))
    elif kind == "drop":
        del feed[i]
    elif kind == "swap":
        j = data.draw(st.integers(0, len(feed) - 1), label="with")
        feed[i], feed[j] = feed[j], feed[i]


SSE_NOISE = [
    "data: [DONE]",
    b"data: [DONE]",
    "data:[DONE]",
    "[DONE]",
    "data: ",
    "data: {",
    "data: []",
    "data: null",
    "event: fuzz",
    "event:",
    ": keep-alive",
    "id: 7",
    "retry: x",
    "",
    b"\r\n",
    "{}",
    "[]",
    "null",
    '{"": {}}',
    "\ufeff{}",
]


def insert_raw(data: st.DataObject, feed: list, kind: str) -> None:
    """Random bytes or text, a JSON text cut short, or an SSE line, at a random place."""
    i = data.draw(st.integers(0, len(feed)), label="at")
    if kind == "bytes":
        raw: Any = data.draw(st.binary(max_size=24), label="bytes")
    elif kind == "text":
        raw = data.draw(st.text(max_size=24), label="text")
    elif kind == "cut":
        j = _chunk_index(data, feed)
        if j is None:
            return
        text = json.dumps(feed[j])
        raw = text[: data.draw(st.integers(0, max(0, len(text) - 1)), label="cut")]
    elif kind == "deep_text":
        depth = _pick(data, [50, 900, 100_000], "depth")
        raw = "[" * depth + "]" * depth
    else:
        raw = _pick(data, SSE_NOISE, "line")
    feed.insert(i, raw)


def nest_deep(data: st.DataObject, feed: list) -> None:
    """A value inside one chunk wrapped in arrays, a few or thousands deep."""
    place = _value_place(data, feed)
    if place is None:
        return
    parent, key = place
    value = parent[key]
    for _ in range(_pick(data, [3, 200, 5000], "depth")):
        value = [value]
    parent[key] = value


DESTRUCTIVE = [
    "delete", "null", "retype", "duplicate", "drop", "swap", "bytes", "text", "cut", "sse",
    "unknown_field", "unknown_event", "deep", "deep_text",
]


def sse_framed(data: st.DataObject, events: list[dict]) -> list[Any]:
    """The stream as raw SSE lines, as a client reading the HTTP body sees it: ``event:``
    lines where the name travels outside the payload, ``data:`` lines (text or bytes, with
    or without the space, CRLF or not), and comment / ``id:`` / ``retry:`` / blank lines."""
    out: list[Any] = []
    for ev in events:
        if data.draw(st.booleans(), label="noise"):
            out.append(_pick(data, [": keep-alive", "id: 3", "retry: 1000", "", "\n"], "line"))
        name = ev.get("_event") if "type" not in ev else None
        payload = {k: v for k, v in ev.items() if k != "_event"} if name else ev
        lines = [f"event: {name}"] if name else []
        sep = _pick(data, [" ", ""], "sep")
        end = _pick(data, ["", "\n", "\r\n"], "end")
        lines.append(f"data:{sep}{json.dumps(payload, ensure_ascii=False)}{end}")
        as_bytes = data.draw(st.booleans(), label="bytes")
        out.extend(line.encode() if as_bytes else line for line in lines)
    return out


def _stream(data: st.DataObject) -> tuple[Path, list[dict]]:
    path = data.draw(st.sampled_from(STREAMS), label="stream")
    event(path.parent.name)
    return path, read_stream(path)


def _driver(data: st.DataObject, path: Path) -> engine.BaseDriver | None:
    return _EchoDriver(_call_names(path)) if data.draw(st.booleans(), label="driver") else None


# -- the properties -----------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_any_mutation_raises_only_engine_errors_and_never_half_applies(data):
    path, feed = _stream(data)
    fmt = path.parent.name
    rounds = data.draw(st.integers(1, 4), label="mutations")
    for _ in range(rounds):
        kind = data.draw(st.sampled_from(DESTRUCTIVE), label="kind")
        if kind in ("delete", "null", "retype"):
            mutate_value(data, feed, kind)
        elif kind in ("duplicate", "drop", "swap"):
            reorder(data, feed, kind)
        elif kind == "unknown_field":
            add_unknown_field(data, feed)
        elif kind == "deep":
            nest_deep(data, feed)
        elif kind == "unknown_event":
            unknown = unknown_event(fmt, feed[0] if feed and isinstance(feed[0], dict) else {})
            if unknown is not None:
                feed.insert(data.draw(st.integers(0, len(feed)), label="at"), unknown)
        else:
            insert_raw(data, feed, kind)
    run_checked(feed, _driver(data, path))


@FUZZ
@given(data=st.data())
def test_additive_mutations_never_raise_and_unknown_events_are_counted(data):
    path, feed = _stream(data)
    fmt = path.parent.name
    inserted = 0
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        unknown = unknown_event(fmt, feed[0])
        if unknown is not None and data.draw(st.booleans(), label="event"):
            feed.insert(data.draw(st.integers(0, len(feed)), label="at"), unknown)
            inserted += 1
        else:
            add_unknown_field(data, feed)
    buf = engine.LLMStreamBuffer()
    for chunk in feed:
        buf.add(chunk)  # must not raise
        buf.forming(), buf.calls(), buf.text(), buf.as_dict()
    buf.close()
    assert buf.format == fmt
    assert buf.unknown_events[UNKNOWN_EVENT] == inserted
    driver = _driver(data, path)
    if driver is not None:
        assert run_checked(feed, driver)["format"] == fmt


@FUZZ
@given(data=st.data())
def test_raw_sse_lines_give_what_the_decoded_events_give(data):
    path, events = _stream(data)
    expected = _observe(replay(copy.deepcopy(events)))
    framed = sse_framed(data, events)
    got = run_checked(framed, _driver(data, path))
    if got:  # {}: stopped at a known crash of another item
        for key in ("message", "content", "calls", "stop_reason", "usage", "error", "unknown"):
            assert got[key] == expected[key], key


# -- what add() is handed beside decoded events (issue 16, point 12) ---------------------------


def _deep_dict(depth: int) -> dict:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP_DICT = _deep_dict(100_000)  # shared, never copied: no test code walks it


class _DumpRaises:
    """An SDK object whose own dump raises (a broken pydantic model, a to_dict() bug)."""

    def __init__(self, exc: Exception, method: str) -> None:
        self._exc = exc
        setattr(self, method, self._raise)

    def _raise(self, *args: Any, **kwargs: Any) -> dict:
        raise self._exc


def _block(event: dict, end: str) -> str:
    name = event.get("_event") if "type" not in event else None
    payload = {k: v for k, v in event.items() if k != "_event"} if name else event
    head = [f"event: {name}"] if name else []
    return end.join([*head, f"data: {json.dumps(payload, ensure_ascii=False)}"]) + end + end


def _foreign_events() -> list[dict]:
    """The first chunk of one recorded stream of each wire: another wire's event, to each."""
    return [read_stream(golden_streams([name])[0])[0] for name in wire_names()]


def wire_names() -> list[str]:
    return [s.name for s in wire_strategies()]


INPUT_KINDS = ["block", "two_blocks", "sdk_raises", "deep_name", "foreign"]


def insert_input(data: st.DataObject, feed: list, kind: str, fmt: str) -> None:
    """Something a client may hand ``add`` beside a decoded event, at a random place: a whole
    SSE block (one event, or two in one string), an SDK object whose dump raises, a chunk
    whose name or slot field is a dict 100,000 deep, another wire's event."""
    i = data.draw(st.integers(0, len(feed)), label="at")
    # The stream's own events (never a deep chunk inserted before: its JSON text, or comparing
    # it, would recurse in this test's own code).
    dicts = [c for c in feed if isinstance(c, dict) and id(DEEP_DICT) not in map(id, c.values())]
    if kind in ("block", "two_blocks") and dicts:
        end = _pick(data, ["\n", "\r\n"], "end")
        raw: Any = "".join(_block(_pick(data, dicts, "event"), end) for _ in range(
            1 if kind == "block" else 2))
    elif kind == "sdk_raises":
        exc = _pick(data, [RuntimeError("sdk"), KeyError("k"), TypeError("t"), ValueError()], "exc")
        raw = _DumpRaises(exc, _pick(data, ["model_dump", "to_dict"], "method"))
    elif kind == "deep_name":
        field = _pick(data, ["type", "_event", "index", "object", "choices", "candidates",
                             "contentBlockDelta", "message"], "field")
        raw = {field: DEEP_DICT}
    elif kind == "foreign":
        others = [e for e, w in zip(_foreign_events(), wire_names(), strict=True) if w != fmt]
        raw = _pick(data, others, "foreign")
    else:
        return
    feed.insert(i, raw)


@FUZZ
@given(data=st.data())
def test_what_add_is_handed_raises_only_engine_errors_and_never_half_applies(data):
    path, feed = _stream(data)
    for _ in range(data.draw(st.integers(1, 3), label="inputs")):
        insert_input(data, feed, data.draw(st.sampled_from(INPUT_KINDS), label="kind"),
                     path.parent.name)
    run_checked(feed, _driver(data, path))


@FUZZ
@given(data=st.data())
def test_add_after_close_is_a_chunk_error_that_changes_nothing(data):
    path, feed = _stream(data)
    buf = engine.LLMStreamBuffer(events=True)
    for chunk in feed:
        buf.add(chunk)
    buf.close()
    buf.events(), buf.new_calls(), buf.text()
    before = _observe(buf)
    late = [*feed, "data: [DONE]", _block(feed[0], "\n"), {"x": 1}, DEEP_DICT]
    for _ in range(data.draw(st.integers(1, 3), label="late")):
        with pytest.raises(engine.ChunkError, match="closed"):
            buf.add(_pick(data, late, "late"))
    assert _observe(buf) == before
    assert buf.events() == [] and buf.new_calls() == [] and buf.text() == ""


def _smallest_stream_with_a_call(fmt: str) -> Path | None:
    with_calls = [p for p in STREAMS if p.parent.name == fmt and _call_names(p) != ["fuzz_tool"]]
    return min(with_calls, key=lambda p: (len(read_stream(p)), p.name), default=None)


SWEPT = [p for p in map(_smallest_stream_with_a_call, engine.list_formats()) if p is not None]


@pytest.mark.parametrize("path", SWEPT, ids=stream_id)
def test_every_value_of_a_small_stream_nulled_deleted_or_retyped(path):
    """Deterministic, beside the random search: every value of every chunk of one small
    stream with a call per wire, nulled, deleted, or made a list or a string, one at a time."""
    events = read_stream(path)
    for i, ev in enumerate(events):
        for position in _positions(ev):
            for change in ("null", "delete", [], "x"):
                feed = copy.deepcopy(events)
                parent = _at(feed[i], position[:-1])
                if change == "delete":
                    del parent[position[-1]]
                else:
                    parent[position[-1]] = None if change == "null" else copy.copy(change)
                run_checked(feed)


# -- the engine's own guarantees, on fixed inputs ----------------------------------------------


class _Boom(Exception):
    pass


def _raising_after(rules: Any, exc_type: type[BaseException], on: dict) -> tuple:
    """The rules of an event, then one that raises on the event ``on`` (a bug in any rule,
    met by that event's data), after the others wrote."""

    def boom(asm: Any, ev: Any, ch: Any) -> None:
        if ev is on:
            raise exc_type("midway")

    return (*rules, boom)


@pytest.mark.parametrize("exc_type", [_Boom, RecursionError, KeyError, MemoryError])
@pytest.mark.parametrize("delta", ["text_delta", "input_json_delta"])
def test_an_exception_midway_through_an_events_rules_rolls_the_whole_event_back(delta, exc_type):
    """An event whose last rule raises after the others wrote (display text appended, an
    argument fragment fed): nothing of it stays, whatever the exception type; the error is a
    ChunkError naming the chunk and the reason; the stream then goes on as if it never came."""
    strategy = engine.ExtractionStrategy(engine.load_format("anthropic_messages").descriptor)
    sub = strategy.program.table["content_block_delta"]
    events = read_stream(GOLDEN / "anthropic_messages" / "hand_parallel_tool_use.jsonl")
    bad = [e for e in events if e.get("delta", {}).get("type") == delta][-1]
    at = events.index(bad)
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    for ev in events[:at]:
        buf.add(ev)
    buf.calls(), buf.text(), buf.forming()
    before = _observe(buf)
    good_rules = sub.table[delta]
    poisoned = copy.deepcopy(bad)
    sub.table[delta] = _raising_after(good_rules, exc_type, poisoned)
    with pytest.raises(engine.ChunkError, match=rf"chunk {at}: .*{exc_type.__name__}.*midway"):
        buf.add(poisoned)
    assert _observe(buf) == before
    assert buf.text() == ""
    for ev in events[at:]:
        buf.add(ev)
        buf.calls(), buf.text(), buf.forming()
    buf.close()
    assert _observe(buf) == _observe(replay(events, "anthropic_messages"))


@pytest.mark.parametrize("path", STREAMS[::9], ids=stream_id)
def test_a_raising_chunk_anywhere_leaves_the_rest_of_the_stream_unchanged(path):
    """A bad chunk between every two chunks of a stream changes nothing of its outcome."""
    events = read_stream(path)
    expected = _observe(replay(copy.deepcopy(events)))
    buf = engine.LLMStreamBuffer()
    for ev in events:
        with pytest.raises(engine.ChunkError):
            buf.add("data: {")
        buf.add(ev)
        buf.calls(), buf.text()
    buf.close()
    assert _observe(buf) == expected


def test_a_restatement_refused_before_a_raising_chunk_stays_refused_after_it():
    """The calls handed out survive the rebuild unchanged, and so does the refusal of a
    different restatement of one's complete arguments (issue 16: one fate per call, never
    taken back) by an event before the raising one."""
    strategy = engine.ExtractionStrategy(engine.load_format("openai_responses").descriptor)
    events = read_stream(GOLDEN / "openai_responses" / "hand_parallel_interleaved.jsonl")
    done = next(e for e in events if e.get("type") == "response.function_call_arguments.done")
    at = events.index(done)
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    for ev in events[:at]:
        buf.add(ev)
    assert buf.calls(), "the stream's first call completes before its arguments.done"
    restated = {**done, "arguments": '{"restated": true}'}
    buf.add(restated)
    calls, skipped = list(buf.calls()), buf.skipped()
    assert {"restated": True} not in [c.arguments for c in calls]
    assert [s.index for s in skipped if "restated" in s.reason] == [at]
    poisoned = copy.deepcopy(restated)
    name = poisoned["type"]
    strategy.program.table[name] = _raising_after(strategy.program.table[name], _Boom, poisoned)
    with pytest.raises(engine.ChunkError, match=rf"chunk {at + 1}: "):
        buf.add(poisoned)
    assert buf.calls() == calls and buf.skipped() == skipped


def test_a_part_sent_as_something_else_than_an_object_joins_nothing_and_stops_nothing():
    """A whole-part wire keeps a part as sent; the next part must not trip over it."""
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("gemini")])
    buf.add({"candidates": [{"content": {"role": "model", "parts": [None]}, "index": 0}]})
    buf.add({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}]})
    buf.add({"candidates": [{"content": {"role": "model", "parts": [{"text": "!"}]}, "index": 0}]})
    assert buf.get_content() == "Hi!"


def test_an_unrecognised_chunk_that_does_not_fit_the_wire_found_later_is_counted():
    """Chunks kept before the wire was resolved are replayed on it; one whose rules raise
    is not the fault of the chunk that resolved the wire: undone and counted, never raised."""
    buf = engine.LLMStreamBuffer(strategies=[engine.load_format("anthropic_messages")])
    buf.add({"type": ["message_start"], "message": {}})  # no wire recognises it: kept
    assert buf.format is None
    buf.add({"type": "message_start", "message": {"role": "assistant", "content": []}})
    assert buf.format == "anthropic_messages"
    assert buf.unknown_events["['message_start']"] == 1


def test_a_chunk_that_resolves_the_wire_but_does_not_fit_it_leaves_it_unresolved():
    strategy = engine.ExtractionStrategy(engine.load_format("anthropic_messages").descriptor)
    first = {"type": "message_start", "message": {"role": "assistant", "content": []}}
    poisoned = copy.deepcopy(first)
    table = strategy.program.table
    table["message_start"] = _raising_after(table["message_start"], _Boom, poisoned)
    buf = engine.LLMStreamBuffer(strategies=[strategy])
    buf.add({"unrecognised": True})
    with pytest.raises(engine.ChunkError, match="chunk 1: .*_Boom"):
        buf.add(poisoned)
    assert (buf.format, buf.as_dict(), buf.unknown_events) == (None, {}, {})
    buf.add(first)
    assert buf.format == "anthropic_messages"
    assert buf.unknown_events["None"] == 1  # the unrecognised chunk, replayed once


def test_the_events_of_a_resolution_that_is_undone_are_undone_with_it():
    """The chunks kept before the wire was resolved are replayed when a chunk resolves it;
    when that chunk raises, what their replay told is undone too: told again (once) when a
    later chunk resolves the wire, never twice."""
    descriptor = copy.deepcopy(engine.load_format("anthropic_messages").descriptor)
    descriptor["recognize"]["chunk"] = {"field": "type", "in": ["message_start"]}
    strategy = engine.ExtractionStrategy(descriptor)
    start = {"type": "message_start", "message": {"role": "assistant", "content": []}}
    poisoned = copy.deepcopy(start)
    table = strategy.program.table
    table["message_start"] = _raising_after(table["message_start"], _Boom, poisoned)
    buf = engine.LLMStreamBuffer(strategies=[strategy], events=True)
    buf.add({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})
    hi = {"type": "text_delta", "text": "Hi"}
    buf.add({"type": "content_block_delta", "index": 0, "delta": hi})
    assert buf.format is None and buf.events() == []  # kept: no wire recognises them yet
    with pytest.raises(engine.ChunkError, match="chunk 2: .*_Boom"):
        buf.add(poisoned)
    buf.add(start)
    buf.close()
    told = [e.text for e in buf.events() if isinstance(e, engine.TextDelta)]
    assert (told, buf.get_content(), buf.text()) == (["Hi"], "Hi", "Hi")


def test_the_calls_of_a_resolution_that_is_undone_are_undone_with_it():
    """A call the kept chunks hold, replayed when a chunk resolves the wire: when that chunk
    raises, the buffer hands out no call (nor the list it handed out before, filled); once a
    later chunk resolves the wire, the call is new, once, with its events."""
    descriptor = copy.deepcopy(engine.load_format("anthropic_messages").descriptor)
    descriptor["recognize"]["chunk"] = {"field": "type", "in": ["message_start"]}
    strategy = engine.ExtractionStrategy(descriptor)
    strategy.program = _PoisonedProgram(strategy.program)
    start = {"type": "message_start", "message": {"role": "assistant", "content": []}}
    tool = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    json_delta = {"type": "input_json_delta", "partial_json": '{"a": 1}'}
    buf = engine.LLMStreamBuffer(strategies=[strategy], events=True)
    held = buf.calls()
    buf.add({"type": "content_block_start", "index": 0, "content_block": tool})
    buf.add({"type": "content_block_delta", "index": 0, "delta": json_delta})
    buf.add({"type": "content_block_stop", "index": 0})
    with pytest.raises(engine.ChunkError, match="chunk 3: .*_Boom"):
        buf.add({**start, "_poison": True})
    assert (buf.calls(), held, buf.new_calls(), buf.events()) == ([], [], [], [])
    buf.add(start)
    expected = [engine.ExtractedCall("f", {"a": 1}, "t1")]
    assert (buf.calls(), buf.new_calls(), buf.new_calls()) == (expected, expected, [])
    ready = [e.call for e in buf.events() if isinstance(e, engine.CallReady)]
    assert ready == expected


def test_a_resolution_that_is_undone_keeps_the_drivers_text_call_rule():
    """A codec attached under the rule ``"end"`` before the first chunk: when the chunk that
    resolves the wire raises, the scan started again is under the same rule (a call that text
    follows is not one), as on a buffer where no chunk raised."""
    descriptor = copy.deepcopy(engine.load_format("openai_chat").descriptor)
    strategy = engine.ExtractionStrategy(descriptor)
    strategy.program = _PoisonedProgram(strategy.program)
    call = '<tool_call>{"tool": "a", "arguments": {"x": 1}}</tool_call>'

    def chunk(text: str, **more: Any) -> dict:
        choices = [{"index": 0, "delta": {"content": text}}]
        return {"id": "x", "object": "chat.completion.chunk", "choices": choices, **more}

    found = []
    for poisoned in (False, True):
        buf = engine.LLMStreamBuffer(strategies=[strategy])
        buf.attach_codec(engine.load_format("mcs_text").codec, "end")
        if poisoned:
            with pytest.raises(engine.ChunkError, match="chunk 0: .*_Boom"):
                buf.add(chunk("x", _poison=True))
        for text in (call, " and then text"):
            buf.add(chunk(text))
        buf.close()
        found.append([c.name for c in buf.text_calls()])
    assert found == [[], []]


class _PoisonedProgram:
    """A wire's compiled rules, but an event marked ``_poison`` raises after its rules wrote."""

    def __init__(self, program: Any) -> None:
        self.program = program

    def apply(self, asm: Any, event: dict, choice: int) -> None:
        self.program.apply(asm, event, choice)
        if "_poison" in event:
            raise _Boom("midway")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.program, name)


# Streams long enough for a chunk to follow the one that resolved the wire.
LONG_STREAMS = [p for p in STREAMS if len(read_stream(p)) >= 3]


@pytest.mark.parametrize("path", LONG_STREAMS[::9], ids=stream_id)
def test_a_rollback_among_chunks_that_came_as_text_changes_nothing(path):
    """Chunks given as SSE text lines, and between them chunks that raise after their rules
    wrote: each raising chunk is undone, and the stream goes on to the outcome it has without
    them (the buffer keeps none of the chunks: engine.model.journal)."""
    events = read_stream(path)
    expected = _observe(replay(copy.deepcopy(events)))
    strategies = [engine.ExtractionStrategy(s.descriptor) for s in wire_strategies()]
    for strategy in strategies:
        strategy.program = _PoisonedProgram(strategy.program)
    buf = engine.LLMStreamBuffer(strategies=strategies)
    raised = 0
    for at, ev in enumerate(events):
        if at and buf.format is not None:
            before = _observe(buf)
            try:
                buf.add({**copy.deepcopy(ev), "_poison": True})
            except engine.ChunkError as exc:
                assert "_Boom" in str(exc)
                raised += 1
            else:  # not this stream's event (another choice's, after the end): no rule ran
                assert _observe(buf) == before
        buf.add("data: " + json.dumps(ev))
        buf.calls(), buf.text()
    buf.close()
    assert raised  # a rollback happened
    assert _observe(buf) == expected
