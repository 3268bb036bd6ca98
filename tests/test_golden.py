"""Golden streams: every fixture of every format, snapshotted, and checked against its oracle.

Fixtures are discovered from ``tests/golden/<format>/*.jsonl``, and from the toy wires there
(``tests/golden/<toy>/<toy>.yaml`` beside its streams: a wire no provider has, that shows one
concept of the language). A hand-written fixture's
``*.expect.json`` states (from the provider's documentation) the display text, the calls and,
where given, the exact non-streaming message; the snapshot pins everything else. After a
deliberate change, review and update with the command the failure prints.
"""

from __future__ import annotations

import json

import pytest
from conftest import (
    compiled,
    format_of,
    golden_streams,
    outcome,
    read_stream,
    replay,
    stream_id,
    toy_streams,
)

import engine

TOYS = toy_streams()
STREAMS = golden_streams() + TOYS


def _replay(path):
    """A built-in's stream resolves its wire among the built-ins; a toy's is fed to its own
    descriptor (a toy never joins the built-ins)."""
    return replay(read_stream(path), fmt=format_of(path) if path in TOYS else None)


def _update_hint(path) -> str:
    return f"run: pytest tests/test_golden.py -k '{path.stem}' --snapshot-update (after review)"


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_golden_snapshot(path, json_snapshot):
    buf = _replay(path)
    result = outcome(buf)
    strategy = compiled(format_of(path))
    if path in TOYS:  # a toy shows what its language concept refuses, too
        result["skipped"] = [s.to_dict() for s in buf.skipped()]
    message = result["message"]
    result["extract"] = [
        {"name": c.name, "arguments": c.arguments, "id": c.id} for c in strategy.extract(message)
    ]
    records = [
        engine.ToolCallRecord(c.name, c.arguments, {"echo": c.arguments}, None, c.id)
        for c in strategy.extract(message)
    ]
    result["result_messages"] = strategy.result_messages(message, records) if records else []
    assert result == json_snapshot, _update_hint(path)


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_resolves_to_its_own_format(path):
    buf = _replay(path)
    assert buf.format == path.parent.name


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_streamed_calls_agree_with_extract_on_the_message(path):
    """The per-chunk answer (buf.calls) equals the whole-message answer (extract) at the end,
    and forming() on the message says whether it holds a call; the closed buffer forms none."""
    buf = _replay(path)
    strategy = buf.strategy
    message = buf.as_dict()
    assert buf.calls() == strategy.extract(message)
    assert buf.get_content() == strategy.content_text(message)
    # API.md (issue 10): closed, the buffer forms nothing; the strategy's forming() on the
    # whole message keeps its meaning: the message holds a call, ready or never runnable.
    assert not buf.forming()
    assert bool(strategy.forming(message)) == bool(buf.calls() or buf.incomplete_calls())


EXPECTS = [p for p in STREAMS if p.with_suffix(".expect.json").exists()]


@pytest.mark.parametrize("path", EXPECTS, ids=stream_id)
def test_hand_written_fixture_meets_its_documented_expectation(path):
    expect = json.loads(path.with_suffix(".expect.json").read_text(encoding="utf-8"))
    result = outcome(_replay(path))
    assert result["text"] == expect["text"]
    calls = [{k: c.get(k) for k in ("name", "arguments", "id")} for c in expect["calls"]]
    assert result["calls"] == calls
    if "stop_reason" in expect:
        assert result["stop_reason"] == expect["stop_reason"]
    if "message" in expect:
        assert result["message"] == expect["message"]


RESPONSES = golden_streams(["openai_responses"])


def _final_response(events):
    for event in events:
        if event.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            return event["response"]
    return None


def _without_encrypted(value):
    """Responses re-encrypts reasoning between output_item.done and response.completed."""
    if isinstance(value, dict):
        return {k: _without_encrypted(v) for k, v in value.items() if k != "encrypted_content"}
    if isinstance(value, list):
        return [_without_encrypted(v) for v in value]
    return value


@pytest.mark.parametrize(
    "path", [p for p in RESPONSES if _final_response(read_stream(p))], ids=stream_id
)
def test_responses_assembly_equals_the_final_response(path):
    """The Responses wire restates the whole response at the end: an oracle for assembly,
    which builds ``output`` from the item events only (the final ``output`` is never read)."""
    events = read_stream(path)
    final = _final_response(events)
    message = replay(events).as_dict()
    if not final.get("output"):
        final = {**final, "output": message["output"]}
    assert _without_encrypted(message) == _without_encrypted(final)
