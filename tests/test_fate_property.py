"""One fate per call, run at most once (issue 16's property): for every golden stream, any
re-split of its fragments, with and without events, with one driver processing each round
once, twice, or from an asyncio task per chunk, each call runs at most once, and its fate
(ready or incomplete) is the same in ``new_calls()``, the events, ``incomplete_calls()`` and
the driver's responses.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json

import pytest
from conftest import (
    compiled,
    drawn_cuts,
    format_of,
    golden_streams,
    read_stream,
    replay,
    stream_id,
    toy_streams,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.cli.resplit import resplit

STREAMS = [*golden_streams(), *toy_streams()]  # the toy wires' own descriptors too


class Runs(engine.BaseDriver):
    """Owns ``names``; records every run."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names
        self.ran: list[tuple[str, str]] = []

    def list_tools(self) -> list[engine.Tool]:
        return [engine.Tool(name, name, {"type": "object"}) for name in self.names]

    def execute_tool(self, tool_name: str, arguments: dict):
        self.ran.append((tool_name, json.dumps(arguments, sort_keys=True)))
        return "ok"


def _key(call) -> tuple[str, str]:
    return (call.name, json.dumps(call.arguments, sort_keys=True))


def _play(events: list, fmt: str, names: list[str], mode: str, with_events: bool) -> dict:
    """The client loop: one round per chunk (``mode``: processed once, twice, or from a task
    per chunk), ``new_calls()`` and ``events()`` read after each round; what each saw."""
    driver = Runs(names)
    buf = engine.LLMStreamBuffer(strategies=[compiled(fmt)], events=with_events)
    seen: dict = {"new": [], "ready": [], "incomplete_events": [], "reported": []}

    def read(responses) -> None:
        for response in responses:
            seen["reported"] += response.incomplete_calls or []
        seen["new"] += buf.new_calls()
        if with_events:
            for ev in buf.events():
                if isinstance(ev, engine.CallReady):
                    seen["ready"].append(ev.call)
                elif isinstance(ev, engine.CallIncomplete):
                    seen["incomplete_events"].append(ev)

    async def rounds() -> None:
        tasks = []
        for event in [*events, None]:
            if event is None:
                buf.close()
            else:
                buf.add(event)
            if mode == "task":
                tasks.append(asyncio.ensure_future(driver.aprocess_llm_response(buf)))
                read([])
                continue
            responses = [driver.process_llm_response(buf)]
            if mode == "twice":
                responses.append(driver.process_llm_response(buf))
            read(responses)
        read(await asyncio.gather(*tasks))

    asyncio.run(rounds())
    seen["ran"] = driver.ran
    seen["incomplete"] = buf.incomplete_calls()
    return seen


@functools.cache
def _whole(path) -> tuple[list, list]:
    """The golden as recorded, replayed once, not once each drawn example (the draw changes
    only the split and the client loop): its calls' keys, sorted, and its incomplete calls'
    (slot, name, reason)."""
    whole = replay(read_stream(path), format_of(path))
    incomplete = [(c.slot, c.name, c.reason) for c in whole.incomplete_calls()]
    return sorted(_key(c) for c in whole.calls()), incomplete


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("path", STREAMS, ids=stream_id)
def test_each_call_runs_at_most_once_with_one_fate(path, data):
    events = read_stream(path)
    fmt = format_of(path)
    wire = compiled(fmt)
    ready_whole, incomplete_whole = _whole(path)
    names = sorted({n for n, _ in ready_whole} | {n for _, n, _ in incomplete_whole})
    names = [n for n in names if n]
    fields, done = wire.streamed_fields(), wire.done_fields()
    split = resplit(copy.deepcopy(events), fields, drawn_cuts(data), done)
    mode = data.draw(st.sampled_from(["once", "twice", "task"]), label="mode")
    with_events = data.draw(st.booleans(), label="events")
    seen = _play(split, fmt, names, mode, with_events)

    ready = [_key(c) for c in seen["new"]]
    assert sorted(ready) == ready_whole
    # each call runs at most once, and only a ready one
    assert sorted(seen["ran"]) == sorted(k for k in ready if k[0] in names)
    incomplete = [(c.slot, c.name, c.reason) for c in seen["incomplete"]]
    assert incomplete == incomplete_whole
    # reported by the driver once each, the same calls
    assert [(c.slot, c.name, c.reason) for c in seen["reported"]] == incomplete
    if with_events:
        assert sorted(_key(c) for c in seen["ready"]) == sorted(ready)
        assert [(c.slot, c.name, c.reason) for c in seen["incomplete_events"]] == incomplete
    # never both: no incomplete call also became ready
    ready_slots = {(c.name, c.id) for c in seen["new"] if c.id}
    assert not ready_slots & {(c.name, c.id) for c in seen["incomplete"] if c.id}
