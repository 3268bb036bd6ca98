"""The language for agent protocols (issue 12, items 1-7), beyond what the toy wires of
``tests/golden/<toy>/`` show by their snapshots and expectations:

- every toy wire is found by the golden tests, and its result never depends on how its
  streamed strings were split;
- event-name patterns: an exact name wins, then the longest prefix;
- a ``strip_prefix`` read gives nothing for a value without the prefix;
- results ``mode: restate`` never drops a record that answers no part of the message.
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import (
    compiled,
    format_of,
    outcome,
    read_stream,
    replay,
    stream_id,
    toy_streams,
    toy_wires,
)

import engine
from engine.cli.resplit import every_character, resplit
from engine.compile.paths import compile_read

TOYS = toy_streams()
CONCEPTS = {
    "agui_chunks",  # 1. a fragment without its slot key continues the open item
    "aisdk_open_or_continue",  # 2. open if absent, else merge
    "aisdk_scopes",  # 3. slot scopes
    "aisdk_data_parts",  # 4. event-name patterns
    "aisdk_where_after_event",  # 5. calls.where after the whole event
    "aisdk_restate",  # 6. results that restate the message
    "aisdk_tool_parts",  # 7. a read that takes a string apart
}


def test_every_concept_has_its_toy_wire_with_a_documented_stream():
    found = {folder.name for folder in toy_wires()}
    assert found >= CONCEPTS
    for folder in toy_wires():
        streams = list(folder.glob("*.jsonl"))
        assert streams and any(p.with_suffix(".expect.json").exists() for p in streams)


@pytest.mark.parametrize("path", TOYS, ids=stream_id)
def test_a_toy_stream_split_into_single_characters_gives_the_same_result(path):
    fmt = format_of(path)
    events = read_stream(path)
    wire = compiled(fmt)
    fields, done = wire.streamed_fields(), wire.done_fields()
    expected = outcome(replay(copy.deepcopy(events), fmt))
    split = resplit(copy.deepcopy(events), fields, every_character, done)
    assert outcome(replay(split, fmt)) == expected


def _patterned(on: dict) -> engine.ExtractionStrategy:
    return engine.ExtractionStrategy(
        {
            "name": "patterns",
            "title": "patterns",
            "docs": "https://example.invalid",
            "recognize": {"chunk": {"has": "type"}},
            "events": {"discriminator": "type", "on": on},
            "message": {},
            "text": {"at": "content"},
        }
    )


def test_an_exact_name_wins_over_a_pattern_and_the_longest_prefix_wins():
    fmt = _patterned(
        {
            "data-*": [{"set": {"at": "by", "from": {"jmespath": "'data-*'"}}}],
            "data-w*": [{"set": {"at": "by", "from": {"jmespath": "'data-w*'"}}}],
            "data-weather": [{"set": {"at": "by", "from": {"jmespath": "'exact'"}}}],
        }
    )
    seen = {}
    for name in ("data-weather", "data-wind", "data-sources", "text-delta"):
        buf = engine.LLMStreamBuffer(strategies=[fmt])
        buf.add({"type": name})
        seen[name] = (buf.as_dict().get("by"), dict(buf.unknown_events))
    assert seen == {
        "data-weather": ("exact", {}),
        "data-wind": ("data-w*", {}),
        "data-sources": ("data-*", {}),
        "text-delta": (None, {"text-delta": 1}),  # no rule: skipped and counted
    }


def test_a_table_without_patterns_stays_a_plain_dict():
    """The dispatcher's ``get`` on every chunk: a built-in pays nothing for patterns."""
    for name in engine.list_formats():
        program = getattr(engine.load_format(name), "program", None)
        if program is not None:
            assert program.table.__class__ is dict


def test_an_event_name_that_is_no_string_never_matches_a_pattern():
    fmt = _patterned({"data-*": [{"set": {"at": "x", "from": "data"}}]})
    buf = engine.LLMStreamBuffer(strategies=[fmt])
    buf.add({"type": 7, "data": 1})
    buf.add({"type": ["data-x"], "data": 1})
    assert buf.as_dict() == {}
    assert dict(buf.unknown_events) == {"7": 1, "['data-x']": 1}


@pytest.mark.parametrize(
    "value, expected",
    [("tool-get_weather", "get_weather"), ("text", None), ("tool-", None), (3, None), (None, None)],
)
def test_strip_prefix_reads_what_follows_the_prefix_or_nothing(value, expected):
    read = compile_read({"path": "type", "strip_prefix": "tool-"})
    assert read({"type": value}, None) == expected


def test_restate_refuses_a_record_that_answers_no_part_of_the_message():
    path = next(p for p in TOYS if p.parent.name == "aisdk_restate")
    fmt = compiled(format_of(path))
    message = replay(read_stream(path), format_of(path)).as_dict()
    stray = engine.ToolCallRecord("get_time", {}, {"now": 1}, None, "call-9")
    with pytest.raises(ValueError) as caught:
        fmt.result_messages(message, [stray])
    assert str(caught.value) == (
        "$echo merge: no call part of the message answers the record of 'get_time' (id "
        "'call-9'); a restated message carries each result in its own call's part"
    )


def test_restate_puts_a_failure_into_its_own_part():
    path = next(p for p in TOYS if p.parent.name == "aisdk_restate")
    fmt = compiled(format_of(path))
    buf = replay(read_stream(path), format_of(path))
    first, second = buf.calls()
    records = [
        engine.ToolCallRecord(first.name, first.arguments, {"temp": 21}, None, first.id),
        engine.ToolCallRecord(second.name, second.arguments, None, "timeout", second.id),
    ]
    (restated,) = fmt.result_messages(buf.as_dict(), records)
    tools = [part for part in restated["parts"] if part["type"] == "dynamic-tool"]
    assert [(p["state"], p.get("output"), p.get("errorText")) for p in tools] == [
        ("output-available", {"temp": 21}, None),
        ("output-error", None, "timeout"),
    ]
    assert json.dumps(restated)  # plain JSON, nothing shared with the buffer
