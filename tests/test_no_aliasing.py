"""Issue 16, point 13: no aliasing.

``call.arguments`` (of ``calls()``, ``new_calls()``, ``CallReady`` and ``fmt.extract``) and the
events' ``partial`` dicts never share a mutable object with ``buf.as_dict()``: a client that
edits what it was handed changes neither the assembled message nor the calls, and one that
edits the message changes no call. On the recorded goldens of every wire with calls.
"""

from __future__ import annotations

import copy

import pytest
from conftest import golden_streams, read_stream, stream_id

import engine


def _run(path):
    fmt = engine.load_format(path.parent.name)
    buf = engine.LLMStreamBuffer(strategies=[fmt], events=True)
    handed, partials = [], []
    for event in read_stream(path):
        buf.add(event)
        handed += buf.new_calls()
        for ev in buf.events():
            if isinstance(ev, engine.CallReady):
                handed.append(ev.call)
            elif isinstance(ev, engine.ArgumentsDelta):
                partials.append(ev.partial)
    buf.close()
    handed += buf.new_calls() + buf.calls()
    return buf, handed, partials


STREAMS = [p for p in golden_streams() if _run(p)[0].calls()]


def test_every_wire_with_calls_is_covered():
    assert {p.parent.name for p in STREAMS} == set(engine.list_formats()) - {"mcs_text"}


def _vandalize(value, seen: set) -> None:
    """Change every dict and list inside ``value`` (once each): a key added, an item added."""
    stack = [value]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            children = list(node.values())
            node["__edited__"] = True
        elif isinstance(node, list):
            children = list(node)
            node.append("__edited__")
        else:
            continue
        stack.extend(c for c in children if isinstance(c, dict | list))


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_editing_the_calls_and_partials_handed_out_changes_no_message(path):
    buf, handed, partials = _run(path)
    message = copy.deepcopy(buf.as_dict())
    calls = [(c.name, copy.deepcopy(c.arguments), c.id) for c in buf.calls()]
    seen: set = set()
    for call in handed:
        _vandalize(call.arguments, seen)
    for partial in partials:
        _vandalize(partial, seen)
    assert buf.as_dict() == message
    assert buf.strategy.extract(buf.as_dict()) == [
        engine.ExtractedCall(n, a, i) for n, a, i in calls
    ]


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_editing_the_message_changes_no_call_and_no_later_message(path):
    buf, handed, partials = _run(path)
    calls = [(c.name, copy.deepcopy(c.arguments), c.id) for c in handed]
    kept = copy.deepcopy(partials)
    message = buf.as_dict()
    before = copy.deepcopy(message)
    _vandalize(message, set())
    assert [(c.name, c.arguments, c.id) for c in handed] == calls
    assert partials == kept
    assert buf.as_dict() == before


@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_the_calls_extracted_from_a_message_share_nothing_with_it(path):
    buf = _run(path)[0]
    message = buf.as_dict()
    before = copy.deepcopy(message)
    extracted = buf.strategy.extract(message)
    assert extracted
    seen: set = set()
    for call in extracted:
        _vandalize(call.arguments, seen)
    assert message == before
